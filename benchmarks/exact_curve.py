"""Exact score of greedy play against the built-in AI, checkpoint by checkpoint along a run.

    python benchmarks/exact_curve.py CHECKPOINT... [--run-dir RUN] [--results DIR] [--out chart.png] [--torch-threads N]
    python benchmarks/exact_curve.py --series LABEL RUN CHECKPOINT... --series LABEL RUN CHECKPOINT...
        [--from-step N] ...
    python benchmarks/exact_curve.py CHECKPOINT... --held-out-games 31   # also under sticky actions and sampled

Each checkpoint plays one greedy game from every start the protocol can deal, as `pongrl eval --every-start`
does: the emulator is deterministic, so the mean of those 31 games is the expected score itself, not an
estimate of it. Results are kept in --results, one JSON per checkpoint named by the file's SHA-256, so a rerun
with more checkpoints plays only the new ones. With --run-dir, the run's own evaluations during training (ten
random games each, greedy and sampled) are drawn beside the exact scores. With --series, several runs (a run
and its branches) are drawn together, each in its colour. Prints a Markdown table per run.

With --held-out-games N, each checkpoint also plays N greedy games under sticky actions (0.25, the ALE v5
protocol; `pongrl eval --sticky-actions 0.25`) and N games with actions sampled from its policy (`pongrl eval
--sample`), both seeded 0: scores the deterministic protocol cannot bend, so a checkpoint that wins by one
repeated pattern shows up as what it is. They are cached beside the exact score and added to the table.
"""

import argparse
import json
import os
import statistics
import sys


STICKY = 0.25


def held_out_key(kind: str, games: int) -> str:
    return f"{kind}_{games}_games"


def exact_score(path: str, results_dir: str, held_out_games: int = 0) -> dict:
    from pongrl.agent import load_agent
    from pongrl.arena import file_sha256
    from pongrl.errors import PongrlError
    from pongrl.evaluation import evaluate_agent, evaluate_every_start, summarize

    if not os.path.isfile(path):
        raise PongrlError(f"{path}: no such checkpoint file")
    digest = file_sha256(path)
    cached = os.path.join(results_dir, digest[:16] + ".json")
    result = {}
    if os.path.exists(cached):
        with open(cached) as handle:
            result = json.load(handle)
    wanted = [held_out_key(kind, held_out_games) for kind in ("sticky", "sampled")] if held_out_games else []
    if result and all(key in result for key in wanted):
        return result
    agent = load_agent(path)
    if not result:
        games = evaluate_every_start(agent)
        result = {
            "path": path,
            "sha256": digest,
            "env_step": agent.env_step,
            "mean": summarize(games)["mean"],
            "per_game": games,
        }
    if held_out_games:
        for kind, games in (
            ("sticky", lambda: evaluate_agent(agent, held_out_games, 0, sticky_actions=STICKY)),
            ("sampled", lambda: evaluate_agent(agent, held_out_games, 0, sample=True)),
        ):
            key = held_out_key(kind, held_out_games)
            if key not in result:
                summary = summarize(games())
                result[key] = {"mean": summary["mean"], "scores": summary["scores"]}
    os.makedirs(results_dir, exist_ok=True)
    with open(cached + ".tmp", "w") as handle:
        json.dump(result, handle)
    os.replace(cached + ".tmp", cached)  # an interrupted rerun never finds half a result
    return result


