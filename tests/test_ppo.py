"""PPO: GAE and the clipped losses by hand, the seed-compatible network, and the CLI end to end."""

import csv
import os
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pongrl.agent import PolicyAgent, load_agent
from pongrl.algos.ppo import compute_gae, learning_rate_at, ppo_losses
from pongrl.cli import main
from pongrl.config import check_same_experiment, make_config, to_dict
from pongrl.errors import PongrlError
from pongrl.media import curve_series
from pongrl.nets import ActorCritic, QNetwork, is_shared_torso, torso_kind


def test_gae_matches_a_hand_computation_with_a_terminal_and_a_truncation():
    gamma, lam = 0.9, 0.5
    # One env, four steps: step 1 ends the game (terminal), step 3 is a cut game whose reward
    # already holds gamma * V(cut observation) = 0.9 * 2.0.
    rewards = torch.tensor([[0.0], [1.0], [0.0], [0.9 * 2.0]])
    values = torch.tensor([[0.5], [0.4], [0.3], [0.2]])
    ended = torch.tensor([[False], [True], [False], [True]])
    next_value = torch.tensor([7.0])  # must not leak into step 3
    advantages, returns = compute_gae(rewards, values, ended, next_value, gamma, lam)
    d3 = 1.8 - 0.2
    d2 = 0.0 + gamma * 0.2 - 0.3
    d1 = 1.0 - 0.4
    d0 = 0.0 + gamma * 0.4 - 0.5
    expected = [d0 + gamma * lam * d1, d1, d2 + gamma * lam * d3, d3]
    assert advantages[:, 0].tolist() == pytest.approx(expected)
    assert returns[:, 0].tolist() == pytest.approx([a + v for a, v in zip(expected, [0.5, 0.4, 0.3, 0.2])])


def test_gae_bootstraps_the_last_step_from_the_next_value():
    advantages, _ = compute_gae(
        torch.tensor([[1.0]]), torch.tensor([[0.5]]), torch.tensor([[False]]), torch.tensor([2.0]), 0.99, 0.95
    )
    assert advantages.item() == pytest.approx(1.0 + 0.99 * 2.0 - 0.5)


def test_clipped_losses_on_hand_made_tensors():
    config = SimpleNamespace(clip_coef=0.2, clip_vloss=True, ent_coef=0.01, vf_coef=0.5)
    old_logprob = torch.zeros(2)
    new_logprob = torch.log(torch.tensor([1.5, 0.5]))  # ratios 1.5 and 0.5
    advantages = torch.tensor([1.0, -1.0])
    losses = ppo_losses(
        new_logprob,
        old_logprob,
        advantages,
        torch.tensor([1.0, 0.0]),
        torch.tensor([0.0, 0.0]),
        torch.tensor([2.0, 0.0]),
        torch.tensor([1.0, 1.0]),
        config,
    )
    # ratio 1.5 with A=+1 is clipped to 1.2; ratio 0.5 with A=-1 is clipped to 0.8 -> max(0.5, 0.8)
    assert losses["policy_loss"].item() == pytest.approx((-1.2 + 0.8) / 2)
    # value 1.0 (old 0.0) is clipped to 0.2: max((1-2)^2, (0.2-2)^2) = 3.24; second entry 0
    assert losses["value_loss"].item() == pytest.approx(0.5 * (3.24 + 0.0) / 2)
    assert losses["clip_fraction"].item() == pytest.approx(1.0)
    assert losses["loss"].item() == pytest.approx(
        losses["policy_loss"].item() - 0.01 * 1.0 + 0.5 * losses["value_loss"].item()
    )


def test_learning_rate_anneal_is_stretched_by_a_longer_total():
    config = SimpleNamespace(anneal_lr=True, learning_rate=1.0, total_steps=100)
    assert learning_rate_at(config, 50) == pytest.approx(0.5)
    config.total_steps = 200  # a resume asked for 100 more
    assert learning_rate_at(config, 50) == pytest.approx(0.75)


