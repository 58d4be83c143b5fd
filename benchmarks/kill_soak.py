"""Kill soak: train in short bursts, SIGKILL the process at random moments, resume, and check after
every kill that nothing was lost.

    python benchmarks/kill_soak.py --kills 20 --algos dqn selfplay

Each burst runs `pongrl train` (the first) or `pongrl resume RUN` and is killed with SIGKILL after
a random 2-20 s, which lands during rollouts, gradient updates, evaluations (every few hundred
steps here) and checkpoint writes (frequent here on purpose). After every kill it checks:
- the `latest` checkpoint loads (checksum, format) and its step is the highest complete checkpoint;
- no partial file is taken as `latest` (temp files a kill leaves behind are counted, never read);
- metrics.csv, once the next resume has truncated it, has strictly increasing steps with no gap wider
  than one log interval (plus one iteration);
and at the end that the run reached its total step count. It prints kills survived / kills tried.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from pongrl.checkpoint import list_checkpoints, load_checkpoint, read_latest

SETTINGS = {
    "dqn": dict(
        total=3_000,
        log_every=50,
        step=2,
        flags=[
            "--num-envs",
            "2",
            "--buffer-size",
            "5000",
            "--learning-starts",
            "200",
            "--batch-size",
            "16",
            "--checkpoint-every",
            "100",
            "--log-every",
            "50",
            "--eval-every",
            "600",
            "--eval-episodes",
            "1",
            "--epsilon-decay-steps",
            "2000",
            "--torch-threads",
            "1",
        ],
    ),
    "selfplay": dict(
        total=8_192,
        log_every=256,
        step=256,
        flags=[
            "--num-envs",
            "4",
            "--num-steps",
            "64",
            "--num-checkpoints",
            "3",
            "--checkpoint-every",
            "256",
            "--log-every",
            "256",
            "--eval-every",
            "2048",
            "--eval-episodes",
            "1",
            "--torch-threads",
            "1",
        ],
    ),
}


def check(run_dir: str, log_every: int, step: int, after_resume: bool) -> list[str]:
    """Problems found in the run directory now (an empty list when all is well)."""
    problems = []
    checkpoints = os.path.join(run_dir, "checkpoints")
    latest = read_latest(checkpoints)
    complete = list_checkpoints(checkpoints)
    if latest is None:
        return problems if not complete else [f"checkpoints {complete} exist but no `latest`"]
    try:
        payload = load_checkpoint(os.path.join(checkpoints, latest + ".pt"))
    except Exception as error:  # any failure to load is what this soak looks for
        return [f"latest {latest} does not load: {error}"]
    if latest != complete[-1]:
        problems.append(f"latest is {latest} but {complete[-1]} is complete and newer")
    if f"step_{int(payload['env_step']):012d}" != latest:
        problems.append(f"latest {latest} holds step {payload['env_step']}")
    if after_resume:
        with open(os.path.join(run_dir, "metrics.csv")) as handle:
            steps = [int(row["env_step"]) for row in csv.DictReader(handle)]
        if any(b <= a for a, b in zip(steps, steps[1:])):
            problems.append("metrics.csv has repeated or decreasing steps")
        gaps = [b - a for a, b in zip(steps, steps[1:])]
        if gaps and max(gaps) > log_every + step:
            problems.append(f"metrics.csv has a gap of {max(gaps)} steps")
    return problems


def soak(algo: str, kills: int, seed: int, keep: bool) -> tuple[int, int]:
    settings = SETTINGS[algo]
    rng = random.Random(seed)
    root = tempfile.mkdtemp(prefix=f"soak-{algo}-")
    run_dir = os.path.join(root, "run")
    survived = tried = 0
    leftovers = 0
    started = time.time()
    while True:
        if read_latest(os.path.join(run_dir, "checkpoints")) is None:
            command = [
                sys.executable,
                "-m",
                "pongrl",
                "train",
                algo,
                "--run-dir",
                run_dir,
                "--force",
                "--total-steps",
                str(settings["total"]),
                *settings["flags"],
            ]
        else:
            command = [sys.executable, "-m", "pongrl", "resume", run_dir]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if tried < kills:
            try:
                process.wait(timeout=rng.uniform(2.0, 20.0))
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                process.wait()
                tried += 1
                leftovers = (
                    sum(f.startswith(".tmp") for f in os.listdir(os.path.join(run_dir, "checkpoints")))
                    if os.path.isdir(os.path.join(run_dir, "checkpoints"))
                    else 0
                )
                problems = check(run_dir, settings["log_every"], settings["step"], after_resume=False)
                survived += not problems
                latest = read_latest(os.path.join(run_dir, "checkpoints"))
                print(
                    f"{algo} kill {tried:2d}: latest {latest}, temp files left {leftovers}"
                    + ("" if not problems else "; PROBLEMS: " + "; ".join(problems)),
                    flush=True,
                )
                continue
        else:
            process.wait()
        if process.returncode != 0:
            print(f"{algo}: `{' '.join(command)}` exited {process.returncode}: {process.stderr.read().strip()[-300:]}")
            break
        problems = check(run_dir, settings["log_every"], settings["step"], after_resume=True)
        checkpoints = os.path.join(run_dir, "checkpoints")
        payload = load_checkpoint(os.path.join(checkpoints, read_latest(checkpoints) + ".pt"))
        reached = int(payload["env_step"]) >= settings["total"]
        print(
            f"{algo}: finished at step {payload['env_step']} of {settings['total']} after {tried} kills "
            f"in {time.time() - started:.0f} s" + ("" if not problems else "; PROBLEMS: " + "; ".join(problems))
        )
        if problems or not reached:
            survived = min(survived, tried - 1)
        break
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return survived, tried


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="kills per algorithm (default 20)")
    parser.add_argument("--algos", nargs="+", default=["dqn", "selfplay"], choices=sorted(SETTINGS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the soak's run directories")
    args = parser.parse_args()
    results = {algo: soak(algo, args.kills, args.seed, args.keep) for algo in args.algos}
    for algo, (survived, tried) in results.items():
        print(f"{algo}: kills survived / kills tried: {survived} / {tried}")
    sys.exit(0 if all(s == t for s, t in results.values()) else 1)


if __name__ == "__main__":
    main()
