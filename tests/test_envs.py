"""The single-player env: the Python emulator loop sees exactly what the C++ vector env sees."""
import numpy as np

from ale_py.vector_env import AtariVectorEnv

from pongrl.envs import PongGame


def test_python_game_matches_the_vector_env_frame_for_frame():
    # Without no-op starts both emulators follow the same actions from the same power-on state.
    vector = AtariVectorEnv("pong", 1, noop_max=0, reward_clipping=False, use_fire_reset=False,
                            repeat_action_probability=0.0, autoreset_mode="SameStep")
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
