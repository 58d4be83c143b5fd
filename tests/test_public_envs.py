"""pongrl's environments through the ecosystem's own APIs and checkers: PettingZoo (parallel and AEC),
Gymnasium (single env and vector envs)."""

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, VectorEnv
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

import pongrl  # noqa: F401  (registers pongrl/Pong-v0)
from pongrl.envs import pong_selfplay_v0
from pongrl.envs.selfplay import make_seed_parallel_env
from pongrl.game import PLAYERS

pytestmark = pytest.mark.filterwarnings("ignore:The old environment creation API:DeprecationWarning")


def no_warnings(check, *args, **kwargs):
    """Run one of the libraries' checkers; any warning it raises about the env fails the test."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(*args, **kwargs)
    messages = [str(w.message) for w in caught if "old environment creation API" not in str(w.message)]
    assert not messages, messages


# ---- PettingZoo ---------------------------------------------------------------------------------
@pytest.mark.parametrize("game_mode", [4, 3])
def test_parallel_env_passes_pettingzoos_parallel_api_and_seed_tests(game_mode):
    no_warnings(parallel_api_test, pong_selfplay_v0.parallel_env(game_mode=game_mode), num_cycles=400)
    no_warnings(parallel_seed_test, lambda: pong_selfplay_v0.parallel_env(game_mode=game_mode), num_cycles=200)


def test_aec_form_passes_pettingzoos_api_test():
    no_warnings(api_test, pong_selfplay_v0.env(render_mode="rgb_array"), num_cycles=300)


def lopsided_actions(rng):
    """`second_0` mostly stands still, so a whole game ends within ~1,500 steps."""
    first, second = rng.integers(0, 6, 2)
    return {"first_0": int(first), "second_0": int(second) if rng.random() < 0.15 else 0}


def play_both(envs, actions_for, steps):
    """Step the envs with the same actions until the game ends, asserting the same results; returns
    the number of steps played and the last step's results."""
    observations = [env.reset(seed=7)[0] for env in envs]
    for agent in PLAYERS:
        np.testing.assert_array_equal(observations[0][agent], observations[1][agent])
    rng = np.random.default_rng(0)
    for step in range(1, steps + 1):
        actions = actions_for(rng)
        results = [env.step(actions) for env in envs]
        for agent in PLAYERS:
            for name, ours, theirs in zip(("obs", "reward", "terminated", "truncated"), results[0], results[1]):
                assert np.array_equal(ours[agent], theirs[agent]), f"{name} of {agent} differs at step {step}"
        assert envs[0].agents == envs[1].agents, step
        if not envs[0].agents:
            return step, results[0]
    raise AssertionError(f"no game ended in {steps} steps")


def test_parallel_env_is_the_seed_chain_through_a_won_game_and_a_truncation():
    # A whole game to 21 points (both players terminate together, with the final observation), then
    # a game cut by max_cycles on the first frame of a step: the same as pong_v3 + SuperSuit.
    ours, theirs = pong_selfplay_v0.parallel_env(), make_seed_parallel_env()
    steps, (_, _, terminated, truncated, infos) = play_both([ours, theirs], lopsided_actions, 3000)
    assert all(terminated.values()) and not any(truncated.values())
    first, second = infos["first_0"]["episode"], infos["second_0"]["episode"]
    assert 21 in (first["points_won"], second["points_won"]) and first["l"] == second["l"] == steps
    assert (first["points_won"], first["points_lost"]) == (second["points_lost"], second["points_won"])
    with pytest.raises(gymnasium.error.ResetNeeded):
        ours.step({"first_0": 0, "second_0": 0})
    ours.close(), theirs.close()

    ours, theirs = pong_selfplay_v0.parallel_env(max_cycles=401), make_seed_parallel_env(max_cycles=401)
    steps, (_, _, terminated, truncated, _) = play_both([ours, theirs], lopsided_actions, 200)
    assert steps == 101 and all(truncated.values()) and not any(terminated.values())
    ours.close(), theirs.close()


def test_parallel_env_renders_the_screen_and_states_the_ram():
    env = pong_selfplay_v0.parallel_env(render_mode="rgb_array")
    env.reset(seed=0)
    for _ in range(30):
        env.step({"first_0": 1, "second_0": 1})
    assert env.render().shape == (210, 160, 3)
    ram = env.state()
    assert env.state_space.contains(ram)
    env.close()
    with pytest.raises(ValueError, match="game_mode"):
        pong_selfplay_v0.parallel_env(game_mode=1)


