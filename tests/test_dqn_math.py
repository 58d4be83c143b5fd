"""Epsilon schedule and TD targets on hand-made tensors."""

import pytest
import torch

from pongrl.algos.dqn import linear_epsilon, priority_beta, td_loss, td_targets
from pongrl.config import make_config


def test_epsilon_decays_linearly_then_stays():
    config = make_config("dqn", "seed", {})
    assert linear_epsilon(config, 0) == pytest.approx(1.0)
    assert linear_epsilon(config, 75_000) == pytest.approx(0.505)
    assert linear_epsilon(config, 150_000) == pytest.approx(0.01)
    assert linear_epsilon(config, 10_000_000) == pytest.approx(0.01)


def test_classic_target_takes_the_target_networks_max():
    returns = torch.tensor([1.0, 0.0, 0.5])
    discounts = torch.tensor([0.0, 0.99, 0.9801])
    next_q_target = torch.tensor([[5.0, 1.0], [2.0, 3.0], [-1.0, -2.0]])
    targets = td_targets(returns, discounts, next_q_target)
    assert targets.tolist() == pytest.approx([1.0, 0.99 * 3.0, 0.5 + 0.9801 * -1.0])


def test_double_target_evaluates_the_online_choice_with_the_target_network():
    returns = torch.tensor([0.0, 1.0])
    discounts = torch.tensor([0.9, 0.9])
    next_q_target = torch.tensor([[5.0, 1.0], [2.0, 3.0]])
    next_q_online = torch.tensor([[0.0, 9.0], [7.0, 0.0]])  # picks the action the target rates low
    targets = td_targets(returns, discounts, next_q_target, next_q_online)
    assert targets.tolist() == pytest.approx([0.9 * 1.0, 1.0 + 0.9 * 2.0])


def test_losses():
    q = torch.tensor([0.0, 0.0])
    y = torch.tensor([0.5, 3.0])
    assert td_loss(q, y, "mse").item() == pytest.approx((0.25 + 9.0) / 2)
    assert td_loss(q, y, "huber").item() == pytest.approx((0.125 + 2.5) / 2)
    # importance weights scale each transition's loss (prioritized replay)
    weights = torch.tensor([1.0, 0.2])
    assert td_loss(q, y, "huber", weights).item() == pytest.approx((0.125 + 0.2 * 2.5) / 2)
    assert td_loss(q, y, "mse", torch.ones(2)).item() == pytest.approx(td_loss(q, y, "mse").item())


def test_priority_beta_anneals_to_one_at_the_last_step():
    config = make_config("dqn", "default", {"total_steps": 1000, "priority_beta": 0.4})
    assert priority_beta(config, 0) == pytest.approx(0.4)
    assert priority_beta(config, 500) == pytest.approx(0.7)
    assert priority_beta(config, 5000) == pytest.approx(1.0)
