"""DQN's dueling and distributional heads: the C51 projection and the quantile loss on planted returns, the
dueling identity, and each head through checkpoints, load_agent, resume, branch and bad flags."""

import os
import shutil
from statistics import NormalDist

import numpy as np
import pytest
import torch
import yaml

from pongrl.agent import load_agent, load_safetensors_agent, save_safetensors_agent
from pongrl.algos.distributional import categorical_projection, distributional_losses, quantile_huber_loss
from pongrl.checkpoint import save_checkpoint, write_torch_file
from pongrl.cli import main
from pongrl.errors import PongrlError
from pongrl.nets import QHead, QNetwork
from pongrl.probes.collect import architecture
from pongrl.training import Run

from cli_helpers import run, small_dqn
from test_checkpoint import trained_state

SUPPORT = torch.linspace(-10.0, 10.0, 51)  # C51's atoms: 0.4 apart


def dirac(value: float) -> torch.Tensor:
    """A distribution on SUPPORT with all its mass on the atom at `value`."""
    probabilities = torch.zeros(len(SUPPORT))
    probabilities[torch.argmin((SUPPORT - value).abs())] = 1.0
    return probabilities


def project(returns, discounts, next_probabilities):
    return categorical_projection(
        torch.tensor(returns), torch.tensor(discounts), torch.stack(next_probabilities), SUPPORT
    )


def atom(value: float) -> int:
    return int(torch.argmin((SUPPORT - value).abs()))


def test_c51_projection_moves_a_dirac_onto_an_atom_and_splits_it_between_neighbours():
    target = project(
        [1.0, 1.0, 0.1, -1.0],
        [0.5, 0.5, 1.0, 0.0],  # the last is a terminal: the return alone
        [dirac(2.0), dirac(2.4), dirac(2.0), dirac(8.0)],
    )
    torch.testing.assert_close(target.sum(dim=1), torch.ones(4))
    assert target[0, atom(2.0)] == pytest.approx(1.0, abs=1e-5)  # 1 + 0.5 * 2.0 lands on an atom
    # 1 + 0.5 * 2.4 = 2.2, halfway between 2.0 and 2.4; 0.1 + 2.0 = 2.1, a quarter of the way from 2.0 to 2.4
    assert target[1, [atom(2.0), atom(2.4)]].tolist() == pytest.approx([0.5, 0.5], abs=1e-5)
    assert target[2, [atom(2.0), atom(2.4)]].tolist() == pytest.approx([0.75, 0.25], abs=1e-5)
    assert target[3, [atom(-1.2), atom(-0.8)]].tolist() == pytest.approx([0.5, 0.5], abs=1e-5)


def test_c51_projection_clips_at_the_bounds():
    target = project([5.0, -3.0], [1.0, 0.99], [dirac(8.0), dirac(-10.0)])  # 13 and -12.9: past the ends
    assert target[0, -1] == pytest.approx(1.0, abs=1e-6) and target[1, 0] == pytest.approx(1.0, abs=1e-6)


def test_c51_projection_keeps_the_mass_and_shifts_the_mean_inside_the_bounds():
    generator = torch.Generator().manual_seed(0)
    next_probabilities = torch.softmax(torch.randn(64, 51, generator=generator) * 2, dim=1)
    returns = torch.rand(64, generator=generator) * 2 - 1
    discounts = torch.full((64,), 0.9**3)  # |return + 0.73 z| <= 8.3: nothing is clipped
    target = categorical_projection(returns, discounts, next_probabilities, SUPPORT)
    assert (target >= 0).all()
    torch.testing.assert_close(target.sum(dim=1), torch.ones(64))
    torch.testing.assert_close(target @ SUPPORT, returns + discounts * (next_probabilities @ SUPPORT))


def fitted_quantiles(samples: torch.Tensor, fractions: torch.Tensor, kappa: float) -> torch.Tensor:
    """Free quantiles after 400 Adam steps (learning rate annealed from 1 to 0) on the quantile Huber loss."""
    quantiles = torch.zeros(1, len(fractions), requires_grad=True)
    optimizer = torch.optim.Adam([quantiles], lr=1.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / 400)
    for _ in range(400):
        optimizer.zero_grad()
        quantile_huber_loss(quantiles, samples, fractions, kappa).sum().backward()
        optimizer.step()
        schedule.step()
    return quantiles.detach()[0]


