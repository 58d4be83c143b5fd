"""`pongrl probe across`: the whole study over runs' checkpoints in one command.

Every K-th checkpoint of each run (and always its last) records its layers on one shared set of frames,
played by the first run's last checkpoint against the built-in AI, sampling its actions unless --greedy
(greedy play from the game's start repeats games frame for frame, and a test game that repeats a train
game leaks) (`collect`); the probes are fitted
(`fit`); `probes.png` draws each label's probe score per layer against the checkpoint's env step, one
panel per label, the runs overlaid (R^2 for positions and velocities, AtariARI's weighted F1 for the
rest: the classifiers of the positions and velocities, most of the fitting time, are left to `probe fit`),
with the untrained network's score per layer as a dashed line (one untrained network per architecture,
drawn over the steps of the runs that share it). Runs of different algorithms mix: each checkpoint sees
the shared frames in its own observation profile; the steps axis is logarithmic, as runs of different
algorithms learn at different scales (a DQN in hundreds of thousands of steps, self-play in millions).
"""

from __future__ import annotations

import os

from pongrl import zoo
from pongrl.checkpoint import checkpoints_folder, list_checkpoints, run_name
from pongrl.errors import PongrlError
from pongrl.probes.labels import REGRESSION_LABELS

LAYER_ORDER = ("input", "conv1", "conv2", "conv3", "fc", "output", "value")


def run_checkpoints(run: str, every: int) -> list[str]:
    """Every `every`-th checkpoint of a run, oldest first, and its last. A run is a run directory,
    shipped agents, `zoo:PATTERN` (a series such as zoo:selfplay-small-*, ordered by env step), or one
    checkpoint file (drawn with the others of its run directory, to pick a run's checkpoints by hand)."""
    if os.path.isfile(run):
        return [run]
    if zoo.is_zoo_spec(run):
        names = sorted(zoo.expand(run), key=lambda spec: zoo.card(spec[len(zoo.PREFIX) :]).get("env_step", 0))
        chosen = names[::every]
        return chosen if chosen[-1] == names[-1] else chosen + [names[-1]]
    folder = checkpoints_folder(run)
    names = list_checkpoints(folder) if os.path.isdir(folder) else []
    if not names:
        raise PongrlError(f"{run}: not a run directory with checkpoints")
    chosen = names[::every]
    if chosen[-1] != names[-1]:
        chosen.append(names[-1])
    return [os.path.join(folder, name + ".pt") for name in chosen]


def study_agents(runs: list[str], every: int) -> list[str]:
    """The checkpoints to record, the first run's last one first (it plays)."""
    if every < 1:
        raise PongrlError(f"--every must be at least 1, got {every}")
    per_run = [run_checkpoints(run, every) for run in runs]
    player = per_run[0][-1]
    return [player] + [path for paths in per_run for path in paths if path != player]


def run_label(spec: str) -> str:
    """The run a recorded agent belongs to: its run directory's name, or a shipped agent's series."""
    if zoo.is_zoo_spec(spec):
        name = spec[len(zoo.PREFIX) :]
        return zoo.card(name).get("series") or name
    return run_name(spec) or os.path.basename(spec)


def plot_across(rows: list[dict], agents: list[dict], out_path: str) -> str:
    """One panel per label: score against env step, a line per (run, layer); untrained network dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    untrained = {agent.get("architecture"): agent["name"] for agent in agents if agent["spec"] == "random-init"}
    run_of = {agent["name"]: run_label(agent["spec"]) for agent in agents if agent["spec"] != "random-init"}
    architecture_of = {run_of[agent["name"]]: agent.get("architecture") for agent in agents if agent["name"] in run_of}
    labels = list(dict.fromkeys(row["label"] for row in rows))
    layers = [layer for layer in LAYER_ORDER if any(row["layer"] == layer for row in rows)]
    colours = {layer: plt.get_cmap("viridis")(i / max(1, len(layers) - 1)) for i, layer in enumerate(layers)}
    runs = list(dict.fromkeys(run_of.values()))
    styles = ["-", ":", "-.", (0, (5, 1))]
    columns = 3
    grid_rows = -(-len(labels) // columns)
    figure, axes = plt.subplots(grid_rows, columns, figsize=(5 * columns, 3.4 * grid_rows), squeeze=False)
    for axis, label in zip(axes.flat, labels):
        metric = "r2" if label in REGRESSION_LABELS else "f1"
        chosen = [row for row in rows if row["label"] == label and row["metric"] == metric]
        for layer in layers:
            for style, run in zip(styles * len(runs), runs):
                points = sorted(
                    (row["env_step"], row["score"])
                    for row in chosen
                    if row["layer"] == layer and run_of.get(row["agent"]) == run
                )
                if not points:
                    continue
                steps, scores = zip(*points)
                axis.plot(
                    steps,
                    scores,
                    linestyle=style,
                    color=colours[layer],
                    marker=".",
                    label=f"{layer}" + (f" ({run})" if len(runs) > 1 else ""),
                )
                # The untrained network of the run's architecture, over the run's steps.
                twin = untrained.get(architecture_of.get(run), untrained.get(None))
                baseline = [row["score"] for row in chosen if row["layer"] == layer and row["agent"] == twin]
                if baseline:
                    axis.hlines(baseline[0], steps[0], steps[-1], color=colours[layer], linestyle="--", linewidth=0.8)
        axis.set_xscale("log")
        axis.set_title(f"{label} ({'R^2' if metric == 'r2' else 'weighted F1'})", fontsize=10)
        axis.set_xlabel("env steps of the checkpoint")
        axis.set_ylim(min(0.0, axis.get_ylim()[0]) if metric == "f1" else max(-0.5, axis.get_ylim()[0]), 1.02)
        axis.grid(alpha=0.3)
    for axis in list(axes.flat)[len(labels) :]:
        axis.axis("off")
    handles, names = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, names, loc="lower center", ncol=min(6, len(names)), fontsize=8)
    figure.suptitle(
        "Linear probes on test games across training (dashed: the same layer of an untrained network)", fontsize=11
    )
    figure.tight_layout(rect=(0, 0.05, 1, 0.97))
    figure.savefig(out_path, dpi=90)
    plt.close(figure)
    return out_path
