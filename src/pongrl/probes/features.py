"""`pongrl probe features`: what a layer holds that no label names. A sparse dictionary (`probes.dictionary`: a
TopK sparse autoencoder) is learned on one layer's activations from a collect of the agent (`pongrl probe
collect`), on the train games of `probe fit`'s split (whole games), and judged on its test games:
- the fraction of the layer's variance it explains, 1 - sum |h - h_hat|^2 / sum |h - mean h|^2;
- its dead features (firing on no test frame) and dense ones (on more than DENSE_RATE of them);
- what the agent loses with the layer replaced by its reconstruction: how often its greedy action stays the same
  on the test frames, and how often the paddle's move does (Pong's FIRE changes nothing once the ball is served,
  so an agent's Q-values for UP and UP+FIRE nearly tie and a small edit flips its greedy action between them), each
  beside the same with the layer replaced by its mean (the floor); and points per game over
  paired games against the built-in AI (the intervene machinery: game k of both conditions from the same start);
- every feature matched to every label: the correlation of its activation with the label on the train frames, and
  the R^2 on the test frames of the label regressed on it (least squares, one feature at a time), each label on the
  frames it is scored on (`labels.scored_frames`). The control is the same with shuffled labels: each game's
  label sequence (and its scored frames) circularly shifted by a seeded offset between a quarter and three quarters
  of the game, which keeps each label's values and slow drift within a game but breaks their tie to the frames. A
  feature matches a label where its R^2 passes both MIN_MATCH_R2 and the best control R^2 of any feature for that
  label.
A dictionary can be made of the layers that the collect stored whole (not through its random projection: a
feature must be a direction of the layer itself, to splice and to steer along: `probe collect --whole-layers
conv3` stores a convolution so) and that the policy passes on.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from pongrl.errors import PongrlError
from pongrl.probes.dictionary import Dictionary, agent_digest, batches_per_epoch, train_dictionary
from pongrl.probes.labels import LABELS, scored_frames

MIN_FRAMES_PER_FEATURE = 8  # fewer train frames per feature than this and most features see a handful of frames
DENSE_RATE = 0.5  # a feature firing on more than half the frames is "always on": a bias, not a feature
MIN_MATCH_R2 = 0.1  # below it a feature explains too little of a label to be called its match
CONTROL_SEED = 20261206
ENCODE_CHUNK = 4096
PADDLE_MOVE = torch.tensor([0, 0, 1, 2, 1, 2])  # NOOP, FIRE, UP, DOWN, UP+FIRE, DOWN+FIRE: stay, up, down
COLUMNS = ["feature", "frequency", "mean_activation", "best_label", "best_r2", "best_correlation", "matched"]


def dictionary_layers(agent, data, index: int) -> list[str]:
    """The layers of `agent` (the collect's agent `index`) a dictionary can be learned of (module docstring)."""
    from pongrl.probes.collect import stored_projection
    from pongrl.probes.directions import layer_width
    from pongrl.probes.intervene import steerable_layers

    return [
        layer
        for layer in steerable_layers(agent)
        if layer in data.layers.get(index, [])
        and stored_projection(data.settings, layer, layer_width(agent, layer)) is None
    ]


def frames_needed(size: int) -> int:
    """The train frames a dictionary of `size` features needs."""
    return MIN_FRAMES_PER_FEATURE * size


def learn_features(
    agent,
    collect_dir: str,
    layer: str = "fc",
    size: int = 2048,
    k: int = 32,
    epochs: int = 10,
    games: int = 10,
    seed: int = 0,
    sticky_actions: float = 0.0,
    progress=None,
    allow_small_test: bool = False,
) -> Dictionary:
    """Learn a dictionary of `size` features (k firing per frame) of `agent`'s `layer` on the collect in
    `collect_dir`, and judge it (module docstring); `games` paired games per condition (0: none). Everything is
    checked before training; a split whose test games are too few to judge on is refused as `probe fit` refuses
    it, unless `allow_small_test`. `progress(1)` after each training batch."""
    from pongrl.agent import as_agent
    from pongrl.probes.directions import _collect_index, check_collected_weights
    from pongrl.probes.fit import TEST_FRACTION, ProbeData, is_small_test, refuse_small_test, split_games

    agent = as_agent(agent)
    for name, value, low in (("--size", size, 1), ("--k", k, 1), ("--epochs", epochs, 1), ("--games", games, 0)):
        if value < low:
            raise PongrlError(f"{name} must be at least {low}, got {value}")
    if k > size:
        raise PongrlError(f"--k ({k}) cannot exceed the dictionary's --size ({size})")
    if not 0.0 <= sticky_actions < 1.0:
        raise PongrlError(f"--sticky-actions must be in [0, 1), got {sticky_actions}")
    data = ProbeData(collect_dir)
    index = _collect_index(data, agent)
    check_collected_weights(data, index, agent)
    available = dictionary_layers(agent, data, index)
    if layer not in available:
        raise PongrlError(
            f"no layer {layer!r} to learn a dictionary of in {agent.name} (layers stored whole in {collect_dir} "
            f"that its policy passes on: {', '.join(available) or 'none'}; probe collect --whole-layers "
            f"LAYER stores a convolution whole)"
        )
    train_games, test_games = split_games(data.frames_of, seed)
    train_frames = sum(data.frames_of[game] for game in train_games)
    test_frames = sum(data.frames_of[game] for game in test_games)
    if is_small_test(test_frames, len(test_games)) and not allow_small_test:
        refuse_small_test(data, test_games)
    if train_frames < frames_needed(size):
        enough = -(-int(frames_needed(size) / (1 - TEST_FRACTION)) // 1000) * 1000
        raise PongrlError(
            f"{collect_dir}: its train games hold {train_frames:,} frames, and a dictionary of {size:,} features "
            f"needs {frames_needed(size):,} ({MIN_FRAMES_PER_FEATURE} per feature): collect about {enough:,} "
            "frames (probe collect with a larger --frames continues the collect), or ask for a smaller --size"
        )

    dataset = f"agents/{index}/{layer}"
    x_train = data.read(dataset, train_games).astype(np.float32)
    weights, losses = train_dictionary(x_train, size, k, epochs, seed, progress)
    dictionary = Dictionary(
        layer,
        k,
        weights["scale"],
        weights["encoder"],
        weights["encoder_bias"],
        weights["decoder"],
        weights["decoder_bias"],
        agent={"name": agent.name, "digest": agent_digest(agent), "env_step": int(agent.env_step)},
        source={
            "collect": os.path.abspath(collect_dir),
            "split_seed": seed,
            "train_frames": train_frames,
            "train_games": len(train_games),
            "test_frames": test_frames,
            "test_games": len(test_games),
            "epochs": epochs,
            "losses": losses,
        },
    )
    mean = x_train.mean(0)
    activation_norm = float(np.linalg.norm(x_train, axis=1).mean())  # to size a steer against
    del x_train
    x_test = data.read(dataset, test_games).astype(np.float32)
    dictionary.metrics, frequency, mean_activation = reconstruction_metrics(dictionary, agent, x_test, mean)
    dictionary.metrics["activation_norm"] = activation_norm
    dictionary.features = {"frequency": frequency, "mean_activation": mean_activation}
    matches, dictionary.metrics["labels"] = match_labels(dictionary, data, dataset, train_games, test_games, seed)
    dictionary.features.update(matches)
    if games:
        dictionary.metrics.update(splice_games(dictionary, agent, games, seed, sticky_actions))
    return dictionary


def encode_in_chunks(dictionary: Dictionary, x: np.ndarray):
    """(first row, codes) of each chunk of ENCODE_CHUNK rows: a layer's codes over a collect never at once."""
    for first in range(0, len(x), ENCODE_CHUNK):
        yield first, dictionary.encode(x[first : first + ENCODE_CHUNK])


def policy_after(agent, layer: str):
    """A function of a layer's flattened activations: the agent's preferences computed from them on."""
    from pongrl.probes.intervene import steerable_layers

    torso, head = agent.policy_parts()
    place = steerable_layers(agent)[layer]
    blank = np.zeros((1, 4, 84, 84) if agent.obs_profile == "standard" else (1, 84, 84, 4), np.uint8)
    with torch.inference_mode():
        h = agent.network_input(blank)
        for module in torso[: place + 1]:
            h = module(h)
    shape = h.shape[1:]

    @torch.inference_mode()
    def preferences(h: torch.Tensor) -> torch.Tensor:
        h = h.reshape(len(h), *shape)
        for module in torso[place + 1 :]:
            h = module(h)
        return head(h)

    return preferences


def reconstruction_metrics(dictionary: Dictionary, agent, x_test: np.ndarray, train_mean: np.ndarray):
    """The dictionary's metrics on the test frames (module docstring), each feature's firing rate and its mean
    activation where it fires."""
    preferences = policy_after(agent, dictionary.layer)
    error = total = agree = floor = agree_move = floor_move = 0.0
    fired = np.zeros(dictionary.size)
    summed = np.zeros(dictionary.size)
    test_mean = torch.from_numpy(x_test.mean(0))
    mean_action = preferences(torch.from_numpy(train_mean)[None]).argmax(1)
    for first, codes in encode_in_chunks(dictionary, x_test):
        h = torch.from_numpy(x_test[first : first + ENCODE_CHUNK])
        reconstruction = dictionary.decode(codes)
        error += float((h - reconstruction).pow(2).sum())
        total += float((h - test_mean).pow(2).sum())
        actions, spliced = preferences(h).argmax(1), preferences(reconstruction).argmax(1)
        agree += float((spliced == actions).sum())
        floor += float((actions == mean_action).sum())
        agree_move += float((PADDLE_MOVE[spliced] == PADDLE_MOVE[actions]).sum())
        floor_move += float((PADDLE_MOVE[actions] == PADDLE_MOVE[mean_action]).sum())
        fired += (codes > 0).sum(0).double().numpy()
        summed += codes.sum(0).double().numpy()
    frames = len(x_test)
    frequency = fired / frames
    metrics = {
        "fve": 1.0 - error / max(total, 1e-12),
        "dead": int((frequency == 0).sum()),
        "dense": int((frequency > DENSE_RATE).sum()),
        "action_agreement": agree / frames,
        "mean_agreement": floor / frames,
        "move_agreement": agree_move / frames,
        "mean_move_agreement": floor_move / frames,
    }
    mean_activation = np.divide(summed, fired, out=np.zeros_like(summed), where=fired > 0)
    return metrics, [float(v) for v in frequency], [float(v) for v in mean_activation]


def _label_columns(data, games: list[int], labels: list[str], shift_rng) -> tuple[np.ndarray, np.ndarray]:
    """(frames, labels) values and masks of the frames each label is scored on, over `games` in order; with
    `shift_rng`, each game's values and masks circularly shifted by one offset per game (the control)."""
    values, masks = [], []
    for game in games:
        in_play = data.read("labels/ball_in_play", [game])
        columns = [data.read(f"labels/{name}", [game]).astype(np.float64) for name in labels]
        y = np.stack(columns, 1)
        mask = np.stack([scored_frames(name, column, in_play) for name, column in zip(labels, columns)], 1)
        if shift_rng is not None:
            length = len(y)
            offset = int(shift_rng.integers(length // 4, max(length // 4 + 1, 3 * length // 4)))
            y, mask = np.roll(y, offset, 0), np.roll(mask, offset, 0)
        values.append(y)
        masks.append(mask)
    return np.concatenate(values), np.concatenate(masks)


def _sums(dictionary: Dictionary, x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    """The sums a one-feature least squares fit of every label on every feature needs, (size, labels) each."""
    weights = mask.astype(np.float64)
    y = np.where(mask, y, 0.0)
    sums = {
        "n": weights.sum(0),
        "y": y.sum(0),
        "yy": (y**2).sum(0),
        "z": 0.0,
        "zz": 0.0,
        "zy": 0.0,
    }
    for first, codes in encode_in_chunks(dictionary, x):
        z = codes.double().numpy()
        rows = slice(first, first + len(z))
        sums["z"] = sums["z"] + z.T @ weights[rows]
        sums["zz"] = sums["zz"] + (z**2).T @ weights[rows]
        sums["zy"] = sums["zy"] + z.T @ y[rows]
    return sums


def _fit_and_score(train: dict, test: dict) -> tuple[np.ndarray, np.ndarray]:
    """(correlation on the train frames, R^2 on the test frames) of each label regressed on each feature."""
    with np.errstate(divide="ignore", invalid="ignore"):
        n = train["n"]
        mean_z, mean_y = train["z"] / n, train["y"] / n
        cov = train["zy"] / n - mean_z * mean_y
        var_z = train["zz"] / n - mean_z**2
        var_y = train["yy"] / n - mean_y**2
        correlation = cov / np.sqrt(var_z * var_y)
        slope = np.where(var_z > 1e-12, cov / var_z, np.nan)
        intercept = mean_y - slope * mean_z
        m = test["n"]
        sse = (
            test["yy"]
            - 2 * intercept * test["y"]
            - 2 * slope * test["zy"]
            + m * intercept**2
            + 2 * intercept * slope * test["z"]
            + slope**2 * test["zz"]
        )
        sst = test["yy"] - test["y"] ** 2 / m
        r2 = np.where(sst > 1e-9, 1 - sse / sst, np.nan)
    return correlation, r2


def match_labels(dictionary: Dictionary, data, dataset: str, train_games, test_games, seed: int):
    """Every feature against every label, and the shuffled-label control (module docstring). Returns the features'
    columns (best_label, best_r2, best_correlation, matched) and per label its threshold and matched features."""
    labels = [name for name in LABELS if name in data.labels]
    x_train = data.read(dataset, train_games).astype(np.float32)
    x_test = data.read(dataset, test_games).astype(np.float32)
    found = {}
    for control in (False, True):
        rng = np.random.default_rng([CONTROL_SEED, seed]) if control else None
        train = _sums(dictionary, x_train, *_label_columns(data, train_games, labels, rng))
        test = _sums(dictionary, x_test, *_label_columns(data, test_games, labels, rng))
        found[control] = _fit_and_score(train, test)
    correlation, r2 = found[False]
    control_best = np.nanmax(np.where(np.isfinite(found[True][1]), found[True][1], -np.inf), axis=0)
    thresholds = np.maximum(MIN_MATCH_R2, control_best)
    scored = np.where(np.isfinite(r2), r2, -np.inf)
    matched = scored > thresholds
    best = scored.argmax(1)
    features = {
        "best_label": [labels[j] if np.isfinite(scored[i, j]) else "" for i, j in enumerate(best)],
        "best_r2": [float(r2[i, j]) for i, j in enumerate(best)],
        "best_correlation": [float(correlation[i, j]) for i, j in enumerate(best)],
        "matched": [" ".join(labels[j] for j in np.nonzero(row)[0]) for row in matched],
    }
    per_label = {
        name: {
            "threshold": float(thresholds[j]),
            "control_best_r2": float(control_best[j]),
            "features": int(matched[:, j].sum()),
            "best_r2": float(scored[:, j].max()) if np.isfinite(scored[:, j].max()) else float("nan"),
        }
        for j, name in enumerate(labels)
    }
    return features, per_label


class Reconstruction:
    """The edit that replaces a layer by its dictionary's reconstruction (`intervene.EditedNetwork`'s edits)."""

    def __init__(self, dictionary: Dictionary):
        self.dictionary = dictionary

    def apply(self, activations: torch.Tensor, edit_of_row: list[int]) -> torch.Tensor:
        flat = activations.reshape(len(activations), -1)
        return self.dictionary.reconstruct(flat).reshape(activations.shape)


def splice_games(dictionary: Dictionary, agent, games: int, seed: int, sticky_actions: float = 0.0) -> dict:
    """Paired games against the built-in AI, the agent as it is and with the layer replaced by its reconstruction:
    points per game of each, their paired difference with its 95% interval, and how often the spliced agent's
    greedy action differs from its own on the frames it plays."""
    from pongrl.probes.effects import mean_interval
    from pongrl.probes.intervene import EditedNetwork, play_conditions

    network = EditedNetwork(agent, {dictionary.layer: Reconstruction(dictionary)})
    base, spliced = play_conditions(network, [None, (dictionary.layer, 0)], games, seed, sticky_actions)
    difference = mean_interval(np.subtract(spliced["scores"], base["scores"]))
    return {
        "games": games,
        "score": float(np.mean(base["scores"])),
        "score_spliced": float(np.mean(spliced["scores"])),
        "score_change": difference[0],
        "score_change_low": difference[1],
        "score_change_high": difference[2],
        "action_change_in_play": float(np.nanmean(spliced["changed"])),
    }


def batches(collect_dir: str, size: int, epochs: int, seed: int = 0) -> int:
    """The training batches `learn_features` runs (for a progress bar)."""
    from pongrl.probes.fit import ProbeData, split_games

    data = ProbeData(collect_dir)
    train_games, _ = split_games(data.frames_of, seed)
    return epochs * batches_per_epoch(sum(data.frames_of[game] for game in train_games))


def describe(dictionary: Dictionary) -> list[str]:
    """The dictionary's findings in a few lines."""
    m, source = dictionary.metrics, dictionary.source
    lines = [
        f"{dictionary.agent['name']} {dictionary.layer}: {dictionary.size:,} features, k={dictionary.k}, learned on "
        f"{source['train_frames']:,} frames in {source['train_games']} games, judged on {source['test_frames']:,} "
        f"frames in {source['test_games']} games",
        f"variance explained {m['fve']:.3f}; dead features {m['dead']:,}, always on (>{DENSE_RATE:.0%} of frames) "
        f"{m['dense']:,}",
        f"greedy action kept with the layer reconstructed {m['action_agreement']:.1%} of test frames "
        f"(with the layer's mean: {m['mean_agreement']:.1%}); the paddle's move kept {m['move_agreement']:.1%} "
        f"(with the mean: {m['mean_move_agreement']:.1%})",
    ]
    if "score_change" in m:
        lines.append(
            f"points per game over {m['games']} paired games: {m['score']:+.2f} as it is, {m['score_spliced']:+.2f} "
            f"reconstructed (change {m['score_change']:+.2f} [{m['score_change_low']:+.2f}, "
            f"{m['score_change_high']:+.2f}]); action changed on {m['action_change_in_play']:.1%} of its steps"
        )
    matched = sum(1 for text in dictionary.features["matched"] if text)
    alive = dictionary.size - m["dead"]
    lines.append(f"{matched:,} of {alive:,} live features match a label; {alive - matched:,} match none")
    for name, row in m["labels"].items():
        if row["features"]:
            lines.append(
                f"  {name}: {row['features']} features (best R^2 {row['best_r2']:.2f}; threshold "
                f"{row['threshold']:.2f}, best control {row['control_best_r2']:.3f})"
            )
    return lines


def write_results(dictionary: Dictionary, out_dir: str) -> tuple[str, str, str]:
    """dictionary.pt, features.csv (a row per feature) and features.md (the findings in words), in `out_dir`."""
    from pongrl.checkpoint import atomic_write_bytes, write_csv

    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, name) for name in ("dictionary.pt", "features.csv", "features.md")]
    dictionary.save(paths[0])
    columns = dictionary.features
    rows = [{"feature": i, **{name: columns[name][i] for name in COLUMNS[1:]}} for i in range(dictionary.size)]
    write_csv(paths[1], rows, COLUMNS, number_format=".4f")
    atomic_write_bytes(paths[2], ("\n\n".join(describe(dictionary)) + "\n").encode())
    return tuple(paths)
