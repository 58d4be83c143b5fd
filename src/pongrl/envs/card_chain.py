"""The self-play card's own observation chain on Gymnasium's single-player Pong, built from SuperSuit's wrappers.

A user of the self-play card's `Agent` plays it against the built-in AI this way: `PongNoFrameskip-v4`
(no no-op starts; sticky actions only if asked for), then SuperSuit's max_observation_v0(2), frame_skip_v0(4),
color_reduction_v0("B"), resize_v1(84, 84) and frame_stack_v1(4), and the card's blanking of the score rows.
pongrl's "seed" view of its single-player game (pongrl.envs.views) reproduces these observations pixel for pixel
from the same emulator frames (a test checks); what differs is the protocol around them: pongrl starts each game
after 0..30 no-op frames, this chain after none. `pongrl eval AGENT --chain card` plays through it.
"""

from __future__ import annotations

import gymnasium
import numpy as np

from pongrl.game import FRAME_SIZE, FRAME_SKIP, FRAME_STACK, SCORE_ROWS

CARD_CHAIN_ENV = "PongNoFrameskip-v4"


def _blank_score_rows(obs: np.ndarray, _space) -> np.ndarray:
    """The card's `obs[:9] = 0` on the stacked (84, 84, 4) observation."""
    obs = obs.copy()
    obs[:SCORE_ROWS] = 0
    return obs


def make_card_chain_env(sticky_actions: float = 0.0) -> gymnasium.Env:
    """One single-player game through the card's chain: observations (84, 84, 4) uint8, newest frame last,
    the six actions of the minimal set, rewards the true score changes. `reset(seed=s)` seeds the emulator
    (and so its sticky actions, with `sticky_actions` > 0: the ALE v5 protocol's per-frame repeat)."""
    import ale_py
    import supersuit as ss

    gymnasium.register_envs(ale_py)
    env = gymnasium.make(CARD_CHAIN_ENV, repeat_action_probability=sticky_actions)
    env = ss.max_observation_v0(env, 2)
    env = ss.frame_skip_v0(env, FRAME_SKIP)
    env = ss.color_reduction_v0(env, mode="B")
    env = ss.resize_v1(env, x_size=FRAME_SIZE, y_size=FRAME_SIZE)
    env = ss.frame_stack_v1(env, FRAME_STACK)
    return ss.observation_lambda_v0(env, _blank_score_rows)
