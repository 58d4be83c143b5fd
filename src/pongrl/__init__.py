"""pongrl: train and study agents that play Atari Pong from pixels."""
__version__ = "0.1.0"
