"""Ground truth from the emulator's RAM, named from the agent's side: the right paddle (single-player
Pong, and the first player of a two-player game), or the left one, mirrored.

The AtariARI labels for Pong (Anand et al. 2019; the dict of its ram_annotations.py), checked on this
emulator: byte 14 counts the right paddle's points (the agent's, AtariARI's player_score) and 13 the left's
(the built-in AI's); a test checks them against the score changes, and the ball's bytes against where the
ball is drawn on the screen. The paddles' x positions (added to AtariARI's dict after its paper) never
change in Pong (188 and 64): they are kept for its table and are constants.

What a player needs beyond them, derived from two consecutive agent steps: the ball's velocity, whether
the ball is in play (its height byte is 0 exactly while it is out of play), and whether it flies toward
the agent's paddle; and of the opponent, its paddle's velocity (enemy_vy, rows per agent step; 0 where the
byte jumps by more than PADDLE_JUMP rows: the game puts the paddle back after a point, it did not move there).

What the agent could foresee, computed once a game is recorded from its later frames (`predictive_labels`),
each UNDEFINED where the future does not hold it within the current point (or the recording ends first):
- landing_y: the ball's height when it next reaches the agent's paddle column (the first step of an approach
  with the ball at x >= PADDLE_REACH_X: the ball turns back from the right paddle at x 186-189), and
  steps_to_landing: the agent steps until then;
- wins_point: 1 if the agent wins the point being played, 0 if it loses it (the next score change);
- enemy_contact_y: the opponent paddle's height when it next returns the ball (the last step the ball flies
  away from the agent before it turns back);
- enemy_next_move: what the opponent does next, read from its paddle between this step and the next one:
  ENEMY_STAYS, ENEMY_UP (toward the top of the screen) or ENEMY_DOWN. The same label in both games: the built-in
  AI has no action to record, and an agent's action shows in its paddle (its paddle's motion is what the agent
  can see and answer); undefined where the paddle jumps (PADDLE_JUMP).

An agent on the left paddle sees the screen mirrored left-right, so its labels are mirrored too: its
paddle is `player`, the right one `enemy` (heights, x bytes and scores swap), and the ball's x is
mirrored on the 160-pixel screen (the 2-pixel ball is drawn at column x - 49, so mirrored it is at
column 207 - x: in RAM units, 256 - x), its horizontal velocity negated.
"""

from __future__ import annotations

import numpy as np

from pongrl.game import (
    RAM_BALL_X,
    RAM_BALL_Y,
    RAM_LEFT_PADDLE_X,
    RAM_LEFT_PADDLE_Y,
    RAM_RIGHT_PADDLE_X,
    RAM_RIGHT_PADDLE_Y,
    RAM_SCORE_LEFT,
    RAM_SCORE_RIGHT,
)

# AtariARI's names for the RAM bytes (player = the agent, right paddle; enemy = the left paddle).
RAM_LABELS = {
    "player_y": RAM_RIGHT_PADDLE_Y,
    "player_x": RAM_RIGHT_PADDLE_X,
    "enemy_y": RAM_LEFT_PADDLE_Y,
    "enemy_x": RAM_LEFT_PADDLE_X,
    "ball_x": RAM_BALL_X,
    "ball_y": RAM_BALL_Y,
    "player_score": RAM_SCORE_RIGHT,
    "enemy_score": RAM_SCORE_LEFT,
}
DERIVED_LABELS = ("ball_vx", "ball_vy", "ball_in_play", "ball_toward_player", "enemy_vy")
STEP_LABELS = tuple(RAM_LABELS) + DERIVED_LABELS  # read at every step (read_labels)
PREDICTIVE_LABELS = ("landing_y", "steps_to_landing", "wins_point", "enemy_contact_y", "enemy_next_move")
LABELS = STEP_LABELS + PREDICTIVE_LABELS
ENEMY_STAYS, ENEMY_UP, ENEMY_DOWN = 0, 1, 2  # enemy_next_move's classes
UNDEFINED = -1  # a predictive label's value where the future does not hold it: such frames are left out of its probe
# Scored by R^2 as well as by AtariARI's classification F1: quantities on a scale.
REGRESSION_LABELS = (
    "player_y",
    "enemy_y",
    "ball_x",
    "ball_y",
    "ball_vx",
    "ball_vy",
    "enemy_vy",
    "landing_y",
    "steps_to_landing",
    "enemy_contact_y",
)
# Their bytes read 0 while the ball is out of play (and the velocities 0 on the step it comes back), so a probe
# over all frames would mix "is the ball in play" (its own label) with "where is it": their R^2 is fitted and
# scored on in-play frames.
IN_PLAY_LABELS = ("ball_x", "ball_y", "ball_vx", "ball_vy")
PADDLE_REACH_X = 185  # from the agent's side, RAM units
# A paddle moves at most ~10 rows per agent step; the built-in AI's byte jumps by ~100 when the game resets it.
PADDLE_JUMP = 24


