"""Two-player Pong for matches between two trained agents, each seeing its own observation profile.

The emulator is the one under PettingZoo's `pong_v3` (multi_agent_ale_py, two-player "classic"
mode, or the cartridge's variation 3 on request): `first_0` moves the right paddle, the built-in
AI's opponent side in single-player Pong, `second_0` the left one. Every agent was trained on the
right paddle, so the player on the left sees its observations mirrored left-right (as the self-play
card does for `second_0`):

- "standard" (the DQN protocol): ALE grayscale, max over the step's last two frames, 84x84 by area
  interpolation, 4 frames stacked channel-first (older slots zero after a reset), score visible;
- "seed" (the self-play card): blue channel of the max over the last two RGB frames, tinyscaler
  bilinear 84x84, 4 frames stacked channel-last, score rows blanked.

One agent step is 4 raw frames with both players' actions repeated. A game ends at 21 points or is
cut after `max_frames` raw frames. Per raw frame the emulator rewards a point with +1 to the scorer
and -1 to the other, and a player who does not serve within 2 seconds with -1 alone (the score does
not change): points and serve penalties are counted apart.

Agents trained against the built-in AI never had to serve (the single-player game serves for them),
so between two of them the serving player idles into a serve penalty every 2 seconds and the game
stalls. `serve_assist` presses FIRE for both players while the ball is out of play (the ball's height
in RAM is 0 exactly then: measured 44-208 in play), which serves; in play the agents' own actions
always go through (FIRE is not neutral mid-rally in Pong).

Two-player Pong ignores the ALE seed (the games are determined by the actions), so variety between
games comes from a number of no-op frames at the start, drawn by the caller; it stays under the
2-second serve window so that no player is penalised before it can act.
"""
from __future__ import annotations

import numpy as np

from pongrl.envs.two_player import open_emulator
from pongrl.game import (CLASSIC_MODE, FIRE, FRAME_SKIP, NUM_ACTIONS, RAM_BALL_Y, SCREEN_HEIGHT, SCREEN_WIDTH,
                         MAX_CYCLES)
from pongrl.envs.views import VIEWS

MAX_START_NOOP_FRAMES = 60  # half the serve window: no penalty can fall before the players act
RIGHT, LEFT = 0, 1