@pytest.mark.parametrize("shared", [False, True])
def test_state_dict_has_the_seed_keys_and_shapes(shared):
    state = ActorCritic(6, share_network=shared).state_dict()
    shapes = {k: tuple(v.shape) for k, v in state.items()}
    for torso in ("actor_network", "critic_network"):
        assert shapes[f"{torso}.0.weight"] == (32, 4, 8, 8)
        assert shapes[f"{torso}.2.weight"] == (64, 32, 4, 4)
        assert shapes[f"{torso}.4.weight"] == (64, 64, 3, 3)
        assert shapes[f"{torso}.7.weight"] == (512, 3136)
    assert shapes["actor.weight"] == (6, 512) and shapes["critic.weight"] == (1, 512)
    assert len(shapes) == 20
    assert is_shared_torso(state) == shared


@pytest.mark.parametrize("shared", [False, True])
def test_a_bare_seed_state_dict_loads_with_its_torso_kind_detected(shared, tmp_path):
    network = ActorCritic(6, share_network=shared)
    path = tmp_path / "agent.pt"
    torch.save(network.state_dict(), str(path))  # what the seed's training code writes
    agent = load_agent(str(path))
    assert isinstance(agent, PolicyAgent) and agent.obs_profile == "seed"
    assert agent.network.share_network == shared
    frames = torch.randint(0, 256, (3, 84, 84, 4), dtype=torch.uint8)
    with torch.no_grad():
        assert torch.equal(agent.network(frames)[0], network(frames)[0])
    if shared:  # the critic still follows the actor after loading
        assert agent.network.critic_network is agent.network.actor_network


def test_a_state_dict_with_wrong_shapes_is_refused(tmp_path, capsys):
    state = ActorCritic(6).state_dict()
    state["actor.weight"] = torch.zeros(4, 512)
    path = tmp_path / "wrong.pt"
    torch.save(state, str(path))
    assert main(["eval", str(path), "--episodes", "1"]) == 1
    assert "do not fit" in capsys.readouterr().err


TINY = [
    "--num-envs",
    "4",
    "--num-steps",
    "32",
    "--num-minibatches",
    "2",
    "--update-epochs",
    "1",
    "--log-every",
    "128",
    "--checkpoint-every",
    "128",
    "--eval-every",
    "0",
    "--num-checkpoints",
    "2",
    "--torch-threads",
    "1",
]


def rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as handle:
        return list(csv.DictReader(handle))


def test_selfplay_trains_resumes_exports_and_evaluates(tmp_path, capsys):
    run_dir = str(tmp_path / "selfplay")
    assert main(["train", "selfplay", "--run-dir", run_dir, "--total-steps", "256", *TINY]) == 0
    assert [int(r["env_step"]) for r in rows(run_dir)] == [128, 256]
    assert set(rows(run_dir)[0]) >= {"return_first_0", "return_second_0", "points_won", "serve_penalties"}
    names = sorted(os.listdir(os.path.join(run_dir, "checkpoints")))
    assert "step_000000000128.pt" in names and "step_000000000256.pt" in names  # the collected ones
    assert main(["resume", run_dir, "--extra-steps", "128"]) == 0
    metrics = rows(run_dir)
    assert [int(r["env_step"]) for r in metrics] == [128, 256, 384]
    # the anneal continues from where it was, stretched to the new total (not restarted from full)
    assert float(metrics[-1]["learning_rate"]) == pytest.approx(2.5e-4 * (1 - 256 / 384), rel=1e-4)
    exported = str(tmp_path / "agent.pt")
    assert main(["export", run_dir, "--out", exported]) == 0
    state = torch.load(exported, weights_only=True)
    seed_agent = ActorCritic(6, share_network=True)
    seed_agent.load_state_dict(state)  # the seed's Agent.load does exactly this
    assert main(["export", run_dir, "--out", exported]) == 1, "an existing file is not overwritten"
    capsys.readouterr()
    assert main(["eval", exported, "--episodes", "1", "--json"]) == 0
    assert '"games": 1' in capsys.readouterr().out
    # the plot draws PPO's value loss, and no training return for self-play (even by construction)
    series = curve_series(metrics, self_play=True)
    assert series["train_return"] is None and series["loss_name"] == "value loss"
    assert np.isfinite(series["loss"]).all() and (series["loss"] > 0).all()
    assert main(["plot", run_dir, "--out", str(tmp_path / "curves.png")]) == 0


