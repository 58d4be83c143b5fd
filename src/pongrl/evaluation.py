"""Whole games against the built-in AI, scored with the true game score (-21..21), under both protocols:
exact (the seeds' deterministic emulator: greedy play from each of the 31 no-op starts gives the exact expected
score, and a policy may win it by repeating a few memorized games) and sticky actions 0.25 (the ALE v5
protocol the field compares on: every game differs, so it is estimated from many games, with its interval)."""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from pongrl.errors import PongrlError
from pongrl.game import NOOP_MAX
from pongrl.runner import BUILTIN, FunctionPlayer, GamePlan, spread
from pongrl.runner import play_games as run_games

STICKY_PROTOCOL = 0.25  # the ALE v5 protocol's sticky-action probability (Machado et al. 2018)
STICKY_GAMES = 100  # games of a sticky score: the 95% interval of a +19 agent is then about +-0.3 points


def play_games(
    act: Callable[[np.ndarray], np.ndarray],
    episodes: int,
    seed: int,
    profile: str = "standard",
    starts: list[int] | None = None,
    sticky_actions: float = 0.0,
) -> list[dict]:
    """Play `episodes` whole games with `act` (a batch of observations -> actions) on the right
    paddle against the built-in AI, showing the agent its observation `profile`. Each emulator plays
    a fixed quota of games, so short games do not crowd out long ones. With `starts` (no-op frame
    counts; `episodes` must be their number), plays one game from each start, in that order. Returns
    one dict per game: score, points won and lost, length, a fingerprint of its course (who won each point
    and the agent steps between points, the opening left out: games from different no-op starts that fall
    into the same rally pattern share it), and the start, when given.
    `sticky_actions` > 0 makes the emulator repeat the previous action on a frame with that
    probability (the ALE v5 protocol uses 0.25): a held-out test of a policy that the deterministic
    protocol lets fall into one repeated winning pattern."""
    if not 0.0 <= sticky_actions < 1.0:
        raise PongrlError(f"the sticky-action probability must be in [0, 1), got {sticky_actions}")
    if starts is not None and len(starts) != episodes:
        raise PongrlError(f"{len(starts)} starts for {episodes} games")
    if episodes <= 0:
        raise PongrlError(f"the number of games must be positive, got {episodes}")
    player = FunctionPlayer(act, profile)
    plans = [GamePlan(player, BUILTIN, start=None if starts is None else int(starts[i])) for i in range(episodes)]
    # ale-py's C++ vector env where it can (the standard profile, drawn starts): the fastest way to play
    records = run_games(
        spread(plans), seed=seed, sticky_actions=sticky_actions, vectorized=profile == "standard" and starts is None
    )
    games = []
    for record in records:
        game = {
            "score": record["first_points"] - record["second_points"],
            "points_won": record["first_points"],
            "points_lost": record["second_points"],
            "length": record["steps"],
            "truncated": record["cut"],
            "fingerprint": record["course"],
        }
        if starts is not None:
            game["start_noop_frames"] = record["start"]
        games.append(game)
    return games


def summarize(games: list[dict]) -> dict:
    """Mean, spread, the 95% interval of the mean (Student's t; a single game has none) and how many of
    the games were distinct (by their course, where recorded)."""
    from scipy import stats

    scores = np.array([g["score"] for g in games], np.float64)
    half_width = (
        float(stats.t.ppf(0.975, len(scores) - 1) * scores.std(ddof=1) / np.sqrt(len(scores)))
        if len(scores) > 1
        else None
    )
    summary = {
        "games": len(games),
        "mean": float(scores.mean()),
        "std": float(scores.std()),
        "ci95": None if half_width is None else [float(scores.mean() - half_width), float(scores.mean() + half_width)],
        "min": int(scores.min()),
        "max": int(scores.max()),
        "scores": [int(s) for s in scores],
    }
    if all("fingerprint" in g for g in games):
        summary["distinct_games"] = len({g["fingerprint"] for g in games})
    return summary


def count_outcomes(scores: Iterable[float]) -> dict[str, int]:
    """How many of the games with these scores (the agent's points minus the built-in AI's, as in a summary's
    "scores") the agent "won", "lost", and ended "even" (a game cut by the frame cap with the points level)."""
    scores = list(scores)
    won, lost = sum(score > 0 for score in scores), sum(score < 0 for score in scores)
    return {"won": won, "lost": lost, "even": len(scores) - won - lost}


def evaluate(
    agent, episodes: int = 10, seed: int = 0, epsilon: float = 0.0, sticky_actions: float = 0.0, chain: str = "pongrl"
) -> dict:
    """`agent` (an Agent or any agent spec: file, run, `zoo:NAME`, `hf://...`) against the built-in AI for
    `episodes` greedy games (epsilon-greedy with `epsilon`; sticky actions with probability `sticky_actions`,
    0.25 in the ALE v5 protocol), through pongrl's own games or, with `chain="card"`, for an agent with the
    self-play card's view, through the card's own chain (`evaluate_card_chain`). Returns the summary of
    `summarize` with the games under "per_game"."""
    from pongrl.agent import as_agent

    if not 0.0 <= epsilon <= 1.0:
        raise PongrlError(f"epsilon must be in [0, 1], got {epsilon}")
    if episodes <= 0:
        raise PongrlError(f"the number of games must be positive, got {episodes}")
    if chain not in ("pongrl", "card"):
        raise PongrlError(f"chain must be 'pongrl' or 'card', got {chain!r}")
    play = evaluate_card_chain if chain == "card" else evaluate_agent
    games = play(as_agent(agent), episodes, seed, epsilon, sticky_actions=sticky_actions)
    return {**summarize(games), "per_game": games}


