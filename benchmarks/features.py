"""How long `pongrl probe features` takes to learn a dictionary: the training alone, on N frames of one layer.

    python benchmarks/features.py COLLECT_DIR [--frames 100000] [--layer fc] [--size 2048] [--k 32] [--epochs 10]

Reads the first N frames (all games, in order) of the playing agent's layer from a collect (`pongrl probe
collect`), and trains a TopK dictionary on them with the function `pongrl probe features` uses, on one torch
thread; prints the frames, the layer's width, the seconds, frames per second (frames x epochs over seconds), the
fraction of variance explained on those same frames and the dead features, and the process's peak resident memory.
The judging that `probe features` does afterwards (matching, paired games) is not timed here.
"""

import argparse
import resource
import sys
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collect_dir")
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--layer", default="fc")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--k", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    import torch

    from pongrl.errors import PongrlError
    from pongrl.probes.dictionary import Dictionary, train_dictionary
    from pongrl.probes.fit import ProbeData

    torch.set_num_threads(1)
    try:
        data = ProbeData(args.collect_dir)
    except PongrlError as error:
        sys.exit(f"features.py: {error}")
    if data.frames < args.frames:
        sys.exit(f"features.py: {args.collect_dir} holds {data.frames:,} frames, fewer than --frames {args.frames:,}")
    x = data.read(f"agents/0/{args.layer}", data.games).astype(np.float32)[: args.frames]
    start = time.perf_counter()
    weights, losses = train_dictionary(x, args.size, args.k, args.epochs)
    seconds = time.perf_counter() - start
    dictionary = Dictionary(args.layer, args.k, agent={}, **weights)
    reconstruction = np.concatenate(
        [dictionary.reconstruct(x[first : first + 4096]).numpy() for first in range(0, len(x), 4096)]
    )
    fve = 1 - ((x - reconstruction) ** 2).sum() / ((x - x.mean(0)) ** 2).sum()
    fired = np.zeros(args.size, bool)
    for first in range(0, len(x), 4096):
        fired |= (dictionary.encode(x[first : first + 4096]) > 0).any(0).numpy()
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"{len(x):,} frames x {x.shape[1]} ({args.layer}), {args.size} features, k={args.k}, {args.epochs} epochs: "
        f"{seconds:.0f} s ({len(x) * args.epochs / seconds:,.0f} frames/s); variance explained {fve:.3f} on the "
        f"training frames, {int((~fired).sum())} dead; loss by epoch {' '.join(f'{loss:.4f}' for loss in losses)}; "
        f"peak RSS {peak_gib:.2f} GiB"
    )


if __name__ == "__main__":
    main()
