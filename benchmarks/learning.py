"""Learning benchmark: train with a preset, then chart the evaluation return (mean over whole games
against the built-in AI) against env steps and wall-clock time.

    python benchmarks/learning.py --run-dir ~/runs/dqn-default --preset default --total-steps 2000000
    python benchmarks/learning.py --run-dir ~/runs/dqn-default --report-only \
        --out docs/assets/learning/learning_dqn_default.png
    python benchmarks/learning.py --run-dir ~/runs/dqn-small --total-steps 2000000 -- --network small --torch-threads 1
    python benchmarks/learning.py --run-dir ~/runs/dqn-small --report-only --compare ~/runs/dqn-default --out chart.png

Arguments after `--` go to `pongrl train` (or to `pongrl resume`, which takes only the settings a resume
may change, such as --torch-threads).

A run directory that already holds a run is resumed (the curve is spliced on), so the benchmark can
run over several sessions. The chart and a Markdown table of the evaluations are the output.
"""

import argparse
import os
import signal
import subprocess
import sys

import numpy as np


def train_command(
    run_dir: str, algo: str, preset: str, total_steps: int, eval_every: int, extra: list[str]
) -> list[str]:
    """`pongrl train` for a new run directory, `pongrl resume` for one that holds a run."""
    if os.path.exists(os.path.join(run_dir, "config.yaml")):
        return [sys.executable, "-m", "pongrl", "resume", run_dir, "--total-steps", str(total_steps), *extra]
    return [
        sys.executable,
        "-m",
        "pongrl",
        "train",
        algo,
        "--preset",
        preset,
        "--run-dir",
        run_dir,
        "--total-steps",
        str(total_steps),
        "--eval-every",
        str(eval_every),
        "--eval-episodes",
        "10",
        *extra,
    ]


def train(args) -> None:
    command = train_command(args.run_dir, args.algo, args.preset, args.total_steps, args.eval_every, args.extra)
    print("$", " ".join(command), flush=True)
    child = subprocess.Popen(command)  # the interpreter running this script, so no activated venv is needed
    # `kill PID` of this script must stop the training cleanly (checkpoint written), not orphan it; Ctrl-C
    # already reaches the whole process group, so only SIGTERM is passed on.
    signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
    code = child.wait()
    if code not in (0, 130, 143):
        sys.exit(code)


def eval_curve(run_dir: str) -> dict:
    """A run's evaluations: env steps, wall-clock hours, hours without the evaluations, mean and std."""
    from pongrl.config import load_yaml
    from pongrl.errors import PongrlError
    from pongrl.run import CONFIG_FILE, read_metrics

    try:
        all_rows = read_metrics(run_dir)
        self_play = load_yaml(os.path.join(run_dir, CONFIG_FILE)).algo == "selfplay"
    except PongrlError as error:
        sys.exit(f"learning.py: {error}")
    # Wall clock without the evaluations themselves (runs older than the per-phase columns lack it).
    has_eval_clock = all(r.get("eval_seconds") not in (None, "") for r in all_rows)
    eval_so_far = np.cumsum([float(r["eval_seconds"]) if has_eval_clock else 0.0 for r in all_rows])
    picked = [i for i, r in enumerate(all_rows) if r.get("eval_mean_return")]
    if not picked:
        sys.exit(f"{run_dir}: no evaluation rows yet")
    rows = [all_rows[i] for i in picked]
    hours = np.array([float(r["wall_seconds"]) for r in rows]) / 3600
    return {
        "name": os.path.basename(os.path.normpath(run_dir)),
        "self_play": self_play,
        "steps": np.array([int(r["env_step"]) for r in rows]),
        "hours": hours,
        "training_hours": hours - eval_so_far[picked] / 3600 if has_eval_clock else None,
        "mean": np.array([float(r["eval_mean_return"]) for r in rows]),
        "std": np.array([float(r["eval_std_return"]) for r in rows]),
        # PPO runs also score the policy drawing its actions (--eval-sampled); NaN where a row lacks it
        "sampled_mean": np.array([float(r.get("eval_sampled_mean_return") or "nan") for r in rows]),
        "sampled_std": np.array([float(r.get("eval_sampled_std_return") or "nan") for r in rows]),
    }