def evaluate_agent(
    agent, episodes: int, seed: int, epsilon: float = 0.0, sample: bool = False, sticky_actions: float = 0.0
) -> list[dict]:
    """Any loaded agent (see pongrl.agent) against the built-in AI, in its own observation profile;
    greedy (with `epsilon`), or drawing its actions from its policy when `sample` is set."""
    rng = np.random.default_rng(seed)
    return play_games(
        lambda obs: agent.act(obs, epsilon, rng, sample=sample),
        episodes,
        seed,
        agent.obs_profile,
        sticky_actions=sticky_actions,
    )


CARD_CHAIN_SLOTS = 16  # games played side by side through the card's chain, one network call per step for all


def evaluate_card_chain(
    agent, episodes: int, seed: int, epsilon: float = 0.0, sticky_actions: float = 0.0
) -> list[dict]:
    """A seed-view agent against the built-in AI through the self-play card's own chain (Gymnasium's
    PongNoFrameskip-v4 and SuperSuit's wrappers, pongrl.envs.card_chain): the games a user of the card's
    `Agent` plays. Unlike pongrl's games, every game starts without no-op frames. Game k's emulator is seeded
    with seed + k, whatever the number of games. Returns one dict per game (score, points, length,
    whether the frame cap cut it)."""
    from pongrl.envs.card_chain import make_card_chain_env

    if agent.obs_profile != "seed":
        raise PongrlError(
            f"{agent.name} sees pongrl's {agent.obs_profile} view; the card's chain shows the self-play card's view"
        )
    if episodes <= 0:
        raise PongrlError(f"the number of games must be positive, got {episodes}")
    if not 0.0 <= sticky_actions < 1.0:
        raise PongrlError(f"the sticky-action probability must be in [0, 1), got {sticky_actions}")
    rng = np.random.default_rng(seed)
    envs = [make_card_chain_env(sticky_actions) for _ in range(min(episodes, CARD_CHAIN_SLOTS))]
    obs = np.zeros((len(envs), *envs[0].observation_space.shape), np.uint8)
    playing: list[dict | None] = [None] * len(envs)  # each slot's game so far
    games: list[dict] = [{} for _ in range(episodes)]
    queued = iter(range(episodes))

    def start(slot: int) -> None:
        game = next(queued, None)
        playing[slot] = None if game is None else {"game": game, "won": 0, "lost": 0, "length": 0}
        if game is not None:
            obs[slot] = envs[slot].reset(seed=seed + game)[0]

    for slot in range(len(envs)):
        start(slot)
    while any(playing):
        live = [slot for slot, game in enumerate(playing) if game is not None]
        for slot, action in zip(live, agent.act(obs[live], epsilon, rng)):
            obs[slot], reward, terminated, truncated, _ = envs[slot].step(int(action))
            game = playing[slot]
            game["won" if reward > 0 else "lost"] += abs(int(reward))
            game["length"] += 1
            if terminated or truncated:
                games[game["game"]] = {
                    "score": game["won"] - game["lost"],
                    "points_won": game["won"],
                    "points_lost": game["lost"],
                    "length": game["length"],
                    "truncated": bool(truncated and not terminated),
                }
                start(slot)
    for env in envs:
        env.close()
    return games


def evaluate_every_start(agent, seed: int = 0) -> list[dict]:
    """Greedy play from each of the protocol's starts (0..NOOP_MAX no-op frames), one game each. The
    emulator has no randomness of its own (no sticky actions) and greedy play none either, so a start
    fixes the whole game, and the mean over all starts is the exact expected score of greedy play
    under the protocol: no sampling error, nothing to gain from more games. `seed` only seeds the
    emulators, which must not change any game (a test checks that)."""
    starts = list(range(NOOP_MAX + 1))
    return play_games(lambda obs: agent.act(obs), len(starts), seed, agent.obs_profile, starts=starts)


def evaluate_protocols(agent, sticky_games: int = STICKY_GAMES, seed: int = 0) -> dict:
    """An agent's score against the built-in AI under both protocols: "exact" (greedy from each of the 31
    starts, with how many distinct games they were) and "sticky" (`sticky_games` greedy games under sticky
    actions 0.25 from seed `seed`, with the 95% interval of the mean). `agent` may be a spec."""
    from pongrl.agent import as_agent

    agent = as_agent(agent)
    exact = summarize(evaluate_every_start(agent))
    sticky = {
        **summarize(evaluate_agent(agent, sticky_games, seed, sticky_actions=STICKY_PROTOCOL)),
        "probability": STICKY_PROTOCOL,
        "seed": seed,
    }
    return {"exact": exact, "sticky": sticky}


def describe_protocols(result: dict) -> list[str]:
    """The two scores of `evaluate_protocols` in words, a line each."""
    exact, sticky = result["exact"], result["sticky"]
    won = count_outcomes(exact["scores"])["won"]
    interval = (
        "no interval from one game"
        if sticky["ci95"] is None
        else "95% interval {:+.2f}..{:+.2f}".format(*sticky["ci95"])
    )
    return [
        f"exact protocol: {exact['mean']:+.2f} over all {exact['games']} starts ({won} won; "
        f"{exact['distinct_games']} distinct games)",
        f"sticky actions {sticky['probability']:g}: {sticky['mean']:+.2f} over {sticky['games']} games "
        f"({interval}; seed {sticky['seed']})",
    ]
