"""Matches between any two players: pongrl checkpoints of any algorithm, bare seed-format
state_dicts, or the game's built-in AI.

- An agent against the built-in AI plays the single-player emulator on the right paddle (the
  built-in AI's opponent side, where every agent trained), in its own observation profile.
- Two agents meet on the two-player emulator (pongrl.envs.two_player); each sees its own profile, the one
  on the left mirrored. Games come in pairs with the same start and the sides swapped, so neither
  side's advantage biases a match, and an agent against itself scores exactly zero on average.

Results are always given from the first player's point of view. A game is won by reaching 21
points; a game cut by the frame cap is a draw, whatever the score when it was cut (its point
difference still counts in the mean).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from pongrl.agent import Agent, load_agent
from pongrl.checkpoint import run_name
from pongrl.errors import PongrlError
from pongrl.game import CLASSIC_MODE, MAX_CYCLES, MAX_PARALLEL_GAMES, MAX_START_NOOP_FRAMES
from pongrl.runner import BUILTIN as BUILTIN_AI
from pongrl.runner import AgentPlayer, GamePlan, play_games, spread
from pongrl.zoo import file_sha256

BUILTIN = "builtin"


@dataclass
class Player:
    """One side of a match. `agent` is None for the built-in AI."""

    name: str
    agent: Agent | None
    sha256: str
    env_step: int = 0
    path: str = ""

    @property
    def is_builtin(self) -> bool:
        return self.agent is None


def player_name(path: str, env_step: int) -> str:
    """A short readable name: `<run>@<step>` for a run's checkpoint, else the file name."""
    run = run_name(path)
    return f"{run}@{env_step}" if run else os.path.basename(path)


def load_player(spec: str) -> Player:
    """`builtin` (any case), a checkpoint file, a run directory (its latest checkpoint), a bare
    seed-format state_dict, a safetensors agent, `zoo:NAME` or `hf://OWNER/REPO/FILE`."""
    if spec.strip().lower() == BUILTIN:
        return Player("built-in AI", None, BUILTIN)
    agent = load_agent(spec)
    name = agent.name if agent.name != agent.path else player_name(agent.path, agent.env_step)
    return Player(name, agent, file_sha256(agent.path), agent.env_step, agent.path)


def as_player(player) -> Player:
    """A Player as given; an Agent as a player; a spec (`builtin` or any agent spec) loaded (see load_player)."""
    if isinstance(player, Player):
        return player
    if isinstance(player, Agent):
        path = getattr(player, "path", "")
        sha256 = file_sha256(path) if path and os.path.isfile(path) else ""
        return Player(player.name, player, sha256, player.env_step, path)
    if not isinstance(player, (str, os.PathLike)):
        raise PongrlError(f"expected an agent, 'builtin' or the spec of an agent, got {type(player).__name__}")
    return load_player(os.fspath(player))


def duel(
    first,
    second,
    games: int = 10,
    seed: int = 0,
    sample: bool | tuple[bool, bool] = False,
    max_frames: int = MAX_CYCLES,
    serve_assist: bool = False,
    sticky_actions: float = 0.0,
    game_mode: int = CLASSIC_MODE,
) -> dict:
    """A match between two players (each an Agent, `"builtin"` or an agent spec), sides alternating; the
    arguments are play_match's. Returns the players' names and steps, the summary of `summarize_match`
    (scored for `first`) and the games under "per_game"."""
    first, second = as_player(first), as_player(second)
    per_game = play_match(first, second, games, seed, sample, max_frames, serve_assist, sticky_actions, game_mode)
    return {
        "first": first.name,
        "second": second.name,
        "first_env_step": first.env_step,
        "second_env_step": second.env_step,
        **summarize_match(per_game),
        "per_game": per_game,
    }


