"""Observation profiles: what an agent sees of the emulator's screens, one frame stack per game.

- "standard" (the DQN protocol): ALE grayscale, max over the step's last two frames, 84x84 by area
  interpolation, 4 frames stacked channel-first (older slots zero after a reset), score visible;
- "seed" (the self-play card): blue channel of the max over the last two RGB frames, tinyscaler
  bilinear 84x84, 4 frames stacked channel-last, score rows blanked.

A view keeps the stacks of `n` games: `reset(g, gray, rgb)` at game g's start, `push(g, gray, rgb)` after each
of its steps (the max-pooled grayscale and RGB screens; a view reads only the one it needs), and
`observation(g, mirror)`, mirrored left-right for a player on the left paddle. Every emulator driver (the
single-player game, the two-player games) keeps one view per profile its players need, so several agents can
watch the same game, each in its own profile. The seed profile's parts (`seed_frame`, `SeedResizer`,
`SeedFrameStack`) are also used on their own by the two-player driver's batched fast path.
"""

from __future__ import annotations

import sys

import cv2
import numpy as np
import tinyscaler

from pongrl.game import FRAME_SIZE, FRAME_STACK, SCORE_ROWS, SCREEN_HEIGHT, SCREEN_WIDTH


def seed_frame(rgb: np.ndarray) -> np.ndarray:
    """One (210, 160, 3) RGB frame (already max-pooled) -> the seed's (84, 84) uint8 image.

    This is SuperSuit's color_reduction_v0("B") + resize_v1(84, 84) with the same library and
    call: tinyscaler.scale(..., size=(84, 84), mode="bilinear"). tinyscaler converts uint8 to
    float32 / 255, scales, and converts back with `(x * 255).astype(uint8)` (truncation, not
    rounding), which no other resizer reproduces, so it is used here too. Score rows are not
    blanked here: that belongs to the stack (the seed blanks after stacking).
    """
    blue = np.ascontiguousarray(rgb[:, :, 2])
    return tinyscaler.scale(blue, (FRAME_SIZE, FRAME_SIZE), mode="bilinear")


