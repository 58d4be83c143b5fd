"""Put robustness reports and exploitability into the zoo's cards, where `pongrl zoo`, `pongrl play`'s default and
the docs read them.

    pongrl robustness zoo:dqn --games 10 --torch-threads 1 --out ~/runs/robustness/dqn.json
    python benchmarks/zoo_robustness.py ~/runs/robustness/*.json --hardware "2-core AMD EPYC (AVX2), no GPU"

    pongrl exploit zoo:selfplay-builtin --steps 1000000 --run-dir ~/runs/exploit/sb --torch-threads 1
    python benchmarks/zoo_robustness.py --exploit selfplay-builtin ~/runs/exploit/sb --hardware "..."
    pongrl exploit zoo:selfplay-builtin --init zoo:selfplay-mix --run-dir ~/runs/exploit/sb-warm --torch-threads 1
    python benchmarks/zoo_robustness.py --exploit selfplay-builtin ~/runs/exploit/sb-warm --hardware "..."

Each report (the JSON `pongrl robustness --out` writes) goes into the card of the zoo agent it judged, under
"robustness": its rows, worst case, mean, settings, the command that made it, the date and the hardware. A report
of an agent outside the zoo is refused, and so is one whose agent's weights changed since (the SHA-256 the
report holds). `--exploit NAME RUN` writes the exploit run's exploitability at each of `--budgets` agent steps
(pongrl.exploitability) under "exploitability", one entry per recipe (where the exploiter started and its seed):
a run of a recipe the card already holds replaces that entry, another recipe is added beside it; each entry keeps
the run's whole curve for the chart of `pongrl card zoo:NAME`, and `--compare-with OTHER` puts OTHER's exploiters
of the same recipes on that chart. A run that froze other weights than NAME's is refused (a run without
checkpoints must name zoo:NAME as its target).
"""

import argparse
import json
import os
import sys
import time

import pongrl
from pongrl import zoo
from pongrl.checkpoint import atomic_write_bytes
from pongrl.exploiters import exploit_curve
from pongrl.opponents import weights_digest

