"""Pong's facts, once: what every part of pongrl that plays, shows or reads the game agrees on.

No imports, so that the command line's parser and the configs can use them without loading the emulators.
"""

# The minimal action set, the same six actions for both players of the two-player game. RIGHT moves a paddle
# up and LEFT down.
NUM_ACTIONS = 6
NOOP, FIRE = 0, 1
ACTION_NAMES = ("NOOP", "FIRE", "UP", "DOWN", "UP+FIRE", "DOWN+FIRE")

# The screen and what an agent sees of it.
SCREEN_HEIGHT, SCREEN_WIDTH = 210, 160
FRAME_SKIP = 4  # raw frames per agent step
FRAME_SIZE = 84  # observations are FRAME_SIZE x FRAME_SIZE
FRAME_STACK = 4  # frames per observation
SCORE_ROWS = 9  # rows 0..8 of an 84x84 observation show the score; the self-play card blanks them

# Games.
WINNING_SCORE = 21
NOOP_MAX = 30  # the single-player protocol starts a game after 0..NOOP_MAX no-op frames
MAX_EPISODE_FRAMES = 108_000  # the single-player protocol's cap on a game, in raw frames
MAX_CYCLES = 100_000  # pong_v3's cap on a two-player game, in raw frames (its max_cycles)
CLASSIC_MODE = 4  # pong_v3's "classic" two-player game (its default game_version)
# The other two-player Pong variation is 3 (multi_agent_ale_py numbers the cartridge's games 1..50; 1 and 2 are
# the one-player games). Measured with research/ball_speed.py: in 4 the ball almost never (0.2% of steps) flies
# faster than 2 px/frame horizontally; in 3 and in the single-player game it reaches 3-4 px/frame in about 4%.
GAME_MODES = (3, CLASSIC_MODE)
PLAYERS = ("first_0", "second_0")  # the two-player game's players: first_0 holds the right paddle, second_0 the left
RIGHT, LEFT = 0, 1  # the sides, numbered as PLAYERS; in the single-player game the agent is RIGHT, the built-in AI LEFT
# No-op frames before a two-player game, drawn below this: half the 2-second serve window, so that no serve
# penalty can fall before the players act.
MAX_START_NOOP_FRAMES = 60

# RAM bytes (AtariARI's annotations, checked on this emulator by tests against the screen and the score).
RAM_RIGHT_PADDLE_Y, RAM_LEFT_PADDLE_Y = 51, 50
RAM_RIGHT_PADDLE_X, RAM_LEFT_PADDLE_X = 46, 45  # constants in Pong
RAM_BALL_X, RAM_BALL_Y = 49, 54  # both 0 while the ball is out of play
RAM_SCORE_RIGHT, RAM_SCORE_LEFT = 14, 13  # first_0's points, second_0's (the built-in AI's in single-player)

# Games played in lockstep by one evaluation or match, so that each agent acts on one batch per step.
MAX_PARALLEL_GAMES = 8
