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

Decodable is not used: `intervene_across` then plays `probe intervene` on every recorded checkpoint (its
probe's directions fitted on the study's own frames) and `plot_used` draws each direction's steering
response against the env step, beside the probe's R^2: when does a layer come to hold the landing point,
and when does the policy start to act on it?
"""

from __future__ import annotations

import json
import os

import numpy as np

from pongrl import zoo
from pongrl.checkpoint import checkpoints_folder, list_checkpoints, run_name
from pongrl.errors import PongrlError
from pongrl.probes.labels import REGRESSION_LABELS

LAYER_ORDER = ("input", "conv1", "conv2", "conv3", "fc", "output", "value")
INTERVENE_CSV = "intervene.csv"
INTERVENE_SETTINGS = "intervene.json"


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


def check_steering(
    out_dir: str,
    agent_spec: str,
    layers,
    labels,
    alphas,
    games: int,
    seed: int,
    sticky_actions: float,
    random_draws: int = 1,
    kinds: tuple[str, ...] = ("steer",),
) -> dict:
    """Refuse, with one line and before anything is played, steering that `intervene_across` could not do on
    the study's checkpoints (checked on `agent_spec`, one of them), or that would mix its rows with those of
    other settings already in `out_dir`. Returns the settings."""
    from pongrl.agent import as_agent
    from pongrl.probes.intervene import STEERING_KINDS, check_request

    if len(set(alphas)) < 2:
        raise PongrlError("a steering response needs at least two different --alpha values")
    for kind in kinds:
        if kind not in STEERING_KINDS:
            raise PongrlError(f"--intervene-kind must be one of {', '.join(STEERING_KINDS)}, got {kind!r}")
    check_request(as_agent(agent_spec), layers, labels, list(kinds), alphas, games, sticky_actions, random_draws)
    settings = {
        "layers": list(layers),
        "labels": list(labels),
        "alphas": [float(alpha) for alpha in alphas],
        "games": games,
        "seed": seed,
        "sticky_actions": sticky_actions,
        "random_draws": random_draws,
        "kinds": list(kinds),
    }
    settings_path = os.path.join(out_dir, INTERVENE_SETTINGS)
    if os.path.exists(settings_path):
        try:
            with open(settings_path) as handle:
                earlier = json.load(handle)
        except (OSError, ValueError):
            raise PongrlError(f"{settings_path}: unreadable; remove it (and {INTERVENE_CSV}) to start over") from None
        if earlier != settings:
            raise PongrlError(
                f"{out_dir} holds interventions with other settings ({earlier}); "
                "give the same ones, or use another --out"
            )
    return settings


def intervene_across(
    out_dir: str,
    layers: list[str],
    labels: list[str],
    alphas: list[float],
    games: int = 10,
    seed: int = 0,
    sticky_actions: float = 0.0,
    progress=None,
    random_draws: int = 1,
    kinds: tuple[str, ...] = ("steer",),
) -> list[dict]:
    """`probe intervene` on every checkpoint the study in `out_dir` recorded, oldest first: each steering kind
    of `kinds`, along the probe's direction and `random_draws` random ones, fitted on the study's frames. Rows
    of `intervene.COLUMNS` with the checkpoint's run and env step, in out_dir/intervene.csv, rewritten whole
    after each checkpoint. An interrupted call continues where it stopped; one with other settings is refused
    (the rows would mix)."""
    from pongrl.checkpoint import atomic_write_bytes, write_csv
    from pongrl.probes.fit import ProbeData
    from pongrl.probes.intervene import COLUMNS, intervene

    checkpoints = [entry for entry in ProbeData(out_dir).settings["agents"] if entry["spec"] != "random-init"]
    checkpoints.sort(key=lambda entry: (run_label(entry["spec"]), entry["env_step"]))
    settings = check_steering(
        out_dir, checkpoints[-1]["spec"], layers, labels, alphas, games, seed, sticky_actions, random_draws, kinds
    )
    settings_path, csv_path = os.path.join(out_dir, INTERVENE_SETTINGS), os.path.join(out_dir, INTERVENE_CSV)
    rows = _read_rows(csv_path) if os.path.exists(settings_path) and os.path.exists(csv_path) else []
    done = {row["agent"] for row in rows}
    atomic_write_bytes(settings_path, json.dumps(settings, indent=1).encode())
    for entry in checkpoints:
        if entry["name"] in done:
            continue
        found = intervene(
            entry["spec"],
            out_dir,
            layers,
            labels,
            list(kinds),
            alphas,
            games,
            seed,
            sticky_actions,
            progress,
            random_draws,
        )
        run = run_label(entry["spec"])
        rows += [{"run": run, "env_step": entry["env_step"], **row, "agent": entry["name"]} for row in found]
        write_csv(csv_path, rows, ["run", "env_step", *COLUMNS])
    return rows


def _read_rows(path: str) -> list[dict]:
    """intervene.csv's rows, numbers as floats."""
    import csv

    text_columns = {"run", "agent", "layer", "label", "kind", "direction"}

    def value(key: str, text: str):
        return text if key in text_columns else float(text)

    try:
        with open(path, newline="") as handle:
            return [{key: value(key, text) for key, text in row.items()} for row in csv.DictReader(handle)]
    except (OSError, ValueError):
        raise PongrlError(f"{path}: unreadable; remove it (and {INTERVENE_SETTINGS}) to start over") from None


