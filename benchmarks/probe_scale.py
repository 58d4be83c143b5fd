"""How `pongrl probe fit` scales: time per (layer, label) and peak memory at N frames.

    python benchmarks/probe_scale.py COLLECT_DIR --frames 100000 [--agent 0] [--work /tmp/probe_scale]

Builds a collect of at least N frames by copying COLLECT_DIR's games under new game numbers (the frames
repeat, which changes nothing in the arithmetic or the memory), then fits one agent's probes a layer at a
time with the functions `pongrl probe fit` uses, printing the seconds of each ridge fit (all regression
labels at once, and its shuffled control) and of each label's classifier (and its control), and the
process's peak resident memory. The copies go to --work, which is removed at the end.
"""

import argparse
import os
import resource
import shutil
import sys
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collect_dir")
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--agent", type=int, default=0, help="which recorded agent (0: the one that played)")
    parser.add_argument("--work", default="/tmp/probe_scale")
    args = parser.parse_args()

    import h5py

    from pongrl.errors import PongrlError
    from pongrl.probes.collect import GAMES_FOLDER, SETTINGS_FILE
    from pongrl.probes.fit import ProbeData, _standardize, probe_layer, split_labels
    from pongrl.probes.labels import LABELS

    try:
        source = ProbeData(args.collect_dir)
    except PongrlError as error:
        sys.exit(f"probe_scale.py: {error}")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(os.path.join(args.work, GAMES_FOLDER))
    shutil.copy(os.path.join(args.collect_dir, SETTINGS_FILE), args.work)
    frames, game = 0, 0
    while frames < args.frames:
        for path, rows in zip(source.paths, source.rows):
            target = os.path.join(args.work, GAMES_FOLDER, f"game_{game:05d}.h5")
            shutil.copy(path, target)
            with h5py.File(target, "r+") as data:
                data.attrs["game"] = game
            frames, game = frames + rows, game + 1
            if frames >= args.frames:
                break
    data = ProbeData(args.work)
    train, test, y_train, y_test, shuffle, validation = split_labels(data, list(LABELS))
    print(
        f"{data.frames:,} frames in {len(data.games)} games ({len(test)} test games); agent "
        f"{data.settings['agents'][args.agent]['name']}"
    )
    print(
        f"| layer | width | read + standardize s | all probes, {len(LABELS)} labels (+ controls) s | "
        "per (layer, label) s | peak RSS GiB |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for layer in data.layers[args.agent]:
        started = time.perf_counter()
        x_train, x_test = _standardize(
            data.read(f"agents/{args.agent}/{layer}", train).astype(np.float32),
            data.read(f"agents/{args.agent}/{layer}", test).astype(np.float32),
        )
        read_seconds = time.perf_counter() - started
        started = time.perf_counter()
        probe_layer(x_train, x_test, y_train, y_test, shuffle, list(LABELS), validation=validation)
        fit_seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(
            f"| {layer} | {x_train.shape[1]} | {read_seconds:.1f} | "
            f"{fit_seconds:.1f} | {fit_seconds / len(LABELS):.1f} | {peak:.2f} |",
            flush=True,
        )
        del x_train, x_test
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
