"""A self-play run's opponent mix (scripted paddles, frozen agents) and `--init`: laid out, saved, resumed exactly,
and refused with one line when they cannot work."""

import csv
import os

import numpy as np
import pytest
import torch

from cli_helpers import run
from pongrl.agent import load_agent
from pongrl.algos.ppo import PPOState
from pongrl.checkpoint import load_checkpoint, save_checkpoint
from pongrl.config import make_config
from pongrl.errors import PongrlError
from pongrl.learner import start_learner

TINY = (
    "--num-envs 8 --num-steps 16 --num-minibatches 2 --update-epochs 1 --log-every 128 --checkpoint-every 128 "
    "--eval-every 0 --num-checkpoints 0 --torch-threads 1 --total-steps 128"
).split()
MIX = ["--scripted-fraction", "0.5", "--scripted-opponents", "still,chase", "--agent-fraction", "0.25"]


def rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as handle:
        return list(csv.DictReader(handle))


def mixed_config(**settings):
    values = dict(num_envs=8, num_steps=4, num_minibatches=2, scripted_fraction=0.5, scripted_opponents="still,chase")
    return make_config("selfplay", "default", {**values, **settings})


def test_the_mix_lays_out_its_games_and_the_learner_keeps_both_sides():
    config = mixed_config(opponent_pool=0.25, agent_fraction=0.25, opponent_agents="zoo:selfplay")
    state = PPOState(config, torch.device("cpu"))
    pool, scripted, agents = state.opponents()
    assert (pool.first_game, pool.count, scripted.first_game, scripted.count) == (0, 1, 1, 2)
    assert (agents.first_game, agents.count) == (3, 1)
    # in each kind's even games the opponent holds the second paddle, in its odd ones the first
    assert list(scripted.opponent_entries) == [3, 4] and list(agents.opponent_entries) == [7]
    actions = torch.full((8,), 5)
    obs = torch.zeros((8, 84, 84, 4), dtype=torch.uint8)
    scripted.play(obs, actions)
    assert actions[[3, 4]].tolist() == [0, 0]  # "still" presses NOOP; a blank screen shows no paddle to chase
    assert actions[[0, 1, 2, 5, 6, 7]].tolist() == [5] * 6


def test_scripted_and_agent_opponents_round_trip_with_their_draws_and_random_streams(tmp_path):
    config = mixed_config(agent_fraction=0.5, opponent_agents="zoo:selfplay,zoo:selfplay-builtin")
    state = PPOState(config, torch.device("cpu"))
    for opponent in state.opponents():
        opponent.games_ended(np.ones(4, bool))
    state.scripted_opponents.players[1].rng.random(3)
    path = save_checkpoint(str(tmp_path), state.payload(), keep=2)
    fresh = PPOState(config, torch.device("cpu"))
    fresh.restore(load_checkpoint(path))
    for mine, theirs in zip(state.opponents(), fresh.opponents()):
        assert list(mine.opponent) == list(theirs.opponent)
        mine.games_ended(np.ones(4, bool))
        theirs.games_ended(np.ones(4, bool))
        assert list(mine.opponent) == list(theirs.opponent)
    assert fresh.scripted_opponents.players[1].rng.random() == state.scripted_opponents.players[1].rng.random()
    # the same names with other weights behind them: refused
    payload = load_checkpoint(path)
    payload["state"]["agent_opponents"]["digests"][0] = "0" * 64
    with pytest.raises(PongrlError, match="zoo:selfplay: the weights behind the name differ"):
        PPOState(config, torch.device("cpu")).restore(payload)


def test_init_starts_from_the_agents_weights_with_a_fresh_optimizer_and_counters():
    config = make_config("selfplay", "default", dict(init="zoo:selfplay-builtin", opponent_pool=0.25, num_envs=8))
    state, _ = start_learner(PPOState, config, None)
    expected = load_agent("zoo:selfplay-builtin").state_dict()
    assert all(torch.equal(state.agent.state_dict()[key], value) for key, value in expected.items())
    assert state.counters["env_step"] == 0 and not state.optimizer.state
    snapshot = state.opponent_pool.slots[0].state_dict()  # the pool's first opponent is the starting policy
    assert all(torch.equal(snapshot[key], value) for key, value in expected.items())


