"""Copy a league's small state into the repository, so that a new machine can continue from it and the docs can
show it: its settings and history, the rounds' plans, the payoff table and round summaries, the charts, and the
latest complete round's main in float16.

    python benchmarks/league_state.py ~/runs/league --out docs/data/league --charts docs/assets/league

Prints what it wrote. The league itself (runs, checkpoints, every member's weights) stays where it is.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

import torch

from pongrl.agent import load_agent, save_safetensors_agent
from pongrl.errors import PongrlError
from pongrl.league import schedule, settings, tables


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("league_dir")
    parser.add_argument("--out", required=True, help="folder for the league's files")
    parser.add_argument("--charts", required=True, help="folder for its charts")
    args = parser.parse_args()
    try:
        settings.load(args.league_dir)
    except PongrlError as error:
        print(f"league_state.py: {error}", file=sys.stderr)
        return 1
    made = tables.write_tables(args.league_dir)
    rounds = tables.complete_rounds(args.league_dir)
    os.makedirs(os.path.join(args.out, "rounds"), exist_ok=True)
    os.makedirs(args.charts, exist_ok=True)
    written = []
    for name in ("league.json", "payoff.csv", "payoff.json", "rounds.csv"):
        source = os.path.join(args.league_dir, name)
        if os.path.exists(source):
            written.append(shutil.copy(source, os.path.join(args.out, name)))
    for number in range(schedule.rounds_started(args.league_dir)):
        written.append(shutil.copy(schedule.round_file(args.league_dir, number), os.path.join(args.out, "rounds")))
    for chart in made.get("charts", []):
        written.append(shutil.copy(chart, args.charts))
    if rounds > 1:
        main_name = schedule.member_name("main", rounds - 1)
        agent = load_agent(os.path.join(args.league_dir, schedule.member_file(main_name)))
        path = os.path.join(args.out, f"{main_name}.safetensors")
        for old in os.listdir(args.out):  # only the latest main is kept here
            if old.startswith("main-r") and old.endswith(".safetensors") and old != os.path.basename(path):
                os.unlink(os.path.join(args.out, old))
        # Saved again, the same weights give other bytes (the metadata's order is not fixed): a main already
        # written is left as it is, so that its file changes only when the main does.
        if not (os.path.exists(path) and same_weights(load_agent(path), agent)):
            save_safetensors_agent(path, agent.state_dict(), "selfplay", agent.env_step, "seed", torch.float16)
            written.append(path)
    print("\n".join(written))
    return 0


def same_weights(saved, agent) -> bool:
    """Whether `saved` (a float16 copy) holds `agent`'s weights at float16 and the same env step."""
    ours, theirs = saved.state_dict(), agent.state_dict()
    return (
        saved.env_step == agent.env_step
        and ours.keys() == theirs.keys()
        and all(torch.equal(ours[k].half(), theirs[k].half()) for k in ours)
    )


if __name__ == "__main__":
    sys.exit(main())
