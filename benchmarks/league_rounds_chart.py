"""The round curves of a league that went on in a new directory (a new machine, started from the last committed
main), drawn as one: each league's `rounds.csv` placed after the rounds before it, with a line where its settings
changed (its `league.json` history) and where it began, numbered and listed under the chart.

    python benchmarks/league_rounds_chart.py docs/data/league docs/data/league2:7 docs/data/league3:8 \
        --out docs/assets/league/rounds_all.png

Each argument is a folder with a league's rounds.csv and league.json (as benchmarks/league_state.py writes them),
with `:N` for the round of the earlier league whose main it started from (its round 0 is drawn at N, beside that
round's own point: the same agent, measured again). Prints the rows it drew.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import sys

from pongrl.league.settings import LeagueSettings

CURVES = (
    ("builtin_sticky", "main vs built-in AI, sticky 0.25"),
    ("builtin_exact", "main vs built-in AI, 31 exact starts"),
    ("battery_worst", "main's worst case, battery"),
    ("league_worst", "main's worst case, league"),
    ("main_exploiter_points", "main exploiter vs the main it attacked"),
    ("league_exploiter_points", "league exploiter vs that main"),
)


def read_league(folder: str) -> tuple[list[dict], list[dict], dict]:
    with open(os.path.join(folder, "rounds.csv")) as handle:
        rounds = list(csv.DictReader(handle))
    with open(os.path.join(folder, "league.json")) as handle:
        saved = json.load(handle)
    # A league saved before a setting existed ran with its default, as pongrl reads it (pongrl.league.settings.load).
    settings = {**dataclasses.asdict(LeagueSettings()), **saved["settings"]}
    return rounds, saved["history"], settings


def initial_settings(settings: dict, history: list[dict]) -> dict:
    """A league's settings at its round 0: its current ones with every recorded change undone."""
    first = dict(settings)
    for change in reversed(history):
        if isinstance(change["settings"], dict):
            first.update({name: old for name, (old, _) in change["settings"].items()})
    return first


def changed(before: dict, after: dict) -> str:
    """The recipe's settings that differ between two leagues (where it starts and its seed left out)."""
    names = sorted(name for name in after if name not in ("init", "seed") and before.get(name) != after[name])
    return ", ".join(f"{name} {before.get(name)} -> {after[name]}" for name in names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("leagues", nargs="+", metavar="FOLDER[:ROUND]")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(11.5, 5.4))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    marks = []  # (round, text) for the vertical lines
    previous = None
    for number, entry in enumerate(args.leagues):
        folder, _, offset = entry.partition(":")
        try:
            rounds, history, settings = read_league(folder)
        except (OSError, KeyError, json.JSONDecodeError) as error:
            print(f"league_rounds_chart.py: {folder}: {error}", file=sys.stderr)
            return 1
        start = int(offset or 0)
        if previous is not None:
            difference = changed(previous, initial_settings(settings, history))
            marks.append((start, f"new league from round {start}'s main" + (f": {difference}" if difference else "")))
        previous = settings
        for change in history:
            if isinstance(change["settings"], dict):
                text = ", ".join(f"{name} {old} -> {new}" for name, (old, new) in change["settings"].items())
                marks.append((start + change["round"], text))
        x = [start + int(row["round"]) for row in rounds]
        for (column, label), colour in zip(CURVES, colours):
            y = [float(row[column]) if row[column] else float("nan") for row in rounds]
            axes.plot(
                x,
                y,
                marker="o",
                color=colour,
                linestyle="-" if number == 0 else "--",
                label=label if number == 0 else None,
            )
        for row, at in zip(rounds, x):
            print(f"{folder}: round {row['round']} at {at}: " + ", ".join(f"{c} {row[c]}" for c, _ in CURVES))
    for index, (at, _) in enumerate(marks, start=1):
        axes.axvline(at, color="black", linewidth=0.8, linestyle=":")
        axes.text(at + 0.08, 19.5, str(index), fontsize=8, va="top")
    notes = "\n".join(f"{index}: round {at}, {text}" for index, (at, text) in enumerate(marks, start=1))
    figure.text(0.01, 0.01, notes, fontsize=7, va="bottom", ha="left")
    axes.axhline(0, color="grey", linewidth=0.8)
    axes.set_xlabel("round (a later league's rounds dashed, counted on from the main it started from)")
    axes.set_ylabel("points per game")
    axes.set_ylim(-21.5, 21.5)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes.grid(alpha=0.3)
    figure.tight_layout(rect=(0, 0.03 + 0.027 * len(marks), 1, 1))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
