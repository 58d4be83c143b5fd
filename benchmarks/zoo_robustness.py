"""Put robustness reports into the zoo's cards, where `pongrl zoo`, `pongrl play`'s default and the docs read them.

    pongrl robustness zoo:dqn --games 10 --torch-threads 1 --out ~/runs/robustness/dqn.json
    python benchmarks/zoo_robustness.py ~/runs/robustness/*.json --hardware "2-core AMD EPYC (AVX2), no GPU"

Each report (the JSON `pongrl robustness --out` writes) goes into the card of the zoo agent it judged, under
"robustness": its rows, worst case, mean, settings, the command that made it, the date and the hardware. A report
of an agent outside the zoo is refused, and so is one whose agent's weights changed since (the SHA-256 the
report holds).
"""

import argparse
import json
import os
import sys
import time

from pongrl import zoo
from pongrl.checkpoint import atomic_write_bytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="robustness reports (pongrl robustness ... --out FILE.json)")
    parser.add_argument("--hardware", required=True, help="the machine that played the games, in words")
    args = parser.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())
