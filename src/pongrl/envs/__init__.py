"""Pong environments: single-player against the built-in AI (ale-py) and two-player self-play
(`pongrl.envs.two_player`, imported on demand: it needs PettingZoo's emulator)."""
from pongrl.envs.single import NUM_ACTIONS, PongGame, make_vector_env

__all__ = ["NUM_ACTIONS", "PongGame", "make_vector_env"]
