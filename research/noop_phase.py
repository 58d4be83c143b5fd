"""Does a seed-view agent's score depend on its games' no-op start, modulo the frame skip?

Through the self-play card's own chain (Gymnasium's PongNoFrameskip-v4 with SuperSuit's wrappers) every game
starts without no-op frames, so every agent step begins on a frame count that is a multiple of 4 from the reset;
pongrl's single-player games start after 0..30 no-op frames, a quarter of them on that phase. The observations
themselves are the same pixel for pixel (tests/test_envs.py checks it), so a gap between the two chains comes from
the starts or from chance. This script plays the agent in pongrl's own seed view under sticky actions from starts
of one phase (0, 4, ..., 28 no-op frames) and from the others, the same number of games each, and prints both
scores with their 95% intervals.

    python research/noop_phase.py zoo:selfplay-builtin --games 24 --seed 0
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from pongrl.agent import load_agent
from pongrl.evaluation import STICKY_PROTOCOL, play_games, summarize
from pongrl.game import FRAME_SKIP, NOOP_MAX


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agent", help="an agent that sees the self-play card's view, e.g. zoo:selfplay-builtin")
    parser.add_argument("--games", type=int, default=24, help="games per group of starts (default 24)")
    parser.add_argument("--seed", type=int, default=0, help="emulator seed (default 0)")
    parser.add_argument("--sticky-actions", type=float, default=STICKY_PROTOCOL, help="default 0.25")
    args = parser.parse_args()
    torch.set_num_threads(1)
    agent = load_agent(args.agent)
    rng = np.random.default_rng(args.seed)
    groups = {
        "on the card chain's phase (0, 4, ..., 28 no-ops)": [s for s in range(NOOP_MAX + 1) if s % FRAME_SKIP == 0],
        "off it (the other 23 starts)": [s for s in range(NOOP_MAX + 1) if s % FRAME_SKIP != 0],
    }
    for label, starts in groups.items():
        chosen = [starts[k % len(starts)] for k in range(args.games)]
        games = play_games(
            lambda obs: agent.act(obs, 0.0, rng),
            len(chosen),
            args.seed,
            agent.obs_profile,
            starts=chosen,
            sticky_actions=args.sticky_actions,
        )
        summary = summarize(games)
        low, high = summary["ci95"]
        print(
            f"{args.agent}, starts {label}: {summary['mean']:+.2f} (95% interval {low:+.2f}..{high:+.2f}) "
            f"over {summary['games']} games, sticky actions {args.sticky_actions:g}, seed {args.seed}",
            flush=True,
        )


if __name__ == "__main__":
    main()
