"""Sparse dictionaries across agents: `pongrl probe features` over several (agent, collect) pairs, a table of what
each dictionary keeps and a chart of how many features match each label.

    python research/features_study.py --out /tmp/features NAME=AGENT@COLLECT_DIR ... [--size 2048] [--k 32]
        [--epochs 10] [--games 10] [--layer fc]

AGENT is any agent spec, or `random-init:SPEC` for the untrained network of SPEC's architecture that the collect
recorded beside it (the baseline: what a dictionary of an untrained layer matches). Each dictionary goes to
OUT/NAME/ (dictionary.pt, features.csv, features.md); one already there is read, not learned again. Then
OUT/summary.md (one row per dictionary) and OUT/features.png (probes.charts.plot_feature_matches).

Beyond the one-label matching of `probe features`: how much of each feature a *place* explains, the R^2 on the
test games of its activation predicted by its mean over the train frames in the same cell of the ball's state: its
column and height (cells of CELL RAM units), the directions it flies in (horizontal and vertical), or out of play.
A feature that no single label matches but a cell does is a conjunction of named quantities (the ball in one place,
flying one way), not something no label names. The control: the same with each game's cells circularly shifted by
a seeded offset (train and test alike), which keeps the cells' frequencies and breaks their tie to the frames.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def agent_of(spec: str, collect_dir: str):
    """The agent of a spec; `random-init:SPEC` named as the collect named its untrained twin (by its architecture
    when the collect recorded agents of several)."""
    import json

    from pongrl.agent import load_agent
    from pongrl.probes.collect import SETTINGS_FILE, architecture, random_init_like

    if not spec.startswith("random-init:"):
        return load_agent(spec)
    trained = load_agent(spec.removeprefix("random-init:"))
    with open(os.path.join(collect_dir, SETTINGS_FILE)) as handle:
        recorded = {agent["name"] for agent in json.load(handle)["agents"]}
    named = f"random-init ({architecture(trained)})"
    return random_init_like(trained, named if named in recorded else "random-init")


def recorded_agent(dictionary):
    """What the collect's index of the dictionary's agent is looked up by: its name, and its file when it is one
    (a file's name in the collect is its base name)."""
    name = dictionary.agent["name"]
    return type("Named", (), {"name": name, "path": name if os.path.isfile(name) else ""})()


CELL = 8  # RAM units per cell side


def cells(data, games, shift_rng=None) -> np.ndarray:
    """Each frame's cell of the ball's state (module docstring), as one integer, game after game; with `shift_rng`
    each game's cells circularly shifted (the control)."""
    every = []
    for game in games:
        read = {
            name: data.read(f"labels/{name}", [game]).astype(np.int64)
            for name in ("ball_x", "ball_y", "ball_vx", "ball_vy", "ball_in_play")
        }
        horizontal, vertical = np.sign(read["ball_vx"]) + 1, np.sign(read["ball_vy"]) + 1
        cell = ((read["ball_x"] // CELL * 64 + read["ball_y"] // CELL) * 3 + horizontal) * 3 + vertical
        cell = np.where(read["ball_in_play"] == 1, cell, -1)  # out of play: one cell
        if shift_rng is not None:
            cell = np.roll(cell, int(shift_rng.integers(len(cell) // 4, max(len(cell) // 4 + 1, 3 * len(cell) // 4))))
        every.append(cell)
    return np.concatenate(every)


def explained(dictionary, collect_dir: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Each feature's R^2 on the test games (module docstring): "place", of its cell means over the train games;
    "control", the same with shifted cells; "linear", of a least-squares fit on every label at once."""
    from pongrl.probes.directions import _collect_index
    from pongrl.probes.features import encode_in_chunks
    from pongrl.probes.fit import ProbeData, split_games
    from pongrl.probes.labels import LABELS

    data = ProbeData(collect_dir)
    index = _collect_index(data, recorded_agent(dictionary))
    train_games, test_games = split_games(data.frames_of, seed)
    dataset = f"agents/{index}/{dictionary.layer}"
    labels = [name for name in LABELS if name in data.labels]

    def design(games):  # every label (undefined predictive ones are -1: a value of their own) and a constant
        columns = [data.read(f"labels/{name}", games).astype(np.float64) for name in labels]
        return np.column_stack([*columns, np.ones(len(columns[0]))])

    x_train, x_test = data.read(dataset, train_games).astype(np.float32), data.read(dataset, test_games)
    x_test = x_test.astype(np.float32)
    found = {}
    for kind in ("place", "control", "linear"):
        if kind == "linear":
            a_train, a_test = design(train_games), design(test_games)
            scale = np.maximum(np.abs(a_train).max(0), 1e-9)
            a_train, a_test = a_train / scale, a_test / scale
            gram, cross = a_train.T @ a_train, np.zeros((a_train.shape[1], dictionary.size))
            for first, codes in encode_in_chunks(dictionary, x_train):
                cross += a_train[first : first + len(codes)].T @ codes.double().numpy()
            coefficients = np.linalg.solve(gram + 1e-6 * np.eye(len(gram)), cross)
            predict = lambda first, count: a_test[first : first + count] @ coefficients  # noqa: E731
        else:
            rng = np.random.default_rng(seed) if kind == "control" else None
            ids = [cells(data, games, rng) for games in (train_games, test_games)]
            universe, inverse = np.unique(np.concatenate(ids), return_inverse=True)
            train_cell, test_cell = inverse[: len(ids[0])], inverse[len(ids[0]) :]
            sums = np.zeros((len(universe), dictionary.size))
            counts = np.bincount(train_cell, minlength=len(universe)).astype(np.float64)
            for first, codes in encode_in_chunks(dictionary, x_train):
                np.add.at(sums, train_cell[first : first + len(codes)], codes.double().numpy())
            overall = sums.sum(0) / len(x_train)
            means = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], overall)
            predict = lambda first, count: means[test_cell[first : first + count]]  # noqa: E731
        sse, sz, szz = np.zeros(dictionary.size), np.zeros(dictionary.size), np.zeros(dictionary.size)
        for first, codes in encode_in_chunks(dictionary, x_test):
            z = codes.double().numpy()
            sse += ((z - predict(first, len(z))) ** 2).sum(0)
            sz += z.sum(0)
            szz += (z**2).sum(0)
        sst = szz - sz**2 / len(x_test)
        with np.errstate(divide="ignore", invalid="ignore"):
            found[kind] = np.where(sst > 1e-9, 1 - sse / sst, np.nan)
    return found


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
            agent = agent_of(spec, collect_dir)
            games = 0 if spec.startswith("random-init:") else args.games  # an untrained net loses every point
            dictionary = learn_features(
                agent, collect_dir, args.layer, args.size, args.k, args.epochs, games, args.seed
            )
        except PongrlError as error:
            sys.exit(f"features_study.py: {name}: {error}")
        write_results(dictionary, os.path.join(args.out, name))
        dictionaries[name] = dictionary
        print("\n".join(describe(dictionary)), flush=True)

    kept = [
        "| dictionary | frames (train / test) | variance explained | dead | always on | greedy action kept (with "
        "the mean) | paddle move kept (with the mean) | points per game, spliced - as is [95%] |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    what = [
        "| dictionary | live features | matching a label | matching none, firing on > 1% of frames | their place "
        "R^2, median (control) | share > 0.1 | their R^2 on all labels, linear, median |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, d in dictionaries.items():
        path = os.path.join(args.out, name, "explained.npz")
        if not os.path.exists(path):
            np.savez(path, **explained(d, d.source["collect"], d.source["split_seed"]))
        found = np.load(path)
        frequency = np.asarray(d.features["frequency"])
        unmatched = np.array([not text for text in d.features["matched"]]) & (frequency > 0.01)
        m = d.metrics
        live = d.size - m["dead"]
        matched = sum(1 for text in d.features["matched"] if text)
        points = (
            f"{m['score_change']:+.2f} [{m['score_change_low']:+.2f}, {m['score_change_high']:+.2f}] "
            f"({m['score']:+.1f} as is, {m['games']} games)"
            if "score_change" in m
            else "-"
        )
        kept.append(
            f"| {name} | {d.source['train_frames']:,} / {d.source['test_frames']:,} | {m['fve']:.3f} | {m['dead']} "
            f"| {m['dense']} | {m['action_agreement']:.1%} ({m['mean_agreement']:.1%}) | {m['move_agreement']:.1%} "
            f"({m['mean_move_agreement']:.1%}) | {points} |"
        )
        place, control, linear = (found[kind][unmatched] for kind in ("place", "control", "linear"))
        what.append(
            f"| {name} | {live:,} | {matched:,} ({matched / max(live, 1):.0%}) | {int(unmatched.sum()):,} "
            f"| {np.nanmedian(place):.2f} ({np.nanmedian(control):.2f}) | {np.mean(place > 0.1):.0%} "
            f"| {np.nanmedian(linear):.2f} |"
        )
    lines = kept + [""] + what
    with open(os.path.join(args.out, "summary.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(plot_feature_matches(dictionaries, os.path.join(args.out, "features.png")))


if __name__ == "__main__":
    main()
