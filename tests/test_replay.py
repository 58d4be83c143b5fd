"""The frame replay buffer: stacks never cross an episode start, wrap-around, n-step returns;
prioritized replay draws in proportion to priority and weighs the draw back."""

import numpy as np
import pytest

from pongrl.errors import PongrlError
from pongrl.replay import FrameReplayBuffer, PrioritizedReplayBuffer, SumTree


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
            buffer.add(
                obs_of([values[t]] * num_envs),
                np.full(num_envs, t % 6),
                np.full(num_envs, 1.0 if ended else 0.0),
                np.full(num_envs, ended and terminate),
                np.full(num_envs, ended and not terminate),
                obs_of([values[t + 1]] * num_envs) if ended else None,
            )
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
        buffer.add(
            obs_of([t, 50 + t]),
            np.full(2, t % 6),
            np.full(2, 1.0),
            np.array([t % 9 == 8, False]),
            np.zeros(2, bool),
            obs_of([t + 1, 0]),
        )
    buffer.save(str(tmp_path / "replay.npz"))
    copy = FrameReplayBuffer(capacity=30, num_envs=2, n_step=3)
    copy.load(str(tmp_path / "replay.npz"))
    for name, array in buffer.state().items():
        np.testing.assert_array_equal(array, copy.state()[name])


def test_a_full_100k_buffer_stays_under_the_memory_budget():
    buffer = FrameReplayBuffer(capacity=100_000, num_envs=4, n_step=3)
    assert buffer.nbytes() < 0.8e9


def test_sum_tree_finds_leaves_in_proportion_to_their_values():
    tree = SumTree(5)  # not a power of two: the padding leaves stay 0
    tree.set(np.array([0, 1, 2, 3, 4]), np.array([1.0, 0.0, 3.0, 0.5, 0.5]))
    assert tree.total() == pytest.approx(5.0)
    # cumulative: leaf 0 holds [0, 1), leaf 2 [1, 4), leaf 3 [4, 4.5), leaf 4 [4.5, 5); leaf 1 nothing
    assert tree.find(np.array([0.0, 0.99, 1.0, 3.99, 4.0, 4.6, 4.999])).tolist() == [0, 0, 2, 2, 3, 4, 4]
    tree.set(np.array([2]), np.array([0.0]))
    assert tree.total() == pytest.approx(2.0)
    assert tree.find(np.array([1.2])).tolist() == [3]
    copy = SumTree(5)
    copy.leaves()[...] = tree.leaves()
    copy.rebuild()
    np.testing.assert_array_equal(copy.nodes, tree.nodes)


def fill_prioritized(buffer, steps):
    for t in range(steps):
        ended = t % 10 == 9
        buffer.add(
            obs_of([t, 100 + t]),
            np.zeros(2),
            np.zeros(2),
            np.array([ended, False]),
            np.zeros(2, bool),
            obs_of([t + 1, 0]) if ended else None,
        )


def test_prioritized_replay_draws_by_priority_and_weights_it_back():
    buffer = PrioritizedReplayBuffer(capacity=200, num_envs=2, n_step=1, alpha=1.0, beta=1.0)
    fill_prioritized(buffer, 60)
    # final observations are never transitions, so they carry no priority
    assert (buffer.tree.leaves()[:100][buffer.final[0]] == 0).all()
    # new transitions start at the largest priority: all sampleable ones equally likely
    rng = np.random.default_rng(0)
    batch = buffer.sample(64, rng)
    np.testing.assert_allclose(batch["weights"], 1.0)
    # make one transition of env 1 ten times as likely as each other one
    buffer.update_priorities(np.array([1]), np.array([20]), np.array([-10.0]))
    others = np.array([(e, s) for e in range(2) for s in range(58) if (e, s) != (1, 20) and not buffer.final[e, s]])
    buffer.update_priorities(others[:, 0], others[:, 1], np.full(len(others), 1.0))
    counts = {}
    for _ in range(200):
        batch = buffer.sample(64, rng)
        for e, s, w in zip(batch["env"], batch["slot"], batch["weights"]):
            counts[(e, s)] = counts.get((e, s), 0) + 1
            if (e, s) == (1, 20):
                assert w == pytest.approx(0.1, rel=1e-3)  # (P / P_min)^-1 with P ten times the smallest
    share = counts[(1, 20)] / sum(counts.values())
    expected = 10 / (10 + len(others))
    assert abs(share - expected) < 0.25 * expected, (share, expected)
    assert buffer.max_priority[0] == pytest.approx(10.0 + 1e-6)


def test_prioritized_replay_round_trips_and_refuses_a_uniform_buffer(tmp_path):
    buffer = PrioritizedReplayBuffer(capacity=200, num_envs=2, n_step=3, alpha=0.5)
    fill_prioritized(buffer, 80)
    batch = buffer.sample(16, np.random.default_rng(1))
    buffer.update_priorities(batch["env"], batch["slot"], np.linspace(0.1, 5, 16))
    buffer.save(str(tmp_path / "replay.npz"))
    copy = PrioritizedReplayBuffer(capacity=200, num_envs=2, n_step=3, alpha=0.5)
    copy.load(str(tmp_path / "replay.npz"))
    np.testing.assert_array_equal(copy.tree.nodes, buffer.tree.nodes)
    assert copy.max_priority[0] == buffer.max_priority[0]
    a, b = buffer.sample(16, np.random.default_rng(2)), copy.sample(16, np.random.default_rng(2))
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    uniform = FrameReplayBuffer(capacity=200, num_envs=2, n_step=3)
    fill_prioritized(uniform, 10)
    uniform.save(str(tmp_path / "uniform.npz"))
    with pytest.raises(PongrlError, match="no priorities"):
        copy.load(str(tmp_path / "uniform.npz"))
    damaged = buffer.state()
    damaged["priorities"] = damaged["priorities"].copy()
    damaged["priorities"][3] = np.nan
    np.savez(tmp_path / "damaged.npz", **damaged)
    with pytest.raises(PongrlError, match="damaged priorities"):
        copy.load(str(tmp_path / "damaged.npz"))
    damaged = buffer.state()
    damaged["max_priority"] = np.zeros(1)  # new transitions would enter at priority 0 and never be drawn
    np.savez(tmp_path / "damaged_max.npz", **damaged)
    with pytest.raises(PongrlError, match="damaged priorities"):
        copy.load(str(tmp_path / "damaged_max.npz"))


def test_closing_episodes_takes_the_abandoned_observation_out_of_the_draw():
    buffer = PrioritizedReplayBuffer(capacity=100, num_envs=2, n_step=1)
    for t in range(5):
        buffer.add(obs_of([t, 100 + t]), np.zeros(2), np.zeros(2), np.zeros(2, bool), np.zeros(2, bool))
    assert buffer.tree.leaves()[4] > 0
    buffer.close_episodes()
    assert buffer.tree.leaves()[4] == 0 and buffer.tree.leaves()[50 + 4] == 0


def test_a_large_buffer_with_few_transitions_samples_them():
    # 120 transitions in 4 rings of 25,000 slots: drawing slots over whole rings would find under one in 800
    # sampleable and give up; drawn over the written slots, every draw succeeds.
    buffer = FrameReplayBuffer(100_000, num_envs=4, n_step=3)
    feed(buffer, [30], num_envs=4, terminate=False)
    for seed in range(20):
        batch = buffer.sample(32, np.random.default_rng(seed))
        assert len(batch["slot"]) == 32 and batch["slot"].max() < 30
