"""Checkpoints: every piece of state survives the round trip; damaged or foreign files are refused."""

import os
import pickle
import zipfile

import numpy as np
import pytest
import torch

from pongrl.algos.dqn import DQNState, _gradient_step
from pongrl.checkpoint import list_checkpoints, load_checkpoint, read_latest, save_checkpoint
from pongrl.config import make_config
from pongrl.errors import PongrlError


def assert_same(a, b, where="payload"):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert set(a) == set(b), f"{where}: keys differ"
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def trained_state(tmp_path, **settings):
    """A DQN learner state after three gradient steps on planted transitions; `settings` change its config."""
    config = make_config(
        "dqn", "default", dict(buffer_size=400, num_envs=2, batch_size=4, learning_starts=0, **settings)
    )
    state = DQNState(config, torch.device("cpu"))
    rng = np.random.default_rng(0)
    for t in range(60):
        obs = rng.integers(0, 255, (2, 4, 84, 84), dtype=np.uint8)
        state.buffer.add(
            obs,
            rng.integers(0, 6, 2),
            rng.choice([-1.0, 0.0, 1.0], 2),
            np.array([t % 20 == 19, False]),
            np.zeros(2, bool),
            obs,
        )
    for _ in range(3):  # gives the optimizer real moments
        _gradient_step(
            config, state.buffer, state.rng, state.q_network, state.target_network, state.optimizer, torch.device("cpu")
        )
    state.counters.update(env_step=120, grad_steps=3, episodes=5, train_credit=2, wall_seconds=12.5)
    state.recent_returns.extend([-21.0, -19.0])
    state.recent_lengths.extend([800, 900])
    return config, state


# Each Q-network head, and Rainbow's combination with prioritized replay (whose priorities are the buffer's state).
HEADS = {
    "expected": {},
    "dueling": dict(dueling=True),
    "c51": dict(distributional="c51"),
    "qr": dict(distributional="qr", quantiles=16),
    "dueling-c51-prioritized": dict(dueling=True, distributional="c51", prioritized_replay=True),
}


@pytest.mark.parametrize("head", HEADS.values(), ids=HEADS.keys())
def test_round_trip_restores_every_piece_of_state(tmp_path, head):
    config, state = trained_state(tmp_path, **head)
    payload = state.payload()
    payload["replay_buffer"] = "replay.npz"
    state.buffer.save(str(tmp_path / "replay.npz"))
    path = save_checkpoint(str(tmp_path), payload, keep=3)

    fresh = DQNState(config, torch.device("cpu"))
    fresh.restore(load_checkpoint(path))
    restored = fresh.payload()
    restored["replay_buffer"] = "replay.npz"
    assert_same(payload, restored)
    for name, array in state.buffer.state().items():
        np.testing.assert_array_equal(array, fresh.buffer.state()[name], err_msg=name)
    # the generators continue with the same numbers
    assert state.rng.random() == fresh.rng.random()
    # and the optimizer takes the same next step
    torch.manual_seed(5)
    loss_a = _gradient_step(
        config,
        state.buffer,
        np.random.default_rng(9),
        state.q_network,
        state.target_network,
        state.optimizer,
        torch.device("cpu"),
    )
    loss_b = _gradient_step(
        config,
        fresh.buffer,
        np.random.default_rng(9),
        fresh.q_network,
        fresh.target_network,
        fresh.optimizer,
        torch.device("cpu"),
    )
    assert loss_a == loss_b
    for a, b in zip(state.q_network.parameters(), fresh.q_network.parameters()):
        assert torch.equal(a, b)


def test_rotation_keeps_the_newest_and_points_latest_at_them(tmp_path):
    for step in (100, 200, 300, 400):
        save_checkpoint(str(tmp_path), {"env_step": step, "algo": "dqn"}, keep=2)
    assert list_checkpoints(str(tmp_path)) == ["step_000000000300", "step_000000000400"]
    assert read_latest(str(tmp_path)) == "step_000000000400"
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp")]


