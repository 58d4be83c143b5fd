"""Pong environments: single-player against the built-in AI (ale-py) and two-player self-play
(`pongrl.envs.two_player`, imported on demand: it needs PettingZoo's emulator).

Public forms for other libraries: `gymnasium.make("pongrl/Pong-v0")` and `gymnasium.make_vec(...)`
(registered by `import pongrl`), and `pongrl.envs.pong_selfplay_v0` (PettingZoo parallel and AEC
envs, and the Gymnasium vector env pongrl's self-play trainer steps)."""

import ale_py

from pongrl.envs.single import PongGame, make_vector_env
from pongrl.game import NUM_ACTIONS

# The emulator greets every new instance with a banner on stdout: pongrl's commands print their own lines only.
# (The two-player emulator is silenced where it is opened, pongrl.envs.two_player.open_emulator.)
ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)

__all__ = ["NUM_ACTIONS", "PongGame", "make_vector_env"]
