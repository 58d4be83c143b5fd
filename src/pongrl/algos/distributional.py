"""The distributional TD losses of DQN's `--distributional` heads, per transition.

- C51 (Bellemare et al. 2017): the return distribution is categorical on K fixed atoms z_1..z_K. The target
  R + gamma^n z falls between atoms, so it is projected back onto them (`categorical_projection`) and the loss
  is the KL divergence from that projection to the predicted distribution.
- QR-DQN (Dabney et al. 2018): the distribution is K quantile values at the fractions (2i - 1) / 2K; each is
  pulled towards the target samples R + gamma^n theta_j by the quantile Huber loss (`quantile_huber_loss`),
  whose minimiser is the quantile at that fraction.

Both pick the next action as DQN does (by expected Q-values, the online network's with double DQN) and
return one loss per transition, which prioritized replay takes as that transition's priority.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def categorical_projection(
    returns: torch.Tensor, discounts: torch.Tensor, next_probabilities: torch.Tensor, support: torch.Tensor
) -> torch.Tensor:
    """The distribution of R + discount * Z on `support` (K evenly spaced atoms), where Z has
    `next_probabilities` (B, K) on the same atoms: returns (B,), discounts (B,) (0 after a terminal)
    -> (B, K). Each shifted atom is clipped to the support's ends, then gives each atom
    max(0, 1 - |shifted - atom| / spacing) of its mass: all of it to an atom it lands on, split by distance
    between the two it falls between."""
    v_min, v_max = support[0], support[-1]
    spacing = (v_max - v_min) / (len(support) - 1)
    shifted = (returns[:, None] + discounts[:, None] * support[None, :]).clamp(v_min, v_max)  # (B, K)
    share = (1.0 - (shifted[:, None, :] - support[None, :, None]).abs() / spacing).clamp(min=0.0)  # (B, atom, shifted)
    return torch.bmm(share, next_probabilities.unsqueeze(-1)).squeeze(-1)


def quantile_huber_loss(
    quantiles: torch.Tensor, targets: torch.Tensor, fractions: torch.Tensor, kappa: float = 1.0
) -> torch.Tensor:
    """Per-transition quantile Huber loss (B,): `quantiles` (B, K) predicted at `fractions` (K,), against
    `targets` (B, M) samples of the target distribution. The asymmetric weight |fraction - 1{target < quantile}|
    makes each quantile's minimiser the target distribution's quantile at its fraction; the Huber part
    (width `kappa`) keeps gradients bounded. Summed over quantiles, averaged over targets, as in the paper."""
    errors = targets[:, None, :] - quantiles[:, :, None]  # (B, K, M)
    huber = F.huber_loss(errors, torch.zeros_like(errors), reduction="none", delta=kappa)
    weight = torch.where(errors.detach() < 0, 1.0 - fractions[:, None], fractions[:, None])
    return (weight * huber).mean(dim=2).sum(dim=1) / kappa


def distributional_losses(q_network, target_network, obs, next_obs, actions, returns, discounts, double_dqn: bool):
    """The distributional TD loss of each transition of a batch (B,) and the expected Q-values of the actions
    taken (B,), for a QNetwork whose head is C51 or QR."""
    rows = torch.arange(len(actions), device=actions.device)
    head = q_network.head
    with torch.no_grad():
        next_outputs = target_network.outputs(next_obs)  # (B, A, K)
        chooser = q_network(next_obs) if double_dqn else target_network.head.expected(next_outputs)
        next_taken = next_outputs[rows, chooser.argmax(dim=1)]  # (B, K)
        if head.distributional == "c51":
            target = categorical_projection(returns, discounts, torch.softmax(next_taken, dim=-1), head.support)
        else:
            target = returns[:, None] + discounts[:, None] * next_taken
    taken = q_network.outputs(obs)[rows, actions]  # (B, K)
    if head.distributional == "c51":
        # KL(target || predicted): the cross-entropy's gradient, and 0 for a transition already fitted.
        losses = (torch.xlogy(target, target) - target * torch.log_softmax(taken, dim=-1)).sum(dim=-1)
    else:
        losses = quantile_huber_loss(taken, target, head.quantile_fractions)
    return losses, head.expected(taken.detach())
