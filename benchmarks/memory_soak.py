"""Memory soak: train for a while and watch resident memory (RSS) stay flat after the warm-up.

    python benchmarks/memory_soak.py --algo dqn --minutes 60
    python benchmarks/memory_soak.py --algo selfplay --minutes 60
    python benchmarks/memory_soak.py --algo selfplay --pid PID --minutes 60   # watch a run already going

With `--pid` the soak samples a training run that is already going (say a learning benchmark) instead
of starting its own, and leaves it running at the end.

DQN runs with a small replay buffer (20,000 transitions) so that it is full early and the rest of the
soak shows the steady state; self-play runs the default preset's network and rollout shape on 8
envs. RSS of the training process (and its children) is sampled every `--every` seconds; the warm-up
is the first `--warmup` fraction of the time. Prints the samples, then the growth from the end of
the warm-up to the end (target: under 5%).
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

FLAGS = {
    "dqn": [
        "--buffer-size",
        "20000",
        "--learning-starts",
        "2000",
        "--checkpoint-every",
        "20000",
        "--eval-every",
        "50000",
        "--eval-episodes",
        "2",
    ],
    "selfplay": ["--num-envs", "8", "--checkpoint-every", "50000", "--eval-every", "100000", "--eval-episodes", "2"],
}


def rss_kib(pid: int) -> int:
    """Resident memory of a process and all its descendants, in KiB (from /proc)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as handle:
                total += next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:"))
            with open(f"/proc/{current}/task/{current}/children") as handle:
                todo += [int(child) for child in handle.read().split()]
        except (OSError, StopIteration):
            continue
    return total


class Watched:
    """A process the soak did not start: polled, never stopped."""

    def __init__(self, pid: int):
        if not os.path.exists(f"/proc/{pid}"):
            sys.exit(f"--pid {pid}: no such process")
        self.pid, self.returncode = pid, 0

    def poll(self):
        return None if os.path.exists(f"/proc/{self.pid}") else 0

    def terminate(self) -> None:
        pass

    def wait(self) -> None:
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=sorted(FLAGS), default="dqn")
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--every", type=float, default=30, help="seconds between samples")
    parser.add_argument("--warmup", type=float, default=0.25, help="fraction of the time that is warm-up")
    parser.add_argument("--pid", type=int, help="watch this running training process instead of starting one")
    parser.add_argument("--torch-threads", type=int, default=0, help="for the run the soak starts (0: torch's default)")
    args = parser.parse_args()
    if args.pid:
        process = Watched(args.pid)
    else:
        run_dir = os.path.join(tempfile.mkdtemp(prefix="memory-soak-"), "run")
        command = [
            sys.executable,
            "-m",
            "pongrl",
            "train",
            args.algo,
            "--run-dir",
            run_dir,
            "--total-steps",
            "100000000",
            "--torch-threads",
            str(args.torch_threads),
            *FLAGS[args.algo],
        ]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # A SIGTERM to the soak must not orphan the training process: turn it into an exit that runs `finally`.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.time()
    samples = []
    try:
        while time.time() - started < args.minutes * 60 and process.poll() is None:
            time.sleep(args.every)
            samples.append((time.time() - started, rss_kib(process.pid)))
            print(f"{samples[-1][0] / 60:6.1f} min  RSS {samples[-1][1] / 1024:8.1f} MiB", flush=True)
    finally:
        process.terminate()
        process.wait()
    if process.returncode not in (0, 143, -15):
        sys.exit(f"training exited with {process.returncode}")
    steady = [rss for t, rss in samples if t >= args.warmup * args.minutes * 60]
    if len(steady) < 2:
        sys.exit("too few samples after the warm-up")
    growth = (steady[-1] - steady[0]) / steady[0] * 100
    # RSS saw-tooths with every rollout and evaluation, so single samples mislead: the peaks of the two
    # halves of the steady window tell whether the envelope rises.
    half = len(steady) // 2
    envelope = (max(steady[half:]) - max(steady[:half])) / max(steady[:half]) * 100
    print(
        f"{args.algo}: RSS after warm-up {steady[0] / 1024:.1f} MiB, at the end {steady[-1] / 1024:.1f} MiB "
        f"({growth:+.2f}%); peak of the first half of the steady window {max(steady[:half]) / 1024:.1f} MiB, of the "
        f"second half {max(steady[half:]) / 1024:.1f} MiB ({envelope:+.2f}%), over "
        f"{(samples[-1][0] - args.warmup * args.minutes * 60) / 60:.0f} min"
    )


if __name__ == "__main__":
    main()
