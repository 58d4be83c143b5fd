"""Which features recur across agents: dictionaries of several agents' layers, learned on one collect in which
every agent watched the same frames (`pongrl probe collect A B C ...`), compared by what their features do on
those frames.

    python research/features_recur.py --out OUT NAME=DICTIONARY.pt[:GROUP] ... [--threshold 0.5] [--min-rate 0.01]
        [--appearance NAME]

Two dictionaries of different networks share no basis, so their features are compared by activation: on the
collect's test games (the split the dictionaries were judged on), each live feature of A (firing on more than
`min-rate` of the frames) is paired with the feature of B whose activation correlates best with it (Pearson, over
the frames). It recurs in B when that correlation passes the threshold: `--threshold`, or the 99th percentile of
the same best correlations with B's activations shifted in time within each game (a seeded circular shift per
game, which keeps each feature's firing statistics and breaks its tie to the frames), if that is higher.

GROUP (say `generalist`, `specialist`, `exploiter`, `untrained`) sorts each feature of a trained agent:
- `untrained too`: it recurs in a dictionary of the group `untrained` (an untrained network's layer answers to the
  same pixels: a feature there owes nothing to training);
- otherwise `shared`: it recurs in an agent of another group;
- `its group's`: it recurs only in agents of its own group;
- `its own`: it recurs in no other dictionary.
Writes OUT/recurrence.csv (the share of A's live features that recur in B, and the mean best correlation),
OUT/kinds.csv (each dictionary's features by kind, and the share of each kind that matches a label) and
OUT/recurrence.png (the shares as a heatmap), and prints both tables in Markdown.
"""

import argparse
import csv
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

KINDS = ("untrained too", "shared", "its group's", "its own")


def test_codes(dictionary, seed: int) -> tuple[np.ndarray, list[int]]:
    """The dictionary's codes on its collect's test games, and the frames of each game."""
    from pongrl.probes.directions import _collect_index
    from pongrl.probes.features import encode_in_chunks
    from pongrl.probes.fit import ProbeData, split_games

    from features_study import recorded_agent

    data = ProbeData(dictionary.source["collect"])
    named = recorded_agent(dictionary)
    _, test_games = split_games(data.frames_of, dictionary.source["split_seed"])
    x = data.read(f"agents/{_collect_index(data, named)}/{dictionary.layer}", test_games).astype(np.float32)
    codes = np.zeros((len(x), dictionary.size), np.float32)
    for first, chunk in encode_in_chunks(dictionary, x):
        codes[first : first + len(chunk)] = chunk.numpy()
    return codes, [data.frames_of[game] for game in test_games]


def standardized(codes: np.ndarray) -> np.ndarray:
    centred = codes - codes.mean(0)
    scale = np.sqrt((centred**2).mean(0))
    return centred / np.where(scale > 0, scale, 1.0)