def report(args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = [eval_curve(run_dir) for run_dir in [args.run_dir, *args.compare]]
    # Beside other runs, time is compared without the evaluations (their number and length differ by run).
    use_training_hours = len(curves) > 1 and all(c["training_hours"] is not None for c in curves)
    hours_label = "training hours (evaluations excluded)" if use_training_hours else "wall-clock hours"
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for curve in curves:
        hours = curve["training_hours"] if use_training_hours else curve["hours"]
        sampled = ~np.isnan(curve["sampled_mean"])
        for axis, x in ((axes[0], curve["steps"] / 1e6), (axes[1], hours)):
            (line,) = axis.plot(x, curve["mean"], "o-", label=curve["name"] + (" (greedy)" if sampled.any() else ""))
            axis.fill_between(
                x, curve["mean"] - curve["std"], curve["mean"] + curve["std"], alpha=0.15, color=line.get_color()
            )
            if sampled.any():
                axis.plot(
                    x[sampled],
                    curve["sampled_mean"][sampled],
                    "^--",
                    color=line.get_color(),
                    label=f"{curve['name']} (actions sampled from the policy)",
                )
    # The issues' targets: +18 against the built-in AI for DQN and PPO; self-play is to beat it on average.
    self_play = all(c["self_play"] for c in curves)
    target, target_label = (0, "beats the built-in AI above 0") if self_play else (18, "+18")
    steps_label = "agent steps (millions)" if self_play else "environment steps (millions)"
    for axis, label in ((axes[0], steps_label), (axes[1], hours_label)):
        axis.axhline(target, color="grey", linestyle=":", label=target_label)
        axis.set(xlabel=label, ylim=(-21.5, 21.5))
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("evaluation return (10 games vs built-in AI)")
    axes[0].legend(fontsize=8)
    figure.suptitle(" vs ".join(c["name"] for c in curves))
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(f"chart: {args.out}")
    for curve in curves:
        if len(curves) > 1:
            print(f"\n{curve['name']}")
        print_table(curve)


def print_table(curve: dict) -> None:
    """The evaluations as a Markdown table; the training-time and sampled-play columns when the run has them."""
    headers = ["env steps", "wall-clock"]
    columns = [[f"{s:,}" for s in curve["steps"]], [f"{h:.2f} h" for h in curve["hours"]]]
    if curve["training_hours"] is not None:
        headers.append("of it training (evaluations excluded)")
        columns.append([f"{t * 60:.0f} min" for t in curve["training_hours"]])
    headers.append("eval return, greedy (mean +- std, 10 games)")
    columns.append([f"{m:+.1f} +- {d:.1f}" for m, d in zip(curve["mean"], curve["std"])])
    if not np.isnan(curve["sampled_mean"]).all():
        headers.append("eval return, sampled actions")
        columns.append(
            ["" if np.isnan(m) else f"{m:+.1f} +- {d:.1f}" for m, d in zip(curve["sampled_mean"], curve["sampled_std"])]
        )
    print("| " + " | ".join(headers) + " |")
    print("|" + "---:|" * len(headers))
    for cells in zip(*columns):
        print("| " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--algo", default="dqn")
    parser.add_argument("--preset", default="default")
    parser.add_argument("--total-steps", type=int, default=2_000_000)
    parser.add_argument("--eval-every", type=int, default=50_000)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out", default=None, help="chart path (default RUN/plots/learning.png)")
    parser.add_argument(
        "--compare",
        nargs="+",
        default=[],
        metavar="RUN",
        help="other runs drawn beside this one in the chart (time then excludes evaluations)",
    )
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.extra = argv[split + 1 :]
    args.out = args.out or os.path.join(args.run_dir, "plots", "learning.png")
    if not args.report_only:
        train(args)
    report(args)


if __name__ == "__main__":
    main()
