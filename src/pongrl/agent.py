"""Any trained agent behind one small interface: a batch of observations in, actions out.

Each agent records its observation profile so that evaluation never feeds it the wrong pixels.
"""
from __future__ import annotations

import numpy as np
import torch

from pongrl.checkpoint import load_checkpoint
from pongrl.envs import NUM_ACTIONS
from pongrl.errors import PongrlError
from pongrl.nets import QNetwork


class QAgent:
    """Greedy (or epsilon-greedy) play from a Q-network."""

    obs_profile = "standard"  # grayscale 84x84 stack of 4, as the single-player env produces

    def __init__(self, network: QNetwork, name: str = "agent", env_step: int = 0):
        self.network = network.eval()
        self.name = name
        self.env_step = env_step

    @torch.inference_mode()
    def q_values(self, obs: np.ndarray) -> np.ndarray:
        return self.network(torch.from_numpy(obs)).numpy()

    def act(self, obs: np.ndarray, epsilon: float = 0.0, rng: np.random.Generator | None = None) -> np.ndarray:
        actions = self.q_values(obs).argmax(axis=1)
        if epsilon > 0:
            rng = rng or np.random.default_rng()
            explore = rng.random(len(actions)) < epsilon
            actions = np.where(explore, rng.integers(0, NUM_ACTIONS, len(actions)), actions)
        return actions


def load_agent(path: str):
    """Load the playing part of any pongrl checkpoint (a run directory means its latest)."""
    payload = load_checkpoint(path)
    if payload.get("algo") != "dqn":
        raise PongrlError(f"{payload['path']}: algorithm {payload.get('algo')!r} cannot be loaded as an agent")
    network = QNetwork(NUM_ACTIONS)
    try:
        network.load_state_dict(payload["state"]["q_network"])
    except (KeyError, RuntimeError, TypeError) as error:
        reason = str(error).strip().splitlines()[0][:120]
        raise PongrlError(f"{payload['path']}: Q-network weights do not fit ({reason})") from None
    return QAgent(network, name=payload["path"], env_step=int(payload["env_step"]))
