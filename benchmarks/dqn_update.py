"""Where a DQN gradient step spends its time on this machine, and what the optimizer variants cost.

    python benchmarks/dqn_update.py [--batch-size 32] [--steps 50] [--prioritized-replay]

Prints milliseconds per phase of one gradient step of the default preset (double DQN, batch from a
real FrameReplayBuffer or the prioritized one with its priority updates, and the write of one vector
step), then the time of one Adam step for torch's optimizer implementations.
"""

import argparse
import time

import numpy as np
import torch

from pongrl.algos.dqn import DQNState, _to_device, td_loss, td_targets
from pongrl.config import make_config
from pongrl.nets import QNetwork


def phases(args) -> None:
    config = make_config(
        "dqn",
        "default",
        dict(buffer_size=args.buffer_size, batch_size=args.batch_size, prioritized_replay=args.prioritized_replay),
    )
    state = DQNState(config, torch.device("cpu"))
    rng = np.random.default_rng(0)
    for _ in range(args.buffer_size // 4 + 100):
        obs = rng.integers(0, 256, (4, 4, 84, 84), dtype=np.uint8)
        state.buffer.add(obs, rng.integers(0, 6, 4), np.zeros(4), np.zeros(4, bool), np.zeros(4, bool))
    totals: dict[str, float] = {}

    def lap(name, started):
        now = time.perf_counter()
        totals[name] = totals.get(name, 0.0) + now - started
        return now

    for step in range(args.steps + 10):
        if step == 10:
            totals.clear()  # warm-up excluded
        # One vector step written per gradient step, as in training (the observation is drawn untimed).
        obs = rng.integers(0, 256, (4, 4, 84, 84), dtype=np.uint8)
        t = time.perf_counter()
        state.buffer.add(obs, rng.integers(0, 6, 4), np.zeros(4), np.zeros(4, bool), np.zeros(4, bool))
        t = lap("write one vector step", t)
        batch = state.buffer.sample(config.batch_size, state.rng)
        t = lap("sample from replay", t)
        obs, next_obs = _to_device(batch["obs"], "cpu"), _to_device(batch["next_obs"], "cpu")
        actions = torch.from_numpy(batch["actions"])
        t = lap("to tensors (channels_last)", t)
        with torch.no_grad():
            next_q_target = state.target_network(next_obs)
            t = lap("target forward", t)
            next_q_online = state.q_network(next_obs)
            t = lap("online forward on next obs", t)
            targets = td_targets(
                torch.from_numpy(batch["returns"]), torch.from_numpy(batch["discounts"]), next_q_target, next_q_online
            )
        q_taken = state.q_network(obs).gather(1, actions[:, None]).squeeze(1)
        t = lap("online forward", t)
        loss = td_loss(q_taken, targets, "huber")
        state.optimizer.zero_grad()
        loss.backward()
        t = lap("backward", t)
        state.optimizer.step()
        t = lap("optimizer step", t)
        if args.prioritized_replay:
            state.buffer.update_priorities(batch["env"], batch["slot"], (targets - q_taken.detach()).numpy())
            lap("update priorities", t)
    print(f"gradient step, batch {config.batch_size}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name, seconds in totals.items():
        print(f"  {name:28s} {seconds / args.steps * 1e3:6.2f} ms")
    print(f"  {'total':28s} {sum(totals.values()) / args.steps * 1e3:6.2f} ms")


def optimizers(args) -> None:
    print("one Adam step on the Q-network (1.69 M parameters)")
    for options in (dict(foreach=False), dict(foreach=True), dict(fused=True)):
        network = QNetwork(6)
        optimizer = torch.optim.Adam(network.parameters(), lr=1e-4, **options)
        for parameter in network.parameters():
            parameter.grad = torch.randn_like(parameter)
        for _ in range(5):
            optimizer.step()
        started = time.perf_counter()
        for _ in range(args.steps):
            optimizer.step()
        print(f"  {str(options):28s} {(time.perf_counter() - started) / args.steps * 1e3:6.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--buffer-size", type=int, default=20_000)
    parser.add_argument("--prioritized-replay", action="store_true")
    parser.add_argument("--steps", type=int, default=50)
    arguments = parser.parse_args()
    phases(arguments)
    optimizers(arguments)
