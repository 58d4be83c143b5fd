"""A probe's direction in a layer's activations, fitted on a collect of the agent: what `probe intervene` moves
or removes inside the network, and what `probe counterfactual` reads while the world is edited.

The probe is a ridge regression of one label on the layer's standardized features, its penalty chosen on held-out
train games, its R^2 measured on test games (whole games, as `probe fit` splits them); ball positions and
velocities on in-play frames only (their RAM bytes read 0 while the ball is out of play), predictive labels
where they are defined. It reads the label as y = h . w + b on the layer's activations h; a wide layer stored
through the collect's fixed random projection P gives w = P w_stored.

Beside the probe (the decoder), its pattern (the encoder: Haufe et al. 2014, "On the interpretation of weight
vectors of linear models"): how the layer's activations change on average per unit of the label, the
regression of each unit on the label, Cov(h, y) / Var(y), on the same frames. A probe can read a label along a
direction in which the network barely varies (units of tiny variance weigh most in a standardized ridge), so a
steer along it moves the reading by alpha with a minute edit; a steer along the pattern moves the layer the way
a label alpha units away moves it. Only for a layer stored whole (a projected layer's pattern is not recoverable).
With other labels held fixed (`held`), the partial pattern: the label's coefficient when the layer's units are
regressed on it and the held labels at once, on the frames where all of them are defined; labels that go together
on the agent's frames (the ball's height and where it will land) each lend the other their plain pattern.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from pongrl.errors import PongrlError
from pongrl.probes.labels import IN_PLAY_LABELS, REGRESSION_LABELS, scored_frames


@dataclass
class Direction:
    """A probe's direction in a layer's full activation space: the label reads as h . weights + intercept."""

    layer: str
    label: str
    weights: np.ndarray  # (width,) float64
    mean_reading: float  # mean of h . unit over the collect's frames (mean ablation puts it back)
    r2: float  # on the test games
    frames: int
    activation_norm: float  # the layer's mean |h| over the collect's frames, to size an edit against
    pattern: np.ndarray | None = None  # (width,) mean change of h per unit of the label; None for a projected layer
    partial: np.ndarray | None = None  # (width,) the same with the `held` labels fixed; None unless asked for

    @property
    def unit(self) -> np.ndarray:
        return self.weights / np.linalg.norm(self.weights)


def _collect_index(data, agent) -> int:
    """The collect's index of `agent` (by its file's hash, else its name)."""
    from pongrl.arena import file_sha256

    sha256 = file_sha256(agent.path) if getattr(agent, "path", "") and os.path.isfile(agent.path) else ""
    for index, entry in enumerate(data.settings["agents"]):
        if (sha256 and entry.get("sha256") == sha256) or entry.get("name") == agent.name:
            return index
    names = ", ".join(entry["name"] for entry in data.settings["agents"])
    raise PongrlError(
        f"{data.out_dir}: no probe of {agent.name} there (it recorded {names}); "
        "collect this agent first (pongrl probe collect AGENT --out DIR)"
    )


def check_collected_weights(data, index: int, agent) -> None:
    """Refuse an agent whose weights file is not the one the collect recorded under its name: the activations are
    another network's."""
    from pongrl.zoo import file_sha256

    recorded = data.settings["agents"][index].get("sha256")
    if recorded and agent.path and os.path.isfile(agent.path) and file_sha256(agent.path) != recorded:
        raise PongrlError(
            f"{data.out_dir}: recorded the activations of {data.settings['agents'][index]['name']} from weights "
            f"SHA-256 {recorded[:12]}, not those of {agent.name} ({file_sha256(agent.path)[:12]}): collect this agent"
        )


