"""Two-player Pong with the self-play card's observations, through PettingZoo's and Gymnasium's APIs.

Named as PettingZoo names its environments (`pettingzoo.atari.pong_v3`), with the same entry points:

    from pongrl.envs import pong_selfplay_v0
    env = pong_selfplay_v0.parallel_env()       # PettingZoo ParallelEnv, one game, agents first_0/second_0
    env = pong_selfplay_v0.env()                # the same game through PettingZoo's AEC API
    envs = pong_selfplay_v0.vector_env(8)       # Gymnasium VectorEnv: 8 games, 16 players (pongrl trains on this)

Every form is the same game as pong_v3 + the card's SuperSuit chain (max over 2 frames, frame skip 4,
rewards clipped to [-1, 1], blue channel, 84x84, stack of 4, score rows blanked, `second_0`'s image
mirrored), step for step: a test compares the vector form with PettingZoo + SuperSuit themselves.
`first_0` moves the right paddle, `second_0` the left one; a player who has not served within 2
seconds gets -1 (a serve penalty; the score does not change). `game_mode` 4 is pong_v3's classic
game, 3 the cartridge's other two-player variation.
"""

from __future__ import annotations

import functools

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils import parallel_to_aec

from pongrl.envs.selfplay import FastSelfPlayEnv, Scoreboard, player_observation_space
from pongrl.envs.two_player import TwoPlayerGames
from pongrl.game import CLASSIC_MODE, FRAME_SIZE, FRAME_STACK, GAME_MODES, MAX_CYCLES, NUM_ACTIONS, PLAYERS


def _check_mode(game_mode: int) -> None:
    if game_mode not in GAME_MODES:
        raise ValueError(f"game_mode must be one of {GAME_MODES} (two-player Pong's variations), got {game_mode!r}")


class PongSelfPlayParallelEnv(ParallelEnv):
    """One game of two-player Pong as a PettingZoo ParallelEnv.

    Observations: (84, 84, 4) uint8 per player; rewards: the clipped score change (serve penalties
    included); both players terminate together when one reaches 21 points and are truncated
    together after `max_cycles` raw frames (4 per step). When a game ends, each player's info holds
    "episode": its points won and lost, serve penalties, clipped return "r" and length "l".
    """

    metadata = {"name": "pong_selfplay_v0", "render_modes": ["rgb_array"], "render_fps": 15, "is_parallelizable": True}

    def __init__(self, max_cycles: int = MAX_CYCLES, game_mode: int = CLASSIC_MODE, render_mode: str | None = None):
        _check_mode(game_mode)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.possible_agents = list(PLAYERS)
        self.agents: list[str] = []
        self.render_mode = render_mode
        self.game_mode = game_mode
        self._games = TwoPlayerGames(1, max_cycles, mode=game_mode, autoreset=False)
        self._obs = np.zeros((2, FRAME_SIZE, FRAME_SIZE, FRAME_STACK), np.uint8)
        self._scores = Scoreboard(1)
        self.state_space = gymnasium.spaces.Box(0, 255, (128,), np.uint8)

    # PettingZoo's parallel_api_test sets `max_cycles` on the env, as pong_v3 reads it at every step.
    @property
    def max_cycles(self) -> int:
        return self._games.max_cycles

    @max_cycles.setter
    def max_cycles(self, value: int) -> None:
        self._games.max_cycles = int(value)

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> gymnasium.spaces.Box:
        return player_observation_space()

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> gymnasium.spaces.Discrete:
        return gymnasium.spaces.Discrete(NUM_ACTIONS)

    def _per_agent(self, values) -> dict:
        return {agent: values[i] for i, agent in enumerate(PLAYERS)}

    def reset(self, seed: int | None = None, options: dict | None = None):
        # Two-player Pong has no randomness of its own (no sticky actions): the seed is passed to the
        # emulator as pong_v3 does, and the game is decided by the actions alone.
        self._games.reset(self._obs, seed)
        self._scores = Scoreboard(1)
        self.agents = list(PLAYERS)
        return self._per_agent(self._obs.copy()), {agent: {} for agent in PLAYERS}

    def step(self, actions: dict):
        if not self.agents:
            raise gymnasium.error.ResetNeeded("the game is over: call reset() before step()")
        missing = [agent for agent in self.agents if agent not in actions]
        if missing:
            raise ValueError(f"no action for {', '.join(missing)}")
        rewards = np.zeros(2, np.float32)
        terminated = np.zeros(2, bool)
        truncated = np.zeros(2, bool)
        joint = np.array([actions[agent] for agent in PLAYERS])
        ended = self._games.step(joint, self._obs, None, rewards, terminated, truncated)
        finished = self._scores.update(rewards, ended)
        infos = {agent: {} for agent in PLAYERS}
        if finished is not None:
            episode = finished[0]
            for i, agent in enumerate(PLAYERS):
                infos[agent]["episode"] = {key: values[i].item() for key, values in episode.items()}
            self.agents = []
        return (
            self._per_agent(self._obs.copy()),
            self._per_agent([float(r) for r in rewards]),
            self._per_agent([bool(t) for t in terminated]),
            self._per_agent([bool(t) for t in truncated]),
            infos,
        )

    def render(self) -> np.ndarray | None:
        """The last raw RGB frame (210, 160, 3) with render_mode="rgb_array"."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() without a render_mode: create the env with render_mode='rgb_array'")
            return None
        return self._games.screen(0)

    def state(self) -> np.ndarray:
        """The emulator's RAM (128 bytes): the whole game state, the same for both players."""
        return self._games.ram(0)

    def close(self) -> None:
        self._games.close()


def parallel_env(
    max_cycles: int = MAX_CYCLES, game_mode: int = CLASSIC_MODE, render_mode: str | None = None
) -> PongSelfPlayParallelEnv:
    """One game as a PettingZoo ParallelEnv (see the module docstring)."""
    return PongSelfPlayParallelEnv(max_cycles, game_mode, render_mode)


def env(max_cycles: int = MAX_CYCLES, game_mode: int = CLASSIC_MODE, render_mode: str | None = None):
    """One game through PettingZoo's AEC API (players take turns; the game steps once both have acted)."""
    return parallel_to_aec(parallel_env(max_cycles, game_mode, render_mode))


def vector_env(
    num_games: int,
    seed: int = 0,
    max_cycles: int = MAX_CYCLES,
    game_mode: int = CLASSIC_MODE,
    num_threads: int = 1,
    sticky_actions: float = 0.0,
    profiles: tuple[str, ...] = ("seed",),
) -> FastSelfPlayEnv:
    """`num_games` games as one Gymnasium VectorEnv of 2 * num_games players, same-step autoreset:
    what pongrl's self-play trainer steps (`num_threads` emulator threads). `sticky_actions` p repeats
    each player's previous action on a raw frame with probability p (the ALE v5 protocol, for both).
    `profiles`: observation profiles kept besides the card's view, which `player_views` reads ("standard")."""
    _check_mode(game_mode)
    if not 0.0 <= sticky_actions < 1.0:
        raise ValueError(f"sticky_actions must be in [0, 1), got {sticky_actions}")
    return FastSelfPlayEnv(
        num_games,
        seed,
        max_cycles=max_cycles,
        num_threads=num_threads,
        mode=game_mode,
        sticky_actions=sticky_actions,
        profiles=profiles,
    )
