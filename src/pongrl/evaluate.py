"""Whole games against the built-in AI, scored with the true game score (-21..21)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from pongrl.envs import make_vector_env
from pongrl.envs.single import NOOP_MAX, GameVectorEnv
from pongrl.errors import PongrlError

MAX_PARALLEL_GAMES = 8


def play_games(act: Callable[[np.ndarray], np.ndarray], episodes: int, seed: int, profile: str = "standard",
               starts: list[int] | None = None, sticky_actions: float = 0.0) -> list[dict]:
    """Play `episodes` whole games with `act` (a batch of observations -> actions) on the right
    paddle against the built-in AI, showing the agent its observation `profile`. Each emulator plays
    a fixed quota of games, so short games do not crowd out long ones. With `starts` (no-op frame
    counts; `episodes` must be their number), plays one game from each start, in that order. Returns
    one dict per game: score, points won and lost, length (and the start, when given).
    `sticky_actions` > 0 makes the emulator repeat the previous action on a frame with that
    probability (the ALE v5 protocol uses 0.25): a held-out test of a policy that the deterministic
    protocol lets fall into one repeated winning pattern."""
    if not 0.0 <= sticky_actions < 1.0:
        raise PongrlError(f"the sticky-action probability must be in [0, 1), got {sticky_actions}")
    if starts is not None and len(starts) != episodes:
        raise PongrlError(f"{len(starts)} starts for {episodes} games")
    if episodes <= 0:
        raise PongrlError(f"the number of games must be positive, got {episodes}")
    num_envs = min(episodes, MAX_PARALLEL_GAMES)
    quota = [episodes // num_envs + (i < episodes % num_envs) for i in range(num_envs)]
    env_starts = None
    if starts is not None:  # consecutive slices, so that the games come back in the order of `starts`
        bounds = np.cumsum([0] + quota)
        env_starts = [list(starts[bounds[i]:bounds[i + 1]]) for i in range(num_envs)]
        env = GameVectorEnv(num_envs, seed, profile, env_starts, sticky_actions)
        obs, _ = env.reset()
    elif profile == "standard":
        env, obs = make_vector_env(num_envs, seed, sticky_actions=sticky_actions)
    else:
        env = GameVectorEnv(num_envs, seed, profile, sticky_actions=sticky_actions)
        obs, _ = env.reset()
    try:
        won = np.zeros(num_envs, np.int64)
        lost = np.zeros(num_envs, np.int64)
        length = np.zeros(num_envs, np.int64)
        games: list[list[dict]] = [[] for _ in range(num_envs)]
        while any(len(games[i]) < quota[i] for i in range(num_envs)):
            obs, reward, terminated, truncated, _ = env.step(np.asarray(act(obs), dtype=np.int64))
            won += reward > 0
            lost += reward < 0
            length += 1
            for i in np.flatnonzero(terminated | truncated):
                if len(games[i]) < quota[i]:
                    game = {"score": int(won[i] - lost[i]), "points_won": int(won[i]), "points_lost": int(lost[i]),
                            "length": int(length[i]), "truncated": bool(truncated[i])}
                    if env_starts is not None:
                        game["start_noop_frames"] = int(env_starts[i][len(games[i])])
                    games[i].append(game)
                won[i] = lost[i] = length[i] = 0
    finally:
        env.close()
    return [game for env_games in games for game in env_games]


def summarize(games: list[dict]) -> dict:
    scores = np.array([g["score"] for g in games], np.float64)
    return {
        "games": len(games),
        "mean": float(scores.mean()),
        "std": float(scores.std()),
        "min": int(scores.min()),
        "max": int(scores.max()),
        "scores": [int(s) for s in scores],
    }


def evaluate_agent(agent, episodes: int, seed: int, epsilon: float = 0.0, sample: bool = False,
                   sticky_actions: float = 0.0) -> list[dict]:
    """Any loaded agent (see pongrl.agent) against the built-in AI, in its own observation profile;
    greedy (with `epsilon`), or drawing its actions from its policy when `sample` is set."""
    rng = np.random.default_rng(seed)
    return play_games(lambda obs: agent.act(obs, epsilon, rng, sample=sample), episodes, seed, agent.obs_profile,
                      sticky_actions=sticky_actions)


def evaluate_every_start(agent, seed: int = 0) -> list[dict]:
    """Greedy play from each of the protocol's starts (0..NOOP_MAX no-op frames), one game each. The
    emulator has no randomness of its own (no sticky actions) and greedy play none either, so a start
    fixes the whole game, and the mean over all starts is the exact expected score of greedy play
    under the protocol: no sampling error, nothing to gain from more games. `seed` only seeds the
    emulators, which must not change any game (a test checks that)."""
    starts = list(range(NOOP_MAX + 1))
    return play_games(lambda obs: agent.act(obs), len(starts), seed, agent.obs_profile, starts=starts)
