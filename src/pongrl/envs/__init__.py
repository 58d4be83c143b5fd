"""Pong environments: single-player against the built-in AI (ale-py)."""
from pongrl.envs.single import NUM_ACTIONS, PongGame, make_vector_env

__all__ = ["NUM_ACTIONS", "PongGame", "make_vector_env"]
