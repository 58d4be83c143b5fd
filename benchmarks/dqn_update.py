"""Where a DQN gradient step spends its time on this machine, and what the optimizer variants and the heads cost.

    python benchmarks/dqn_update.py [--batch-size 32] [--steps 50] [--prioritized-replay] [--torch-threads N]
    python benchmarks/dqn_update.py --heads [--steps 50] [--repeats 5] [--torch-threads 1]

Prints milliseconds per phase of one gradient step of the default preset (double DQN, batch from a
real FrameReplayBuffer or the prioritized one with its priority updates, and the write of one vector
step), then the time of one Adam step for torch's optimizer implementations. With `--heads`, instead:
gradient steps/s and samples/s of the whole training step (`pongrl.algos.dqn._gradient_step`, replay
sampling included) for the expected-value head and each dueling and distributional head, the median of
`--repeats` timings of `--steps` steps each, the variants taking turns so that a load on the machine
falls on all of them.
"""

import argparse
import platform
import statistics
import time

import numpy as np
import torch

from pongrl.algos.dqn import DQNState, _gradient_step, _to_device, td_loss, td_targets
from pongrl.config import make_config
from pongrl.nets import QNetwork

# name: settings of `pongrl train dqn` beside the default preset's
HEADS = {
    "default (expected Q)": {},
    "--dueling": dict(dueling=True),
    "--distributional c51": dict(distributional="c51"),
    "--distributional qr": dict(distributional="qr"),
    "--distributional qr --quantiles 51": dict(distributional="qr", quantiles=51),
    "--dueling --distributional c51 --prioritized-replay": dict(
        dueling=True, distributional="c51", prioritized_replay=True
    ),
}


def filled_state(args, **settings) -> DQNState:
    """A learner of the default preset with `settings`, its replay buffer filled with random frames."""
    config = make_config("dqn", "default", dict(buffer_size=args.buffer_size, batch_size=args.batch_size, **settings))
    state = DQNState(config, torch.device("cpu"))
    rng = np.random.default_rng(0)
    for _ in range(args.buffer_size // 4 + 100):
        obs = rng.integers(0, 256, (4, 4, 84, 84), dtype=np.uint8)
        state.buffer.add(
            obs, rng.integers(0, 6, 4), rng.choice([-1.0, 0.0, 1.0], 4), np.zeros(4, bool), np.zeros(4, bool)
        )
    return state


def phases(args) -> None:
    state = filled_state(args, prioritized_replay=args.prioritized_replay)
    config, rng = state.config, np.random.default_rng(0)
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


def heads(args) -> None:
    states = {name: filled_state(args, **settings) for name, settings in HEADS.items()}
    rates: dict[str, list[float]] = {name: [] for name in HEADS}

    def step(state) -> None:
        _gradient_step(
            state.config, state.buffer, state.rng, state.q_network, state.target_network, state.optimizer, "cpu"
        )

    for state in states.values():  # warm-up
        for _ in range(5):
            step(state)
    for _ in range(args.repeats):
        for name, state in states.items():
            started = time.perf_counter()
            for _ in range(args.steps):
                step(state)
            rates[name].append(args.steps / (time.perf_counter() - started))
    print(
        f"DQN gradient step by head: batch {args.batch_size}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread(s), {platform.processor() or platform.machine()}; "
        f"median of {args.repeats} x {args.steps} steps"
    )
    baseline = statistics.median(rates["default (expected Q)"])
    print(f"  {'settings':54s} {'steps/s':>8s} {'samples/s':>10s} {'vs default':>10s}")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"  {name:54s} {median:8.2f} {median * args.batch_size:10.0f} {median / baseline:10.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--buffer-size", type=int, default=20_000)
    parser.add_argument("--prioritized-replay", action="store_true")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--heads", action="store_true", help="time the whole gradient step of each head instead")
    parser.add_argument("--repeats", type=int, default=5, help="--heads: timings per head (the median is shown)")
    parser.add_argument("--torch-threads", type=int, default=0, help="torch intra-op threads (0 = torch's default)")
    arguments = parser.parse_args()
    if arguments.torch_threads:
        torch.set_num_threads(arguments.torch_threads)
    if arguments.heads:
        heads(arguments)
    else:
        phases(arguments)
        optimizers(arguments)
