"""Sparse dictionaries across agents: `pongrl probe features` over several (agent, collect) pairs, a table of what
each dictionary keeps and a chart of how many features match each label.

    python research/features_study.py --out /tmp/features NAME=AGENT@COLLECT_DIR ... [--size 2048] [--k 32]
        [--epochs 10] [--games 10] [--layer fc]

AGENT is any agent spec, or `random-init:SPEC` for the untrained network of SPEC's architecture that the collect
recorded beside it (the baseline: what a dictionary of an untrained layer matches). Each dictionary goes to
OUT/NAME/ (dictionary.pt, features.csv, features.md); one already there is read, not learned again. Then
OUT/summary.md (one row per dictionary) and OUT/features.png (probes.charts.plot_feature_matches).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def agent_of(spec: str):
    from pongrl.agent import load_agent
    from pongrl.probes.collect import random_init_like

    if spec.startswith("random-init:"):
        return random_init_like(load_agent(spec.removeprefix("random-init:")))
    return load_agent(spec)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="+", metavar="NAME=AGENT@COLLECT_DIR")
    parser.add_argument("--out", required=True)
    parser.add_argument("--layer", default="fc")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--k", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from pongrl.errors import PongrlError
    from pongrl.probes.charts import plot_feature_matches
    from pongrl.probes.dictionary import load_dictionary
    from pongrl.probes.features import describe, learn_features, write_results

    torch.set_num_threads(1)
    dictionaries = {}
    for pair in args.pairs:
        name, _, rest = pair.partition("=")
        spec, _, collect_dir = rest.partition("@")
        path = os.path.join(args.out, name, "dictionary.pt")
        try:
            if os.path.exists(path):
                dictionaries[name] = load_dictionary(path)
                continue
            agent = agent_of(spec)
            games = 0 if spec.startswith("random-init:") else args.games  # an untrained net loses every point
            dictionary = learn_features(
                agent, collect_dir, args.layer, args.size, args.k, args.epochs, games, args.seed
            )
        except PongrlError as error:
            sys.exit(f"features_study.py: {name}: {error}")
        write_results(dictionary, os.path.join(args.out, name))
        dictionaries[name] = dictionary
        print("\n".join(describe(dictionary)), flush=True)

    lines = [
        "| dictionary | frames (train/test) | variance explained | dead | always on | action kept | move kept "
        "| points, spliced - as is [95%] | live features matching a label |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for name, d in dictionaries.items():
        m = d.metrics
        live = d.size - m["dead"]
        matched = sum(1 for text in d.features["matched"] if text)
        points = (
            f"{m['score_change']:+.2f} [{m['score_change_low']:+.2f}, {m['score_change_high']:+.2f}] "
            f"({m['score']:+.1f} as is, {m['games']} games)"
            if "score_change" in m
            else "-"
        )
        lines.append(
            f"| {name} | {d.source['train_frames']:,} / {d.source['test_frames']:,} | {m['fve']:.3f} | {m['dead']} "
            f"| {m['dense']} | {m['action_agreement']:.1%} ({m['mean_agreement']:.1%}) | {m['move_agreement']:.1%} "
            f"({m['mean_move_agreement']:.1%}) | {points} | {matched} of {live} ({matched / max(live, 1):.0%}) |"
        )
    with open(os.path.join(args.out, "summary.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(plot_feature_matches(dictionaries, os.path.join(args.out, "features.png")))


if __name__ == "__main__":
    main()
