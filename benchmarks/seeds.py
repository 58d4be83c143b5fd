"""Seeds study: one preset on several seeds, each trained until its first evaluation at or above the
target, then a table (per seed: env steps and training time to the target, best evaluation, time per
phase) with the median and the worst seed, and one chart of every seed's curve against training time.

    python benchmarks/seeds.py --study-dir ~/runs/dqn-seeds --seeds 1 2 3 4 5
    python benchmarks/seeds.py --study-dir ~/runs/dqn-seeds --seeds 1 2 3 4 5 --parallel 2 -- --torch-threads 1
    python benchmarks/seeds.py --study-dir ~/runs/dqn-seeds --seeds 1 2 3 4 5 --report-only --out docs/seeds.png

Each seed trains in STUDY/seed-N (`pongrl train ALGO --preset P --seed N`, evaluated every --eval-every
env steps over 10 greedy games, the README's protocol). A seed stops at its first evaluation >= --target
(SIGTERM: pongrl writes its checkpoint first) or at --max-steps. The study resumes: a seed directory that
holds a run is resumed with `pongrl resume` (its curve spliced on), and a seed that reached the target is
not run again. Arguments after `--` go to every `pongrl train` / `pongrl resume`.

Training time is the run's wall clock without its evaluations (both spliced across resumes); the
evaluations' own time is reported apart. Runs side by side (--parallel 2, one torch thread each) share
the cores: their times are not those of a run alone, and the table says how they ran.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learning import eval_curve, train_command  # noqa: E402  (a sibling script, not a package)

PHASES = ("env_seconds", "inference_seconds", "update_seconds", "eval_seconds")


def seed_dir(study_dir: str, seed: int) -> str:
    return os.path.join(study_dir, f"seed-{seed}")


def metrics(run_dir: str) -> list[dict]:
    from pongrl.errors import PongrlError
    from pongrl.run import read_metrics

    try:
        return read_metrics(run_dir)
    except PongrlError:
        return []


def first_at_target(rows: list[dict], target: float) -> int | None:
    """Index of the first row whose evaluation is at or above the target."""
    for index, row in enumerate(rows):
        if row.get("eval_mean_return") not in (None, "") and float(row["eval_mean_return"]) >= target:
            return index
    return None


def run_seeds(args) -> None:
    pending = [
        seed for seed in args.seeds if first_at_target(metrics(seed_dir(args.study_dir, seed)), args.target) is None
    ]
    running: dict[int, subprocess.Popen] = {}
    stopping: set[int] = set()
    signal.signal(signal.SIGTERM, lambda signum, frame: [child.send_signal(signum) for child in running.values()])
    while pending or running:
        while pending and len(running) < args.parallel:
            seed = pending.pop(0)
            run_dir = seed_dir(args.study_dir, seed)
            new = not os.path.exists(os.path.join(run_dir, "config.yaml"))
            command = train_command(
                run_dir,
                args.algo,
                args.preset,
                args.max_steps,
                args.eval_every,
                [*args.extra, *(["--seed", str(seed)] if new else [])],
            )
            print("$", " ".join(command), flush=True)
            log = open(os.path.join(args.study_dir, f"seed-{seed}.log"), "a")
            running[seed] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        time.sleep(args.poll_seconds)
        for seed, child in list(running.items()):
            if child.poll() is not None:
                del running[seed]
                stopped_by_us = seed in stopping and child.returncode == -signal.SIGTERM  # while it was exiting
                if child.returncode not in (0, 130, 143) and not stopped_by_us:
                    print(f"seed {seed}: pongrl exited with {child.returncode} (see seed-{seed}.log)", flush=True)
            elif (
                seed not in stopping
                and first_at_target(metrics(seed_dir(args.study_dir, seed)), args.target) is not None
            ):
                print(f"seed {seed}: reached {args.target:+g}, stopping it", flush=True)
                child.send_signal(signal.SIGTERM)
                stopping.add(seed)


def seed_summary(run_dir: str, target: float) -> dict:
    rows = metrics(run_dir)
    reached = first_at_target(rows, target)
    upto = rows[: reached + 1] if reached is not None else rows
    phases = {name: sum(float(row.get(name) or 0) for row in upto) / 60 for name in PHASES}
    evals = [(int(row["env_step"]), float(row["eval_mean_return"])) for row in rows if row.get("eval_mean_return")]
    last = upto[-1] if upto else {"env_step": 0, "wall_seconds": 0}
    return {
        "reached": reached is not None,
        "env_step": int(last["env_step"]),
        "training_minutes": float(last["wall_seconds"]) / 60 - phases["eval_seconds"],
        "eval_minutes": phases["eval_seconds"],
        "phases": phases,
        "best": max(evals, key=lambda pair: pair[1]) if evals else None,
    }


def report(args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seeds = [seed for seed in args.seeds if metrics(seed_dir(args.study_dir, seed))]
    if not seeds:
        sys.exit(f"seeds.py: no seed of {args.study_dir} has metrics yet")
    summaries = {seed: seed_summary(seed_dir(args.study_dir, seed), args.target) for seed in seeds}
    print(
        f"| seed | env steps to {args.target:+g} | training min to {args.target:+g} | evaluations min | "
        "best evaluation (env step) | env / inference / update min |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for seed, summary in summaries.items():
        mark = "" if summary["reached"] else "not yet: "
        best = f"{summary['best'][1]:+.1f} ({summary['best'][0]:,})" if summary["best"] else "-"
        phases = summary["phases"]
        print(
            f"| {seed} | {mark}{summary['env_step']:,} | {mark}{summary['training_minutes']:.0f} | "
            f"{summary['eval_minutes']:.0f} | {best} | {phases['env_seconds']:.0f} / "
            f"{phases['inference_seconds']:.0f} / {phases['update_seconds']:.0f} |"
        )
    median, median_exact, worst, worst_exact = median_and_worst(
        [(s["training_minutes"], s["reached"]) for s in summaries.values()]
    )
    print(
        f"\n{sum(s['reached'] for s in summaries.values())} of {len(summaries)} seeds reached {args.target:+g}; "
        f"median training time to it: {'' if median_exact else 'at least '}{median:.0f} min; "
        f"worst seed: {'' if worst_exact else 'at least '}{worst:.0f} min"
    )

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for seed in seeds:
        curve = eval_curve(seed_dir(args.study_dir, seed))
        minutes = (curve["training_hours"] if curve["training_hours"] is not None else curve["hours"]) * 60
        for axis, x in ((axes[0], curve["steps"] / 1e6), (axes[1], minutes)):
            axis.plot(x, curve["mean"], "o-", markersize=3, label=f"seed {seed}")
    for axis, label in (
        (axes[0], "environment steps (millions)"),
        (axes[1], "training minutes (evaluations excluded)"),
    ):
        axis.axhline(args.target, color="grey", linestyle=":", label=f"{args.target:+g}")
        axis.set(xlabel=label, ylim=(-21.5, 21.5))
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("evaluation return (10 games vs built-in AI)")
    axes[0].legend(fontsize=8)
    figure.suptitle(f"{os.path.basename(os.path.normpath(args.study_dir))}: every seed")
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(f"chart: {args.out}")


def median_and_worst(times):
    """(median, exact, worst, exact) of [(training minutes, reached)]: a seed that has not reached the target
    counts as its training time so far, a lower bound, so the median is exact only when every such seed is
    already above the middle (more training can only move it further up) and the worst only when all reached."""
    ordered = sorted(times)
    middle = ordered[(len(ordered) - 1) // 2 : len(ordered) // 2 + 1]
    median = sum(minutes for minutes, _ in middle) / len(middle)
    median_exact = all(reached or minutes > middle[-1][0] for minutes, reached in ordered)
    return median, median_exact, ordered[-1][0], all(reached for _, reached in ordered)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study-dir", required=True, help="one run directory per seed goes here (seed-N)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--algo", default="dqn")
    parser.add_argument("--preset", default="default")
    parser.add_argument("--target", type=float, default=18.0, help="evaluation return that ends a seed (default 18)")
    parser.add_argument("--max-steps", type=int, default=1_000_000, help="env steps at which a seed gives up")
    parser.add_argument("--eval-every", type=int, default=25_000)
    parser.add_argument("--parallel", type=int, default=1, help="seeds trained at once (default 1)")
    parser.add_argument("--poll-seconds", type=float, default=10.0)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out", default=None, help="chart path (default STUDY/seeds.png)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.extra = argv[split + 1 :]
    args.out = args.out or os.path.join(args.study_dir, "seeds.png")
    if args.parallel < 1:
        sys.exit("seeds.py: --parallel must be at least 1")
    if not args.report_only:
        os.makedirs(args.study_dir, exist_ok=True)
        run_seeds(args)
    report(args)


if __name__ == "__main__":
    main()