def test_ppo_against_the_builtin_ai_trains(tmp_path):
    run_dir = str(tmp_path / "ppo")
    assert main(["train", "ppo", "--run-dir", run_dir, "--total-steps", "128", *TINY]) == 0
    (row,) = rows(run_dir)
    assert int(row["env_step"]) == 128 and row["policy_loss"] != ""
    # the phase clock: every phase of the loop ran, and together they fit in the run's wall time
    phases = [float(row[f"{phase}_seconds"]) for phase in ("env", "inference", "update")]
    assert all(seconds > 0 for seconds in phases) and float(row["eval_seconds"]) == 0
    assert sum(phases) <= float(row["wall_seconds"]) + 0.05  # metrics.csv rounds wall_seconds to 0.1 s
    payload = torch.load(os.path.join(run_dir, "checkpoints", "step_000000000128.pt"), weights_only=True)
    assert payload["obs_profile"] == "standard" and payload["algo"] == "ppo"
    series = curve_series([row], self_play=False)  # against the built-in AI the training return is drawn
    assert series["train_return"] is not None and series["loss_name"] == "value loss"


def test_evaluating_against_the_builtin_ai_changes_nothing_in_self_play_training(tmp_path):
    """The self-play counterpart of the DQN same-seed test in test_faults.py: a run evaluated (greedy and
    sampled) and one never evaluated learn the same, so a resume may change the evaluation's cadence."""
    learning = []
    for name, extra in (("plain", []), ("evaluated", ["--eval-every", "128", "--eval-episodes", "1"])):
        run_dir = str(tmp_path / name)
        assert (
            main(["train", "selfplay", "--run-dir", run_dir, "--total-steps", "256", *TINY, "--seed", "5", *extra]) == 0
        )
        learned = rows(run_dir)
        assert [bool(r["eval_sampled_mean_return"]) for r in learned] == ([False, False] if not extra else [True, True])
        learning.append(
            [
                {
                    k: v
                    for k, v in r.items()
                    if not (k.startswith("eval_") or k.endswith("_seconds") or k == "steps_per_second")
                }
                for r in learned
            ]
        )
    assert learning[0] == learning[1] and any(r["value_loss"] for r in learning[0])


@pytest.mark.parametrize("sampled", [True, False])
def test_training_scores_the_policy_greedy_and_sampled_against_the_builtin_ai(tmp_path, sampled):
    run_dir = str(tmp_path / "ppo")
    flags = [*TINY, "--eval-every", "128", "--eval-episodes", "1"] + ([] if sampled else ["--no-eval-sampled"])
    assert main(["train", "ppo", "--run-dir", run_dir, "--total-steps", "128", *flags]) == 0
    (row,) = rows(run_dir)
    assert -21 <= float(row["eval_mean_return"]) <= 21 and float(row["eval_seconds"]) > 0
    series = curve_series([row], self_play=False)
    if sampled:  # a whole game, scored as the game counts it
        assert -21 <= float(row["eval_sampled_mean_return"]) <= 21 and float(row["eval_sampled_std_return"]) == 0
        assert np.isfinite(series["eval_sampled_return"]).all()
    else:
        assert row["eval_sampled_mean_return"] == "" and np.isnan(series["eval_sampled_return"]).all()


def test_ppo_with_the_seed_observation_profile_trains(tmp_path):
    run_dir = str(tmp_path / "ppo-seed")
    assert main(["train", "ppo", "--obs", "seed", "--run-dir", run_dir, "--total-steps", "128", *TINY]) == 0
    payload = torch.load(os.path.join(run_dir, "checkpoints", "step_000000000128.pt"), weights_only=True)
    assert payload["obs_profile"] == "seed"


@pytest.mark.parametrize("network", ["nature", "small"])
def test_the_torso_is_told_from_the_weights(network):
    assert torso_kind(QNetwork(6, network).state_dict()) == network
    assert torso_kind(ActorCritic(6, share_network=False, network=network).state_dict()) == network


def test_the_small_network_trains_evaluates_and_is_not_exported_as_the_seeds(tmp_path, capsys):
    run_dir = str(tmp_path / "small")
    assert main(["train", "ppo", "--network", "small", "--run-dir", run_dir, "--total-steps", "128", *TINY]) == 0
    assert torso_kind(load_agent(run_dir).network.state_dict()) == "small"
    capsys.readouterr()
    assert main(["eval", run_dir, "--episodes", "1", "--json"]) == 0
    assert '"games": 1' in capsys.readouterr().out
    assert main(["export", run_dir, "--out", str(tmp_path / "agent.pt")]) == 1
    assert "Nature torso" in capsys.readouterr().err and not os.path.exists(tmp_path / "agent.pt")


