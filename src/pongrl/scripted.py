"""Scripted opponents: the paddles a person or a lazy program would try against an agent.

An agent that met only the built-in AI in training can lose to a paddle that never moves. These players are the
cheap tests of that: paddles parked at several heights, a paddle held up or down, one standing still, one
pressing random buttons, and programs that chase the ball a beginner's way or that aim for where it will land.

Each is a player of pongrl's game runner (`profile` and `act(observations)`, like `runner.FunctionPlayer`) and
reads only what an agent reads: its observation, in either profile (the standard grayscale stack, channel-first,
or the self-play card's blue-channel stack, channel-last), mirrored for the left paddle as every player's is, so
its own paddle is always the one on the right of its picture. The same objects play the opponents' paddles of a
self-play training run (`pongrl train selfplay --scripted-fraction F`).

    from pongrl.scripted import scripted_player
    chaser = scripted_player("chase", profile="standard", seed=0)
    actions = chaser.act(observations)  # (N, 4, 84, 84) uint8 -> (N,) action indices

Where the ball and paddles are is read off the newest frame (older frames for the ball's speed): anything that
differs from the field's background colour between the walls, the own paddle in its columns, the ball between
the two paddles' columns.
"""

from __future__ import annotations

import numpy as np

from pongrl.errors import PongrlError
from pongrl.game import NOOP, NUM_ACTIONS

UP, DOWN = 2, 3  # ACTION_NAMES: RIGHT moves a paddle up, LEFT down

# Rows and columns of an 84x84 observation (the 210x160 screen scaled by 0.4 and 0.525): the field lies between
# the top wall (screen rows 24-33) and the bottom wall (rows 194-209); the right paddle's columns are screen
# columns 140-143, the left one's 16-19.
FIELD_TOP, FIELD_BOTTOM = 14, 77
OWN_PADDLE_COLUMNS = slice(72, 77)
BALL_COLUMNS = slice(11, 72)
BALL_HIT_COLUMN = 72.5  # where the ball meets the own paddle's face
FIELD_MIDDLE = (FIELD_TOP + FIELD_BOTTOM) / 2
CONTRAST = 25  # grey levels from the background that count as an object (the dimmest paddle edge is ~30)
# Rows: a paddle within this of its target stops. The paddle keeps moving a little after its button is let go, and
# with a narrower band (2 rows) an aiming paddle overshoots back and forth past the ball.
DEADBAND = 4.0


def frames_of(observations: np.ndarray, profile: str) -> np.ndarray:
    """(N, 4, 84, 84) frames, oldest first, from observations of either profile."""
    observations = np.asarray(observations)
    return observations if profile == "standard" else np.moveaxis(observations, -1, 1)


def _objects(frame: np.ndarray) -> np.ndarray:
    """Which pixels of one (84, 84) frame's field differ from its background (the most common grey level)."""
    field = frame[FIELD_TOP:FIELD_BOTTOM].astype(np.int16)
    background = np.bincount(field[:, BALL_COLUMNS].ravel(), minlength=256).argmax()
    return np.abs(field - background) > CONTRAST


def paddle_height(frame: np.ndarray) -> float | None:
    """The own paddle's middle row, or None when it is not on the screen."""
    rows = np.flatnonzero(_objects(frame)[:, OWN_PADDLE_COLUMNS].any(axis=1))
    return None if rows.size == 0 else FIELD_TOP + float(rows.mean())


def ball_position(frame: np.ndarray) -> tuple[float, float] | None:
    """(row, column) of the ball between the paddles' columns, or None while it is elsewhere or out of play."""
    rows, columns = np.nonzero(_objects(frame)[:, BALL_COLUMNS])
    if rows.size == 0:
        return None
    return FIELD_TOP + float(rows.mean()), BALL_COLUMNS.start + float(columns.mean())


def steer(paddle: float | None, target: float | None) -> int:
    """UP or DOWN toward `target`, NOOP when close (or when either is unseen)."""
    if paddle is None or target is None or abs(target - paddle) <= DEADBAND:
        return NOOP
    return UP if target < paddle else DOWN


def landing_height(earlier: tuple[float, float], later: tuple[float, float]) -> float | None:
    """Where a ball seen at `earlier` then `later` meets the own paddle's column, bouncing off the walls; None when
    it moves away (or does not move across)."""
    (row0, col0), (row1, col1) = earlier, later
    if col1 <= col0:
        return None
    steps = (BALL_HIT_COLUMN - col1) / (col1 - col0)
    row = row1 + steps * (row1 - row0)
    span = FIELD_BOTTOM - FIELD_TOP
    folded = (row - FIELD_TOP) % (2 * span)  # reflect off the walls as many times as it takes
    return FIELD_TOP + (folded if folded <= span else 2 * span - folded)


