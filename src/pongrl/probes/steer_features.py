"""`pongrl probe steer`: does the agent use a dictionary's feature? Push its layer along the feature's decoder
direction while it plays the built-in AI, beside random directions of the same size, through the intervene
machinery (`intervene.EditedNetwork`, `play_conditions`: paired games, one batch, game k of every condition from the
same start).

A steer by alpha adds alpha times the feature's mean activation where it fires (on the collect's test frames) along
its unit direction: alpha = 1 makes the layer look as it would with the feature firing as it usually does, on top
of what is there. Each row (`intervene.COLUMNS`: the label column names the feature) gives the paddle's shift from
the unperturbed games (the agent's paddle height minus the ball's), the KL divergence of the steered policy from
the unperturbed one, how often the greedy action changes, and the score, each over games with its 95% interval.

The features steered by default: the strongest that match no label, strongest meaning the largest mean
contribution to the layer (firing rate times mean activation: decoder rows are unit vectors).
"""

from __future__ import annotations

import numpy as np

from pongrl.errors import PongrlError
from pongrl.probes.dictionary import Dictionary, check_agent, check_features, load_dictionary

RANDOM_SEED = 20261207
DEFAULT_COUNT = 4


def strongest_unmatched(dictionary: Dictionary, count: int = DEFAULT_COUNT) -> list[int]:
    """The `count` live features that match no label with the largest mean contribution to the layer."""
    frequency = np.asarray(dictionary.features["frequency"])
    strength = frequency * np.asarray(dictionary.features["mean_activation"])
    unmatched = [i for i in np.argsort(-strength) if frequency[i] > 0 and not dictionary.features["matched"][i]]
    return [int(i) for i in unmatched[:count]]


def steer_features(
    agent,
    dictionary_path: str,
    features: list[int] | None = None,
    alphas: tuple[float, ...] = (-3.0, 3.0),
    games: int = 10,
    seed: int = 0,
    random_draws: int = 1,
    sticky_actions: float = 0.0,
    progress=None,
) -> list[dict]:
    """The unperturbed games' row, then one row per (feature, direction, alpha) (module docstring); everything is
    checked before a game is played."""
    from pongrl.agent import as_agent
    from pongrl.probes.intervene import EditedNetwork, LayerEdits, _row, play_conditions, random_directions

    if games < 1 or random_draws < 1:
        raise PongrlError("--games and --random-draws must be at least 1")
    if not alphas or any(not np.isfinite(alpha) for alpha in alphas):
        raise PongrlError("every --alpha must be a finite number")
    if not 0.0 <= sticky_actions < 1.0:
        raise PongrlError(f"--sticky-actions must be in [0, 1), got {sticky_actions}")
    dictionary = load_dictionary(dictionary_path)
    agent = as_agent(agent)
    check_agent(dictionary, agent, dictionary_path)
    features = list(dict.fromkeys(features)) if features else strongest_unmatched(dictionary)
    check_features(dictionary, features)
    if not features:
        raise PongrlError(f"{dictionary_path}: every live feature matches a label; name the features to steer")

    rng = np.random.default_rng(RANDOM_SEED)
    randoms = [rng.standard_normal(dictionary.width) for _ in random_directions(random_draws)]
    randoms = [vector / np.linalg.norm(vector) for vector in randoms]
    norm = dictionary.metrics.get("activation_norm", float("nan"))
    conditions, edits = [], []
    for feature in features:
        size = dictionary.features["mean_activation"][feature] * dictionary.scale  # in the layer's units
        names = ("feature", *random_directions(random_draws))
        for name, unit in zip(names, [dictionary.direction(feature), *randoms]):
            for alpha in alphas:
                edits.append(("steer", alpha * size * unit, 0.0))
                conditions.append((feature, name, float(alpha), abs(alpha) * size / norm))
    network = EditedNetwork(agent, {dictionary.layer: LayerEdits(edits)})
    played = [None] + [(dictionary.layer, index) for index in range(len(edits))]
    results = play_conditions(network, played, games, seed, sticky_actions, progress=progress)
    baseline = results[0]
    rows = [_row(agent, "none", "", float("nan"), "none", "none", 0.0, float("nan"), games, baseline, baseline)]
    for (feature, direction, alpha, edit_size), result in zip(conditions, results[1:]):
        rows.append(
            _row(
                agent,
                dictionary.layer,
                f"feature {feature}",
                float("nan"),
                "steer",
                direction,
                alpha,
                edit_size,
                games,
                result,
                baseline,
            )
        )
    return rows


def describe(row: dict) -> str:
    if row["kind"] == "none":
        return f"unperturbed: score {row['score']:+.2f}, paddle offset from the ball {row['paddle_offset']:+.1f} rows"
    return (
        f"{row['layer']} {row['label']} {row['alpha']:+g} x its mean activation (|delta| {row['edit_size']:.1%} of "
        f"|h|), {row['direction']}: paddle shift {row['paddle_shift']:+.1f} [{row['paddle_shift_low']:+.1f}, "
        f"{row['paddle_shift_high']:+.1f}], KL {row['kl']:.3f}, action changed {row['action_change']:.0%}, "
        f"score {row['score']:+.2f}"
    )


def write_results(rows: list[dict], out_dir: str) -> tuple[str, str]:
    """steer.csv (`intervene.COLUMNS`) and steer.png (the paddle's shift against alpha, a panel per feature)."""
    import os

    from pongrl.checkpoint import atomic_write_file, write_csv
    from pongrl.probes.charts import plot_intervene
    from pongrl.probes.intervene import COLUMNS

    os.makedirs(out_dir, exist_ok=True)
    csv_path, chart_path = os.path.join(out_dir, "steer.csv"), os.path.join(out_dir, "steer.png")
    write_csv(csv_path, rows, COLUMNS)
    atomic_write_file(chart_path, lambda temp_path: plot_intervene(rows[1:], temp_path))
    return csv_path, chart_path
