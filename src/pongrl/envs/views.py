"""Observation profiles: what an agent sees of the emulator's screens, one frame stack per game.

- "standard" (the DQN protocol): ALE grayscale, max over the step's last two frames, 84x84 by area
  interpolation, 4 frames stacked channel-first (older slots zero after a reset), score visible;
- "seed" (the self-play card): blue channel of the max over the last two RGB frames, tinyscaler
  bilinear 84x84, 4 frames stacked channel-last, score rows blanked.

Each view takes the max-pooled grayscale and RGB screens of a step (`reset` at a game's start, `push`
after each step) and hands out its stack, mirrored left-right for a player on the left paddle. The
single-player game (`pongrl.envs.single.PongGame`) and matches between agents (`pongrl.envs.match`) keep
one view per profile they need, so several agents can watch the same game, each in its own profile.
"""
from __future__ import annotations

import cv2
import numpy as np

from pongrl.envs.two_player import SeedFrameStack, seed_frame
from pongrl.game import FRAME_SIZE, FRAME_STACK


class StandardView:
    """The DQN protocol's (4, 84, 84) grayscale stack."""

    def __init__(self):
        self.stack = np.zeros((FRAME_STACK, FRAME_SIZE, FRAME_SIZE), np.uint8)

    def reset(self, gray: np.ndarray, rgb: np.ndarray) -> None:
        self.stack[:] = 0
        self.stack[-1] = cv2.resize(gray, (FRAME_SIZE, FRAME_SIZE), interpolation=cv2.INTER_AREA)

    def push(self, gray: np.ndarray, rgb: np.ndarray) -> None:
        self.stack[:-1] = self.stack[1:]
        self.stack[-1] = cv2.resize(gray, (FRAME_SIZE, FRAME_SIZE), interpolation=cv2.INTER_AREA)

    def observation(self, mirror: bool) -> np.ndarray:
        return self.stack[:, :, ::-1] if mirror else self.stack


class SeedView:
    """The self-play card's (84, 84, 4) blue-channel stack with the score blanked."""

    def __init__(self):
        self.stack = SeedFrameStack(1)

    def reset(self, gray: np.ndarray, rgb: np.ndarray) -> None:
        self.stack.reset(0, seed_frame(rgb))

    def push(self, gray: np.ndarray, rgb: np.ndarray) -> None:
        self.stack.push(0, seed_frame(rgb))

    def observation(self, mirror: bool) -> np.ndarray:
        return self.stack.observation(0, mirror)


VIEWS = {"standard": StandardView, "seed": SeedView}
