"""Data-parallel scaling: PPO steps per second with 1 process and with N processes under torchrun,
the same total number of envs and the same cores.

    python benchmarks/distributed.py --processes 1 2 --algo ppo --num-envs 8 --steps 8192

Each case trains a fresh run for `--steps` env steps (after one warm-up update that is not timed)
and reports steps/s from the run's own metrics.csv (wall clock between the first and the last row).
With P processes each gets 1/P of the envs and `cores / P` torch threads.
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile


def measure(processes: int, args) -> float:
    run_dir = tempfile.mkdtemp(prefix=f"ddp-{processes}-")
    threads = max(1, (os.cpu_count() or 1) // processes)
    launcher = (
        [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
        if processes > 1
        else [sys.executable]
    )
    per_update = args.num_envs * args.num_steps
    command = [
        *launcher,
        "-m",
        "pongrl",
        "train",
        args.algo,
        "--run-dir",
        os.path.join(run_dir, "run"),
        "--force",
        "--total-steps",
        str(args.steps + per_update),
        "--num-envs",
        str(args.num_envs),
        "--num-steps",
        str(args.num_steps),
        "--log-every",
        str(per_update),
        "--eval-every",
        "0",
        "--checkpoint-every",
        str(10 * (args.steps + per_update)),
        "--torch-threads",
        str(threads),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "run", "metrics.csv")) as handle:
        rows = list(csv.DictReader(handle))
    first, last = rows[0], rows[-1]  # the first row closes the warm-up update
    steps = int(last["env_step"]) - int(first["env_step"])
    return steps / (float(last["wall_seconds"]) - float(first["wall_seconds"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--algo", default="ppo", choices=["ppo", "selfplay"])
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--num-steps", type=int, default=128)
    parser.add_argument("--steps", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=2, help="runs per case, interleaved; the median is shown")
    args = parser.parse_args()
    import statistics

    results = {p: [] for p in args.processes}
    for _ in range(args.repeats):
        for processes in args.processes:
            results[processes].append(measure(processes, args))
    base = statistics.median(results[args.processes[0]])
    print(
        f"{args.algo}, {args.num_envs} envs x {args.num_steps} steps, {os.cpu_count()} cores, "
        f"{args.steps} timed env steps"
    )
    print("| processes | steps/s (median) | runs | speed-up |")
    print("|---:|---:|---|---:|")
    for processes, values in results.items():
        median = statistics.median(values)
        print(f"| {processes} | {median:.1f} | {', '.join(f'{v:.1f}' for v in values)} | {median / base:.2f}x |")


if __name__ == "__main__":
    main()