def test_a_checkpoint_older_than_a_setting_resumes_with_its_default():
    config = make_config("ppo", "default", {})
    saved = to_dict(config)
    del saved["network"]  # written before --network existed: it trained the Nature torso
    check_same_experiment({"algo": "ppo", "config": saved, "path": "old.pt"}, config)
    with pytest.raises(Exception, match="network"):
        check_same_experiment(
            {"algo": "ppo", "config": saved, "path": "old.pt"}, make_config("ppo", "default", {"network": "small"})
        )


@pytest.mark.parametrize(
    "make",
    [
        lambda precision: ActorCritic(6, share_network=False, precision=precision),
        lambda precision: QNetwork(6, precision=precision),
    ],
)
def test_a_bfloat16_torso_gives_float32_outputs_near_float32_arithmetic(make):
    torch.manual_seed(0)
    full, half = make("float32"), make("bfloat16")
    half.load_state_dict(full.state_dict())
    frames = torch.randint(0, 256, (8, 84, 84, 4), dtype=torch.uint8)
    if isinstance(full, QNetwork):
        frames = frames.permute(0, 3, 1, 2)

    def outputs(network):  # (Q-values,) or (logits, values)
        result = network(frames)
        return result if isinstance(result, tuple) else (result,)

    exact, rounded = outputs(full), outputs(half)
    for a, b in zip(exact, rounded):
        assert b.dtype == torch.float32  # what the losses see
        assert not torch.equal(a, b), "bfloat16 arithmetic rounds differently from float32"
        assert torch.allclose(a, b, atol=0.02 * a.abs().max().item() + 1e-3)
    # gradients reach the float32 weights, which stay float32
    rounded[0].sum().backward()
    first = next(half.parameters())
    assert first.dtype == torch.float32 and first.grad is not None and first.grad.abs().sum() > 0


def test_agents_are_judged_in_float32_whatever_precision_trained_them():
    # Evaluation during a bfloat16 run must play as `pongrl eval` of its checkpoint (a float32 network).
    from pongrl.agent import PolicyAgent, QAgent

    torch.manual_seed(0)
    frames = np.random.default_rng(0).integers(0, 256, (8, 84, 84, 4), dtype=np.uint8)
    for make, wrap, obs in (
        (lambda p: ActorCritic(6, precision=p), lambda n: PolicyAgent(n, "seed"), frames),
        (lambda p: QNetwork(6, precision=p), QAgent, frames.transpose(0, 3, 1, 2).copy()),
    ):
        full, half = make("float32"), make("bfloat16")
        half.load_state_dict(full.state_dict())
        np.testing.assert_array_equal(wrap(half).preferences(obs), wrap(full).preferences(obs))
        assert half.bfloat16, "training goes on in bfloat16 after the evaluation"
        first = half(torch.from_numpy(obs))
        assert not torch.equal(
            first[0] if isinstance(first, tuple) else first, torch.from_numpy(wrap(full).preferences(obs))
        )


def test_the_rollout_and_the_update_see_the_same_bfloat16_logits():
    """PPO's ratio starts at exactly 1 only if a frame gets the same log-probability in a batch of
    acting (one entry per env) and in a minibatch of the update."""
    torch.manual_seed(0)
    agent = ActorCritic(6, share_network=True, precision="bfloat16")
    frames = torch.randint(0, 256, (64, 84, 84, 4), dtype=torch.uint8)
    with torch.no_grad():
        acting = torch.cat([agent(frames[i : i + 16])[0] for i in range(0, 64, 16)])
        update = agent(frames)[0]
    assert torch.allclose(acting, update, atol=1e-6)


def test_precision_is_recorded_and_a_resume_may_change_it(tmp_path, capsys):
    run_dir = str(tmp_path / "bf16")
    assert (
        main(["train", "selfplay", "--precision", "bfloat16", "--run-dir", run_dir, "--total-steps", "128", *TINY]) == 0
    )
    payload = torch.load(os.path.join(run_dir, "checkpoints", "step_000000000128.pt"), weights_only=True)
    assert payload["config"]["precision"] == "bfloat16"
    assert all(t.dtype == torch.float32 for t in payload["state"]["agent"].values())
    assert main(["resume", run_dir, "--extra-steps", "128", "--precision", "float32"]) == 0
    assert [int(r["env_step"]) for r in rows(run_dir)] == [128, 256]
    assert "precision: float32" in open(os.path.join(run_dir, "config.yaml")).read()
    capsys.readouterr()
    assert main(["train", "dqn", "--precision", "half", "--run-dir", str(tmp_path / "bad")]) == 1
    assert "--precision must be one of float32, bfloat16" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "bad")


