"""How fast the ball flies in the games a checkpoint plays: against itself in two-player Pong (the self-play
training game) and against the built-in AI (the single-player game it is evaluated in).

    python research/ball_speed.py CHECKPOINT... [--steps 3000] [--games 4] [--greedy] [--game-mode 4]
        [--torch-threads 1]

Each checkpoint plays `--games` games of each kind for `--steps` agent steps (4 raw frames each), with actions
sampled from its policy as in training (`--greedy`: the most probable action); the two-player games are of the
cartridge's variation `--game-mode` (4, pong_v3's classic, by default; 3, the other, as `pongrl train selfplay
--game-mode 3` plays it). After every step the ball's
horizontal position is read from the emulator's RAM (byte 49; 0 while no ball is in play) and its displacement
over the step divided by 4 gives its speed in pixels per raw frame. Steps where the ball is not in play on
either side of the step, stands still, or jumps (a reset to the centre), are left out. The table gives, per
kind of game, the share of in-flight steps at each speed, and which share of the fast ones (3-4 px/frame) fly
towards the left paddle: in the single-player game, the shots off the checkpoint's own (right) paddle.

Why: a self-play policy learns from the balls its own play produces. If the game it is evaluated in produces
balls it never met in training, that is one reason what it learns against itself does not carry over.
"""

import argparse
import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from pongrl.config import CHOICES  # noqa: E402
from pongrl.game import RAM_BALL_X  # noqa: E402
from pongrl.game import CLASSIC_MODE  # noqa: E402
from pongrl.errors import PongrlError  # noqa: E402

FRAMES_PER_STEP = 4
MAX_FLIGHT_STEP = 20  # pixels in one step; more is a reset, not flight


def tally(read_rams, step, obs, steps: int, sample) -> collections.Counter:
    """Counter of (direction "left" or "right", speed in px per frame) over `steps` steps of a vector env."""
    counts: collections.Counter = collections.Counter()
    previous = [int(ram[RAM_BALL_X]) for ram in read_rams()]
    for _ in range(steps):
        obs = step(sample(obs))
        current = [int(ram[RAM_BALL_X]) for ram in read_rams()]
        for before, after in zip(previous, current):
            moved = after - before
            speed = round(abs(moved) / FRAMES_PER_STEP)
            if before and after and speed and abs(moved) < MAX_FLIGHT_STEP:
                counts["right" if moved > 0 else "left", speed] += 1
        previous = current
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--steps", type=int, default=3000, help="agent steps per kind of game")
    parser.add_argument("--games", type=int, default=4, help="games played side by side, per kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--greedy", action="store_true", help="the most probable action instead of a sample")
    parser.add_argument(
        "--game-mode", type=int, choices=CHOICES["game_mode"], default=CLASSIC_MODE, help="the two-player variation"
    )
    parser.add_argument("--torch-threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    from pongrl.agent import load_agent
    from pongrl.envs.single import GameVectorEnv
    from pongrl.envs.selfplay import FastSelfPlayEnv

    torch.set_num_threads(args.torch_threads)
    try:  # every checkpoint loads before any game is played, so a bad path costs nothing
        agents = [(path, load_agent(path)) for path in args.checkpoints]
    except PongrlError as error:
        sys.exit(f"ball_speed.py: {error}")
    speeds = (1, 2, 3, 4)
    print(
        "| checkpoint | game | in-flight steps | "
        + " | ".join(f"{s} px/frame" for s in speeds)
        + " | of it towards the left paddle, 3-4 px/frame |"
    )
    print("|---|---|---:|" + "---:|" * len(speeds) + "---:|")
    for path, agent in agents:
        rng = np.random.default_rng(args.seed)

        def act(obs):
            return agent.act(obs) if args.greedy else agent.sample(obs, rng)

        self_play = FastSelfPlayEnv(args.games, args.seed, mode=args.game_mode)
        against_ai = GameVectorEnv(args.games, args.seed, agent.obs_profile)
        try:
            games = (
                (
                    f"against itself (two-player variation {args.game_mode}, `first_0` on the right)",
                    lambda: [ale.getRAM() for ale in self_play.games.ales],
                    lambda a: self_play.step(a)[0],
                    self_play.reset()[0],
                ),
                (
                    "against the built-in AI (single-player, agent on the right)",
                    lambda: [game.ale.getRAM() for game in against_ai.games],
                    lambda a: against_ai.step(a)[0],
                    against_ai.reset()[0],
                ),
            )
            for label, read_rams, step, obs in games:
                counts = tally(read_rams, step, obs, args.steps, act)
                moving = sum(counts.values())
                shares = [sum(n for (_, s), n in counts.items() if s == speed) / moving for speed in speeds]
                fast_left = sum(n for (d, s), n in counts.items() if d == "left" and s >= 3)
                fast = sum(n for (_, s), n in counts.items() if s >= 3)
                print(
                    f"| {os.path.basename(path)} | {label} | {moving:,} | "
                    + " | ".join(f"{100 * x:.1f}%" for x in shares)
                    + f" | {f'{100 * fast_left / fast:.0f}%' if fast else '-'} |"
                )
        finally:
            self_play.close()
            against_ai.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
