"""Average the playing weights of several checkpoints of one run, to test whether the average plays better.

    python research/average_weights.py CHECKPOINT... --out AVERAGE.pt [--force]
    pongrl eval AVERAGE.pt --every-start          # or --sample --episodes 16, --sticky-actions 0.25

Why: the greedy score of a self-play checkpoint against the built-in AI swings by up to 25 points between
checkpoints 200,000 agent steps apart (docs/results.md). The mean of the weights along a stretch of one run
(stochastic weight averaging, Izmailov et al. 2018) is a cheap candidate for a steadier policy. The
checkpoints must be PPO agents with the self-play card's observation profile and the same network; the
average is written as a bare state_dict in the card's format, which `pongrl eval` reads (it detects the
torso and whether it is shared from the weights, as for any seed-format file).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from pongrl.errors import PongrlError  # noqa: E402


def average(paths: list[str]) -> dict:
    from pongrl.agent import playing_weights
    from pongrl.checkpoint import load_checkpoint

    total, first = None, None
    for path in paths:
        payload = load_checkpoint(path)
        if payload.get("algo") not in ("ppo", "selfplay") or payload.get("obs_profile") != "seed":
            raise PongrlError(f"{path}: not a PPO agent with the self-play card's observation profile")
        weights = playing_weights(payload)
        if total is None:
            first = path
            total = {name: tensor.double().clone() for name, tensor in weights.items()}
        elif set(weights) != set(total) or any(weights[name].shape != total[name].shape for name in total):
            raise PongrlError(f"{path}: its network differs from {first}'s")
        else:
            for name in total:
                total[name] += weights[name].double()
    return {name: (tensor / len(paths)).float() for name, tensor in total.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--out", required=True, help="where the averaged state_dict goes")
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    args = parser.parse_args()
    from pongrl.checkpoint import write_torch_file

    try:
        if os.path.exists(args.out) and not args.force:
            raise PongrlError(f"{args.out}: exists (use --force to overwrite)")
        write_torch_file(args.out, average(args.checkpoints))
    except PongrlError as error:
        sys.exit(f"average_weights.py: {error}")
    print(f"{args.out}: the mean of {len(args.checkpoints)} checkpoints' weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