# ---- the opponent pool (pongrl.opponents) ---------------------------------------------------------
def always_playing(action: int) -> ActorCritic:
    """A policy that puts all its probability on one action."""
    network = ActorCritic(6, share_network=True)
    with torch.no_grad():
        network.actor.weight.zero_()
        network.actor.bias.copy_(torch.where(torch.arange(6) == action, 50.0, -50.0))
    return network


def test_pool_opponents_play_one_paddle_of_the_pool_games_only_and_the_learner_gets_both_sides():
    from pongrl.opponents import OpponentPool

    config = make_config("selfplay", "default", dict(num_envs=8, opponent_pool=0.5))  # 4 games, 2 against the pool
    pool = OpponentPool(config, 4, 6, torch.device("cpu"))
    assert pool.pool_games == 2
    # Game 0's second paddle and game 1's first are the opponents': the learner plays right in one, left in the other.
    assert np.flatnonzero(pool.learner_mask(8)).tolist() == [0, 3, 4, 5, 6, 7]
    pool.snapshot(always_playing(3))
    actions = torch.zeros(8, dtype=torch.long)
    pool.play(torch.randint(0, 256, (8, 84, 84, 4), dtype=torch.uint8), actions)
    assert actions.tolist() == [0, 3, 3, 0, 0, 0, 0, 0]


def test_greedy_pool_opponents_play_their_most_probable_action_and_sampling_ones_do_not_always():
    from pongrl.opponents import OpponentPool

    leaning = ActorCritic(6, share_network=True)  # action 2 is the most probable, but only at 1/3
    with torch.no_grad():
        leaning.actor.weight.zero_()
        leaning.actor.bias.copy_(torch.where(torch.arange(6) == 2, 0.92, 0.0))
    torch.manual_seed(0)  # the sampling half draws from torch's generator: seeded, so the test is the same every run
    frames = torch.randint(0, 256, (16, 84, 84, 4), dtype=torch.uint8)
    played = {}
    for how in ("greedy", "sample"):
        config = make_config("selfplay", "default", dict(num_envs=16, opponent_pool=1.0, pool_size=1, pool_play=how))
        pool = OpponentPool(config, 8, 6, torch.device("cpu"))
        pool.snapshot(leaning)
        played[how] = []
        for _ in range(20):
            actions = torch.full((16,), 5, dtype=torch.long)
            pool.play(frames, actions)
            learner = pool.learner_mask(16)
            assert actions[learner].tolist() == [5] * 8  # the learner's paddles are left alone
            played[how] += actions[~learner].tolist()
    assert set(played["greedy"]) == {2}
    assert len(set(played["sample"])) == 6  # 160 draws at 1/3 and 2/15 each: every action turns up


def test_pool_play_without_a_pool_is_refused():
    with pytest.raises(PongrlError, match="--pool-play .* needs --opponent-pool"):
        make_config("selfplay", "default", dict(pool_play="greedy"))
    with pytest.raises(PongrlError, match="--pool-play must be one of sample, greedy"):
        make_config("selfplay", "default", dict(opponent_pool=0.5, pool_play="argmax"))


def test_the_pool_keeps_a_window_of_the_newest_snapshots_and_draws_opponents_from_it():
    from pongrl.opponents import OpponentPool

    config = make_config("selfplay", "default", dict(num_envs=16, opponent_pool=1.0, pool_size=2))
    pool = OpponentPool(config, 8, 6, torch.device("cpu"))
    for action in (1, 2, 4):  # the third snapshot replaces the first
        pool.snapshot(always_playing(action))
    assert pool.filled == 2 and pool.next_slot == 1
    drawn = set()
    for _ in range(10):
        pool.games_ended(np.ones(8, bool))
        drawn |= set(pool.opponent.tolist())
    assert drawn == {0, 1}
    actions = torch.zeros(16, dtype=torch.long)
    pool.play(torch.zeros((16, 84, 84, 4), dtype=torch.uint8), actions)
    opponents = ~pool.learner_mask(16)
    assert set(actions[opponents].tolist()) <= {4, 2} and set(actions[~opponents].tolist()) == {0}
    pool.opponent[:] = 0
    pool.games_ended(np.zeros(8, bool))  # no game ended: nobody changes opponent
    assert pool.opponent.tolist() == [0] * 8