def fit_direction(
    collect_dir: str, agent, layer: str, label: str, seed: int = 0, held: tuple[str, ...] = ()
) -> Direction:
    """The probe of `label` on `layer` of `agent`, fitted on the collect in `collect_dir`, and its pattern (with
    the `held` labels fixed too, if any: module docstring)."""
    from sklearn.linear_model import Ridge

    from pongrl.probes.collect import stored_projection
    from pongrl.probes.fit import RIDGE_ALPHAS, VALIDATION_FRACTION, ProbeData, split_games

    data = ProbeData(collect_dir)
    index = _collect_index(data, agent)
    if label not in REGRESSION_LABELS or label not in data.labels:
        raise PongrlError(
            f"no probe of {label!r} to steer along: a direction needs a label on a scale that the "
            f"collect recorded ({', '.join(name for name in REGRESSION_LABELS if name in data.labels)})"
        )
    if layer not in data.layers.get(index, []):
        raise PongrlError(f"{collect_dir}: no layer {layer!r} recorded for {agent.name}")
    train_games, test_games = split_games(data.frames_of, seed)
    held_out = set(train_games[::-1][: max(1, int(round(VALIDATION_FRACTION * len(train_games))))])

    def read(games):
        x = data.read(f"agents/{index}/{layer}", games).astype(np.float64)
        y = data.read(f"labels/{label}", games).astype(np.float64)
        in_play = data.read("labels/ball_in_play", games) if label in IN_PLAY_LABELS else None
        keep = scored_frames(label, y, in_play)
        game_of = np.concatenate([np.full(data.frames_of[game], game) for game in games])
        return x[keep], y[keep], game_of[keep]

    x_train, y_train, train_game_of = read(train_games)
    x_test, y_test, _ = read(test_games)
    if len(y_train) < 50 or len(y_test) < 10:
        raise PongrlError(
            f"{collect_dir}: too few frames hold {label} to fit its direction "
            f"({len(y_train)} train, {len(y_test)} test); collect more frames"
        )
    mean, std = x_train.mean(0), x_train.std(0)
    std[std == 0] = 1.0

    def fit(alpha, rows):
        return Ridge(alpha=alpha * rows.sum() / 1000).fit((x_train[rows] - mean) / std, y_train[rows])

    validation = np.isin(train_game_of, list(held_out))
    every = np.ones(len(y_train), bool)
    alpha = 1.0
    if validation.any() and (~validation).any():
        errors = [
            np.mean((fit(a, ~validation).predict((x_train[validation] - mean) / std) - y_train[validation]) ** 2)
            for a in RIDGE_ALPHAS
        ]
        alpha = RIDGE_ALPHAS[int(np.argmin(errors))]
    model = fit(alpha, every)
    predicted = model.predict((x_test - mean) / std)
    r2 = 1 - np.sum((predicted - y_test) ** 2) / max(np.sum((y_test - y_test.mean()) ** 2), 1e-12)
    stored_weights = model.coef_ / std  # the reading is x_stored . stored_weights + a constant
    width = layer_width(agent, layer)
    matrix = stored_projection(data.settings, layer, width)
    if matrix is not None and stored_weights.shape[0] != width:
        weights = matrix.double().numpy() @ stored_weights
    else:
        weights = stored_weights
    mean_reading = float(np.mean(x_train @ stored_weights) / np.linalg.norm(weights))
    # The projection keeps norms (Johnson-Lindenstrauss), so the stored features' mean norm is the layer's.
    activation_norm = float(np.linalg.norm(x_train, axis=1).mean())
    centred_y = y_train - y_train.mean()
    pattern = None
    if matrix is None or stored_weights.shape[0] == width:
        pattern = (x_train - x_train.mean(0)).T @ centred_y / max(float(centred_y @ centred_y), 1e-12)
    partial = None
    if held and pattern is not None:
        partial = _partial_pattern(data, index, layer, (label, *held), train_games)
    frames = int(len(y_train) + len(y_test))
    return Direction(layer, label, weights, mean_reading, float(r2), frames, activation_norm, pattern, partial)


def _partial_pattern(data, index: int, layer: str, labels: tuple[str, ...], games) -> np.ndarray:
    """The first label's coefficient per unit when every unit of `layer` is regressed on all `labels` at once
    (least squares, on the frames of `games` where every label is defined)."""
    missing = [name for name in labels if name not in data.labels]
    if missing:
        raise PongrlError(f"{data.out_dir}: no label {', '.join(missing)} recorded to hold fixed")
    x = data.read(f"agents/{index}/{layer}", games).astype(np.float64)
    in_play = data.read("labels/ball_in_play", games)
    columns, keep = [], np.ones(len(x), bool)
    for name in labels:
        values = data.read(f"labels/{name}", games).astype(np.float64)
        keep &= scored_frames(name, values, in_play)
        columns.append(values)
    if keep.sum() < 50:
        raise PongrlError(
            f"{data.out_dir}: too few frames hold {', '.join(labels)} at once ({int(keep.sum())}); collect more frames"
        )
    values = np.stack(columns, 1)[keep]
    coefficients, *_ = np.linalg.lstsq(values - values.mean(0), x[keep] - x[keep].mean(0), rcond=None)
    return coefficients[0]


def layer_width(agent, layer: str) -> int:
    """How many activations the agent's layer has (its full width, before any projection)."""
    shape = (1, 4, 84, 84) if agent.obs_profile == "standard" else (1, 84, 84, 4)
    return agent.layers(np.zeros(shape, np.uint8))[layer].shape[1]