def shifted(codes: np.ndarray, lengths: list[int], rng: np.random.Generator) -> np.ndarray:
    pieces, first = [], 0
    for length in lengths:
        piece = codes[first : first + length]
        pieces.append(np.roll(piece, int(rng.integers(length // 4, max(length // 4 + 1, 3 * length // 4))), axis=0))
        first += length
    return np.concatenate(pieces)


def best_correlations(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each column of a (standardized), its largest correlation with any column of b (standardized)."""
    return (a.T @ b / len(a)).max(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dictionaries", nargs="+", metavar="NAME=DICTIONARY.pt[:GROUP]")
    parser.add_argument("--out", required=True)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--min-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--appearance",
        metavar="NAME",
        help="for each live feature of this dictionary, the first of the others (in the order given, untrained ones "
        "left out) in which it recurs: when a training run's features appear, given its checkpoints in order",
    )
    args = parser.parse_args()

    from pongrl.errors import PongrlError
    from pongrl.probes.dictionary import load_dictionary

    names, groups, codes, lengths, matched = [], {}, {}, None, {}
    collect = None
    for entry in args.dictionaries:
        name, _, rest = entry.partition("=")
        path, colon, group = rest.rpartition(":")  # a path may hold colons (zoo:NAME folders): the group is last
        if not colon or "/" in group or group.endswith(".pt"):
            path, group = rest, ""
        try:
            dictionary = load_dictionary(path)
        except PongrlError as error:
            sys.exit(f"features_recur.py: {error}")
        if collect is not None and dictionary.source["collect"] != collect:
            sys.exit(f"features_recur.py: {name} was learned on {dictionary.source['collect']}, not on {collect}")
        collect = dictionary.source["collect"]
        raw, lengths = test_codes(dictionary, args.seed)
        live = (raw > 0).mean(0) > args.min_rate
        names.append(name)
        groups[name] = group or name
        codes[name] = (standardized(raw[:, live]), raw[:, live])
        matched[name] = np.array([bool(text) for text in dictionary.features["matched"]])[live]
        print(f"{name}: {int(live.sum())} features firing on more than {args.min_rate:.0%} of {len(raw)} frames")

    rng = np.random.default_rng(args.seed)
    recurs = {a: {} for a in names}
    rows = []
    for a in names:
        for b in names:
            if a == b:
                continue
            best = best_correlations(codes[a][0], codes[b][0])
            control = best_correlations(codes[a][0], standardized(shifted(codes[b][1], lengths, rng)))
            threshold = max(args.threshold, float(np.quantile(control, 0.99)))
            recurs[a][b] = best > threshold
            rows.append(
                {
                    "dictionary": a,
                    "in": b,
                    "live": len(best),
                    "recur": int(recurs[a][b].sum()),
                    "share": float(recurs[a][b].mean()),
                    "mean_best_correlation": float(best.mean()),
                    "control_mean_best_correlation": float(control.mean()),
                    "threshold": threshold,
                }
            )
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "recurrence.csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    kinds_rows = []
    for a in names:
        if groups[a] == "untrained":
            continue
        others = [b for b in names if b != a]
        untrained = np.zeros(len(matched[a]), bool)
        for b in others:
            if groups[b] == "untrained":
                untrained |= recurs[a][b]
        shared = np.zeros_like(untrained)
        own_group = np.zeros_like(untrained)
        for b in others:
            if groups[b] not in ("untrained", groups[a]):
                shared |= recurs[a][b]
            elif groups[b] == groups[a]:
                own_group |= recurs[a][b]
        kind = np.where(untrained, 0, np.where(shared, 1, np.where(own_group, 2, 3)))
        row = {"dictionary": a, "group": groups[a], "live": len(kind)}
        for number, label in enumerate(KINDS):
            mine = kind == number
            row[label] = int(mine.sum())
            row[f"{label}, matching a label"] = float(matched[a][mine].mean()) if mine.any() else float("nan")
        kinds_rows.append(row)
    with open(os.path.join(args.out, "kinds.csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, list(kinds_rows[0]))
        writer.writeheader()
        writer.writerows(kinds_rows)

    if args.appearance:
        last = args.appearance
        order = [b for b in names if b != last and groups[b] != "untrained"]
        first = np.full(len(matched[last]), len(order))
        for index in reversed(range(len(order))):
            first[recurs[last][order[index]]] = index
        untrained = np.zeros(len(first), bool)
        for b in names:
            if groups[b] == "untrained":
                untrained |= recurs[last][b]
        print(f"\n| {last}'s features: first found in | features | of them matching a label | also untrained |")
        print("|---|---:|---:|---:|")
        for index, label in enumerate([*order, "none of them"]):
            mine = first == index
            print(
                f"| {label} | {int(mine.sum()):,} | {matched[last][mine].mean() if mine.any() else float('nan'):.0%} "
                f"| {untrained[mine].mean() if mine.any() else float('nan'):.0%} |"
            )

    share = np.array([[np.nan if a == b else recurs[a][b].mean() for b in names] for a in names])
    print("\n| features of | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for a, line in zip(names, share):
        print(f"| {a} | " + " | ".join("-" if np.isnan(v) else f"{v:.0%}" for v in line) + " |")
    print("\n| dictionary | group | live | " + " | ".join(KINDS) + " |")
    print("|---|---|---:|" + "---:|" * len(KINDS))
    for row in kinds_rows:
        cells = [f"{row[k]:,} ({row[k] / row['live']:.0%}; {row[k + ', matching a label']:.0%} match)" for k in KINDS]
        print(f"| {row['dictionary']} | {row['group']} | {row['live']:,} | " + " | ".join(cells) + " |")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(1.1 * len(names) + 3, 0.8 * len(names) + 2))
    image = axes.imshow(share, cmap="viridis", vmin=0, vmax=1)
    for i in range(len(names)):
        for j in range(len(names)):
            if i != j:
                axes.text(j, i, f"{share[i, j]:.0%}", ha="center", va="center", color="white", fontsize=8)
    axes.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    axes.set_yticks(range(len(names)), names, fontsize=8)
    axes.set_xlabel("recurs in")
    axes.set_ylabel("features of")
    axes.set_title("Share of live features with a match (correlation over the same frames)", fontsize=9)
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    chart = os.path.join(args.out, "recurrence.png")
    figure.savefig(chart, dpi=110)
    print(chart)


if __name__ == "__main__":
    main()
