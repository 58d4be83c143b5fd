"""Ground truth from the emulator's RAM, named from the agent's side: the right paddle (single-player
Pong, and the first player of a two-player game), or the left one, mirrored.

The AtariARI labels for Pong (Anand et al. 2019; the dict of its ram_annotations.py), checked on this
emulator: byte 14 counts the right paddle's points (the agent's, AtariARI's player_score) and 13 the left's
(the built-in AI's); a test checks them against the score changes, and the ball's bytes against where the
ball is drawn on the screen. The paddles' x positions (added to AtariARI's dict after its paper) never
change in Pong (188 and 64): they are kept for its table and are constants.

What a player needs beyond them, derived from two consecutive agent steps: the ball's velocity, whether
the ball is in play (its height byte is 0 exactly while it is out of play), and whether it flies toward
the agent's paddle.

An agent on the left paddle sees the screen mirrored left-right, so its labels are mirrored too: its
paddle is `player`, the right one `enemy` (heights, x bytes and scores swap), and the ball's x is
mirrored on the 160-pixel screen (the 2-pixel ball is drawn at column x - 49, so mirrored it is at
column 207 - x: in RAM units, 256 - x), its horizontal velocity negated.
"""
from __future__ import annotations

import numpy as np

from pongrl.game import (RAM_BALL_X, RAM_BALL_Y, RAM_LEFT_PADDLE_X, RAM_LEFT_PADDLE_Y, RAM_RIGHT_PADDLE_X,
                         RAM_RIGHT_PADDLE_Y, RAM_SCORE_LEFT, RAM_SCORE_RIGHT)

# AtariARI's names for the RAM bytes (player = the agent, right paddle; enemy = the left paddle).
RAM_LABELS = {"player_y": RAM_RIGHT_PADDLE_Y, "player_x": RAM_RIGHT_PADDLE_X, "enemy_y": RAM_LEFT_PADDLE_Y,
              "enemy_x": RAM_LEFT_PADDLE_X, "ball_x": RAM_BALL_X, "ball_y": RAM_BALL_Y,
              "player_score": RAM_SCORE_RIGHT, "enemy_score": RAM_SCORE_LEFT}
DERIVED_LABELS = ("ball_vx", "ball_vy", "ball_in_play", "ball_toward_player")
LABELS = tuple(RAM_LABELS) + DERIVED_LABELS
# Scored by R^2 as well as by AtariARI's classification F1: quantities on a scale.
REGRESSION_LABELS = ("player_y", "enemy_y", "ball_x", "ball_y", "ball_vx", "ball_vy")


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
    if mirrored:
        for mine, theirs in MIRROR_SWAPS:
            labels[mine], labels[theirs] = labels[theirs], labels[mine]
        labels["ball_x"] = BALL_X_MIRROR - labels["ball_x"] if in_play else labels["ball_x"]
        labels["ball_vx"] = -labels["ball_vx"]
    labels["ball_toward_player"] = int(moving and labels["ball_vx"] > 0)  # the agent's paddle is on its right
    return labels