def test_the_quantile_loss_is_minimised_at_the_quantiles_of_the_targets():
    """Ten free quantiles against 4,000 samples of N(3, 10^2) land on the samples' quantiles at their fractions.
    The Huber part pulls each towards the median by about (fraction - 1/2) * kappa, which is why QR-DQN's
    kappa of 1 is small beside the spread of returns."""
    generator = torch.Generator().manual_seed(0)
    samples = 3.0 + 10.0 * torch.randn(1, 4000, generator=generator)
    fractions = (torch.arange(10) + 0.5) / 10
    truth = torch.tensor([NormalDist(3.0, 10.0).inv_cdf(float(f)) for f in fractions])
    expected = torch.quantile(samples[0], fractions)
    torch.testing.assert_close(expected, truth, atol=1.0, rtol=0)  # the samples are N(3, 10^2) indeed
    torch.testing.assert_close(fitted_quantiles(samples, fractions, kappa=0.01), expected, atol=0.05, rtol=0)
    huber = fitted_quantiles(samples, fractions, kappa=1.0)
    torch.testing.assert_close(huber, expected - (fractions - 0.5), atol=0.15, rtol=0)


@pytest.mark.parametrize("distributional", ["none", "c51", "qr"])
def test_dueling_advantages_average_zero_so_the_mean_over_actions_is_the_value(distributional):
    torch.manual_seed(0)
    head = QHead(32, 6, dueling=True, distributional=distributional, atoms=11)
    features = torch.randn(5, 32)
    outputs = head.outputs(features)  # (N, A, K): Q-values, C51 logits or quantiles
    torch.testing.assert_close(outputs.mean(dim=1), head.value(features))
    if distributional == "none":
        torch.testing.assert_close(head(features).mean(dim=1), head.value(features)[:, 0])


VARIANTS = {
    "dueling": dict(dueling=True),
    "c51": dict(distributional="c51", atoms=21, v_min=-5.0, v_max=5.0),
    "qr": dict(distributional="qr", quantiles=16),
    "dueling-qr-prioritized": dict(dueling=True, distributional="qr", quantiles=8, prioritized_replay=True),
}


@pytest.mark.parametrize("settings", VARIANTS.values(), ids=VARIANTS.keys())
def test_a_checkpoint_and_the_weights_files_of_each_head_load_as_an_agent(tmp_path, settings):
    config, state = trained_state(tmp_path, **settings)
    path = save_checkpoint(str(tmp_path / "checkpoints"), {**state.payload(), "replay_buffer": None}, keep=1)
    obs = np.random.default_rng(1).integers(0, 255, (3, 4, 84, 84), dtype=np.uint8)
    with torch.inference_mode():
        expected_q = state.q_network.eval()(torch.from_numpy(obs)).numpy()
    safetensors = str(tmp_path / "agent.safetensors")
    save_safetensors_agent(safetensors, state.q_network.state_dict(), "dqn", 120, "standard")
    bare = str(tmp_path / "model.pt")  # the bare state_dict a card's model.pt holds
    write_torch_file(bare, state.q_network.state_dict())
    atoms = settings.get("quantiles", settings.get("atoms", 1))
    for agent in (load_agent(path), load_safetensors_agent(safetensors, "agent"), load_agent(bare)):
        assert agent.distributional == config.distributional
        # (the learner's network is channels_last, a loaded one is not: the convolutions round differently)
        np.testing.assert_allclose(agent.preferences(obs), expected_q, atol=1e-5)
        distribution = agent.distribution(obs)
        assert distribution.shape == (3, 6, atoms)
        head = agent.network.head
        if config.distributional == "c51":  # probabilities on the run's atoms, whose mean is the Q-value
            np.testing.assert_allclose(distribution.sum(axis=2), 1.0, atol=1e-5)
            np.testing.assert_allclose(distribution @ head.support.numpy(), expected_q, atol=1e-5)
            assert head.support[0] == config.v_min and head.support[-1] == config.v_max
        elif config.distributional == "qr":
            np.testing.assert_allclose(distribution.mean(axis=2), expected_q, atol=1e-5)
        layers = agent.layers(obs)  # probes read the expected Q-values as the output layer
        np.testing.assert_allclose(layers["output"], expected_q, atol=1e-5)


