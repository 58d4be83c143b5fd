"""Copy a league's small state into the repository, so that a new machine can continue from it and the docs can
show it: its settings and history, the rounds' plans, the payoff table and round summaries, the charts, and the
newest main in float16 as soon as it is trained (before its matches: a lost league
directory then costs no more than their measurements).

    python benchmarks/league_state.py ~/runs/league --out docs/data/league --charts docs/assets/league

An older main's file there is removed when a newer one is written, unless `--keep` names it (a main the docs
measure further). Prints what it wrote. The league itself (runs, checkpoints, every member's weights) stays where it is.
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
from pongrl.opponents import weights_digest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("league_dir")
    parser.add_argument("--out", required=True, help="folder for the league's files")
    parser.add_argument("--charts", required=True, help="folder for its charts")
    parser.add_argument(
        "--keep", default="", help="older mains to keep in --out, comma-separated (e.g. main-r001: one the docs cite)"
    )
    args = parser.parse_args()
    try:
        settings.load(args.league_dir)
    except PongrlError as error:
        print(f"league_state.py: {error}", file=sys.stderr)
        return 1
    made = tables.write_tables(args.league_dir)
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
    trained = [
        number
        for number in range(1, schedule.rounds_started(args.league_dir))
        if schedule.done(args.league_dir, f"r{number:03d}-main")
    ]
    if trained:
        main_name = schedule.member_name("main", trained[-1])
        agent = load_agent(os.path.join(args.league_dir, schedule.member_file(main_name)))
        path = os.path.join(args.out, f"{main_name}.safetensors")
        keep = {f"{name.strip()}.safetensors" for name in args.keep.split(",")} | {os.path.basename(path)}
        for old in os.listdir(args.out):  # the latest main is kept here, and the ones asked for
            if old.startswith("main-r") and old.endswith(".safetensors") and old not in keep:
                os.unlink(os.path.join(args.out, old))
        # Saved again, the same weights give other bytes (the metadata's order is not fixed): a main already
        # written is left as it is, so that its file changes only when the main does.
        if not (os.path.exists(path) and unchanged(path, agent)):
            save_safetensors_agent(path, agent.state_dict(), "selfplay", agent.env_step, "seed", torch.float16)
            written.append(path)
    print("\n".join(written))
    return 0


def unchanged(path: str, agent) -> bool:
    """Whether the float16 copy at `path` holds `agent` as it would be saved now: its env step, and its weights at
    float16."""
    saved = load_agent(path)
    at_half = {name: tensor.half() for name, tensor in agent.state_dict().items()}
    return saved.env_step == agent.env_step and weights_digest(saved.state_dict()) == weights_digest(at_half)


if __name__ == "__main__":
    sys.exit(main())
