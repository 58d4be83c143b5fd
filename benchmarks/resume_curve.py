"""Does a resumed run continue the same learning curve as an uninterrupted one, within noise?

Compares the learning curves of finished run directories: the first is the uninterrupted reference,
the others are a run with the same seed that was stopped and resumed, and runs with other seeds (the
noise: how far two equally valid runs drift apart anyway). Prints, for each run, its evaluations,
the env step at which its training return (mean of the last games played) first reached a few
milestones, and its mean absolute distance from the reference's training return before and after the
stop; draws both curves.

    python benchmarks/resume_curve.py --split 200000 --until 400000 \\
        --out docs/assets/learning/resume_vs_uninterrupted.png \\
        "seed 1, uninterrupted=$HOME/runs/dqn-default" "seed 1, resumed at 200k=$HOME/runs/dqn-resumed" \\
        "seed 2, uninterrupted=$HOME/runs/dqn-seed2"

A resume cannot be bit-identical (the games in progress cannot be saved, see docs/reliability.md), so
"the same curve" can only mean: no further from the reference than another seed is.
"""

import argparse
import os
import sys

import numpy as np

MILESTONES = (-15.0, 0.0, 15.0)


def load(run_dir: str) -> dict:
    from pongrl.errors import PongrlError
    from pongrl.run import read_metrics

    try:
        rows = read_metrics(run_dir)
    except PongrlError as error:
        sys.exit(f"resume_curve.py: {error}")
    steps = np.array([int(r["env_step"]) for r in rows])
    if np.any(np.diff(steps) <= 0):
        sys.exit(f"{run_dir}: metrics.csv steps are not strictly increasing (a bad splice)")
    train = [(int(r["env_step"]), float(r["average_return"])) for r in rows if r.get("average_return")]
    evals = {
        int(r["env_step"]): (float(r["eval_mean_return"]), float(r["eval_std_return"]))
        for r in rows
        if r.get("eval_mean_return")
    }
    return {
        "train_steps": np.array([s for s, _ in train]),
        "train_return": np.array([v for _, v in train]),
        "evals": evals,
        "last_step": int(steps[-1]) if len(steps) else 0,
    }


def first_reaching(run: dict, level: float) -> int | None:
    hits = np.flatnonzero(run["train_return"] >= level)
    return int(run["train_steps"][hits[0]]) if len(hits) else None


def distance(run: dict, reference: dict, start: int, stop: int) -> tuple[float, int]:
    """Mean |difference| of the training return at the steps both runs logged in (start, stop]."""
    common, here, there = np.intersect1d(run["train_steps"], reference["train_steps"], return_indices=True)
    keep = (common > start) & (common <= stop)
    if not keep.any():
        return float("nan"), 0
    gap = np.abs(run["train_return"][here[keep]] - reference["train_return"][there[keep]])
    return float(gap.mean()), int(keep.sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="LABEL=DIR", help="the uninterrupted reference first")
    parser.add_argument("--split", type=int, required=True, help="env step at which the resumed run was stopped")
    parser.add_argument("--until", type=int, required=True, help="last env step compared")
    parser.add_argument("--out", default=None, help="chart path (PNG)")
    args = parser.parse_args()
    if len(args.runs) < 2 or any("=" not in r for r in args.runs):
        parser.error("give at least two runs as LABEL=DIR, the uninterrupted reference first")
    labels, runs = [], []
    for item in args.runs:
        label, run_dir = item.split("=", 1)
        labels.append(label)
        runs.append(load(os.path.expanduser(run_dir)))

    # Every run is compared over the same window, the steps that all of them have reached.
    until = min([args.until] + [run["last_step"] for run in runs])
    print(
        "| run | last step | "
        + " | ".join(f"training return first >= {m:+.0f}" for m in MILESTONES)
        + f" | mean abs. distance from the first run, (0, {args.split:,}] | same, ({args.split:,}, {until:,}] |"
    )
    print("|---|---:|" + "---:|" * (len(MILESTONES) + 2))
    for label, run in zip(labels, runs):
        reached = [first_reaching(run, m) for m in MILESTONES]
        gaps = [distance(run, runs[0], start, stop) for start, stop in ((0, args.split), (args.split, until))]
        gap_text = " | ".join(
            "(reference)" if run is runs[0] else f"{gap:.2f} over {points} log rows" for gap, points in gaps
        )
        print(
            f"| {label} | {run['last_step']:,} | "
            + " | ".join(f"{r:,}" if r else "not yet" for r in reached)
            + f" | {gap_text} |"
        )

    eval_steps = sorted({s for run in runs for s in run["evals"] if s <= args.until})
    print()
    print("| env step | " + " | ".join(labels) + " |")
    print("|---:|" + "---:|" * len(labels))
    for step in eval_steps:
        cells = [
            f"{run['evals'][step][0]:+.1f} +- {run['evals'][step][1]:.1f}" if step in run["evals"] else ""
            for run in runs
        ]
        print(f"| {step:,} | " + " | ".join(cells) + " |")

    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
        for label, run in zip(labels, runs):
            shown = run["train_steps"] <= args.until
            axes[0].plot(run["train_steps"][shown] / 1e3, run["train_return"][shown], label=label)
            steps = [s for s in sorted(run["evals"]) if s <= args.until]
            axes[1].plot(np.array(steps) / 1e3, [run["evals"][s][0] for s in steps], "o-", label=label)
        for axis, title in zip(
            axes, ("training return (last games, epsilon-greedy)", "evaluation return (10 greedy games)")
        ):
            axis.axvline(args.split / 1e3, color="grey", linestyle="--", linewidth=1)
            axis.set(xlabel="environment steps (thousands)", title=title, ylim=(-21.5, 21.5))
            axis.grid(alpha=0.3)
        axes[0].set_ylabel("return vs built-in AI")
        axes[1].legend(loc="upper left", fontsize=8)
        figure.tight_layout()
        os.makedirs(os.path.dirname(os.path.abspath(args.out)) or ".", exist_ok=True)
        figure.savefig(args.out, dpi=110)
        print(f"\nchart: {args.out}")


if __name__ == "__main__":
    main()
