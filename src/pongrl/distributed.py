"""Data parallelism on PyTorch's own engine (torch.distributed, launched with `torchrun`).

A plain `pongrl train ...` is the world-size-1 case of the same code: every collective below is a
no-op then, so single-process training is unchanged bit for bit. Under torchrun each rank steps its
own share of the environments, all ranks start from rank 0's weights, and each minibatch's
gradients are averaged across ranks (one all-reduce of the flattened gradients) before the
gradient-norm clip, with advantages normalised over the union of the ranks' minibatches: an update
equals the single-process update on the union of the ranks' batches. Backend: gloo on CPU, nccl on
CUDA. Rank 0 alone writes logs, metrics, checkpoints and evaluations.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from pongrl.errors import PongrlError


@dataclass
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")  # where collectives' tensors live (the GPU with nccl)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.size > 1

    def broadcast_module(self, module: torch.nn.Module) -> None:
        """Give every rank rank 0's parameters and buffers."""
        if self.active:
            for tensor in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(tensor.data, src=0)

    def average_gradients(self, parameters) -> None:
        """Replace each gradient by its mean over the ranks, in one all-reduce."""
        if not self.active:
            return
        grads = [p.grad for p in parameters if p.grad is not None]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat /= self.size
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    def normalize(self, advantages: torch.Tensor) -> torch.Tensor:
        """(a - mean) / (std + 1e-8) with the mean and the unbiased std of all ranks' entries."""
        if not self.active:
            return (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        moments = torch.stack(
            [
                advantages.sum(),
                (advantages * advantages).sum(),
                torch.tensor(float(advantages.numel()), device=advantages.device),
            ]
        ).to(self.device)
        dist.all_reduce(moments)
        total, squares, count = moments.to(advantages.device)
        mean = total / count
        std = ((squares - count * mean * mean) / (count - 1)).clamp_min(0).sqrt()
        return (advantages - mean) / (std + 1e-8)

    def mean(self, value: float) -> float:
        """A Python number averaged over the ranks."""
        return self.means({"value": value})["value"]

    def means(self, values: dict[str, float]) -> dict[str, float]:
        """Python numbers averaged over the ranks, in one all-reduce (every rank passes the same keys)."""
        if not self.active:
            return values
        tensor = torch.tensor(list(values.values()), dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor)
        return {key: float(total) / self.size for key, total in zip(values, tensor.tolist())}

    def any(self, flag: bool) -> bool:
        """True on every rank when it is true on one (stops and disk faults end all ranks together)."""
        if not self.active:
            return flag
        tensor = torch.tensor([int(flag)], device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return bool(tensor.item())

    def barrier(self) -> None:
        if self.active:
            dist.barrier()

    def close(self) -> None:
        if self.active and dist.is_initialized():
            # Every rank is past its last collective before any tears the group down: a rank that leaves
            # early can close its sockets under a peer still reading. (One CI run saw a rank abort in
            # teardown, "terminate called without an active exception", at the end of a two-rank test.)
            dist.barrier()
            dist.destroy_process_group()


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def is_main_process() -> bool:
    """Rank 0, or a plain single process: the one that writes run files."""
    return os.environ.get("RANK", "0") == "0"


def init_world(device: torch.device) -> World:
    """Join the process group torchrun set up (environment variables RANK, WORLD_SIZE, LOCAL_RANK,
    MASTER_ADDR, MASTER_PORT), or a world of one."""
    if not launched_by_torchrun():
        return World()
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        dist.init_process_group(backend)
    return World(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")), device)


def split_envs(config, world: World) -> int:
    """This rank's share of the envs. In self-play a game is two envs, and every rank's rollout must
    split into the same whole minibatches, so that an update is the one-process update on the union."""
    unit = 2 if config.algo == "selfplay" else 1
    if config.num_envs % (world.size * unit):
        raise PongrlError(
            f"--num-envs {config.num_envs} does not split evenly over {world.size} processes"
            + (" (in self-play each process needs whole games, two envs each)" if unit == 2 else "")
        )
    share = config.num_envs // world.size
    if (share * config.num_steps) % config.num_minibatches:
        raise PongrlError(
            f"--num-minibatches {config.num_minibatches} must divide each process's rollout "
            f"({share} envs x {config.num_steps} steps)"
        )
    return share
