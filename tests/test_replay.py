"""The frame replay buffer: stacks never cross an episode start, wrap-around, n-step returns."""
import numpy as np
import pytest

from pongrl.replay import FrameReplayBuffer


def frame(value: int) -> np.ndarray:
    return np.full((84, 84), value % 251 + 1, np.uint8)  # never 0, so zero padding is visible


def obs_of(values) -> np.ndarray:
    """A stack whose newest frame encodes `value` (older slots are irrelevant to the buffer)."""
    return np.stack([np.stack([frame(0)] * 3 + [frame(v)]) for v in values])


def feed(buffer, episode_lengths, num_envs=1, terminate=True):
    """Play scripted episodes; frame k of the global stream of env 0 encodes k. Returns the values
    of each episode's frames (first obs ... final obs)."""
    value, episodes = 0, []
    for length in episode_lengths:
        values = list(range(value, value + length + 1))
        for t in range(length):
            ended = t == length - 1
            buffer.add(obs_of([values[t]] * num_envs), np.full(num_envs, t % 6), np.full(num_envs, 1.0 if ended else 0.0),
                       np.full(num_envs, ended and terminate), np.full(num_envs, ended and not terminate),
                       obs_of([values[t + 1]] * num_envs) if ended else None)
        episodes.append(values)
        value += length + 1
    return episodes


def decode(stack: np.ndarray) -> list:
    return [None if f[0, 0] == 0 else int(f[0, 0]) - 1 for f in stack]


def test_stacks_never_cross_an_episode_start():
    buffer = FrameReplayBuffer(capacity=200, num_envs=1, n_step=1)
    episodes = feed(buffer, [3, 7, 2, 9, 5])
    episode_of = {v % 251: i for i, values in enumerate(episodes) for v in values}
    batch = buffer.sample(500, np.random.default_rng(0))
    for obs, next_obs in zip(batch["obs"], batch["next_obs"]):
        for stack in (obs, next_obs):
            values = decode(stack)
            present = [v for v in values if v is not None]
            assert present, "the newest frame is always present"
            assert values[: len(values) - len(present)] == [None] * (len(values) - len(present)), "padding only before"
            assert len({episode_of[v] for v in present}) == 1, f"stack {values} crosses an episode start"
            assert present == list(range(present[0], present[0] + len(present))), "frames are consecutive"
        # the next observation is the step after the observation
        assert decode(next_obs)[-1] == decode(obs)[-1] + 1


def test_contents_after_wrap_around():
    buffer = FrameReplayBuffer(capacity=20, num_envs=1, n_step=1)
    episodes = feed(buffer, [6, 6, 6, 6, 6])  # 35 slots into a ring of 20
    assert len(buffer) == 20
    newest = [v for values in episodes for v in values][-20:]
    stored = [int(buffer.frames[0, (buffer.next_slot[0] + k) % 20, 0, 0]) - 1 for k in range(20)]
    assert stored == newest
    batch = buffer.sample(300, np.random.default_rng(1))
    oldest_kept = newest[0]
    for obs in batch["obs"]:
        values = [v for v in decode(obs) if v is not None]
        assert min(values) >= oldest_kept, "a sampled stack uses an overwritten frame"


def test_terminal_and_n_step_returns():
    gamma = 0.5
    buffer = FrameReplayBuffer(capacity=100, num_envs=1, n_step=3, gamma=gamma)
    feed(buffer, [5, 5])  # reward 1 on the last step of each game, then terminal
    batch = buffer.sample(400, np.random.default_rng(2))
    for obs, ret, disc, next_obs in zip(batch["obs"], batch["returns"], batch["discounts"], batch["next_obs"]):
        t = decode(obs)[-1] % 6  # step index inside its game (games are 6 slots: 5 steps + final)
        steps_left = 5 - t
        if steps_left <= 3:  # the game ends within the 3 steps: no bootstrap, discounted reward
            assert disc == 0
            assert ret == pytest.approx(gamma ** (steps_left - 1))
        else:
            assert disc == pytest.approx(gamma**3)
            assert ret == 0
            assert decode(next_obs)[-1] == decode(obs)[-1] + 3


def test_truncation_bootstraps_from_the_final_observation():
    buffer = FrameReplayBuffer(capacity=100, num_envs=1, n_step=3, gamma=0.5)
    feed(buffer, [4, 4], terminate=False)
    batch = buffer.sample(300, np.random.default_rng(3))
    for obs, disc, next_obs in zip(batch["obs"], batch["discounts"], batch["next_obs"]):
        t = decode(obs)[-1] % 5
        steps = min(3, 4 - t)
        assert disc == pytest.approx(0.5**steps)
        assert decode(next_obs)[-1] == decode(obs)[-1] + steps


def test_close_episodes_turns_an_abandoned_game_into_a_truncation():
    buffer = FrameReplayBuffer(capacity=100, num_envs=2, n_step=1)
    for t in range(5):
        buffer.add(obs_of([t, 100 + t]), np.zeros(2), np.zeros(2), np.zeros(2, bool), np.zeros(2, bool))
    buffer.close_episodes()
    batch = buffer.sample(200, np.random.default_rng(4))
    newest = {4, 104}
    assert not newest & {decode(o)[-1] for o in batch["obs"]}, "the abandoned observation is not a transition"
    assert newest <= {decode(o)[-1] for o in batch["next_obs"]}, "it still serves as a next observation"
    assert (batch["discounts"] > 0).all()


def test_rings_keep_environments_apart():
    buffer = FrameReplayBuffer(capacity=40, num_envs=2, n_step=1)
    for t in range(12):
        buffer.add(obs_of([t, 200 + t]), np.zeros(2), np.zeros(2), np.zeros(2, bool), np.zeros(2, bool))
    batch = buffer.sample(200, np.random.default_rng(5))
    for obs in batch["obs"]:
        values = [v for v in decode(obs) if v is not None]
        assert all(v < 200 for v in values) or all(v >= 200 for v in values)


def test_save_and_load_round_trip(tmp_path):
    buffer = FrameReplayBuffer(capacity=30, num_envs=2, n_step=3)
    for t in range(40):
        buffer.add(obs_of([t, 50 + t]), np.full(2, t % 6), np.full(2, 1.0), np.array([t % 9 == 8, False]),
                   np.zeros(2, bool), obs_of([t + 1, 0]))
    buffer.save(str(tmp_path / "replay.npz"))
    copy = FrameReplayBuffer(capacity=30, num_envs=2, n_step=3)
    copy.load(str(tmp_path / "replay.npz"))
    for name, array in buffer.state().items():
        np.testing.assert_array_equal(array, copy.state()[name])


def test_a_full_100k_buffer_stays_under_the_memory_budget():
    buffer = FrameReplayBuffer(capacity=100_000, num_envs=4, n_step=3)
    assert buffer.nbytes() < 0.8e9