EXPLOIT_MEANING = (
    "PPO exploiters trained against this agent, frozen (every game against it, both sides, sticky actions "
    "0.25): points per game over the exploiter's last 20-odd games by each budget of agent steps"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", help="robustness reports (pongrl robustness ... --out FILE.json)")
    parser.add_argument("--hardware", required=True, help="the machine that played the games, in words")
    parser.add_argument("--exploit", nargs=2, metavar=("NAME", "RUN"), help="a zoo agent and its exploit run")
    parser.add_argument("--budgets", default="250000,500000,1000000", help="agent steps, comma-separated")
    parser.add_argument(
        "--compare-with",
        metavar="OTHER",
        help="with --exploit: the zoo agent whose exploiters of the same recipes the card's chart shows beside",
    )
    args = parser.parse_args()
    if args.compare_with and not args.exploit:
        sys.exit("zoo_robustness.py: --compare-with goes with --exploit NAME RUN")
    if args.exploit:
        try:
            budgets = [int(budget) for budget in args.budgets.split(",")]
        except ValueError:
            sys.exit(f"zoo_robustness.py: --budgets {args.budgets!r}: give agent steps, comma-separated")
        write_exploitability(*args.exploit, budgets, args.hardware, args.compare_with)
    for path in args.reports:
        with open(path) as handle:
            report = json.load(handle)
        spec = report.get("agent", "")
        if not zoo.is_zoo_spec(spec) or spec[len(zoo.PREFIX) :] not in zoo.names():
            sys.exit(f"zoo_robustness.py: {path}: judges {spec!r}, not an agent of the zoo")
        name = spec[len(zoo.PREFIX) :]
        card = zoo.card(name)
        judged = report.get("agent_sha256")
        if judged is not None and judged != zoo.file_sha256(zoo.weights_path(spec)):
            sys.exit(f"zoo_robustness.py: {path}: judged other weights than {spec}'s today")
        card["robustness"] = {
            **{key: report[key] for key in ("rows", "worst", "mean_point_difference", "settings")},
            "command": (report.get("command") or f"pongrl robustness {spec}").replace(os.path.expanduser("~"), "~"),
            "date": time.strftime("%Y-%m-%d", time.localtime(os.path.getmtime(path))),
            "hardware": args.hardware,
        }
        card_path = os.path.join(zoo.FOLDER, name + ".json")
        atomic_write_bytes(card_path, (json.dumps(card, indent=1) + "\n").encode())
        worst = report["worst"]
        print(f"{spec}: worst case {worst['opponent']} {worst['point_difference']:+.2f}, written to {card_path}")
    return 0


def write_exploitability(name: str, run_dir: str, budgets: list[int], hardware: str, compare_with=None) -> None:
    for agent in (name, compare_with or name):
        if agent not in zoo.names():
            sys.exit(f"zoo_robustness.py: {agent}: not an agent of the zoo")
    digest = weights_digest(pongrl.load_agent(zoo.PREFIX + name).state_dict())
    try:
        run = pongrl.Run(run_dir)
        by_budget = [pongrl.exploitability(run, steps=budget) for budget in budgets]
    except pongrl.PongrlError as error:
        sys.exit(f"zoo_robustness.py: {error}")
    rows = []
    for budget, found in zip(budgets, by_budget):
        if not found["games"]:
            sys.exit(f"zoo_robustness.py: {run_dir}: no finished game by {budget:,} agent steps")
        # Without a checkpoint (a run's curve copied alone) the weights it met are known only by the name it gave.
        met = found["target_sha256"] == digest if found["target_sha256"] else found["target"] == zoo.PREFIX + name
        if not met:
            sys.exit(f"zoo_robustness.py: {run_dir}: its exploiter met other weights than zoo:{name}'s")
        rows.append(
            {
                "budget_agent_steps": budget,
                "step": found["step"],
                "games": found["games"],
                **{key: round(found[key], 1) for key in ("points_won_per_game", "points_lost_per_game")},
                "mean_point_difference": round(found["mean_point_difference"], 1),
            }
        )
    config = run.config
    init = f" --init {config.init}" if config.init else ""
    entry = {
        "recipe": f"warm-started from {config.init}" if config.init else "from random weights",
        "init": config.init,
        "seed": config.seed,
        "rows": rows,
        # the whole curve, for the card's chart: each logged step's points a game over the last 20 games
        "curve": [[step, round(value, 2)] for step, value in exploit_curve(run)],
        "command": f"pongrl exploit zoo:{name}{init} --seed {config.seed} --steps {config.total_steps} "
        "--run-dir RUN --torch-threads 1 --checkpoint-every 100000",
        "date": time.strftime("%Y-%m-%d", time.localtime(os.path.getmtime(os.path.join(run_dir, "metrics.csv")))),
        "hardware": hardware,
    }
    card = zoo.card(name)
    held = card.get("exploitability", {})
    runs = [other for other in held.get("runs", []) if (other["init"], other["seed"]) != (config.init, config.seed)]
    card["exploitability"] = {"meaning": EXPLOIT_MEANING, "runs": runs + [entry]}
    compared_with = compare_with or held.get("compared_with")  # kept from the card unless given anew
    if compared_with:
        card["exploitability"]["compared_with"] = compared_with
    card_path = os.path.join(zoo.FOLDER, name + ".json")
    atomic_write_bytes(card_path, (json.dumps(card, indent=1) + "\n").encode())
    differences = ", ".join(f"{row['mean_point_difference']:+.1f}" for row in rows)
    print(f"zoo:{name}: exploitability ({entry['recipe']}, seed {config.seed}) {differences}, written to {card_path}")


if __name__ == "__main__":
    sys.exit(main())
