"""The single-player env: the Python emulator loop sees exactly what the C++ vector env sees."""

import numpy as np
import pytest

from ale_py.vector_env import AtariVectorEnv

from pongrl.envs import PongGame
from pongrl.errors import PongrlError


def test_python_game_matches_the_vector_env_frame_for_frame():
    # Without no-op starts both emulators follow the same actions from the same power-on state.
    vector = AtariVectorEnv(
        "pong",
        1,
        noop_max=0,
        reward_clipping=False,
        use_fire_reset=False,
        repeat_action_probability=0.0,
        autoreset_mode="SameStep",
    )
    vector_obs, _ = vector.reset(seed=3)
    game = PongGame(seed=3, noop_max=0)
    game_obs = game.reset()
    np.testing.assert_array_equal(vector_obs[0], game_obs)
    rng = np.random.default_rng(0)
    points = 0
    for _ in range(400):
        action = int(rng.integers(0, 6))
        vector_obs, vector_reward, *_ = vector.step(np.array([action]))
        game_obs, game_reward, terminated, truncated = game.step(action)
        np.testing.assert_array_equal(vector_obs[0], game_obs)
        assert vector_reward[0] == game_reward
        points += game_reward != 0
    assert points > 0, "the comparison covered scored points"
    vector.close()


def test_rewards_are_true_scores_and_colour_frames_are_native():
    game = PongGame(seed=1)
    game.reset()
    assert game.rgb().shape == (210, 160, 3)
    total = 0.0
    for _ in range(300):
        _, reward, terminated, truncated = game.step(0, record_colour=True)
        assert reward in (-1.0, 0.0, 1.0)
        total += reward
    assert total < 0, "a paddle that never moves loses points to the built-in AI"
    assert len(game.colour_frames) == 1200


def test_a_start_fixes_the_game_whatever_the_emulator_seed():
    # The claim behind `pongrl eval --every-start`: with no sticky actions the emulator draws nothing
    # itself, so the same no-op count and actions give the same game under any seed, and another
    # count gives another game.
    actions = np.random.default_rng(1).integers(0, 6, 300)

    def trajectory(seed, noop_frames, profile):
        game = PongGame(seed=seed, profile=profile)
        frames, rewards = [game.reset(noop_frames)], []
        for action in actions:
            obs, reward, *_ = game.step(int(action))
            frames.append(obs)
            rewards.append(reward)
        return np.stack(frames), rewards

    for profile in ("standard", "seed"):
        frames, rewards = trajectory(0, 7, profile)
        same_frames, same_rewards = trajectory(12345, 7, profile)
        np.testing.assert_array_equal(frames, same_frames)
        assert rewards == same_rewards and any(rewards), "the comparison covered scored points"
        other_frames, _ = trajectory(0, 8, profile)
        assert not np.array_equal(frames, other_frames)


def test_sticky_actions_make_the_emulator_draw_and_the_seed_fixes_the_draws():
    # `--sticky-actions P`: each frame repeats the previous action with probability P, drawn by the
    # emulator from its own seed. The same start then gives other games under other seeds (what
    # makes it a held-out test of a policy tuned to the deterministic protocol), and the same seed
    # the same game again. P = 0 keeps the protocol exact.
    from pongrl.evaluation import play_games

    def act(obs):  # a policy that reacts to what it sees, so that a repeated action changes the game
        return obs.reshape(len(obs), -1).sum(axis=1, dtype=np.int64) % 6

    def games(seed, sticky, profile):
        played = play_games(act, 2, seed, profile, starts=[5, 5], sticky_actions=sticky)
        return [(game["points_won"], game["points_lost"], game["length"]) for game in played]

    for profile in ("standard", "seed"):  # two emulators, seeded 0 and 1 (and 1 and 2)
        exact = games(0, 0.0, profile)
        assert exact[0] == exact[1], "no sticky actions: the start fixes the game"
        sticky = games(0, 0.25, profile)
        assert sticky == games(0, 0.25, profile), "the same seed draws the same repeats"
        assert sticky[0] != sticky[1] and exact[0] not in sticky, "the repeats change the games"
        assert games(1, 0.25, profile)[0] == sticky[1]
    # The C++ vector env (random starts drawn from the seed) takes the same probability.
    vector = [play_games(act, 1, 3, "standard", sticky_actions=p)[0]["length"] for p in (0.0, 0.25, 0.25)]
    assert vector[1] == vector[2] != vector[0]
    with pytest.raises(PongrlError, match="sticky-action probability"):
        play_games(act, 1, 0, sticky_actions=1.0)


def test_a_reseeded_emulator_keeps_its_sticky_actions_and_replays_its_stream():
    # What an intervention's common random numbers rest on: reseeding reloads the cartridge, sticky actions stay on.
    game = PongGame(0, sticky_actions=0.25)

    def rams(emulator_seed):
        game.seed_emulator(emulator_seed)
        game.reset(0)
        seen = []
        for step in range(400):
            game.step((2, 3)[(step // 7) % 2])  # up and down in turns: a sticky repeat shows on the paddle
            seen.append(game.ale.getRAM().copy())
        return np.array(seen)

    first = rams(1)
    assert (rams(2) != first).any()
    np.testing.assert_array_equal(rams(1), first)
