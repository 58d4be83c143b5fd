"""The charts of the probe studies, drawn with matplotlib (Agg): `probe across`'s probes.png (what each layer
holds across training) and used.png (whether the policy acts on it), and `probe intervene`'s intervene.png."""

from __future__ import annotations

import numpy as np

from pongrl.checkpoint import run_label
from pongrl.probes.labels import REGRESSION_LABELS

LAYER_ORDER = ("input", "conv1", "conv2", "conv3", "fc", "output", "value")


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


def plot_used(responses: list[dict], out_path: str) -> str:
    """One panel per (layer, label, kind): the steering response against env step, the probe's direction (solid,
    with its 95% interval) beside the random ones (dotted; several draws as the shaded range of their
    responses), the runs overlaid; the probe's R^2 on the right axis (dashed): decodable (R^2) against used
    (response). Written whole or not at all."""
    from pongrl.checkpoint import atomic_write_file

    def draw(path: str) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker

        panels = list(dict.fromkeys((row["layer"], row["label"], row["kind"]) for row in responses))
        runs = list(dict.fromkeys(row["run"] for row in responses))
        directions = sorted({row["direction"] for row in responses}, key=lambda name: (name != "probe", name))
        draws = [name for name in directions if name != "probe"]
        colours = {run: plt.get_cmap("tab10")(i % 10) for i, run in enumerate(runs)}
        columns = min(2, len(panels))
        grid_rows = -(-len(panels) // columns)
        figure, axes = plt.subplots(grid_rows, columns, figsize=(6.5 * columns, 4.2 * grid_rows), squeeze=False)
        for axis in list(axes.flat)[len(panels) :]:
            axis.axis("off")
        for axis, (layer, label, kind) in zip(axes.flat, panels):
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
                    if direction == "probe" or len(draws) == 1:
                        axis.errorbar(
                            steps,
                            response,
                            yerr=[response - low, high - response],
                            fmt=style,
                            color=colours[run],
                            capsize=2,
                            label=f"{run}, {direction} direction",
                        )
                    else:
                        first = direction == draws[0]
                        axis.plot(
                            steps,
                            response,
                            "x",
                            color=colours[run],
                            alpha=0.6,
                            label=f"{run}, {len(draws)} random directions" if first else None,
                        )
                    if direction == "probe":
                        r2 = [row["probe_r2"] for row in points]
                        r2_axis.plot(steps, r2, "--", color=colours[run], alpha=0.45, label=f"{run}, probe R^2")
                if len(draws) > 1:
                    _shade_random_range(axis, responses, (run, layer, label, kind), draws, colours[run])
            axis.axhline(0, color="grey", linewidth=0.8)
            axis.set_xscale("log")
            axis.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # labels crowd when steps are close
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


def _shade_random_range(axis, responses: list[dict], panel: tuple, draws: list[str], colour) -> None:
    """The range of the random directions' responses at each checkpoint of one run's panel."""
    by_step: dict[float, list[float]] = {}
    for row in responses:
        if (row["run"], row["layer"], row["label"], row["kind"]) == panel and row["direction"] in draws:
            by_step.setdefault(row["env_step"], []).append(row["response"])
    steps = sorted(by_step)
    low, high = [min(by_step[step]) for step in steps], [max(by_step[step]) for step in steps]
    axis.fill_between(steps, low, high, color=colour, alpha=0.15, linewidth=0)


def plot_intervene(steered: list[dict], path: str) -> None:
    """intervene.png: the paddle's shift against alpha, one panel per label, a line per layer, steering kind and
    direction (the probe's solid, random ones dotted), from `probe intervene`'s steering rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = sorted({row["label"] for row in steered}) or ["(no steering)"]
    figure, axes = plt.subplots(1, len(labels), figsize=(5.5 * len(labels), 4.2), squeeze=False)
    for axis, label in zip(axes[0], labels):
        lines = sorted(
            {(row["layer"], row["kind"], row["direction"]) for row in steered if row["label"] == label},
            key=lambda line: (line[0], line[1], line[2].startswith("random"), line[2]),
        )
        for layer, kind, direction in lines:
            points = sorted(
                (row["alpha"], row["paddle_shift"], row["paddle_shift_low"], row["paddle_shift_high"])
                for row in steered
                if (row["label"], row["layer"], row["kind"], row["direction"]) == (label, layer, kind, direction)
            )
            alpha, shift, low, high = (np.array(column) for column in zip(*points))
            axis.errorbar(
                alpha,
                shift,
                yerr=[shift - low, high - shift],
                fmt="x:" if direction.startswith("random") else "o-",
                capsize=3,
                label=f"{layer} {kind}, {direction} direction",
            )
        axis.axhline(0, color="grey", linewidth=0.8)
        axis.set(
            xlabel=f"alpha (units of {label})",
            ylabel="paddle offset from the ball, shift (RAM rows)",
            title=f"steering along {label if label.startswith('feature') else 'the probe of ' + label}",
        )
        axis.grid(alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110, format="png")
    plt.close(figure)


def plot_feature_matches(dictionaries: dict, path: str) -> str:
    """features.png: per dictionary (by name), how many of its live features match each label (`probe features`'s
    matching; a feature matching two labels counts under both), the live features and those matching none in the
    legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pongrl.checkpoint import atomic_write_file

    labels = list(dict.fromkeys(name for d in dictionaries.values() for name in d.metrics["labels"]))
    labels = [name for name in labels if any(d.metrics["labels"][name]["features"] for d in dictionaries.values())]
    figure, axis = plt.subplots(figsize=(15, 4.8))
    width = 0.8 / max(1, len(dictionaries))
    for number, (name, dictionary) in enumerate(dictionaries.items()):
        live = dictionary.size - dictionary.metrics["dead"]
        matched = sum(1 for text in dictionary.features["matched"] if text)
        counts = [dictionary.metrics["labels"].get(label, {}).get("features", 0) for label in labels]
        positions = np.arange(len(labels)) + (number - (len(dictionaries) - 1) / 2) * width
        axis.bar(positions, counts, width, label=f"{name}: {matched:,} of {live:,} live features match a label")
    axis.set_xticks(np.arange(len(labels)), labels, rotation=35, ha="right")
    axis.set_ylabel("features matching the label")
    layers = sorted({dictionary.layer for dictionary in dictionaries.values()})
    axis.set_title(
        f"{layers[0] + ' ' if len(layers) == 1 else ''}features matching each label "
        "(test R^2 above 0.1 and every feature's on shifted labels)"
    )
    axis.grid(axis="y", alpha=0.3)
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never over them
    figure.tight_layout()
    atomic_write_file(path, lambda temp_path: figure.savefig(temp_path, dpi=100, format="png"))
    plt.close(figure)
    return path