def test_a_pool_run_trains_resumes_with_its_pool_and_logs_its_score_against_it(tmp_path, capsys):
    run_dir = str(tmp_path / "pool")
    flags = [*TINY, "--opponent-pool", "0.5", "--pool-every", "64", "--pool-size", "3"]
    assert main(["train", "selfplay", "--run-dir", run_dir, "--total-steps", "256", *flags]) == 0
    assert "return_vs_pool" in rows(run_dir)[0]
    payload = torch.load(os.path.join(run_dir, "checkpoints", "step_000000000256.pt"), weights_only=True)
    # the initial policy, then one snapshot per update (each update crosses a multiple of 64), three kept
    assert len(payload["state"]["opponent_pool"]["snapshots"]) == 3
    newest = payload["state"]["opponent_pool"]["snapshots"][payload["state"]["opponent_pool"]["next_slot"] - 1]
    assert all(torch.equal(newest[k], v) for k, v in payload["state"]["agent"].items())
    assert main(["resume", run_dir, "--extra-steps", "128"]) == 0
    assert [int(r["env_step"]) for r in rows(run_dir)] == [128, 256, 384]
    capsys.readouterr()
    assert main(["train", "selfplay", "--run-dir", str(tmp_path / "none"), *TINY, "--opponent-pool", "0.1"]) == 1
    assert "--opponent-pool 0.1 gives no pool game among 2 games" in capsys.readouterr().err
    assert main(["train", "ppo", "--run-dir", str(tmp_path / "ppo"), *TINY, "--opponent-pool", "0.5"]) == 1
    assert "--opponent-pool is for self-play only" in capsys.readouterr().err
    assert main(["train", "selfplay", "--run-dir", str(tmp_path / "big"), *TINY, "--opponent-pool", "1.5"]) == 1
    assert "--opponent-pool must be in [0, 1]" in capsys.readouterr().err


def test_a_branch_adds_the_pool_at_a_checkpoint_and_leaves_the_parent_run_as_it_was(tmp_path, capsys):
    parent, branch = str(tmp_path / "parent"), str(tmp_path / "branch")
    assert main(["train", "selfplay", "--run-dir", parent, "--total-steps", "256", *TINY]) == 0
    before = {
        name: open(os.path.join(parent, "checkpoints", name), "rb").read()
        for name in os.listdir(os.path.join(parent, "checkpoints"))
    }
    parent_rows = rows(parent)
    start = torch.load(os.path.join(parent, "checkpoints", "step_000000000128.pt"), weights_only=True)
    assert (
        main(
            [
                "branch",
                parent,
                "--run-dir",
                branch,
                "--checkpoint",
                os.path.join(parent, "checkpoints", "step_000000000128.pt"),
                "--extra-steps",
                "128",
                "--opponent-pool",
                "0.5",
                "--pool-every",
                "1000",
                "--pool-play",
                "greedy",
            ]
        )
        == 0
    )
    branch_config = open(os.path.join(branch, "config.yaml")).read()
    assert "opponent_pool: 0.5" in branch_config and "pool_play: greedy" in branch_config
    # the parent's curve up to the branch point, then its own
    assert [int(r["env_step"]) for r in rows(branch)] == [128, 256]
    assert rows(branch)[0] == parent_rows[0] and rows(branch)[1] != parent_rows[1]
    end = torch.load(os.path.join(branch, "checkpoints", "step_000000000256.pt"), weights_only=True)
    (first_opponent,) = end["state"]["opponent_pool"]["snapshots"]  # no snapshot due before 1000 steps
    assert all(torch.equal(first_opponent[k], v) for k, v in start["state"]["agent"].items())
    assert end["counters"]["resumes"] == start["counters"]["resumes"] + 1
    assert (
        rows(parent) == parent_rows
        and {
            name: open(os.path.join(parent, "checkpoints", name), "rb").read()
            for name in os.listdir(os.path.join(parent, "checkpoints"))
        }
        == before
    )
    assert main(["resume", branch, "--extra-steps", "128"]) == 0  # the branch goes on as a run of its own
    capsys.readouterr()
    for argv, message in (
        (["branch", parent, "--run-dir", parent], "a new directory"),
        (["branch", parent, "--run-dir", branch], "already holds a run (branch into a new directory)"),
        (
            ["branch", parent, "--run-dir", str(tmp_path / "b2"), "--buffer-size", "1000"],
            "--buffer-size is not a setting of a selfplay run",
        ),
        (
            ["branch", parent, "--run-dir", str(tmp_path / "b3"), "--total-steps", "100"],
            "the checkpoint is at step 256",
        ),
        (
            ["branch", parent, "--run-dir", str(tmp_path / "b5"), "--no-share-network", "--extra-steps", "128"],
            "--share-network shapes what the checkpoint holds and cannot change in a branch",
        ),
        (
            ["branch", branch, "--run-dir", str(tmp_path / "b6"), "--pool-size", "5", "--extra-steps", "128"],
            "--pool-size shapes what the checkpoint holds",
        ),
        (["branch", str(tmp_path / "nope"), "--run-dir", str(tmp_path / "b4")], "no such run directory"),
    ):
        assert main(argv) == 1, argv
        assert message in capsys.readouterr().err, argv
    assert not any(os.path.exists(tmp_path / name) for name in ("b2", "b3", "b4", "b5", "b6"))


