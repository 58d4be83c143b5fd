"""The GPU paths: `--device cuda` for PPO and DQN, and torchrun with nccl. Skipped where torch sees no
CUDA device (this project's CI machines have none); run them on a GPU machine with `python -m pytest
tests/test_gpu.py`."""

import subprocess
import sys

import pytest
import torch

from pongrl.agent import load_agent
from pongrl.checkpoint import load_checkpoint
from pongrl.cli import main

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

PPO = [
    "--num-envs",
    "4",
    "--num-steps",
    "64",
    "--log-every",
    "256",
    "--eval-every",
    "512",
    "--eval-episodes",
    "1",
    "--checkpoint-every",
    "256",
]


@pytest.mark.parametrize(
    "algo, flags",
    [
        ("ppo", PPO),
        ("selfplay", PPO),
        (
            "dqn",
            [
                "--num-envs",
                "2",
                "--buffer-size",
                "2000",
                "--learning-starts",
                "100",
                "--batch-size",
                "8",
                "--log-every",
                "256",
                "--checkpoint-every",
                "256",
                "--eval-every",
                "512",
                "--eval-episodes",
                "1",
            ],
        ),
    ],
)
def test_training_on_cuda_and_the_checkpoint_plays_on_cpu(algo, flags, tmp_path):
    run_dir = str(tmp_path / algo)
    assert main(["train", algo, "--device", "cuda", "--run-dir", run_dir, "--total-steps", "512", *flags]) == 0
    payload = load_checkpoint(run_dir)
    assert payload["env_step"] == 512
    weights = next(iter(payload["state"].values()))
    assert all(tensor.device.type == "cpu" for tensor in weights.values())  # loading never needs a GPU
    assert main(["resume", run_dir, "--extra-steps", "256", "--device", "cuda"]) == 0
    assert load_agent(run_dir).env_step == 768
    assert main(["eval", run_dir, "--episodes", "1"]) == 0


def test_torchrun_with_nccl(tmp_path):
    processes = max(1, min(2, torch.cuda.device_count()))  # nccl wants one GPU per process
    run_dir = str(tmp_path / "nccl")
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={processes}",
        "-m",
        "pongrl",
        "train",
        "ppo",
        "--device",
        "cuda",
        "--run-dir",
        run_dir,
        "--total-steps",
        "1024",
        "--num-envs",
        "4",
        "--num-steps",
        "128",
        "--log-every",
        "512",
        "--eval-every",
        "0",
        "--checkpoint-every",
        "512",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert load_checkpoint(run_dir)["env_step"] == 1024
