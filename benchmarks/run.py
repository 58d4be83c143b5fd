"""Side-by-side speed benchmarks: pongrl against what a user would pick instead, alternating A B A B.

    pip install -e ".[bench]"          # Stable-Baselines3, only for these benchmarks
    python benchmarks/run.py            # full lengths, writes docs/speed.md
    python benchmarks/run.py --quick    # shorter, for a smoke check

Cases (same hyperparameters on both sides, the RL Baselines3 Zoo's Atari settings, `--preset zoo` in pongrl):
1. PPO on Pong against the built-in AI: `pongrl train ppo --preset zoo` vs Stable-Baselines3 PPO
   (CnnPolicy, 8 envs of PongNoFrameskip-v4 with its Atari wrappers, 4 stacked frames).
2. DQN: `pongrl train dqn --preset zoo` vs Stable-Baselines3 DQN, both with learning starting after the
   warm-up (the Zoo's 100,000 random steps are skipped on both sides: they time the emulator, not the
   learner), and the replay buffer's allocated bytes for the Zoo's 100,000 transitions.
3. The two-player env alone, random actions: pongrl's fast env vs the PettingZoo + SuperSuit chain.

Each measurement runs in a fresh process and times a fixed number of env steps after a warm-up; peak
memory is that process's maximum resident set size. The table gives medians, the ratio, and peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- one measurement, in its own process ---------------------------------------------------------
PHASES = ("env", "inference", "update")


def pongrl_rate(algo: str, warmup: int, steps: int, extra: list[str]) -> tuple[float, dict]:
    """Steps/s of `pongrl train ALGO --preset zoo` between the logged steps `warmup` and `warmup + steps`,
    and the share of that time in each phase the run logs (PPO: env, inference, update)."""
    import csv

    from pongrl.cli import main

    run_dir = os.path.join(tempfile.mkdtemp(prefix="bench-"), "run")
    log_every = {"ppo": 1024, "dqn": 1000}[algo]
    code = main(
        [
            "train",
            algo,
            "--preset",
            "zoo",
            "--run-dir",
            run_dir,
            "--total-steps",
            str(warmup + steps),
            "--log-every",
            str(log_every),
            "--eval-every",
            "0",
            "--checkpoint-every",
            str(10 * (warmup + steps)),
            *extra,
        ]
    )
    assert code == 0
    with open(os.path.join(run_dir, "metrics.csv")) as handle:
        rows = [r for r in csv.DictReader(handle) if int(r["env_step"]) >= warmup]
    seconds = float(rows[-1]["wall_seconds"]) - float(rows[0]["wall_seconds"])
    shares = {
        phase: sum(float(r[f"{phase}_seconds"]) for r in rows[1:]) / seconds
        for phase in PHASES
        if rows[-1].get(f"{phase}_seconds")
    }
    return (int(rows[-1]["env_step"]) - int(rows[0]["env_step"])) / seconds, shares


class _Clock:
    """An SB3 callback that notes the wall clock when the env step count passes the warm-up."""

    def __init__(self, warmup: int):
        from stable_baselines3.common.callbacks import BaseCallback

        clock = self

        class Callback(BaseCallback):
            def _on_step(self) -> bool:
                if clock.start is None and self.num_timesteps >= warmup:
                    clock.start, clock.start_steps = time.perf_counter(), self.num_timesteps
                return True

        self.start = self.start_steps = None
        self.callback = Callback()


def sb3_rate(algo: str, warmup: int, steps: int) -> tuple[float, dict]:
    import ale_py
    import gymnasium
    import torch
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    gymnasium.register_envs(ale_py)
    torch.set_num_threads(os.cpu_count() or 1)
    clock = _Clock(warmup)
    extra = {}
    if algo == "ppo":
        env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=8, seed=0), n_stack=4)
        model = PPO(
            "CnnPolicy",
            env,
            n_steps=128,
            n_epochs=4,
            batch_size=256,
            learning_rate=2.5e-4,
            clip_range=0.1,
            vf_coef=0.5,
            ent_coef=0.01,
            seed=0,
            device="cpu",
        )
    else:
        env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=1, seed=0), n_stack=4)
        model = DQN(
            "CnnPolicy",
            env,
            buffer_size=100_000,
            learning_rate=1e-4,
            batch_size=32,
            learning_starts=warmup // 2,
            target_update_interval=1000,
            train_freq=4,
            gradient_steps=1,
            exploration_fraction=0.1,
            exploration_final_eps=0.01,
            optimize_memory_usage=False,
            seed=0,
            device="cpu",
        )
        buffer = model.replay_buffer
        extra["buffer_bytes"] = int(
            buffer.observations.nbytes + getattr(buffer, "next_observations", buffer.observations).nbytes
        )
    model.learn(total_timesteps=warmup + steps, callback=clock.callback)
    return (model.num_timesteps - clock.start_steps) / (time.perf_counter() - clock.start), extra


def worker(case: str, side: str, warmup: int, steps: int) -> dict:
    extra: dict = {}
    if case == "env":
        games = 4  # envs.py's default; one vector step moves each game once, two agent steps each
        command = [sys.executable, os.path.join(HERE, "envs.py"), "--env", side, "--steps", str(steps // (2 * games))]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        rate = float(output.strip().splitlines()[-1].split(":")[1].replace(",", ""))
        return {"rate": rate, "peak_rss": _children_peak_rss()}
    if side == "pongrl":
        flags = ["--learning-starts", str(warmup // 2)] if case == "dqn" else []
        rate, extra["phases"] = pongrl_rate(case, warmup, steps, flags)
        if case == "dqn":
            from pongrl.replay import FrameReplayBuffer

            extra["buffer_bytes"] = FrameReplayBuffer(100_000, num_envs=1, n_step=1).nbytes()
    else:
        rate, extra = sb3_rate(case, warmup, steps)
    return {"rate": rate, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, **extra}


def _children_peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


# ---- the harness ---------------------------------------------------------------------------------
CASES = {  # case: (sides, warm-up env steps, timed env steps, quick timed steps)
    "ppo": (("pongrl", "sb3"), 2048, 16384, 4096),
    "dqn": (("pongrl", "sb3"), 4000, 8000, 2000),
    "env": (("fast", "reference"), 0, 20000, 4000),
}
LABELS = {
    "ppo": "PPO, Zoo Atari settings (agent steps/s)",
    "dqn": "DQN, Zoo Atari settings (env steps/s)",
    "env": "two-player env alone, random actions (agent steps/s)",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timed spans")
    parser.add_argument("--repeats", type=int, default=2, help="A B pairs per case (default 2)")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--out", default=os.path.join(HERE, "..", "docs", "speed.md"))
    parser.add_argument("--worker", nargs=4, metavar=("CASE", "SIDE", "WARMUP", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        case, side, warmup, steps = args.worker
        print(json.dumps(worker(case, side, int(warmup), int(steps))))
        return
    rows = []
    for case in args.cases:
        sides, warmup, steps, quick_steps = CASES[case]
        steps = quick_steps if args.quick else steps
        results: dict[str, list[dict]] = {side: [] for side in sides}
        for _ in range(args.repeats):
            for side in sides:  # A B A B: drift on a shared machine hits both sides alike
                command = [sys.executable, __file__, "--worker", case, side, str(warmup), str(steps)]
                output = subprocess.run(command, capture_output=True, text=True)
                if output.returncode != 0:
                    print(f"{case}/{side} failed:\n{output.stderr[-3000:]}", file=sys.stderr)
                    break
                results[side].append(json.loads(output.stdout.strip().splitlines()[-1]))
                print(
                    f"{case} {side}: {results[side][-1]['rate']:.1f}/s, peak RSS "
                    f"{results[side][-1]['peak_rss'] / 2**30:.2f} GiB",
                    file=sys.stderr,
                    flush=True,
                )
        if not all(results.values()):
            continue  # a failed case is left out of the table; the others still count
        ours, theirs = (statistics.median(r["rate"] for r in results[side]) for side in sides)
        memory = [max(r["peak_rss"] for r in results[side]) / 2**30 for side in sides]
        buffers = [results[side][0].get("buffer_bytes") for side in sides]
        ours_runs = results[sides[0]]
        phases = ", ".join(
            f"{phase} {statistics.median(r['phases'][phase] for r in ours_runs):.0%}"
            for phase in ours_runs[0].get("phases") or {}
        )
        rates = [[r["rate"] for r in results[s]] for s in sides]
        rows.append((case, sides, ours, theirs, memory, buffers, steps, rates, phases))
    versions = _versions()
    lines = [
        BEGIN,
        f"Command: `python benchmarks/run.py{' --quick' if args.quick else ''} --cases {' '.join(args.cases)} "
        f"--repeats {args.repeats}`. "
        f"Machine: {os.cpu_count()} cores ({platform.processor() or platform.machine()}), {versions}. "
        f"Date: {time.strftime('%Y-%m-%d')}. Medians of {args.repeats} runs per side, alternating (A B A B).",
        "",
        "| case | pongrl | anchor | ratio | peak RSS pongrl / anchor | runs: pongrl; anchor |",
        "|---|---:|---:|---:|---|---|",
    ]
    for case, sides, ours, theirs, memory, buffers, steps, runs, phases in rows:
        anchor = {"ppo": "Stable-Baselines3 PPO", "dqn": "Stable-Baselines3 DQN", "env": "PettingZoo + SuperSuit"}[case]
        lines.append(
            f"| {LABELS[case]} vs {anchor}, {steps:,} timed steps | {ours:,.1f} | {theirs:,.1f} | "
            f"{ours / theirs:.2f}x | {memory[0]:.2f} / {memory[1]:.2f} GiB | "
            f"{', '.join(f'{v:.1f}' for v in runs[0])}; {', '.join(f'{v:.1f}' for v in runs[1])} |"
        )
        if phases:
            lines.append(f"| pongrl's time per phase in that case (median share of wall time) | {phases} | | | | |")
        if buffers[0]:
            lines.append(
                f"| DQN replay buffer for 100,000 transitions (allocated bytes) | "
                f"{buffers[0] / 2**30:.2f} GiB | {buffers[1] / 2**30:.2f} GiB | "
                f"{buffers[1] / buffers[0]:.1f}x less | | |"
            )
    lines.append(END)
    block = "\n".join(lines) + "\n"
    print(block)
    write_block(args.out, block)


BEGIN, END = "<!-- benchmarks/run.py writes from here -->", "<!-- benchmarks/run.py writes to here -->"


def write_block(path: str, block: str) -> None:
    """Replace the generated block of `path` (between BEGIN and END), keeping the text around it that
    people wrote; a file without the markers is created with the block under a title."""
    text = open(path).read() if os.path.exists(path) else ""
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block.rstrip("\n") + text[text.index(END) + len(END) :]
    else:
        text = "# Side-by-side benchmarks\n\n" + block
    with open(path, "w") as handle:
        handle.write(text)


def _versions() -> str:
    import importlib.metadata as metadata

    names = ["torch", "ale-py", "stable-baselines3", "pettingzoo", "supersuit"]
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    return f"Python {platform.python_version()}, " + ", ".join(found)


if __name__ == "__main__":
    main()
