"""The robustness table: agents against the built-in AI under both protocols, and against each other.

    python benchmarks/robustness.py zoo:dqn zoo:ppo zoo:selfplay zoo:selfplay-separate \
        --out ~/runs/robustness --games 20 > docs/robustness.md

One row per agent: its exact score (greedy from each of the 31 no-op starts, and how many distinct games
those were), its score under sticky actions 0.25 (100 games, 95% interval), then its mean point difference
against every other agent in the two-player game (`--games` per pair, sides alternating, with the serve
assist, since agents trained against the built-in AI never serve; wins-losses beside it). A zoo agent's
scores against the built-in AI are read from its card (measured on the shipped file by zoo_entry.py);
any other agent is scored here. The two-player matches are cached in OUT/matches.jsonl, as a league's.
"""

import argparse
import os
import sys

from pongrl import zoo
from pongrl.agent import load_agent
from pongrl.errors import PongrlError
from pongrl.evaluation import STICKY_GAMES, evaluate_protocols, summarize
from pongrl.league import collect_entrants, play_league


def builtin_scores(spec: str) -> dict:
    """Both protocols' scores: from a zoo card (a card scored before the interval was recorded gets it from
    its per-game scores, and no count of distinct games), else played now."""
    if zoo.is_zoo_spec(spec):
        scores = zoo.card(spec[len(zoo.PREFIX) :]).get("scores", {})
        exact, sticky = scores.get("every_start", {}), scores.get("sticky_actions", {})
        if exact and sticky.get("scores"):
            if not sticky.get("ci95"):
                sticky = {**sticky, "ci95": summarize([{"score": s} for s in sticky["scores"]])["ci95"]}
            return {"exact": exact, "sticky": sticky}
    return evaluate_protocols(load_agent(spec), STICKY_GAMES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", nargs="+", help="agents (zoo:NAME, checkpoints, runs...), at least two")
    parser.add_argument("--out", required=True, help="folder for the two-player matches (cached)")
    parser.add_argument(
        "--games", type=int, default=20, help="two-player games per pair, sides alternating (default 20)"
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="matches played at once")
    args = parser.parse_args()
    try:
        entrants = collect_entrants(args.agents, include_builtin=False)
        if len(entrants) < 2:
            raise PongrlError("give at least two agents")
        pairs = [(i, j) for i in range(len(entrants)) for j in range(i + 1, len(entrants))]
        records = play_league(
            entrants,
            pairs,
            args.out,
            args.games,
            seed=0,
            sample=False,
            max_frames=100_000,
            workers=args.workers,
            show_progress=sys.stderr.isatty(),
            serve_assist=True,
            verbose=True,
        )
        scores = {
            entrant.name: builtin_scores(entrant.path if not zoo.is_zoo_spec(entrant.name) else entrant.name)
            for entrant in entrants
        }
    except PongrlError as error:
        sys.exit(f"robustness.py: {error}")
    versus = {}
    for record in records:
        summary = record["summary"]
        versus[(record["first_name"], record["second_name"])] = (
            summary["mean_point_difference"],
            summary["wins"],
            summary["losses"],
        )
        versus[(record["second_name"], record["first_name"])] = (
            -summary["mean_point_difference"],
            summary["losses"],
            summary["wins"],
        )
    names = [entrant.name for entrant in entrants]
    print(
        "| agent | vs built-in AI, exact (31 starts) | distinct games | vs built-in AI, sticky 0.25 (95% interval) | "
        + " | ".join(f"vs {name}" for name in names)
        + " |"
    )
    print("|---|---:|---:|---:|" + "---:|" * len(names))
    for name in names:
        exact, sticky = scores[name]["exact"], scores[name]["sticky"]
        low, high = sticky["ci95"]
        cells = ["" if other == name else "{:+.1f} ({}-{})".format(*versus[(name, other)]) for other in names]
        print(
            f"| {name} | {exact['mean']:+.2f} | {exact.get('distinct_games', '-')} | {sticky['mean']:+.2f} "
            f"({low:+.1f}..{high:+.1f}, {sticky['games']} games) | " + " | ".join(cells) + " |"
        )
    print(
        f"\nTwo-player cells: the row agent's mean point difference per game against the column agent, and its "
        f"wins-losses, over {args.games} games (sides alternating, serve assist)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
