"""Memory of a full replay buffer: peak RSS of a process that fills it, minus the same process before.

python benchmarks/replay_memory.py [--capacity 100000] [--num-envs 4]
"""

import argparse
import resource
import time

import numpy as np

from pongrl.replay import FrameReplayBuffer


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=100_000)
    parser.add_argument("--num-envs", type=int, default=4)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    # Observations the size of the real ones, made before the measurement starts.
    obs = rng.integers(0, 256, (64, args.num_envs, 4, 84, 84), dtype=np.uint8)
    final_obs = obs[0]
    before = peak_rss_bytes()
    started = time.perf_counter()
    buffer = FrameReplayBuffer(args.capacity, args.num_envs, n_step=3)
    steps = args.capacity // args.num_envs + 100  # wraps around: every slot written at least once
    for t in range(steps):
        ended = rng.random(args.num_envs) < 1 / 900  # a Pong game lasts ~900 steps early in training
        buffer.add(
            obs[t % 64],
            rng.integers(0, 6, args.num_envs),
            np.zeros(args.num_envs),
            ended,
            np.zeros(args.num_envs, bool),
            final_obs,
        )
    batch = buffer.sample(32, rng)
    assert batch["obs"].shape == (32, 4, 84, 84)
    after = peak_rss_bytes()
    print(f"transitions stored: {len(buffer):,} (capacity {args.capacity:,}, {args.num_envs} envs)")
    print(f"array bytes: {buffer.nbytes() / 1e9:.3f} GB")
    print(f"fill time: {time.perf_counter() - started:.1f} s")
    print(f"peak RSS increase: {(after - before) / 1e9:.3f} GB")


if __name__ == "__main__":
    main()
