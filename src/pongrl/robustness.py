"""Robustness: how an agent fares against every kind of opponent pongrl knows, not only the one it trained on.

An agent trained against the built-in AI can be a specialist of it: a paddle that only holds UP, or a short
program that chases the ball, may beat it. `robustness_report` plays the agent against
- the built-in AI, under both protocols (exact: greedy from each of the 31 starts; sticky actions 0.25);
- the battery of scripted opponents (pongrl.scripted): parked, held and still paddles, random buttons, ball
  chasers and an interceptor;
- other agents (the zoo's, by default), in the two-player game.
Two-player games alternate sides (the agent on the right in even games, mirrored on the left in odd ones), with
sticky actions for both players (0.25 by default: the field's protocol, and what keeps a deterministic pair of
players from replaying one game) and the serve assist (agents trained against the built-in AI never serve).

Each row: points won and conceded per game (means, with the 95% interval of the conceded points), the point
difference with its 95% interval, wins, losses and draws. The worst case is the row with the lowest mean point
difference; the mean is over all rows. `pongrl robustness AGENT` prints and writes it; zoo cards carry it.
"""

from __future__ import annotations

import os

import numpy as np

from pongrl.agent import as_agent
from pongrl.arena import play_two_player
from pongrl.errors import PongrlError
from pongrl.evaluation import STICKY_GAMES, STICKY_PROTOCOL, evaluate_protocols, summarize
from pongrl.runner import AgentPlayer
from pongrl.scripted import scripted_names, scripted_player
from pongrl import zoo

DEFAULT_GAMES = 10  # two-player games per opponent, sides alternating


def interval95(values) -> list[float] | None:
    """The 95% interval of a mean (Student's t), None for a single value."""
    return summarize([{"score": value} for value in values])["ci95"]


def row_from_games(opponent: str, kind: str, games: list[dict]) -> dict:
    """One row of the report from two-player game records scored for the agent (arena's records)."""
    won = np.array([game["first_points"] for game in games], np.float64)
    lost = np.array([game["second_points"] for game in games], np.float64)
    difference = won - lost
    outcomes = [game["outcome"] for game in games]
    return {
        "opponent": opponent,
        "kind": kind,
        "games": len(games),
        "wins": outcomes.count("win"),
        "losses": outcomes.count("loss"),
        "draws": outcomes.count("draw"),
        "points_won": float(won.mean()),
        "points_lost": float(lost.mean()),
        "points_lost_ci95": interval95(lost),
        "point_difference": float(difference.mean()),
        "ci95": interval95(difference),
        "most_points_lost": int(lost.max()),
    }


def row_from_builtin(protocol: str, summary: dict) -> dict:
    """A row for the built-in AI under one protocol, from an evaluation summary (scores are point differences)."""
    scores = summary["scores"]
    return {
        "opponent": f"built-in AI, {protocol}",
        "kind": "builtin",
        "games": summary["games"],
        "wins": sum(score > 0 for score in scores),
        "losses": sum(score < 0 for score in scores),
        "draws": sum(score == 0 for score in scores),
        "point_difference": summary["mean"],
        "ci95": summary.get("ci95"),
        **({"distinct_games": summary["distinct_games"]} if "distinct_games" in summary else {}),
    }


def builtin_scores(agent, spec: str | None, games: int, seed: int) -> tuple[dict, str]:
    """Both protocols' scores against the built-in AI: a zoo agent's from its card (measured on the shipped file,
    100 sticky games), any other agent's played now. Returns (scores, where they come from)."""
    if spec and zoo.is_zoo_spec(spec):
        scores = zoo.card(spec[len(zoo.PREFIX) :]).get("scores", {})
        exact, sticky = scores.get("every_start", {}), scores.get("sticky_actions", {})
        if exact.get("scores") and sticky.get("scores"):
            return {"exact": exact, "sticky": sticky}, "card"
    return evaluate_protocols(agent, games, seed), "played"