class SeedResizer:
    """Batched `seed_frame` for blue images, bit-identical to it (a test checks).

    tinyscaler always works on 4-channel float32 images and computes every channel with the same
    arithmetic independently (SIMD lanes); for a grey image it copies the grey value into all four
    channels. Putting four different blue images into the four channels therefore gives each
    image exactly the result of its own call, with a quarter of the calls and conversions.
    """

    def __init__(self, capacity: int):
        groups = max(1, -(-capacity // 4))
        self.blue = np.zeros((groups * 4, SCREEN_HEIGHT, SCREEN_WIDTH), np.uint8)  # filled by the caller
        self._packed = np.zeros((SCREEN_HEIGHT, SCREEN_WIDTH, 4), np.float32)
        self._scaled = np.empty((FRAME_SIZE, FRAME_SIZE, 4), np.float32)
        self._out = np.empty((groups * 4, FRAME_SIZE, FRAME_SIZE), np.uint8)

    def resize(self, count: int) -> np.ndarray:
        """Resize `self.blue[:count]`; returns (count, 84, 84) uint8, a view valid until the next call."""
        for first in range(0, count, 4):
            for channel in range(4):
                self._packed[:, :, channel] = self.blue[first + channel]
            # tinyscaler's own conversions, step for step: float32 * (1/255) in, * 255 and
            # truncation to uint8 out.
            self._packed *= np.float32(1.0 / 255.0)
            tinyscaler.scale(self._packed, (FRAME_SIZE, FRAME_SIZE), mode="bilinear", dst=self._scaled)
            self._scaled *= np.float32(255.0)
            self._out[first : first + 4] = self._scaled.transpose(2, 0, 1)  # float -> uint8 truncates
        return self._out[:count]


class SeedFrameStack:
    """Frame stacks of the seed for `n` games: (84, 84, 4) uint8 channel-last, newest last.

    Like SuperSuit's frame_stack_v1, a reset fills the older slots with zeros (not with copies of
    the first frame). Every stored frame has its score rows 0..8 set to 0, so the whole stack has
    them blank, as the seed's in-place `obs[:9] = 0` leaves it.

    The four uint8 channels of a pixel are one little-endian uint32 (channel 0 the low byte), so
    "drop the oldest frame, append the new one" is `(pixel >> 8) | (new << 24)` on whole images,
    much faster than moving channel-last bytes, and a left-right mirror moves whole pixels.
    """

    def __init__(self, n: int):
        assert sys.byteorder == "little", "the uint32 view of the stacks assumes a little-endian machine"
        self.stacks = np.zeros((n, FRAME_SIZE, FRAME_SIZE, FRAME_STACK), np.uint8)
        self._pixels = self.stacks.view(np.uint32)[..., 0]  # (n, 84, 84), the same memory
        self._new = np.zeros((n, FRAME_SIZE, FRAME_SIZE), np.uint32)

    def reset(self, i: int, frame: np.ndarray) -> None:
        """Start game i's stack: zeros, then `frame` (84, 84) as the newest."""
        self._pixels[i] = 0
        self._pixels[i, SCORE_ROWS:] = frame[SCORE_ROWS:].astype(np.uint32) << 24

    def push_all(self, frames: np.ndarray) -> None:
        """Append one (84, 84) frame to every game's stack; `frames` is (n, 84, 84) uint8."""
        self._new[:, SCORE_ROWS:] = frames[:, SCORE_ROWS:]
        self._new <<= 24
        self._pixels >>= 8
        self._pixels |= self._new

    def push(self, i: int, frame: np.ndarray) -> None:
        """Append a frame to game i's stack only."""
        self._pixels[i] >>= 8
        self._pixels[i, SCORE_ROWS:] |= frame[SCORE_ROWS:].astype(np.uint32) << 24

    def observation(self, i: int, mirror: bool = False) -> np.ndarray:
        """Game i's stack as a player sees it: `mirror=True` for `second_0` (left-right flip)."""
        return self.stacks[i, :, ::-1] if mirror else self.stacks[i]

    def write_players(self, out: np.ndarray, games=None) -> None:
        """Write both players' observations of the given games (all by default) into `out`,
        shaped (2 * n, 84, 84, 4) uint8: entry 2g is `first_0`, entry 2g + 1 `second_0`, mirrored."""
        pairs = out.view(np.uint32)[..., 0].reshape(-1, 2, FRAME_SIZE, FRAME_SIZE)
        if games is None:
            pairs[:, 0] = self._pixels
            pairs[:, 1] = self._pixels[:, :, ::-1]
        else:
            pairs[games, 0] = self._pixels[games]
            pairs[games, 1] = self._pixels[games][:, :, ::-1]


class StandardView:
    """The DQN protocol's (4, 84, 84) grayscale stacks of `n` games."""

    def __init__(self, n: int = 1):
        self.stacks = np.zeros((n, FRAME_STACK, FRAME_SIZE, FRAME_SIZE), np.uint8)

    def reset(self, g: int, gray: np.ndarray, rgb: np.ndarray | None = None) -> None:
        self.stacks[g] = 0
        self.stacks[g, -1] = cv2.resize(gray, (FRAME_SIZE, FRAME_SIZE), interpolation=cv2.INTER_AREA)

    def push(self, g: int, gray: np.ndarray, rgb: np.ndarray | None = None) -> None:
        self.stacks[g, :-1] = self.stacks[g, 1:]
        self.stacks[g, -1] = cv2.resize(gray, (FRAME_SIZE, FRAME_SIZE), interpolation=cv2.INTER_AREA)

    def observation(self, g: int, mirror: bool = False) -> np.ndarray:
        return self.stacks[g, :, :, ::-1] if mirror else self.stacks[g]


class SeedView:
    """The self-play card's (84, 84, 4) blue-channel stacks of `n` games, the score blanked."""

    def __init__(self, n: int = 1):
        self.stack = SeedFrameStack(n)

    def reset(self, g: int, gray: np.ndarray | None, rgb: np.ndarray) -> None:
        self.stack.reset(g, seed_frame(rgb))

    def push(self, g: int, gray: np.ndarray | None, rgb: np.ndarray) -> None:
        self.stack.push(g, seed_frame(rgb))

    def observation(self, g: int, mirror: bool = False) -> np.ndarray:
        return self.stack.observation(g, mirror)


VIEWS = {"standard": StandardView, "seed": SeedView}
NEEDS_GRAY = {"standard"}  # the profiles built from the grayscale screen; the others read the RGB one