def test_a_mixed_run_from_an_agent_trains_logs_each_kind_and_resumes(tmp_path, capsys):
    flags = [*TINY, *MIX, "--opponent-agents", "zoo:selfplay", "--init", "zoo:selfplay-builtin"]
    run_dir = str(tmp_path / "mixed")
    assert run(["train", "selfplay", "--run-dir", run_dir, *flags], capsys)[0] == 0
    assert run(["resume", run_dir, "--total-steps", "256"], capsys)[0] == 0
    assert [int(row["env_step"]) for row in rows(run_dir)] == [128, 256]
    payload = torch.load(os.path.join(run_dir, "checkpoints", "step_000000000256.pt"), weights_only=True)
    assert {"scripted_opponents", "agent_opponents"} <= set(payload["state"])
    assert payload["config"]["init"] == "zoo:selfplay-builtin"
    # a resume that would meet other weights under the same name is refused, and the run is left as it was
    config_path = os.path.join(run_dir, "config.yaml")
    before = open(config_path).read()
    with open(config_path, "w") as handle:
        handle.write(before.replace("opponent_agents: zoo:selfplay", "opponent_agents: zoo:selfplay-separate"))
    code, _, err = run(["resume", run_dir, "--total-steps", "384"], capsys)
    assert code != 0 and "differ" in err
    assert [int(row["env_step"]) for row in rows(run_dir)] == [128, 256]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--init", "README.md"], "README.md: not a readable pongrl checkpoint"),
        (["--init", "zoo:dqn"], "a dqn agent cannot start a selfplay run"),
        (["--init", "zoo:ppo"], "the agent sees the standard observation profile"),
        (["--init", "zoo:selfplay-separate"], "its network differs from the run's"),
        (["--scripted-fraction", "0.5", "--scripted-opponents", "chase,nobody"], "unknown scripted opponent 'nobody'"),
        (["--agent-fraction", "0.5"], "--agent-fraction needs --opponent-agents"),
        (
            ["--agent-fraction", "0.5", "--opponent-agents", "zoo:dqn", "--env", "reference"],
            "the reference env shows the self-play card's view (seed) only",
        ),
        (["--scripted-fraction", "0.75", "--builtin-fraction", "0.5"], "ask for more than the 4 games together"),
    ],
)
def test_bad_mixes_and_inits_are_refused_in_one_line_with_nothing_written(tmp_path, capsys, flags, message):
    run_dir = tmp_path / "refused"
    code, _, err = run(["train", "selfplay", "--run-dir", str(run_dir), *TINY, *flags], capsys)
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1
    assert not run_dir.exists()


def test_a_dqn_run_starts_from_a_dqn_agent_and_refuses_a_policy(tmp_path, capsys):
    from cli_helpers import small_dqn

    run_dir = str(tmp_path / "dqn")
    flags = [*small_dqn(), "--total-steps", "200", "--init", "zoo:dqn", "--dueling", "--distributional", "c51"]
    assert run(["train", "dqn", "--run-dir", run_dir, *flags], capsys)[0] == 0
    code, _, err = run(["train", "dqn", "--run-dir", str(tmp_path / "no"), *small_dqn(), "--init", "zoo:ppo"], capsys)
    assert code != 0 and "a ppo agent cannot start a dqn run" in err
    # zoo:dqn has a dueling C51 head: a run with the plain head is told which flags build it, and nothing is written
    plain = str(tmp_path / "plain")
    code, _, err = run(["train", "dqn", "--run-dir", plain, *small_dqn(), "--init", "zoo:dqn"], capsys)
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "head differs from the run's (start the run with --dueling --distributional c51 --atoms 51" in err
    assert not (tmp_path / "plain").exists()
    # the same shapes with other value bounds would load, and the run would hold zoo:dqn's atoms, not its own
    bounds = ["--dueling", "--distributional", "c51", "--v-min", "-3", "--v-max", "3"]
    code, _, err = run(["train", "dqn", "--run-dir", plain, *small_dqn(), "--init", "zoo:dqn", *bounds], capsys)
    assert code != 0 and "--v-min -10 --v-max 10)" in err and not (tmp_path / "plain").exists()