def robustness_report(
    agent,
    opponents: str = "all",
    games: int = DEFAULT_GAMES,
    agents: list | None = None,
    builtin: bool = True,
    builtin_games: int = STICKY_GAMES,
    sticky_actions: float = STICKY_PROTOCOL,
    seed: int = 0,
    progress=None,
) -> dict:
    """`agent` (an Agent or any agent spec) against the built-in AI (unless `builtin` is False), the scripted
    opponents `opponents` (comma-separated names of pongrl.scripted.BATTERY, "all", or "" for none) and the
    agents `agents` (specs or Agents; None: every other zoo agent), `games` two-player games each. `progress(name)`
    is called as each opponent starts. Returns the settings, the rows, the worst case and the mean."""
    if games <= 0:
        raise PongrlError(f"the number of games per opponent must be positive, got {games}")
    if not 0.0 <= sticky_actions < 1.0:
        raise PongrlError(f"sticky actions must be in [0, 1), got {sticky_actions}")
    progress = progress or (lambda name: None)
    spec = agent if isinstance(agent, str) else None
    agent = as_agent(agent)
    names = scripted_names(opponents) if opponents.strip() else []
    others = other_zoo_agents(agent) if agents is None else [as_agent(other) for other in agents]
    rows, source = [], None
    if builtin:
        progress("built-in AI")
        scores, source = builtin_scores(agent, spec, builtin_games, seed)
        rows += [
            row_from_builtin("exact", scores["exact"]),
            row_from_builtin(f"sticky {STICKY_PROTOCOL:g}", scores["sticky"]),
        ]
    me = AgentPlayer(agent)
    for index, name in enumerate(names):
        progress(name)
        opponent = scripted_player(name, "standard", seed=seed + index)
        records = play_two_player(me, opponent, games, seed, serve_assist=True, sticky_actions=sticky_actions)
        rows.append(row_from_games(name, "scripted", records))
    for other in others:
        progress(other.name)
        player = AgentPlayer(other)
        records = play_two_player(me, player, games, seed, serve_assist=True, sticky_actions=sticky_actions)
        rows.append(row_from_games(other.name, "agent", records))
    if not rows:
        raise PongrlError("no opponent to play: name scripted opponents or agents, or keep the built-in AI")
    worst = min(rows, key=lambda row: row["point_difference"])
    path = getattr(agent, "path", "")
    return {
        "agent": agent.name,
        "agent_sha256": zoo.file_sha256(path) if path and os.path.isfile(path) else None,
        "settings": {
            "games_per_opponent": games,
            "sticky_actions": sticky_actions,
            "serve_assist": True,
            "sides": "alternating",
            "seed": seed,
            "builtin_scores": source,
        },
        "rows": rows,
        "worst": {"opponent": worst["opponent"], "point_difference": worst["point_difference"]},
        "mean_point_difference": float(np.mean([row["point_difference"] for row in rows])),
    }


def other_zoo_agents(agent) -> list:
    """Every zoo agent but `agent` itself (told by its weights file) and the checkpoints of a study's series (their
    cards name a "series": snapshots of one run kept for probes, not players of their own)."""
    mine = getattr(agent, "path", "")
    specs = [zoo.PREFIX + name for name in zoo.names() if not zoo.card(name).get("series")]
    return [as_agent(spec) for spec in specs if zoo.weights_path(spec) != mine]


def format_report(report: dict) -> list[str]:
    """The report as a table, a line each, then the worst case and the mean."""
    lines = [
        f"{report['agent']}: {report['settings']['games_per_opponent']} two-player games per opponent, sides "
        f"alternating, sticky actions {report['settings']['sticky_actions']:g}, serve assist",
        f"{'opponent':<34} {'games':>5} {'W-L-D':>8} {'won':>6} {'lost':>6} {'difference (95% interval)':>28}",
    ]
    for row in report["rows"]:
        interval = "" if row["ci95"] is None else "({:+.1f}..{:+.1f})".format(*row["ci95"])
        won = "" if "points_won" not in row else f"{row['points_won']:.1f}"
        lost = "" if "points_lost" not in row else f"{row['points_lost']:.1f}"
        record = f"{row['wins']}-{row['losses']}-{row['draws']}"
        lines.append(
            f"{row['opponent']:<34} {row['games']:>5} {record:>8} {won:>6} {lost:>6} "
            f"{row['point_difference']:>+8.2f} {interval:>19}"
        )
    worst = report["worst"]
    lines.append(f"worst case: {worst['opponent']} ({worst['point_difference']:+.2f} a game)")
    lines.append(f"mean over opponents: {report['mean_point_difference']:+.2f} a game")
    return lines