# ---- Gymnasium vector form of the two-player game ----------------------------------------------------
def test_two_player_vector_env_is_a_gymnasium_vector_env_with_same_step_autoreset():
    envs = pong_selfplay_v0.vector_env(2, max_cycles=401)
    assert isinstance(envs, VectorEnv) and envs.num_envs == 4
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, infos = envs.reset(seed=3)
    assert envs.observation_space.contains(obs) and infos == {}
    envs.action_space.seed(0)
    for step in range(1, 102):
        obs, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
        assert envs.observation_space.contains(obs) and rewards.dtype == np.float32
    # max_cycles 401 raw frames: every game is cut at agent step 101, its players flagged as Gymnasium does.
    assert truncated.all() and infos["_episode"].all() and infos["_final_obs"].all()
    assert (infos["episode"]["l"] == 101).all()
    assert not np.array_equal(infos["final_obs"], obs), "obs already starts the next games"
    assert not obs[:, :, :, :3].any(), "a new game's stack holds one frame"
    with pytest.raises(TypeError, match="one int"):
        envs.reset(seed=[1, 2])
    envs.close()


# ---- Gymnasium single-player ------------------------------------------------------------------------
def test_single_player_env_is_registered_and_passes_gymnasiums_checker():
    env = gymnasium.make("pongrl/Pong-v0", render_mode="rgb_array")
    no_warnings(check_env, env.unwrapped)
    first, info = env.reset(seed=11)
    again, info_again = env.reset(seed=11)
    np.testing.assert_array_equal(first, again)
    assert info == info_again and 0 <= info["noop_frames"] <= 30
    assert env.render().shape == (210, 160, 3)
    env.close()


def test_single_player_env_and_its_vector_form_play_the_same_game():
    # The Python emulator loop and ale-py's vector env, both without no-op starts, give the same
    # observations and rewards for the same actions.
    single = gymnasium.make("pongrl/Pong-v0", noop_max=0)
    vector = gymnasium.make_vec("pongrl/Pong-v0", num_envs=1, noop_max=0)
    assert vector.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, _ = single.reset(seed=0)
    vector_obs, _ = vector.reset(seed=0)
    rng = np.random.default_rng(0)
    scored = 0
    for step in range(400):
        np.testing.assert_array_equal(obs, vector_obs[0], err_msg=f"step {step}")
        action = int(rng.integers(0, 6))
        obs, reward, *_ = single.step(action)
        vector_obs, vector_reward, *_ = vector.step(np.array([action]))
        assert reward == vector_reward[0], step
        scored += reward != 0
    assert scored >= 2  # the built-in AI scores against random play within 400 steps
    single.close(), vector.close()


def test_sticky_actions_replay_with_the_reset_seed():
    def play(seed):
        env = gymnasium.make("pongrl/Pong-v0", sticky_actions=0.25)
        env.reset(seed=seed)
        frames = [env.step(i % 6)[0] for i in range(120)]
        env.close()
        return np.stack(frames)

    np.testing.assert_array_equal(play(5), play(5))


# ---- the documented example ------------------------------------------------------------------------
def test_the_cleanrl_style_example_trains_on_the_public_vector_env():
    import math
    import os
    import re
    import subprocess
    import sys

    example = os.path.join(os.path.dirname(__file__), "..", "docs", "examples", "ppo_selfplay.py")
    done = subprocess.run(
        [
            sys.executable,
            example,
            "--num-games",
            "2",
            "--num-steps",
            "64",
            "--total-steps",
            "512",
            "--max-cycles",
            "401",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    updates = re.findall(r"agent step (\d+): value loss ([\d.]+), entropy ([\d.]+)", done.stdout)
    assert [int(u[0]) for u in updates] == [256, 512]
    assert all(math.isfinite(float(u[1])) and 0 < float(u[2]) <= math.log(6) + 1e-6 for u in updates)
    # max_cycles 401 raw frames cut both games at step 101, reported through infos["_episode"].
    assert len(re.findall(r"a game ended \d+-\d+ after 101 steps", done.stdout)) == 2, done.stdout
