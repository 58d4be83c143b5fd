"""Neural networks: the Nature-DQN convolutional torso and the Q-network built on it.

The torso is an `nn.Sequential` whose indices match the seed model card's `atari_network`
(conv at 0, 2, 4; linear at 7), so state_dict keys line up with checkpoints made by that code.
Intermediate activations are easy to read out by iterating the Sequential.
"""
from __future__ import annotations

import torch
from torch import nn

FRAME_SIZE = 84
FRAME_STACK = 4


def nature_torso() -> nn.Sequential:
    """Conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1, dense 512 (Mnih et al. 2015)."""
    return nn.Sequential(
        nn.Conv2d(FRAME_STACK, 32, 8, stride=4),
        nn.ReLU(),
        nn.Conv2d(32, 64, 4, stride=2),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(64 * 7 * 7, 512),
        nn.ReLU(),
    )


class QNetwork(nn.Module):
    """Maps a uint8 stack (N, 4, 84, 84) to one Q-value per action.

    Pixels are scaled by 1/255 inside the network, so callers hand over raw uint8 frames
    and the replay buffer never holds floats.
    """

    def __init__(self, num_actions: int):
        super().__init__()
        self.torso = nature_torso()
        self.head = nn.Linear(512, num_actions)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        x = frames.float().mul_(1.0 / 255.0)
        return self.head(self.torso(x))