class MatchGame:
    """One two-player game; `profiles` names what the right and the left player see, `mode` is the
    cartridge's two-player Pong variation (pong_v3's classic, 4, or 3)."""

    def __init__(self, profiles: tuple[str, str], max_frames: int = MAX_CYCLES, record_colour: bool = False,
                 serve_assist: bool | tuple[int, ...] = False, mode: int = CLASSIC_MODE,
                 extra_profiles: tuple[str, ...] = ()):
        """`serve_assist`: True for both players, or the sides (RIGHT, LEFT) it serves for;
        `extra_profiles`: more views of the game kept up to date (`observation(side, profile)`), for
        agents that watch without playing."""
        from multi_agent_ale_py.ale_python_interface import ale_lib
        from numpy.ctypeslib import as_ctypes

        self.ale = open_emulator(mode)
        self.lib, self.obj = ale_lib, self.ale.obj  # direct ctypes calls skip the wrapper's allocations
        self.action_map = self.ale.getMinimalActionSet().astype(np.intc)
        assert len(self.action_map) == NUM_ACTIONS
        self.profiles = profiles
        self.views = {profile: VIEWS[profile]() for profile in set(profiles) | set(extra_profiles)}
        self.need_gray = "standard" in self.views
        self.max_frames = max_frames
        self.record_colour = record_colour
        self.colour_frames: list[np.ndarray] = []
        self.assisted = (RIGHT, LEFT) if serve_assist is True else tuple(serve_assist or ())
        self._step_frames = 0

        self._acts = np.zeros(2, np.intc)
        self._rews = np.zeros(2, np.intc)
        # Two slots per format: the step's last frame and the one before it.
        self._rgb = np.zeros((2, SCREEN_HEIGHT, SCREEN_WIDTH, 3), np.uint8)
        self._gray = np.zeros((2, SCREEN_HEIGHT, SCREEN_WIDTH), np.uint8)
        self._c_acts, self._c_rews = as_ctypes(self._acts), as_ctypes(self._rews)
        self._c_rgb = [as_ctypes(self._rgb[k]) for k in range(2)]
        self._c_gray = [as_ctypes(self._gray[k]) for k in range(2)]
        self._ram = np.zeros(128, np.uint8)  # read in place by the serve assist every step
        self._c_ram = as_ctypes(self._ram)
        self._newest = 0

    def _grab(self) -> None:
        """Read the current screen into the older slot, which becomes the newest."""
        self._newest ^= 1
        self.lib.getScreenRGB(self.obj, self._c_rgb[self._newest])
        if self.need_gray:
            self.lib.getScreenGrayscale(self.obj, self._c_gray[self._newest])

    def _frame(self) -> None:
        self.lib.actMulti(self.obj, self._c_acts, self._c_rews)
        self.frames += 1
        right, left = int(self._rews[0]), int(self._rews[1])
        if right > 0 and left < 0:
            self.points[RIGHT] += 1
        elif left > 0 and right < 0:
            self.points[LEFT] += 1
        elif right < 0 and left == 0:
            self.penalties[RIGHT] += 1
        elif left < 0 and right == 0:
            self.penalties[LEFT] += 1

    def reset(self, noop_frames: int = 0) -> None:
        self.lib.reset_game(self.obj)
        self.frames = 0
        self.points = [0, 0]
        self.penalties = [0, 0]
        self.over = self.cut = False
        self._acts[:] = self.action_map[0]
        for _ in range(noop_frames):
            self._frame()
            if self.record_colour:
                self.colour_frames.append(self.rgb())
        self._grab()
        for view in self.views.values():
            view.reset(self._gray[self._newest], self._rgb[self._newest])

    def rgb(self) -> np.ndarray:
        """The full-colour screen at native resolution (210x160), score included."""
        return self.ale.getScreenRGB()

    def observation(self, side: int, profile: str | None = None) -> np.ndarray:
        """What the player on `side` (RIGHT or LEFT) sees, in its own profile or in `profile`, one of the
        extra ones (a contiguous copy)."""
        view = self.views[profile or self.profiles[side]]
        return np.ascontiguousarray(view.observation(mirror=side == LEFT))

    def step(self, action_right: int, action_left: int) -> None:
        """Play one agent step (up to 4 raw frames) with both players' actions."""
        self.begin_step(action_right, action_left)
        while not self.play_frame():
            pass

    def begin_step(self, action_right: int, action_left: int) -> None:
        """Set both players' actions for the next agent step, whose frames `play_frame` then plays
        one at a time (a person's paddle can change its action between them)."""
        actions = [action_right, action_left]
        if self.assisted and not self.ball_in_play():
            for side in self.assisted:
                actions[side] = FIRE
        self._acts[0], self._acts[1] = self.action_map[actions[RIGHT]], self.action_map[actions[LEFT]]
        self._step_frames = 0

    def play_frame(self, action_left: int | None = None) -> bool:
        """Play one raw frame of the current step, the left player's action replaced by `action_left`
        if given; returns True once the step is complete (4 frames, or the game ended), after which
        the observations show it."""
        if action_left is not None:
            self._acts[1] = self.action_map[action_left]
        self._frame()
        self._step_frames += 1
        self.over = bool(self.lib.game_over(self.obj))
        self.cut = not self.over and self.frames >= self.max_frames
        # Every frame is read so that the two slots always hold the last two frames, also
        # when a game ends early in a step (then the other slot holds the previous step's).
        self._grab()
        if self.record_colour:
            self.colour_frames.append(self._rgb[self._newest].copy())
        if not (self.over or self.cut or self._step_frames == FRAME_SKIP):
            return False
        gray = np.maximum(self._gray[0], self._gray[1]) if self.need_gray else None
        rgb = np.maximum(self._rgb[0], self._rgb[1])
        for view in self.views.values():
            view.push(gray, rgb)
        return True

    def screen(self) -> np.ndarray:
        """The last raw frame (210, 160, 3), as the emulator drew it; a view valid until the next frame."""
        return self._rgb[self._newest]

    def ram(self) -> np.ndarray:
        """The emulator's 128 bytes of RAM, read now (a view valid until the next read)."""
        self.lib.getRAM(self.obj, self._c_ram)
        return self._ram

    def ball_in_play(self) -> bool:
        return bool(self.ram()[RAM_BALL_Y])

    @property
    def done(self) -> bool:
        return self.over or self.cut

    def close(self) -> None:
        self.views.clear()
        del self.ale
