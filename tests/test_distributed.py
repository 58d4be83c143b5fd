"""Data-parallel PPO on torch.distributed (gloo, 2 CPU processes): ranks stay identical, and a
2-rank update on batches A and B equals a 1-process update on A + B."""

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from pongrl.algos.ppo import ppo_update
from pongrl.checkpoint import load_checkpoint
from pongrl.distributed import World
from pongrl.learner import make_adam
from pongrl.nets import ActorCritic

CONFIG = SimpleNamespace(
    update_epochs=1,
    num_minibatches=1,
    norm_adv=True,
    clip_coef=0.1,
    clip_vloss=True,
    ent_coef=0.01,
    vf_coef=0.5,
    max_grad_norm=0.5,
    target_kl=0.0,
)
PER_RANK = 12
UPDATES = 3


def make_batch(seed: int, size: int) -> dict:
    generator = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.randint(0, 256, (size, 84, 84, 4), dtype=torch.uint8, generator=generator),
        "actions": torch.randint(0, 6, (size,), generator=generator),
        "logprobs": -torch.rand(size, generator=generator) * 2,
        "advantages": torch.randn(size, generator=generator),
        "returns": torch.randn(size, generator=generator),
        "values": torch.randn(size, generator=generator),
    }


def union(a: dict, b: dict) -> dict:
    return {key: torch.cat([a[key], b[key]]) for key in a}


def fresh_agent():
    torch.manual_seed(0)
    agent = ActorCritic(6, share_network=True)
    return agent, make_adam(agent.parameters(), 2.5e-4, 1e-5)


def _rank_main(rank: int, world_size: int, init_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    world = World(rank, world_size)
    agent, optimizer = fresh_agent()
    if rank:  # a different start on purpose: the broadcast must fix it
        with torch.no_grad():
            for parameter in agent.parameters():
                parameter.add_(1.0)
    world.broadcast_module(agent)
    identical = []
    for update in range(UPDATES):
        ppo_update(
            agent,
            optimizer,
            make_batch(100 * update + rank, PER_RANK),
            CONFIG,
            torch.Generator().manual_seed(rank),
            world,
        )
        flat = torch.cat([p.detach().reshape(-1) for p in agent.parameters()])
        gathered = [torch.zeros_like(flat) for _ in range(world_size)]
        dist.all_gather(gathered, flat)
        identical.append(all(torch.equal(gathered[0], other) for other in gathered))
        if update == 0 and rank == 0:
            torch.save({k: v.clone() for k, v in agent.state_dict().items()}, os.path.join(out_dir, "after_first.pt"))
    torch.save(identical, os.path.join(out_dir, f"identical_{rank}.pt"))
    world.close()  # a barrier, then the group torn down


def test_two_ranks_stay_identical_and_equal_one_process_on_the_union(tmp_path):
    mp.spawn(_rank_main, args=(2, str(tmp_path / "rendezvous"), str(tmp_path)), nprocs=2, join=True)
    for rank in range(2):
        assert torch.load(tmp_path / f"identical_{rank}.pt") == [True] * UPDATES
    two_ranks = torch.load(tmp_path / "after_first.pt", weights_only=True)
    agent, optimizer = fresh_agent()
    ppo_update(
        agent,
        optimizer,
        union(make_batch(0, PER_RANK), make_batch(1, PER_RANK)),
        CONFIG,
        torch.Generator().manual_seed(0),
    )
    one_process = agent.state_dict()
    moved = max((one_process[k] - fresh_agent()[0].state_dict()[k]).abs().max().item() for k in one_process)
    assert moved > 1e-6  # the update changed the weights, so agreeing below is not trivial
    # Summation order differs between the ranks' and the single process's arithmetic; Adam's first step moves a
    # weight by up to the learning rate (2.5e-4) and can amplify a tiny gradient difference where the gradient is
    # near zero (seen once: 1.2e-6 on 1 of 1.6M weights), so agreement is asked to 4% of one step.
    for key in one_process:
        torch.testing.assert_close(two_ranks[key], one_process[key], rtol=1e-5, atol=1e-5)
    # Each rank alone would have moved elsewhere: the gradients really were averaged.
    alone, alone_optimizer = fresh_agent()
    ppo_update(alone, alone_optimizer, make_batch(0, PER_RANK), CONFIG, torch.Generator().manual_seed(0))
    assert any(not torch.allclose(alone.state_dict()[k], two_ranks[k], rtol=1e-5, atol=1e-5) for k in two_ranks)


def test_torchrun_trains_and_a_single_process_resumes(tmp_path):
    run_dir = str(tmp_path / "ddp")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "pongrl"]
    result = subprocess.run(
        [
            *torchrun,
            "train",
            "ppo",
            "--run-dir",
            run_dir,
            "--total-steps",
            "512",
            "--num-envs",
            "2",
            "--num-steps",
            "128",
            "--log-every",
            "256",
            "--eval-every",
            "0",
            "--checkpoint-every",
            "256",
            "--torch-threads",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert load_checkpoint(run_dir)["env_step"] == 512  # steps count every process's envs
    result = subprocess.run(
        [sys.executable, "-m", "pongrl", "resume", run_dir, "--extra-steps", "256"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert load_checkpoint(run_dir)["env_step"] == 768


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "dqn", "--run-dir", "x"], "DQN has no data-parallel mode"),
        (["train", "ppo"], "give --run-dir"),
        (["train", "ppo", "--run-dir", "{tmp}/odd", "--num-envs", "3"], "does not split evenly"),
    ],
)
def test_bad_distributed_input_is_refused(args, message, tmp_path, monkeypatch, capsys):
    from cli_helpers import run

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setattr("pongrl.distributed.dist.init_process_group", lambda backend: None)
    monkeypatch.setattr("pongrl.distributed.dist.get_rank", lambda: 0)
    monkeypatch.setattr("pongrl.distributed.dist.get_world_size", lambda: 2)
    code, _, err = run([a.replace("{tmp}", str(tmp_path)) for a in args], capsys)
    assert code == 1 and message in err
