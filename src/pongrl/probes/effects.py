"""What an edit did to the agent, measured the same way by `probe intervene` and `probe counterfactual`: its
policy from its preferences, the KL divergence of the edited policy from the unedited one, and means with their
95% intervals."""

from __future__ import annotations

import numpy as np

# The columns every edit's row ends with: the paddle's shift from the unedited play, the KL divergence of the
# policy from the unedited one (each with its 95% interval) and the share of steps whose greedy action changed.
EFFECT_COLUMNS = ("paddle_shift", "paddle_shift_low", "paddle_shift_high", "kl", "kl_low", "kl_high", "action_change")


def policy(preferences: np.ndarray) -> np.ndarray:
    """Action probabilities from preferences (a policy's logits, or Q-values read as a Boltzmann policy)."""
    shifted = preferences.astype(np.float64) - preferences.max(axis=1, keepdims=True)
    probabilities = np.exp(shifted)
    return probabilities / probabilities.sum(axis=1, keepdims=True)


def kl_divergence(edited: np.ndarray, unedited: np.ndarray) -> np.ndarray:
    """KL(edited policy || unedited policy) per row, from two (N, actions) arrays of preferences."""
    p, q = policy(edited), policy(unedited)
    return np.sum(p * (np.log(np.maximum(p, 1e-300)) - np.log(np.maximum(q, 1e-300))), axis=1)


def mean_interval(values) -> tuple[float, float, float]:
    """Mean and its 95% interval (Student's t) over games (or states)."""
    from scipy import stats

    values = np.asarray([v for v in values if np.isfinite(v)], np.float64)
    if len(values) == 0:
        return float("nan"), float("nan"), float("nan")
    if len(values) == 1:
        return float(values[0]), float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
    return float(values.mean()), float(values.mean() - half), float(values.mean() + half)
