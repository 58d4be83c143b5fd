"""pongrl: train and study agents that play Atari Pong from pixels."""
import gymnasium

__version__ = "0.1.0"

# Single-player Pong with the DQN protocol, for any Gymnasium user: `import pongrl` then
# `gymnasium.make("pongrl/Pong-v0")` or `gymnasium.make_vec("pongrl/Pong-v0", num_envs=N)`.
# Entry points are strings, so importing pongrl loads neither the emulator nor torch.
gymnasium.register(
    id="pongrl/Pong-v0",
    entry_point="pongrl.envs.single:PongEnv",
    vector_entry_point="pongrl.envs.single:make_pong_vector_env",
)
