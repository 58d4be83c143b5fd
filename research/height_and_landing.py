"""How the ball's height and its landing point go together on a collect's frames, by the time left before the ball
reaches the agent's paddle column: why `probe intervene --kind steer-partial` holds one fixed to steer the other.

    python research/height_and_landing.py COLLECT_DIR

COLLECT_DIR is a folder written by `pongrl probe collect` or `pongrl probe across`. Over the frames where the ball
is in play and its landing point is defined (the labels' own scoring frames), the Pearson correlation of ball_y
and landing_y, over all of them and per bin of steps_to_landing (agent steps until the ball reaches the column).
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from pongrl.errors import PongrlError  # noqa: E402
from pongrl.probes.fit import ProbeData  # noqa: E402
from pongrl.probes.labels import scored_frames  # noqa: E402

BINS = ((0, 4), (4, 10), (10, 20), (20, 40), (40, None))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collect", metavar="COLLECT_DIR")
    args = parser.parse_args()
    try:
        data = ProbeData(args.collect)
    except PongrlError as error:
        print(f"height_and_landing: {error}", file=sys.stderr)
        return 1
    missing = {"ball_y", "landing_y", "steps_to_landing", "ball_in_play"} - set(data.labels)
    if missing:
        print(f"height_and_landing: {args.collect} lacks the labels {', '.join(sorted(missing))}", file=sys.stderr)
        return 1
    games = sorted(data.frames_of)
    label = {name: data.read(f"labels/{name}", games).astype(np.float64) for name in data.labels}
    both = scored_frames("ball_y", label["ball_y"], label["ball_in_play"]) & scored_frames(
        "landing_y", label["landing_y"], label["ball_in_play"]
    )
    height, landing, steps = label["ball_y"][both], label["landing_y"][both], label["steps_to_landing"][both]
    print(f"{both.sum():,} frames: correlation {np.corrcoef(height, landing)[0, 1]:+.2f}")
    for low, high in BINS:
        chosen = (steps >= low) & (steps < (high if high is not None else np.inf))
        name = f"{low}-{high}" if high is not None else f"{low}+"
        if chosen.sum() > 2:
            print(
                f"  {name:>6} steps to landing: {chosen.sum():6,} frames, correlation "
                f"{np.corrcoef(height[chosen], landing[chosen])[0, 1]:+.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
