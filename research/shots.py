"""Which shots a checkpoint fails to return: against the built-in AI, and against itself in two-player Pong.

    python research/shots.py CHECKPOINT... [--games 4] [--game-mode 3] [--seed 0] [--greedy] [--torch-threads 1]

Each checkpoint plays `--games` whole games against the built-in AI (the single-player game it is evaluated
in, on the right paddle) and `--games` against itself (two-player variation `--game-mode`, both paddles
played by the checkpoint), with actions sampled from its policy as in training (`--greedy`: the most
probable action). After every raw frame the ball's position is read from the emulator's RAM (byte 49
across, byte 54 down; both 0 while no ball is in play) and the paddles' (51 the right one's, 50 the left's).

A shot is a reversal of the ball's horizontal direction: off the right paddle when it turns from rightward
to leftward, off the left paddle the other way. Its speed is the ball's displacement on the first frame
after the reversal, across (1-4 px per frame) and down (0-4); a steep shot has 2 or more down. A shot is
returned when the other side hits the ball again in the same point, a winner when the point ends with the
shooter scoring. The tables give, per game and per hitter, how many shots of each kind it made and which
share the other side returned, and where on its paddle the hitter meets the ball (the ball's height minus
the paddle's, median and 10-90% range).

Why: a self-play policy learns to return the shots its own play makes. `ball_speed.py` showed that the
classic two-player game never makes the fast balls the built-in AI's game makes; this asks which shots of
the built-in AI the policy misses, and whether self-play ever showed it those shots.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from pongrl.config import CHOICES  # noqa: E402
from pongrl.game import CLASSIC_MODE, RAM_BALL_X, RAM_BALL_Y, RAM_LEFT_PADDLE_Y, RAM_RIGHT_PADDLE_Y  # noqa: E402
from pongrl.errors import PongrlError  # noqa: E402

RAM_PADDLE_Y = {"right": RAM_RIGHT_PADDLE_Y, "left": RAM_LEFT_PADDLE_Y}
MAX_FLIGHT_FRAME = 20  # pixels across in one frame; more is the ball put back in play, not flight


def read_frame(ram: np.ndarray, scorer: str | None) -> tuple:
    return (
        int(ram[RAM_BALL_X]),
        int(ram[RAM_BALL_Y]),
        int(ram[RAM_PADDLE_Y["right"]]),
        int(ram[RAM_PADDLE_Y["left"]]),
        scorer,
    )


def shots_of(frames: list[tuple]) -> list[dict]:
    """The shots in a game's frames, each (ball x, ball y, right paddle y, left paddle y, scorer or None):
    who hit it, its speed across and down, where on the paddle, and what became of it."""
    shots: list[dict] = []
    point: list[dict] = []  # this point's shots
    previous, heading = None, 0  # the ball's last position in play; +1 rightward, -1 leftward
    for x, y, right_y, left_y, scorer in frames:
        if previous is not None and x and previous[0]:
            across, down = x - previous[0], y - previous[1]
            if across and abs(across) < MAX_FLIGHT_FRAME:
                if heading and (across > 0) != (heading > 0):
                    hitter = "right" if heading > 0 else "left"
                    paddle_y = right_y if hitter == "right" else left_y
                    if point:
                        point[-1]["outcome"] = "returned"
                    point.append(
                        {
                            "hitter": hitter,
                            "across": abs(across),
                            "down": abs(down),
                            "paddle_offset": y - paddle_y,
                            "outcome": "unreturned",
                        }
                    )
                heading = 1 if across > 0 else -1
        previous = (x, y)
        if scorer is not None:
            if point and point[-1]["hitter"] == scorer:
                point[-1]["outcome"] = "winner"
            shots += point
            point, previous, heading = [], None, 0
    return shots


class _RecordingALE:
    """The single-player emulator, reading RAM after every frame the game plays."""

    def __init__(self, ale, frames: list):
        self._ale, self.frames = ale, frames

    def act(self, action):
        reward = self._ale.act(action)
        scorer = "right" if reward > 0 else "left" if reward < 0 else None
        self.frames.append(read_frame(self._ale.getRAM(), scorer))
        return reward

    def __getattr__(self, name):
        return getattr(self._ale, name)


def against_builtin(agent, games: int, seed: int, act) -> list[dict]:
    from pongrl.envs.single import PongGame

    game = PongGame(seed, profile=agent.obs_profile)
    frames: list[tuple] = []
    game.ale = _RecordingALE(game.ale, frames)
    shots = []
    for _ in range(games):
        frames.clear()
        obs, done = game.reset(), False
        while not done:
            obs, _, terminated, truncated = game.step(int(act(obs[None])[0]))
            done = terminated or truncated
        shots += shots_of(frames)
    return shots


def against_itself(agent, games: int, seed: int, act, game_mode: int) -> list[dict]:
    from pongrl.envs.single import NOOP_MAX
    from pongrl.envs.two_player import LEFT, RIGHT, TwoPlayerGames, score_events

    frames: list[tuple] = []
    profile = agent.obs_profile
    game = TwoPlayerGames(1, mode=game_mode, autoreset=False, profiles=(profile,))
    rng = np.random.default_rng(seed)
    shots = []
    try:
        for _ in range(games):
            game.starts[0] = [int(rng.integers(0, NOOP_MAX + 1))]
            game.reset_game(0)
            frames.clear()
            while not game.done(0):
                actions = act(np.stack([game.observation(0, RIGHT, profile), game.observation(0, LEFT, profile)]))
                game.begin_step(0, int(actions[0]), int(actions[1]))
                complete = False
                while not complete:  # every raw frame's RAM, and who scored on it
                    before = game.step_rewards(0)
                    complete = game.play_frame(0)
                    after = game.step_rewards(0)
                    point_right, point_left, _, _ = score_events(after[0] - before[0], after[1] - before[1])
                    frames.append(read_frame(game.ram(0), "right" if point_right else "left" if point_left else None))
            shots += shots_of(frames)
    finally:
        game.close()
    return shots


def report(label: str, shots: list[dict], opponent: str) -> None:
    print(f"\n{label}")
    print(
        "| hitter | shots | steep (2+ down) | returned | returned: 1 across | 2 across | 3-4 across, flat "
        "| 3-4 across, steep | where on its paddle (median, 10-90%) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for hitter, name in (("right", "the checkpoint (right)"), ("left", opponent)):
        mine = [s for s in shots if s["hitter"] == hitter and s["outcome"] != "unreturned"]
        if not mine:
            print(f"| {name} | 0 | | | | | | | |")
            continue

        def share(group):
            if not group:
                return "-"
            back = sum(s["outcome"] == "returned" for s in group)
            return f"{back}/{len(group)} ({100 * back / len(group):.0f}%)"

        classes = (
            [s for s in mine if s["across"] == 1],
            [s for s in mine if s["across"] == 2],
            [s for s in mine if s["across"] >= 3 and s["down"] < 2],  # fast flat
            [s for s in mine if s["across"] >= 3 and s["down"] >= 2],  # fast steep
        )
        steep = sum(s["down"] >= 2 for s in mine)
        offsets = np.array([s["paddle_offset"] for s in mine])
        low, mid, high = np.percentile(offsets, [10, 50, 90])
        print(
            f"| {name} | {len(mine)} | {100 * steep / len(mine):.0f}% | {share(mine)} | "
            + " | ".join(share(group) for group in classes)
            + f" | {mid:+.0f} ({low:+.0f} to {high:+.0f}) |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--games", type=int, default=4, help="whole games of each kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--greedy", action="store_true", help="the most probable action instead of a sample")
    parser.add_argument(
        "--game-mode",
        type=int,
        choices=CHOICES["game_mode"],
        default=CLASSIC_MODE,
        help="the two-player variation of the games against itself",
    )
    parser.add_argument("--torch-threads", type=int, default=1)
    args = parser.parse_args()
    if args.games <= 0:
        sys.exit(f"shots.py: --games must be positive, got {args.games}")

    import torch

    from pongrl.agent import load_agent

    torch.set_num_threads(args.torch_threads)
    try:  # every checkpoint loads before any game is played, so a bad path costs nothing
        agents = [(path, load_agent(path)) for path in args.checkpoints]
    except PongrlError as error:
        sys.exit(f"shots.py: {error}")
    for path, agent in agents:
        rng = np.random.default_rng(args.seed)

        def act(obs):
            return agent.act(obs) if args.greedy else agent.sample(obs, rng)

        name = os.path.basename(path)
        report(
            f"{name} against the built-in AI ({args.games} games)",
            against_builtin(agent, args.games, args.seed, act),
            "the built-in AI (left)",
        )
        report(
            f"{name} against itself, two-player variation {args.game_mode} ({args.games} games)",
            against_itself(agent, args.games, args.seed, act, args.game_mode),
            "itself (left)",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