def scored_frames(name: str, values: np.ndarray, in_play: np.ndarray | None) -> np.ndarray:
    """Which frames a label's R^2 probe is fitted and scored on: where a predictive label is defined, where the
    ball is in play for the ball's position and velocity (`in_play`: the ball_in_play label), else all."""
    if name in PREDICTIVE_LABELS:
        return np.asarray(values) != UNDEFINED
    if name in IN_PLAY_LABELS:
        return np.asarray(in_play, bool)
    return np.ones(len(values), bool)


MIRROR_SWAPS = (("player_y", "enemy_y"), ("player_x", "enemy_x"), ("player_score", "enemy_score"))
BALL_X_MIRROR = 256


def read_labels(ram: np.ndarray, previous_ram: np.ndarray | None, mirrored: bool = False) -> dict[str, int]:
    """Every label of one agent step from its RAM and the previous step's (None at a game's start);
    `mirrored` names them from the left paddle's side."""
    labels = {name: int(ram[index]) for name, index in RAM_LABELS.items()}
    in_play = labels["ball_y"] != 0
    was_in_play = previous_ram is not None and previous_ram[RAM_LABELS["ball_y"]] != 0
    moving = in_play and was_in_play
    labels["ball_vx"] = labels["ball_x"] - int(previous_ram[RAM_LABELS["ball_x"]]) if moving else 0
    labels["ball_vy"] = labels["ball_y"] - int(previous_ram[RAM_LABELS["ball_y"]]) if moving else 0
    labels["ball_in_play"] = int(in_play)
    enemy_y = RAM_LABELS["enemy_y"] if not mirrored else RAM_LABELS["player_y"]  # the opponent's byte
    enemy_vy = int(ram[enemy_y]) - int(previous_ram[enemy_y]) if previous_ram is not None else 0
    labels["enemy_vy"] = enemy_vy if abs(enemy_vy) <= PADDLE_JUMP else 0
    if mirrored:
        for mine, theirs in MIRROR_SWAPS:
            labels[mine], labels[theirs] = labels[theirs], labels[mine]
        labels["ball_x"] = BALL_X_MIRROR - labels["ball_x"] if in_play else labels["ball_x"]
        labels["ball_vx"] = -labels["ball_vx"]
    labels["ball_toward_player"] = int(moving and labels["ball_vx"] > 0)  # the agent's paddle is on its right
    return labels


def predictive_labels(labels: dict) -> dict[str, np.ndarray]:
    """The predictive labels (module docstring) of every step of one recorded game, from its labels by name
    (sequences over the game's steps, named from the agent's side)."""
    ball_x, ball_y, vx = (np.asarray(labels[name], np.int64) for name in ("ball_x", "ball_y", "ball_vx"))
    in_play = np.asarray(labels["ball_in_play"], bool)
    enemy_y = np.asarray(labels["enemy_y"], np.int64)
    player_score, enemy_score = np.asarray(labels["player_score"]), np.asarray(labels["enemy_score"])
    steps = len(ball_x)
    at_column = in_play & (vx > 0) & (ball_x >= PADDLE_REACH_X)
    arrivals = at_column & ~np.concatenate([[False], at_column[:-1]])  # the first step of each approach at the column
    # returned by the opponent
    turned = np.concatenate([in_play[:-1] & in_play[1:] & (vx[:-1] < 0) & (vx[1:] > 0), [False]])
    scored = np.concatenate([[False], (player_score[1:] != player_score[:-1]) | (enemy_score[1:] != enemy_score[:-1])])
    won = np.concatenate([[False], player_score[1:] > player_score[:-1]])
    result = {name: np.full(steps, UNDEFINED, np.int64) for name in PREDICTIVE_LABELS}
    moves = enemy_y[1:] - enemy_y[:-1]  # RAM rows grow downward
    result["enemy_next_move"][:-1] = np.select(
        [np.abs(moves) > PADDLE_JUMP, moves < 0, moves > 0], [UNDEFINED, ENEMY_UP, ENEMY_DOWN], ENEMY_STAYS
    )
    next_arrival = next_return = next_point = None
    for t in range(steps - 1, -1, -1):  # from the end: each step sees the next events after (or at) it
        if t + 1 < steps and scored[t + 1]:  # a point ends at t + 1: events after it belong to the next point
            next_point, next_arrival, next_return = t + 1, None, None
        if arrivals[t]:
            next_arrival = t
        if turned[t]:
            next_return = t
        if next_point is not None:
            result["wins_point"][t] = int(won[next_point])
        if next_arrival is not None:
            result["landing_y"][t] = ball_y[next_arrival]
            result["steps_to_landing"][t] = next_arrival - t
        if next_return is not None:
            result["enemy_contact_y"][t] = enemy_y[next_return]
    return result
