"""How close PPO's update runs to what PyTorch can do with the same network on these cores.

    python benchmarks/network.py [--minibatch 256] [--seconds 10] [--repeats 3] [--compile]

Times one PPO minibatch step (forward of the shared-torso Nature CNN on uint8 frames, the clipped losses,
backward, global grad-norm clip, Adam step) exactly as `pongrl.algos.ppo.ppo_update` runs it, then the same
step in other layouts and settings (NCHW input, torch's default Adam, 1 thread, the bfloat16 torso of
`--precision bfloat16`, torch.compile), the seed's separate actor and critic torsos and the small network for
scale, and a large float32 matrix product as the cores' practical ceiling. FLOPs are counted by torch's
FlopCounterMode on the real step. Prints samples/s and GFLOP/s per variant, pongrl's fraction of the best
shared-torso variant, and that variant's fraction of the ceiling.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from pongrl.algos.ppo import ppo_losses
from pongrl.config import make_config
from pongrl.learner import make_adam
from pongrl.nets import ActorCritic


def make_batch(size: int, generator: torch.Generator) -> dict:
    return {
        "obs": torch.randint(0, 256, (size, 84, 84, 4), dtype=torch.uint8, generator=generator),
        "actions": torch.randint(0, 6, (size,), generator=generator),
        "logprobs": torch.full((size,), -1.79),
        "advantages": torch.randn(size, generator=generator),
        "returns": torch.randn(size, generator=generator),
        "values": torch.randn(size, generator=generator),
    }


def make_step(agent, optimizer, config, nchw: bool):
    """One minibatch step as ppo_update does it (advantages already normalised here: same cost)."""

    def step(batch: dict) -> None:
        obs = batch["obs"]
        if nchw:  # what a plain port does: an NCHW float copy of the frames before the network
            obs = obs.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)
        logits, new_value = agent(obs)
        distribution = torch.distributions.Categorical(logits=logits)
        losses = ppo_losses(
            distribution.log_prob(batch["actions"]),
            batch["logprobs"],
            batch["advantages"],
            new_value,
            batch["values"],
            batch["returns"],
            distribution.entropy(),
            config,
        )
        optimizer.zero_grad(set_to_none=True)
        losses["loss"].backward()
        torch.nn.utils.clip_grad_norm_(agent.parameters(), config.max_grad_norm)
        optimizer.step()
        losses["loss"].item()  # ppo_update reads every statistic back, which waits for the step

    return step


def count_flops(step, batch: dict) -> float:
    with FlopCounterMode(display=False) as counter:
        step(batch)
    return float(counter.get_total_flops())


def time_step(step, batch: dict, seconds: float) -> float:
    """Samples per second over at least `seconds`, after 3 warm-up steps."""
    for _ in range(3):
        step(batch)
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds or done < 5:
        step(batch)
        done += 1
    return done * batch["obs"].shape[0] / (time.perf_counter() - started)


def matmul_ceiling(seconds: float) -> float:
    """GFLOP/s of a 2048 x 2048 float32 matrix product: about the most these cores do in PyTorch."""
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    for _ in range(3):
        a @ b
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        a @ b
        done += 1
    return done * 2 * 2048**3 / (time.perf_counter() - started) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minibatch", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=10.0, help="timed seconds per variant and round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds over all variants; medians are shown")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile(agent) (compiles first)")
    args = parser.parse_args()

    threads = torch.get_num_threads()
    config = make_config("ppo", "zoo", {})
    batch = make_batch(args.minibatch, torch.Generator().manual_seed(0))
    variants = [
        ("pongrl (channels_last view, fused Adam)", dict(nchw=False, fused=True, threads=threads)),
        ("NCHW input copy, fused Adam", dict(nchw=True, fused=True, threads=threads)),
        ("channels_last view, torch's default Adam", dict(nchw=False, fused=False, threads=threads)),
        ("pongrl, 1 thread", dict(nchw=False, fused=True, threads=1)),
        (
            "pongrl --precision bfloat16 (bf16 torso)",
            dict(nchw=False, fused=True, threads=threads, precision="bfloat16"),
        ),
        (
            "separate torsos (the seed's network), as pongrl",
            dict(nchw=False, fused=True, threads=threads, separate=True),
        ),
        ("--network small (Mnih et al. 2013), as pongrl", dict(nchw=False, fused=True, threads=threads, small=True)),
    ]
    if args.compile:
        variants.append(("pongrl + torch.compile(agent)", dict(nchw=False, fused=True, threads=threads, compile=True)))

    print(
        f"PPO minibatch step, minibatch {args.minibatch}, torch {torch.__version__}, {platform.machine()}, "
        f"{threads} threads, medians of {args.repeats} interleaved rounds of {args.seconds:g} s"
    )
    steps, flops = {}, {}
    for name, options in variants:
        torch.set_num_threads(options["threads"])
        torch.manual_seed(0)
        agent = ActorCritic(
            6,
            share_network=not options.get("separate"),
            network="small" if options.get("small") else "nature",
            precision=options.get("precision", "float32"),
        )
        optimizer = (
            make_adam(agent.parameters(), 2.5e-4, 1e-5)
            if options["fused"]
            else torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
        )
        if options.get("compile"):
            started = time.perf_counter()
            agent = torch.compile(agent)
            make_step(agent, optimizer, config, False)(batch)
            print(f"  (compile took {time.perf_counter() - started:.0f} s)")
        steps[name] = make_step(agent, optimizer, config, options["nchw"])
        flops[name] = count_flops(steps[name], batch) / args.minibatch
    rates: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.repeats):  # interleaved, so drift on the machine hits every variant alike
        for name, options in variants:
            torch.set_num_threads(options["threads"])
            rates[name].append(time_step(steps[name], batch, args.seconds))
    torch.set_num_threads(threads)
    median = {name: statistics.median(values) for name, values in rates.items()}
    for name, _ in variants:
        print(
            f"  {name:50s} {median[name]:8.1f} samples/s  {median[name] * flops[name] / 1e9:6.1f} GFLOP/s  "
            f"({flops[name] / 1e6:.1f} MFLOP per sample; runs {', '.join(f'{r:.0f}' for r in rates[name])})"
        )
    ceiling = matmul_ceiling(args.seconds)
    # the best of the variants that do the same arithmetic as pongrl's (the same network, in float32)
    shared = {
        name: rate
        for name, rate in median.items()
        if not any(dict(variants)[name].get(key) for key in ("separate", "small", "precision"))
    }
    best_name = max(shared, key=shared.get)
    print(f"  {'float32 matmul 2048^3 (ceiling)':50s} {'':8s}             {ceiling:6.1f} GFLOP/s")
    print(f"pongrl / best shared-torso variant ({best_name}): {median[variants[0][0]] / shared[best_name]:.2f}")
    print(f"best shared-torso variant / matmul ceiling: {shared[best_name] * flops[best_name] / 1e9 / ceiling:.2f}")


if __name__ == "__main__":
    main()