def test_builtin_games_sit_in_the_self_play_layout_with_the_learner_on_the_right_in_the_cards_view():
    from pongrl.envs.builtin_mix import BUILTIN_SEED_OFFSET, BuiltinGamesAsPlayers, SelfPlayWithBuiltinEnv
    from pongrl.envs.single import GameVectorEnv
    from pongrl.envs.selfplay import FastSelfPlayEnv

    env = SelfPlayWithBuiltinEnv(FastSelfPlayEnv(1, seed=4), BuiltinGamesAsPlayers(1, seed=4))
    alone = GameVectorEnv(1, 4 + BUILTIN_SEED_OFFSET, profile="seed")  # the same game, played on its own
    obs, _ = env.reset()
    assert obs.shape == (4, 84, 84, 4) and np.array_equal(obs[2], alone.reset()[0][0]) and not obs[3].any()
    rng = np.random.default_rng(0)
    lost, ended_info = 0, None
    for _ in range(3000):
        actions = rng.integers(0, 6, 4)
        obs, rewards, terminated, truncated, info = env.step(actions)
        expected, reward, *_ = alone.step(actions[2:3])
        assert np.array_equal(obs[2], expected[0]) and not obs[3].any()
        assert rewards[2] == reward[0] and rewards[3] == -reward[0]
        lost += reward[0] < 0
        if terminated[2]:
            ended_info = info
            break
    assert ended_info is not None, "a random player loses its game to the built-in AI"
    assert ended_info["_episode"].tolist()[2:] == [True, True]
    assert ended_info["episode"]["points_lost"][2] == 21 == lost and ended_info["episode"]["points_won"][3] == 21
    env.close()


def test_selfplay_with_builtin_games_trains_resumes_and_branches_into_a_run_without_them(tmp_path, capsys):
    run_dir = str(tmp_path / "mixed")
    assert (
        main(
            [
                "train",
                "selfplay",
                "--run-dir",
                run_dir,
                "--total-steps",
                "256",
                *TINY,
                "--builtin-fraction",
                "0.5",
                "--sticky-actions",
                "0.25",
            ]
        )
        == 0
    )
    assert "builtin_fraction: 0.5" in open(os.path.join(run_dir, "config.yaml")).read()
    assert main(["resume", run_dir, "--extra-steps", "128"]) == 0
    assert [int(r["env_step"]) for r in rows(run_dir)] == [128, 256, 384] and "return_vs_builtin" in rows(run_dir)[0]
    plain = str(tmp_path / "plain")
    assert main(["train", "selfplay", "--run-dir", plain, "--total-steps", "128", *TINY]) == 0
    branch = str(tmp_path / "branch")
    assert main(["branch", plain, "--run-dir", branch, "--extra-steps", "128", "--builtin-fraction", "0.5"]) == 0
    assert "builtin_fraction: 0.5" in open(os.path.join(branch, "config.yaml")).read()