def held_out_cell(result: dict, kind: str, games: int) -> str:
    """mean +- standard error over the games, and how many were won."""
    scores = result[held_out_key(kind, games)]["scores"]
    stderr = statistics.stdev(scores) / len(scores) ** 0.5 if len(scores) > 1 else 0.0
    return f"{statistics.mean(scores):+.2f} +- {stderr:.2f} ({sum(s > 0 for s in scores)} won)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="*")
    parser.add_argument("--run-dir", help="draw this run's evaluations during training beside the exact scores")
    parser.add_argument(
        "--series",
        nargs="+",
        action="append",
        default=[],
        metavar="LABEL RUN_DIR CHECKPOINT",
        help="instead of the arguments above: one line per run, to compare runs (say a run and a "
        "branch of it); repeat for each run",
    )
    parser.add_argument(
        "--from-step", type=int, default=0, help="leave out checkpoints and evaluations before this step"
    )
    parser.add_argument("--results", default="exact_scores", help="folder of per-checkpoint results (kept)")
    parser.add_argument("--out", default="exact_curve.png")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument(
        "--held-out-games",
        type=int,
        default=0,
        metavar="N",
        help=f"also play N greedy games with sticky actions ({STICKY}) and N sampled, per checkpoint",
    )
    args = parser.parse_args()
    if any(len(series) < 3 for series in args.series):
        sys.exit("exact_curve.py: --series takes a label, a run directory and at least one checkpoint")
    if bool(args.series) == bool(args.checkpoints):
        sys.exit("exact_curve.py: give checkpoints, or --series for each run, not both")
    series = [(label, run_dir, paths) for label, run_dir, *paths in args.series] or [
        ("checkpoint", args.run_dir, args.checkpoints)
    ]

    import torch

    torch.set_num_threads(args.torch_threads)
    from pongrl.errors import PongrlError

    try:
        scored = [
            (
                label,
                run_dir,
                sorted(
                    (
                        r
                        for r in (exact_score(path, args.results, args.held_out_games) for path in paths)
                        if r["env_step"] >= args.from_step
                    ),
                    key=lambda r: r["env_step"],
                ),
            )
            for label, run_dir, paths in series
        ]
    except PongrlError as error:
        sys.exit(f"exact_curve.py: {error}")
    for label, _, results in scored:
        if len(scored) > 1:
            print(f"\n{label}:\n")
        n = args.held_out_games
        held_out = (
            f" greedy, sticky actions {STICKY} ({n} games, s.e.) | sampled actions ({n} games, s.e.) |" if n else ""
        )
        print(f"| agent steps | exact score, greedy (31 starts) | starts won | starts lost |{held_out} checkpoint |")
        print("|---:|---:|---:|---:|" + ("---:|---:|" if n else "") + "---|")
        for result in results:
            scores = [g["score"] for g in result["per_game"]]
            cells = f" {held_out_cell(result, 'sticky', n)} | {held_out_cell(result, 'sampled', n)} |" if n else ""
            print(
                f"| {result['env_step']:,} | {result['mean']:+.2f} | {sum(s > 0 for s in scores)} | "
                f"{sum(s < 0 for s in scores)} |{cells} {os.path.basename(result['path'])} |"
            )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.2))
    for index, (label, run_dir, results) in enumerate(scored):
        colour = "black" if index == 0 else f"C{index + 1}"  # matplotlib's cycle, past C1 (the sampled line's orange)
        name = "" if len(scored) == 1 else f"{label}: "
        if run_dir:
            from learning import eval_curve  # benchmarks/learning.py: the run's evaluations, read once for both scripts

            during = eval_curve(run_dir)
            keep = during["steps"] >= args.from_step
            steps = during["steps"][keep] / 1e6
            if len(scored) == 1:  # greedy play over ten random games is shown once, for what it hides
                axis.plot(
                    steps,
                    during["mean"][keep],
                    ".:",
                    color="tab:blue",
                    alpha=0.5,
                    label="during training: greedy, 10 random games",
                )
            axis.plot(
                steps,
                during["sampled_mean"][keep],
                "^:",
                color="tab:orange" if len(scored) == 1 else colour,
                alpha=0.5,
                label=f"{name}during training: actions sampled, 10 random games",
            )
        axis.plot(
            [r["env_step"] / 1e6 for r in results],
            [r["mean"] for r in results],
            "o-",
            color=colour,
            label=f"{name}checkpoint, greedy: exact expected score (every start)",
        )
    axis.axhline(0, color="grey", linestyle=":")
    axis.set(xlabel="agent steps (millions)", ylabel="score against the built-in AI", ylim=(-21.5, 21.5))
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(f"chart: {args.out}")


if __name__ == "__main__":
    main()
