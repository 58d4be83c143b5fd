"""Single-player Pong against the game's built-in AI, on the real emulator (ale-py).

Protocol (the DQN seed's PongNoFrameskip-v4 + AtariPreprocessing + FrameStack4): no sticky
actions, up to 30 no-ops at reset, frame skip 4 with a max over the last two frames, grayscale,
84x84 (area interpolation), 4 stacked frames (older slots zero after a reset), whole games of
21 points, at most 108,000 frames per episode. Rewards are the true score changes; learners
clip them themselves, so every reported return is the real game score.

Two implementations share the protocol:
- `make_vector_env`: ale-py's C++ vector env (threads, async send/recv) for training and evaluation;
- `PongGame`: one emulator driven from Python, which also hands out the full-colour screen for
  videos. A test checks that both produce identical observations for the same actions.
"""
from __future__ import annotations

import os

import cv2
import numpy as np

import ale_py
from ale_py import roms
from ale_py.vector_env import AtariVectorEnv

from pongrl.nets import FRAME_SIZE, FRAME_STACK

NUM_ACTIONS = 6  # Pong's minimal action set: NOOP, FIRE, RIGHT, LEFT, RIGHTFIRE, LEFTFIRE
FRAME_SKIP = 4
NOOP_MAX = 30
MAX_EPISODE_FRAMES = 108_000


def make_vector_env(num_envs: int, seed: int, num_threads: int = 0) -> tuple[AtariVectorEnv, np.ndarray]:
    """Create `num_envs` emulators, reset them with seeds seed, seed+1, ... and return (env, first obs).

    Autoreset is same-step: when a game ends, `info["final_obs"]` holds its last observation and the
    returned observation already starts the next game.
    """
    env = AtariVectorEnv(
        "pong",
        num_envs,
        num_threads=num_threads or min(num_envs, os.cpu_count() or 1),
        max_num_frames_per_episode=MAX_EPISODE_FRAMES,
        repeat_action_probability=0.0,
        frameskip=FRAME_SKIP,
        noop_max=NOOP_MAX,
        img_height=FRAME_SIZE,
        img_width=FRAME_SIZE,
        stack_num=FRAME_STACK,
        grayscale=True,
        maxpool=True,
        reward_clipping=False,
        use_fire_reset=False,
        autoreset_mode="SameStep",
    )
    obs, _ = env.reset(seed=int(seed))
    return env, obs


def preprocess(gray_frame: np.ndarray) -> np.ndarray:
    return cv2.resize(gray_frame, (FRAME_SIZE, FRAME_SIZE), interpolation=cv2.INTER_AREA)


class PongGame:
    """One emulator with the training protocol, exposing the colour screen as well as the stack."""

    def __init__(self, seed: int, noop_max: int = NOOP_MAX):
        self.ale = ale_py.ALEInterface()
        self.ale.setLoggerMode(ale_py.LoggerMode.Error)
        self.ale.setInt("random_seed", int(seed) % (2**31))
        self.ale.setFloat("repeat_action_probability", 0.0)
        self.ale.setInt("frame_skip", 1)
        self.ale.setInt("max_num_frames_per_episode", MAX_EPISODE_FRAMES)
        self.ale.loadROM(roms.get_rom_path("pong"))
        self.actions = self.ale.getMinimalActionSet()
        self.rng = np.random.default_rng(seed)
        self.noop_max = noop_max
        self.stack = np.zeros((FRAME_STACK, FRAME_SIZE, FRAME_SIZE), np.uint8)
        self.colour_frames: list[np.ndarray] = []

    def reset(self) -> np.ndarray:
        self.ale.reset_game()
        for _ in range(int(self.rng.integers(0, self.noop_max + 1)) if self.noop_max else 0):
            self.ale.act(self.actions[0])
            if self.ale.game_over():
                self.ale.reset_game()
        self.stack[:] = 0
        self.stack[-1] = preprocess(self.ale.getScreenGrayscale())
        return self.stack.copy()

    def rgb(self) -> np.ndarray:
        """The full-colour screen at native resolution (210x160x3)."""
        return self.ale.getScreenRGB()

    def step(self, action: int, record_colour: bool = False) -> tuple[np.ndarray, float, bool, bool]:
        """Play one agent step (4 frames); returns (stack, score change, terminated, truncated)."""
        reward = 0.0
        last_two = []
        for skipped in range(FRAME_SKIP):
            reward += self.ale.act(self.actions[action])
            if record_colour:
                self.colour_frames.append(self.ale.getScreenRGB())
            if skipped >= FRAME_SKIP - 2:
                last_two.append(self.ale.getScreenGrayscale())
            if self.ale.game_over():
                break
        frame = np.maximum(last_two[0], last_two[1]) if len(last_two) == 2 else (
            last_two[0] if last_two else self.ale.getScreenGrayscale())
        self.stack = np.roll(self.stack, -1, axis=0)
        self.stack[-1] = preprocess(frame)
        terminated = self.ale.game_over(with_truncation=False)
        truncated = not terminated and self.ale.game_over()
        return self.stack.copy(), reward, terminated, truncated