def test_a_plain_q_network_keeps_its_linear_head_and_keys():
    keys = set(QNetwork(6).state_dict())
    assert {"head.weight", "head.bias"} <= keys and not any(k.startswith("head.") and k.count(".") > 1 for k in keys)


@pytest.fixture(scope="module")
def c51_run(tmp_path_factory):
    run_dir = str(tmp_path_factory.mktemp("runs") / "c51")
    flags = ["--distributional", "c51", "--dueling", "--atoms", "11", "--total-steps", "200"]
    assert main(["train", "dqn", "--run-dir", run_dir, *flags, *small_dqn()]) == 0
    return run_dir


def test_a_distributional_run_resumes_plays_and_keeps_its_head(c51_run, tmp_path, capsys):
    code, _, _ = run(["resume", c51_run, "--extra-steps", "100"], capsys)
    assert code == 0
    agent = load_agent(c51_run)
    assert (
        agent.env_step == 300
        and agent.distributional == "c51"
        and agent.distribution(np.zeros((1, 4, 84, 84), np.uint8)).shape == (1, 6, 11)
    )
    code, out, _ = run(["eval", c51_run, "--episodes", "1", "--json"], capsys)
    assert code == 0 and '"games": 1' in out


def test_a_probe_names_the_head_and_records_expected_q_values_at_the_output(c51_run):
    agent = load_agent(c51_run)
    assert architecture(agent) == "q-nature-dueling-c51-11"
    obs = np.random.default_rng(0).integers(0, 255, (2, 4, 84, 84), dtype=np.uint8)
    support = agent.network.head.support.numpy()
    expected_q = (agent.distribution(obs) * support).sum(-1)
    np.testing.assert_allclose(agent.preferences(obs), expected_q, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(agent.layers(obs)["output"], expected_q, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "flags",
    [["--distributional", "qr"], ["--no-dueling"], ["--atoms", "21"], ["--v-max", "20"]],
    ids=["distributional", "dueling", "atoms", "v-max"],
)
def test_branch_refuses_another_head(c51_run, tmp_path, capsys, flags):
    new_run = str(tmp_path / "branch")
    code, _, err = run(["branch", c51_run, "--run-dir", new_run, "--extra-steps", "100", *flags], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1
    setting = flags[0].replace("--no-", "--")
    assert f"{setting} shapes what the checkpoint holds and cannot change in a branch" in err
    assert not os.path.exists(new_run)


def test_resume_refuses_another_head(c51_run, tmp_path, capsys):
    # not a resume flag: the head is the experiment's
    code, _, err = run(["resume", c51_run, "--extra-steps", "100", "--distributional", "qr"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--distributional" in err
    with pytest.raises(PongrlError, match="distributional is the experiment's setting"):
        Run(c51_run).resume(extra_steps=100, distributional="qr")
    # a config.yaml edited to another head no longer matches its checkpoints
    copy = str(tmp_path / "copy")
    shutil.copytree(c51_run, copy)
    config_path = os.path.join(copy, "config.yaml")
    with open(config_path) as handle:
        config = yaml.safe_load(handle)
    config["distributional"] = "qr"
    with open(config_path, "w") as handle:
        yaml.safe_dump(config, handle)
    code, _, err = run(["resume", copy, "--extra-steps", "100"], capsys)
    errors = [line for line in err.splitlines() if line.startswith("pongrl: error:")]
    assert code == 1 and len(errors) == 1 and "(distributional differ)" in errors[0]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--distributional", "iqn"], "--distributional must be one of none, c51, qr"),
        (["--distributional", "c51", "--atoms", "1"], "--atoms must be at least 2"),
        (["--distributional", "qr", "--quantiles", "1"], "--quantiles must be at least 2"),
        (["--distributional", "c51", "--v-min", "10", "--v-max", "-10"], "--v-min must be below --v-max"),
        (["--v-min", "5", "--v-max", "5"], "--v-min must be below --v-max"),
    ],
)
def test_bad_head_flags_are_refused_in_one_line_and_write_nothing(tmp_path, capsys, flags, message):
    run_dir = str(tmp_path / "run")
    code, _, err = run(["train", "dqn", "--run-dir", run_dir, "--total-steps", "100", *flags, *small_dqn()], capsys)
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1
    assert not os.path.exists(run_dir)


class TabularQ(torch.nn.Module):
    """A QHead on one-hot states: the learner's losses on a planted two-state game, without a torso."""

    def __init__(self, states: int, **head):
        super().__init__()
        self.states = states
        self.head = QHead(states, 2, **head)

    def outputs(self, states: torch.Tensor) -> torch.Tensor:
        return self.head.outputs(torch.nn.functional.one_hot(states, self.states).float())

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.head(torch.nn.functional.one_hot(states, self.states).float())


def learn_planted_game(**head) -> TabularQ:
    """State 0 ends the game with +1 three times in four and -1 once, whatever the action; in state 1, action 0 leads
    to state 0 with no reward and a discount of 0.9, action 1 ends the game with 0. The batch holds exactly those
    frequencies, so the losses' fixed point is known; a target network copied every 25 steps, double DQN."""
    torch.manual_seed(0)
    online = TabularQ(2, **head)
    target = TabularQ(2, **head)
    batch = {
        "obs": torch.tensor([0] * 8 + [1, 1]),
        "actions": torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 0, 1]),
        "returns": torch.tensor([1.0, 1.0, 1.0, -1.0] * 2 + [0.0, 0.0]),
        "discounts": torch.tensor([0.0] * 8 + [0.9, 0.0]),
        "next_obs": torch.tensor([0] * 8 + [0, 0]),
    }
    optimizer = torch.optim.Adam(online.parameters(), lr=0.1)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / 800)
    for step in range(800):
        if step % 25 == 0:
            target.load_state_dict(online.state_dict())
        losses, _ = distributional_losses(
            online,
            target,
            batch["obs"],
            batch["next_obs"],
            batch["actions"],
            batch["returns"],
            batch["discounts"],
            double_dqn=True,
        )
        optimizer.zero_grad()
        losses.mean().backward()
        optimizer.step()
        schedule.step()
    return online