class ScriptedPlayer:
    """A scripted paddle: `act(observations)` gives one action per observation. `name` is its name in the battery,
    `profile` what it reads, `rng` its random stream (random buttons, slips)."""

    description = ""

    def __init__(self, name: str, profile: str = "standard", rng: np.random.Generator | None = None):
        self.name, self.profile = name, profile
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def __repr__(self) -> str:
        return f"scripted:{self.name}"

    def act(self, observations: np.ndarray) -> np.ndarray:
        frames = frames_of(observations, self.profile)
        return np.array([self.act_one(stack) for stack in frames], np.int64)

    def act_one(self, frames: np.ndarray) -> int:
        raise NotImplementedError


class Hold(ScriptedPlayer):
    """Presses one button for ever: NOOP stands still wherever the paddle is, UP or DOWN pins it to a wall."""

    def __init__(self, name, action: int, profile="standard", rng=None):
        super().__init__(name, profile, rng)
        self.action = action

    def act_one(self, frames):
        return self.action


class Park(ScriptedPlayer):
    """Moves its paddle to a fixed height (a fraction of the field from the top) and keeps it there."""

    def __init__(self, name, height: float, profile="standard", rng=None):
        super().__init__(name, profile, rng)
        self.row = FIELD_TOP + height * (FIELD_BOTTOM - FIELD_TOP)

    def act_one(self, frames):
        return steer(paddle_height(frames[-1]), self.row)


class RandomButtons(ScriptedPlayer):
    """Presses a button drawn uniformly from the six, every step."""

    def act_one(self, frames):
        return int(self.rng.integers(NUM_ACTIONS))


class Chase(ScriptedPlayer):
    """Moves toward the ball's height as a beginner does, back to the middle while the ball is away. `late`: it
    reacts to where the ball was a step earlier; `slip`: the probability of a random button instead."""

    def __init__(self, name, late: bool = False, slip: float = 0.0, profile="standard", rng=None):
        super().__init__(name, profile, rng)
        self.late, self.slip = late, slip

    def act_one(self, frames):
        if self.slip and self.rng.random() < self.slip:
            return int(self.rng.integers(NUM_ACTIONS))
        ball = ball_position(frames[-2] if self.late else frames[-1])
        return steer(paddle_height(frames[-1]), ball[0] if ball else FIELD_MIDDLE)


class Intercept(ScriptedPlayer):
    """Aims for where the ball will meet its paddle, from the ball's last two positions and its bounces off the
    walls, and waits in the middle while the ball moves away."""

    def act_one(self, frames):
        earlier, later = ball_position(frames[-2]), ball_position(frames[-1])
        target = landing_height(earlier, later) if earlier and later else None
        return steer(paddle_height(frames[-1]), FIELD_MIDDLE if target is None else target)


BATTERY = {
    "still": (lambda name, **kw: Hold(name, NOOP, **kw), "stands still where the game puts its paddle"),
    "hold-up": (lambda name, **kw: Hold(name, UP, **kw), "holds UP: the paddle pinned to the top wall"),
    "hold-down": (lambda name, **kw: Hold(name, DOWN, **kw), "holds DOWN: the paddle pinned to the bottom wall"),
    "park-high": (lambda name, **kw: Park(name, 0.25, **kw), "parks its paddle a quarter of the way down"),
    "park-middle": (lambda name, **kw: Park(name, 0.5, **kw), "parks its paddle in the middle"),
    "park-low": (lambda name, **kw: Park(name, 0.75, **kw), "parks its paddle three quarters of the way down"),
    "random": (lambda name, **kw: RandomButtons(name, **kw), "presses a random button every step"),
    "chase": (lambda name, **kw: Chase(name, **kw), "moves toward the ball's height"),
    "chase-late": (
        lambda name, **kw: Chase(name, late=True, slip=0.1, **kw),
        "moves toward where the ball was a step ago, a random button one step in ten",
    ),
    "intercept": (lambda name, **kw: Intercept(name, **kw), "aims for where the ball will reach its paddle"),
}
"""Every scripted opponent by name: (maker, what it does)."""


def scripted_names(spec: str) -> list[str]:
    """Battery names from a comma-separated list ("all" for every one); an unknown name is refused with the list."""
    names = list(BATTERY) if spec.strip() == "all" else [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in BATTERY]
    if unknown or not names:
        raise PongrlError(
            f"unknown scripted opponent {unknown[0] if unknown else spec!r} (choose from {', '.join(BATTERY)} or all)"
        )
    return names


def scripted_player(name: str, profile: str = "standard", seed: int = 0) -> ScriptedPlayer:
    """The battery's opponent `name`, reading observations in `profile`, its random stream seeded by `seed`."""
    ((maker, _),) = [BATTERY[n] for n in scripted_names(name)]
    return maker(name, profile=profile, rng=np.random.default_rng(seed))