def play_match(
    first: Player,
    second: Player,
    games: int,
    seed: int,
    sample: bool | tuple[bool, bool] = False,
    max_frames: int = MAX_CYCLES,
    serve_assist: bool = False,
    sticky_actions: float = 0.0,
    game_mode: int = CLASSIC_MODE,
) -> list[dict]:
    """Play `games` games; one dict per game, scored for `first`. `sample` (both players, or a pair for
    first and second) draws actions from the policies instead of playing greedily. `serve_assist`
    serves for agents that never learned to (two-agent games only; see pongrl.envs.two_player).
    `sticky_actions` is the probability that a player's previous action repeats on a frame (against the
    built-in AI the emulator's own; between two agents drawn per frame and player). `game_mode` (two-agent games
    only) is the cartridge's two-player variation, 3 or 4 (pong_v3's classic)."""
    samples = (sample, sample) if isinstance(sample, bool) else tuple(sample)
    if games <= 0:
        raise PongrlError(f"the number of games must be positive, got {games}")
    if first.is_builtin and second.is_builtin:
        raise PongrlError("the built-in AI cannot play against itself: name at least one agent")
    if first.is_builtin or second.is_builtin:
        refuse_game_mode_against_builtin(game_mode)
        agent_first = not first.is_builtin
        agent = (first if agent_first else second).agent
        player = AgentPlayer(agent, np.random.default_rng([seed, 1]), sample=samples[0] if agent_first else samples[1])
        plans = [
            GamePlan(
                player if agent_first else BUILTIN_AI, BUILTIN_AI if agent_first else player, first_right=agent_first
            )
            for _ in range(games)
        ]
        records = play_games(
            spread(plans), seed=seed, sticky_actions=sticky_actions, vectorized=agent.obs_profile == "standard"
        )
        return [_game_record(record) for record in records]
    players = (
        AgentPlayer(first.agent, np.random.default_rng([seed, 1]), sample=samples[0]),
        AgentPlayer(second.agent, np.random.default_rng([seed, 2]), sample=samples[1]),
    )
    return play_two_player(*players, games, seed, max_frames, serve_assist, game_mode, sticky_actions)


def refuse_game_mode_against_builtin(game_mode: int) -> None:
    if game_mode != CLASSIC_MODE:
        raise PongrlError(
            "--game-mode sets the variation of games between two agents; against the built-in AI "
            "the game is the single-player one"
        )


def _game_record(record: dict) -> dict:
    """A game record of the runner as a match reports it (a game cut by the frame cap is a draw)."""
    first_points, second_points = record["first_points"], record["second_points"]
    outcome = "draw" if record["cut"] else ("win" if first_points > second_points else "loss")
    return {
        "first_side": record["first_side"],
        "first_points": first_points,
        "second_points": second_points,
        "score": first_points - second_points,
        "outcome": outcome,
        "cut": record["cut"],
        "first_serve_penalties": record["first_serve_penalties"],
        "second_serve_penalties": record["second_serve_penalties"],
        "length": record["steps"],
        "start_noop_frames": record["start"],
    }


def play_two_player(
    first,
    second,
    games: int,
    seed: int,
    max_frames: int = MAX_CYCLES,
    serve_assist: bool = False,
    game_mode: int = CLASSIC_MODE,
    sticky_actions: float = 0.0,
) -> list[dict]:
    """Games between two players of the runner (agents, scripted paddles) on the two-player emulator, scored for
    `first`. Games 2k and 2k+1 share a start (a number of no-op frames drawn from `seed`); the first player takes
    the right paddle in even games and the left one in odd games. They are played in waves of MAX_PARALLEL_GAMES
    games that start together."""
    if not 0.0 <= sticky_actions < 1.0:  # at 1 a player's first action would repeat for ever
        raise PongrlError(f"the sticky-action probability must be in [0, 1), got {sticky_actions}")
    starts = np.random.default_rng([seed, 0]).integers(0, MAX_START_NOOP_FRAMES, size=(games + 1) // 2)
    plans = [GamePlan(first, second, first_right=g % 2 == 0, start=int(starts[g // 2])) for g in range(games)]
    records = []
    for wave in range(0, games, MAX_PARALLEL_GAMES):
        records += play_games(
            [[plan] for plan in plans[wave : wave + MAX_PARALLEL_GAMES]],
            max_frames=max_frames,
            serve_assist=serve_assist,
            game_mode=game_mode,
            sticky_actions=sticky_actions,
        )
    return [_game_record(record) for record in records]


def wilson_interval(successes: float, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a proportion (draws count as half successes)."""
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return (max(0.0, centre - half), min(1.0, centre + half))


def summarize_match(games: list[dict]) -> dict:
    """Wins, losses, draws, win rate (draws count half) with its 95% interval, mean point difference."""
    outcomes = [g["outcome"] for g in games]
    wins, losses, draws = outcomes.count("win"), outcomes.count("loss"), outcomes.count("draw")
    scores = np.array([g["score"] for g in games], np.float64)
    low, high = wilson_interval(wins + 0.5 * draws, len(games))
    return {
        "games": len(games),
        "wins": wins,
        "losses": losses,
        "draws": draws,
        "win_rate": (wins + 0.5 * draws) / len(games),
        "win_rate_95": [low, high],
        "mean_point_difference": float(scores.mean()),
        "point_difference_std": float(scores.std()),
        "point_difference_stderr": float(scores.std(ddof=1) / math.sqrt(len(scores))) if len(scores) > 1 else 0.0,
        "first_serve_penalties": int(sum(g["first_serve_penalties"] for g in games)),
        "second_serve_penalties": int(sum(g["second_serve_penalties"] for g in games)),
    }