def saved(tmp_path):
    return save_checkpoint(str(tmp_path), {"env_step": 5, "algo": "dqn", "weights": torch.ones(1000)}, keep=3)


def test_truncated_checkpoint_is_refused(tmp_path):
    path = saved(tmp_path)
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    with pytest.raises(PongrlError, match="checksum mismatch"):
        load_checkpoint(path)
    os.unlink(path[:-3] + ".json")  # without its manifest the damage is still caught
    with pytest.raises(PongrlError, match="not a readable pongrl checkpoint"):
        load_checkpoint(path)


def test_flipped_bytes_are_refused(tmp_path):
    path = saved(tmp_path)
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(PongrlError, match="checksum mismatch"):
        load_checkpoint(path)


class WritesAFile:
    def __reduce__(self):
        return (open, ("/tmp/pongrl-payload-ran", "w"))


def test_pickled_code_is_never_run(tmp_path):
    marker = "/tmp/pongrl-payload-ran"
    if os.path.exists(marker):
        os.unlink(marker)
    path = tmp_path / "evil.pt"
    torch.save({"format": "pongrl-checkpoint", "payload": WritesAFile()}, str(path))
    with pytest.raises(PongrlError):
        load_checkpoint(str(path))
    raw = tmp_path / "evil.pkl"
    raw.write_bytes(pickle.dumps(WritesAFile()))
    with pytest.raises(PongrlError):
        load_checkpoint(str(raw))
    assert not os.path.exists(marker)


def test_foreign_files_are_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(PongrlError, match="not a readable pongrl checkpoint"):
        load_checkpoint(str(text))
    bare = tmp_path / "weights.pt"
    torch.save({"fc.weight": torch.zeros(2)}, str(bare))
    with pytest.raises(PongrlError, match="not a pongrl checkpoint"):
        load_checkpoint(str(bare))
    archive = tmp_path / "other.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("a.txt", "x")
    with pytest.raises(PongrlError):
        load_checkpoint(str(archive))
    with pytest.raises(PongrlError, match="no such file"):
        load_checkpoint(str(tmp_path / "missing.pt"))


@pytest.mark.parametrize("opponent_pool", [0.0, 1.0])
def test_ppo_round_trip_restores_every_piece_of_state(tmp_path, opponent_pool):
    from pongrl.algos.ppo import PPOState, ppo_update

    config = make_config(
        "selfplay",
        "default",
        dict(num_envs=2, num_steps=4, num_minibatches=2, opponent_pool=opponent_pool, pool_size=3),
    )
    state = PPOState(config, torch.device("cpu"))
    batch = {
        "obs": torch.randint(0, 256, (8, 84, 84, 4), dtype=torch.uint8),
        "actions": torch.randint(0, 6, (8,)),
        "logprobs": torch.full((8,), -1.79),
        "advantages": torch.randn(8),
        "returns": torch.randn(8),
        "values": torch.randn(8),
    }
    ppo_update(state.agent, state.optimizer, batch, config, state.torch_generator)
    state.counters.update(env_step=64, updates=1, episodes=2, collected=[32, 64])
    state.recent_returns.extend([3.0, -3.0])
    if opponent_pool:  # a second snapshot (the updated policy) and a drawn opponent
        state.opponent_pool.snapshot(state.agent)
        state.opponent_pool.games_ended(np.ones(1, bool))
    path = save_checkpoint(str(tmp_path), state.payload(), keep=3)
    fresh = PPOState(config, torch.device("cpu"))
    fresh.restore(load_checkpoint(path))
    assert_same(state.payload(), fresh.payload())
    assert torch.equal(
        torch.randperm(8, generator=state.torch_generator), torch.randperm(8, generator=fresh.torch_generator)
    )
    if opponent_pool:  # the same opponents, and the same next draw
        assert fresh.opponent_pool.filled == 2
        fresh.opponent_pool.games_ended(np.ones(1, bool))
        state.opponent_pool.games_ended(np.ones(1, bool))
        assert fresh.opponent_pool.opponent.tolist() == state.opponent_pool.opponent.tolist()
