"""What the random projection of `pongrl probe` costs: probes on whole layers against probes on their
1,024-dimensional projections, on the same frames.

    python benchmarks/probe_projection.py AGENT [--frames 4000] [--work /tmp/probe_projection] [--seed 0] [--greedy]

Collects N frames played by AGENT against the built-in AI (sampling its actions unless --greedy, so that no
test game repeats a train game) with every layer stored whole (the input's
28,224 values, the convolutions' 12,800, 5,184 and 3,136), then fits, for each layer wider than 1,024,
the same probes twice: on the whole layer and on the fixed projection that `probe collect` stores
(`projection(layer, width)`, applied here to the stored values). Printed: R^2 of the labels on a scale
and weighted F1 of the labels with few values (the classifiers of the positions would need a
28,224 x 200 softmax per label on the whole input; `probe across` leaves them out too), each with its
shuffled-label control, and the seconds of each fit. The collect goes to --work, removed at the end.
"""

import argparse
import shutil
import sys
import time

import numpy as np
import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agent")
    parser.add_argument("--frames", type=int, default=4000)
    parser.add_argument("--work", default="/tmp/probe_projection")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--greedy", action="store_true", help="AGENT plays greedily (games may repeat)")
    args = parser.parse_args()

    from pongrl.errors import PongrlError
    from pongrl.probes.collect import collect, projection
    from pongrl.probes.fit import ProbeData, _standardize, probe_layer, repeated_test_games, split_labels
    from pongrl.probes.labels import LABELS

    shutil.rmtree(args.work, ignore_errors=True)
    started = time.perf_counter()
    try:
        collect([args.agent], args.frames, args.work, sample=not args.greedy, seed=args.seed, reduce_layers=False)
        data = ProbeData(args.work)
        train, test, y_train, y_test, shuffle, validation = split_labels(data, list(LABELS))
    except PongrlError as error:
        sys.exit(f"probe_projection.py: {error}")
    if repeated_test_games(data, train, test):
        print("warning: a test game repeats a train game frame for frame: the probes leak")
    print(
        f"{data.frames:,} frames in {len(data.games)} games ({len(test)} test games), collected whole in "
        f"{time.perf_counter() - started:.0f} s; agent {data.settings['agents'][0]['name']}"
    )
    print(
        "| layer | width | label | metric | whole layer (control) | projection to 1024 (control) | whole - projection |"
    )
    print("|---|---:|---|---|---:|---:|---:|")
    timings = []
    for layer in data.layers[0]:
        whole_train = data.read(f"agents/0/{layer}", train).astype(np.float32)
        whole_test = data.read(f"agents/0/{layer}", test).astype(np.float32)
        matrix = projection(layer, whole_train.shape[1])
        if matrix is None:
            continue
        fits = {}
        for name, (x_train, x_test) in (
            ("whole", (whole_train, whole_test)),
            (
                "projection",
                ((torch.from_numpy(whole_train) @ matrix).numpy(), (torch.from_numpy(whole_test) @ matrix).numpy()),
            ),
        ):
            x_train, x_test = _standardize(x_train, x_test)
            clock = time.perf_counter()
            fits[name] = {
                (row["label"], row["metric"]): row
                for row in probe_layer(
                    x_train,
                    x_test,
                    y_train,
                    y_test,
                    shuffle,
                    list(LABELS),
                    classify_scales=False,
                    validation=validation,
                )
            }
            timings.append(
                (layer, whole_train.shape[1] if name == "whole" else matrix.shape[1], time.perf_counter() - clock)
            )
        for key, whole in fits["whole"].items():
            projected = fits["projection"][key]
            if np.isnan(whole["score"]) or key[0] in ("player_x", "enemy_x"):  # constants say nothing
                continue
            print(
                f"| {layer} | {whole_train.shape[1]} | {key[0]} | {key[1]} | {whole['score']:.3f} "
                f"({whole['control']:.2f}) | {projected['score']:.3f} ({projected['control']:.2f}) | "
                f"{whole['score'] - projected['score']:+.3f} |",
                flush=True,
            )
        del whole_train, whole_test
    print()
    print("| layer | features | fit s (ridge + classifiers, with controls) |")
    print("|---|---:|---:|")
    for layer, width, seconds in timings:
        print(f"| {layer} | {width} | {seconds:.1f} |")
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