def test_c51_learns_the_planted_games_return_distributions_through_its_target_network():
    online = learn_planted_game(distributional="c51", atoms=9, v_min=-2.0, v_max=2.0)  # atoms 0.5 apart
    with torch.no_grad():
        probabilities = torch.softmax(online.outputs(torch.tensor([0, 1])), dim=-1)
    support = online.head.support.tolist()
    at = {value: support.index(value) for value in (-1.0, -0.5, 0.0, 0.5, 1.0)}
    for action in (0, 1):  # +1 or -1, both on atoms
        assert probabilities[0, action, [at[1.0], at[-1.0]]].tolist() == pytest.approx([0.75, 0.25], abs=0.02)
    # 0.9 x (+1 or -1): 0.9 is 4/5 of the way from 0.5 to 1, so 0.8 of each goes to the nearer atom
    bootstrapped = probabilities[1, 0, [at[1.0], at[0.5], at[-0.5], at[-1.0]]].tolist()
    assert bootstrapped == pytest.approx([0.6, 0.15, 0.05, 0.2], abs=0.02)
    assert probabilities[1, 1, at[0.0]] == pytest.approx(1.0, abs=0.02)
    assert online(torch.tensor([1]))[0].tolist() == pytest.approx([0.45, 0.0], abs=0.03)


def test_qr_learns_the_planted_games_quantiles():
    """For targets +1 (probability 3/4) and -1, the quantile Huber loss (kappa 1) is least at
    q = fraction * 3/4 / ((1 - fraction) * 1/4) - 1 below 0 and at q = 1 - (1 - fraction) * 1/4 / (fraction * 3/4)
    above: -0.571, 0.444, 0.8 and 0.952 at the fractions 1/8, 3/8, 5/8 and 7/8."""
    online = learn_planted_game(distributional="qr", atoms=4)
    with torch.no_grad():
        quantiles = online.outputs(torch.tensor([0]))[0]
    for action in (0, 1):
        assert quantiles[action].tolist() == pytest.approx([-4 / 7, 4 / 9, 0.8, 20 / 21], abs=0.02)