def steering_response(rows: list[dict]) -> list[dict]:
    """Per checkpoint, layer, label and direction: the slope of the paddle's offset from the ball over alpha
    (rows of paddle per unit of the label; 1 = the paddle goes wholly where the steered belief says the ball
    is, 0 = it ignores the edit), the least-squares slope through the conditions' mean offsets with its 95%
    interval from theirs, and the probe's R^2."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["kind"] != "none":
            key = (row["run"], row["env_step"], row["agent"], row["layer"], row["label"], row["kind"], row["direction"])
            groups.setdefault(key, []).append(row)
    responses = []
    for (run, env_step, agent, layer, label, kind, direction), chosen in groups.items():
        alphas = np.array([row["alpha"] for row in chosen], np.float64)
        offsets = np.array([row["paddle_offset"] for row in chosen], np.float64)
        halves = np.array([(row["paddle_offset_high"] - row["paddle_offset_low"]) / 2 for row in chosen], np.float64)
        centred = alphas - alphas.mean()
        spread = float(np.sum(centred**2))
        slope = float(np.sum(centred * offsets) / spread) if spread > 0 else float("nan")
        half = float(np.sqrt(np.sum(centred**2 * halves**2)) / spread) if spread > 0 else float("nan")
        responses.append(
            {
                "run": run,
                "env_step": env_step,
                "agent": agent,
                "layer": layer,
                "label": label,
                "kind": kind,
                "direction": direction,
                "probe_r2": chosen[0]["probe_r2"],
                "edit_size": max(row["edit_size"] for row in chosen),
                "response": slope,
                "response_low": slope - half,
                "response_high": slope + half,
            }
        )
    return sorted(responses, key=lambda r: (r["run"], r["layer"], r["label"], r["kind"], r["direction"], r["env_step"]))


def plot_used(responses: list[dict], out_path: str) -> str:
    """One panel per (layer, label): the steering response against env step, the probe's direction (solid,
    with its 95% interval) beside the random one (dotted), the runs overlaid; the probe's R^2 on the right axis
    (grey): decodable (R^2) against used (response). Written whole or not at all."""
    from pongrl.checkpoint import atomic_write_file

    def draw(path: str) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        panels = list(dict.fromkeys((row["layer"], row["label"], row["kind"]) for row in responses))
        runs = list(dict.fromkeys(row["run"] for row in responses))
        directions = sorted({row["direction"] for row in responses}, key=lambda name: (name != "probe", name))
        colours = {run: plt.get_cmap("tab10")(i % 10) for i, run in enumerate(runs)}
        figure, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
        for axis, (layer, label, kind) in zip(axes[0], panels):
            r2_axis = axis.twinx()
            for run in runs:
                for direction in directions:
                    style = "o-" if direction == "probe" else "x:"
                    points = [
                        row
                        for row in responses
                        if (row["run"], row["layer"], row["label"], row["kind"], row["direction"])
                        == (run, layer, label, kind, direction)
                    ]
                    if not points:
                        continue
                    steps = np.array([row["env_step"] for row in points], np.float64)
                    response = np.array([row["response"] for row in points])
                    low = np.array([row["response_low"] for row in points])
                    high = np.array([row["response_high"] for row in points])
                    axis.errorbar(
                        steps,
                        response,
                        yerr=[response - low, high - response],
                        fmt=style,
                        color=colours[run],
                        capsize=2,
                        label=f"{run}, {direction} direction",
                    )
                    if direction == "probe":
                        r2 = [row["probe_r2"] for row in points]
                        r2_axis.plot(steps, r2, "--", color=colours[run], alpha=0.45, label=f"{run}, probe R^2")
            axis.axhline(0, color="grey", linewidth=0.8)
            axis.set_xscale("log")
            axis.set(
                xlabel="env steps of the checkpoint",
                ylabel=f"paddle rows per unit of {label} steered",
                title=f"{layer}: {kind} along the probe of {label}",
            )
            r2_axis.set_ylabel("probe R^2 (dashed)")
            r2_axis.set_ylim(min(0.0, r2_axis.get_ylim()[0]), 1.02)
            axis.grid(alpha=0.3)
            handles, names = axis.get_legend_handles_labels()
            more_handles, more_names = r2_axis.get_legend_handles_labels()
            axis.legend(handles + more_handles, names + more_names, fontsize=7)
        figure.tight_layout()
        figure.savefig(path, dpi=100, format="png")
        plt.close(figure)

    atomic_write_file(out_path, draw)
    return out_path
