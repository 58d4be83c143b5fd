"""Two-player Pong's one emulator driver, `TwoPlayerGames`: self-play training, the PettingZoo env, matches
between agents, videos, probe collection and a person's game in the browser all play through it.

The emulator is the one under PettingZoo's `pong_v3` (multi_agent_ale_py, two-player "classic" mode 4, or the
cartridge's variation 3 on request): `first_0` moves the right paddle (side RIGHT, the built-in AI's opponent
in single-player Pong), `second_0` the left one (side LEFT). Every agent was trained on the right paddle, so a
player on the left sees its observations mirrored left-right, as the self-play card does for `second_0`.

It reproduces pettingzoo/atari/base_atari_env.py + the self-play card's SuperSuit chain:
- set-up: repeat_action_probability 0, load the ROM, mode 4 (or `mode`); a seed sets random_seed, reloads the
  ROM and sets the mode again, then reset_game;
- each raw frame acts with both players' actions mapped through the minimal action set; the frame counter (reset
  with the game) cuts the game at `max_cycles` raw frames (a truncation); game_over() ends it at 21 points;
- frame skip 4, stopping early at the frame where the game ends; rewards summed over the frames (the vector
  envs clip them to [-1, 1]);
- max over the last two raw frames: across the step boundary when the game ends on a step's first frame, and
  the reset frame alone at a reset; then each observation profile's own processing (pongrl.envs.views).

Facts it relies on (multi_agent_ale_py 0.1.12, pettingzoo 1.27.0):
- rewards per raw frame: a point is +1 for the scorer and -1 for the other; a player who does not serve
  within 2 seconds (120 frames) gets -1 alone and the score does not change (`score_events` tells them apart);
- with repeat_action_probability 0 the ALE seed changes nothing in Pong: games are determined by the actions
  alone, so variety between games comes from no-op frames played at the start (`starts`), kept under the
  2-second serve window so that no player is penalised before it can act.

Agents trained against the built-in AI never had to serve (the single-player game serves for them), so
between two of them the serving player idles into a serve penalty every 2 seconds and the game stalls.
`serve_assist` presses FIRE for the given sides while the ball is out of play (the ball's height in RAM is 0
exactly then: measured 44-208 in play), which serves; in play the players' own actions always go through
(FIRE is not neutral mid-rally in Pong).

Over 400 lines on purpose: one driver for every use of the two-player game (it replaced two), its frame loop,
max-pooling, counting and starts kept together so that training and matches cannot drift apart.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pongrl.envs.views import NEEDS_GRAY, VIEWS, SeedFrameStack, SeedResizer, seed_frame
from pongrl.game import (
    CLASSIC_MODE,
    FIRE,
    FRAME_SKIP,
    LEFT,
    MAX_CYCLES,
    NUM_ACTIONS,
    RAM_BALL_Y,
    RAM_SCORE_LEFT,
    RAM_SCORE_RIGHT,
    RIGHT,
    SCREEN_HEIGHT,
    SCREEN_WIDTH,
    WINNING_SCORE,
)


def pong_rom_path() -> str:
    """ale-py's bundled Pong ROM; multi_agent_ale_py ships none (and AutoROM needs the internet)."""
    import ale_py

    return os.path.join(os.path.dirname(ale_py.__file__), "roms", "pong.bin")


def open_emulator(mode: int = CLASSIC_MODE):
    """A two-player emulator (multi_agent_ale_py) with Pong loaded in game variation `mode`, without
    sticky actions and without its banner on the terminal."""
    import multi_agent_ale_py

    multi_agent_ale_py.ALEInterface.setLoggerMode("error")
    ale = multi_agent_ale_py.ALEInterface()
    ale.setFloat(b"repeat_action_probability", 0.0)
    ale.loadROM(pong_rom_path())
    ale.setMode(mode)
    return ale


def rom_install_path() -> str:
    """What to pass as pong_v3's `auto_rom_install_path`: it looks for `<path>/pong.bin`, then
    `<path>/roms/pong.bin`, so ale-py's package folder works."""
    return os.path.dirname(os.path.dirname(pong_rom_path()))


def score_events(right, left):
    """Points and serve penalties in the rewards of the right and the left player over one step (numbers or
    arrays, clipped or not): (+, -) is a point for the right player, (-, +) one for the left, a negative reward
    against a zero a serve penalty. A point and a penalty never fall in the same 4 frames: penalties happen only
    while the ball is out of play. Returns (point_right, point_left, penalty_right, penalty_left)."""
    return (right > 0) & (left < 0), (left > 0) & (right < 0), (right < 0) & (left == 0), (left < 0) & (right == 0)


class TwoPlayerGames:
    """`num_games` two-player Pong emulators in this process, stepped one agent step at a time (all games, or
    the ones named), or one raw frame at a time for a person's paddle (`begin_step` / `play_frame`).

    - `profiles`: the observation profiles kept for every game (`observation(g, side, profile)`); "seed" uses
      a batched fast path (one tinyscaler call per four frames) and `write_players` for the vector envs;
    - `autoreset`: an ended game starts again at once (its result stays in `last_results[g]`); off, it stays
      at its last frame until `reset_game`;
    - `starts[g]`: the no-op frame counts game g starts its successive games with (0 once the list runs out);
    - `sticky_actions` p > 0 (the ALE v5 protocol, not in the card) plays on every raw frame each player's
      previous frame's action again with probability p, instead of the one asked for. The emulator's own setting
      repeats the first player's action only (measured), so the draws are made here, per game from a generator
      seeded with the game's seed; a reset plays NOOP as the previous action, as ALE does;
    - `serve_assist`: True for both sides, or the sides it serves for in every game (see the module docstring);
      `assist_serves` adds a side of one game (a frozen opponent's in self-play training);
    - `record_colour`: every raw frame's colour screen is appended to `colour_frames[g]`, for videos.

    Per game, kept up to date: `frames` (raw frames since the reset), `steps`, `points` and `penalties` (by
    side), `over`, `cut`; per step: `rewards` (by side, summed over the frames), `terminated`, `truncated`,
    `scored` (a point by side).
    """

    SLOTS = 1 + FRAME_SKIP  # frames kept per game: the previous step's last + this step's

    def __init__(
        self,
        num_games: int,
        max_cycles: int = MAX_CYCLES,
        num_threads: int = 1,
        mode: int = CLASSIC_MODE,
        autoreset: bool = True,
        sticky_actions: float = 0.0,
        profiles: tuple[str, ...] = ("seed",),
        serve_assist: bool | tuple[int, ...] = False,
        record_colour: bool = False,
        starts: list[list[int]] | None = None,
    ):
        from multi_agent_ale_py.ale_python_interface import ale_lib
        from numpy.ctypeslib import as_ctypes

        self.lib = ale_lib  # the ctypes library: calling it directly skips the wrapper's allocations
        self.num_games = n = num_games
        self.max_cycles = max_cycles
        self.mode = mode
        self.autoreset = autoreset
        self.sticky_actions = sticky_actions
        self.assisted = (RIGHT, LEFT) if serve_assist is True else tuple(serve_assist or ())
        self._assist = np.zeros((n, 2), bool)  # per game and side: whose serves are pressed (assist_serves)
        self._assist[:, list(self.assisted)] = True
        self.record_colour = record_colour
        self.colour_frames: list[list[np.ndarray]] = [[] for _ in range(n)]
        self.starts = [list(game_starts) for game_starts in starts] if starts else [[] for _ in range(n)]
        self.ales = [open_emulator(mode) for _ in range(n)]
        assert all(ale.numPlayersActive() == 2 for ale in self.ales)
        self.action_map = self.ales[0].getMinimalActionSet().astype(np.intc)
        assert len(self.action_map) == NUM_ACTIONS
        self._objs = [ale.obj for ale in self.ales]

        # Observation profiles: the seed stacks on their batched path, the others as pongrl.envs.views keeps them.
        self.profiles = tuple(dict.fromkeys(profiles))
        self.seed_stack = SeedFrameStack(n) if "seed" in self.profiles else None
        self.resizer = SeedResizer(2 * n) if self.seed_stack else None  # a step resizes one frame per game + reset
        self.views = {profile: VIEWS[profile](n) for profile in self.profiles if profile != "seed"}
        self.need_gray = any(profile in NEEDS_GRAY for profile in self.profiles)

        # ctypes views made once per game: actions, rewards, RAM, and rings of frames whose slot `self._prev[g]`
        # holds the last frame of the previous step (no copying between steps).
        self._acts = np.zeros((n, 2), np.intc)  # what each raw frame plays
        self._asked = np.zeros((n, 2), np.intc)  # what the players asked for this step (sticky actions)
        self._sticky_rngs = [np.random.default_rng(g) for g in range(n)]
        self._repeats = np.zeros((n, FRAME_SKIP, 2), bool)
        self._rews = np.zeros((n, 2), np.intc)
        self._ram = np.zeros((n, 128), np.uint8)
        self._rgb = np.zeros((n, self.SLOTS, SCREEN_HEIGHT, SCREEN_WIDTH, 3), np.uint8)
        gray_shape = (n, self.SLOTS, SCREEN_HEIGHT, SCREEN_WIDTH) if self.need_gray else (n, 0, 0, 0)
        self._gray = np.zeros(gray_shape, np.uint8)
        self._c_acts = [as_ctypes(self._acts[g]) for g in range(n)]
        self._c_rews = [as_ctypes(self._rews[g]) for g in range(n)]
        self._c_ram = [as_ctypes(self._ram[g]) for g in range(n)]
        self._c_rgb = [[as_ctypes(self._rgb[g, k]) for k in range(self.SLOTS)] for g in range(n)]
        self._c_gray = [
            [as_ctypes(self._gray[g, k]) for k in range(self.SLOTS)] if self.need_gray else [] for g in range(n)
        ]
        self._pooled = np.zeros((n, SCREEN_HEIGHT, SCREEN_WIDTH, 3), np.uint8)
        self._prev = [0] * n
        self._frame_in_step = [0] * n
        self._step_rewards = [[0, 0] for _ in range(n)]
        self._fetch_every_frame = [False] * n

        self.frames = [0] * n  # raw frames since each game's reset (pettingzoo's self.frame)
        self.steps = [0] * n
        self.points = np.zeros((n, 2), np.int64)
        self.penalties = np.zeros((n, 2), np.int64)
        self.over = np.zeros(n, bool)
        self.cut = np.zeros(n, bool)
        self.rewards = np.zeros((n, 2), np.int64)
        self.scored = np.zeros((n, 2), bool)
        self.terminated = np.zeros(n, bool)
        self.truncated = np.zeros(n, bool)
        self.last_results: list[dict | None] = [None] * n

        num_threads = max(1, min(num_threads, n))
        self._pool = ThreadPoolExecutor(num_threads) if num_threads > 1 else None
        self._partition = [range(t, n, num_threads) for t in range(num_threads)]

    def assist_serves(self, g: int, side: int) -> None:
        """Serve for the player on `side` of game g from now on (see `serve_assist`)."""
        self._assist[g, side] = True

    # -- what the games show ------------------------------------------------------------------------------------

    def observation(self, g: int, side: int, profile: str = "seed") -> np.ndarray:
        """What the player on `side` of game g sees in `profile` (a view valid until the next step)."""
        if profile == "seed":
            return self.seed_stack.observation(g, mirror=side == LEFT)
        return self.views[profile].observation(g, mirror=side == LEFT)

    def write_players(self, out: np.ndarray, games=None) -> None:
        """Both players' seed-profile observations of the given games (all by default) into `out`, (2n, 84, 84,
        4) uint8: entry 2g is `first_0`, 2g + 1 `second_0`, mirrored (the vector envs' layout)."""
        self.seed_stack.write_players(out, games)

    def ram(self, g: int) -> np.ndarray:
        """Game g's emulator RAM (128 bytes), a copy."""
        self.lib.getRAM(self._objs[g], self._c_ram[g])
        return self._ram[g].copy()

    def screen(self, g: int) -> np.ndarray:
        """Game g's last raw RGB frame (210, 160, 3), as the emulator drew it; a view valid until the next frame."""
        return self._rgb[
            g, self._prev[g] if not self._frame_in_step[g] else (self._prev[g] + self._frame_in_step[g]) % self.SLOTS
        ]

    def ball_in_play(self, g: int) -> bool:
        self.lib.getRAM(self._objs[g], self._c_ram[g])
        return bool(self._ram[g, RAM_BALL_Y])

    def step_rewards(self, g: int) -> tuple[int, int]:
        """Game g's rewards (right, left) over its current step's frames so far (`play_frame` plays them)."""
        return tuple(self._step_rewards[g])

    def done(self, g: int) -> bool:
        return bool(self.over[g] or self.cut[g])

    def result(self, g: int) -> dict:
        """Game g's counts so far: points and serve penalties by side, agent steps, raw frames, how it ended."""
        return {
            "points": tuple(int(p) for p in self.points[g]),
            "penalties": tuple(int(p) for p in self.penalties[g]),
            "steps": self.steps[g],
            "frames": self.frames[g],
            "over": bool(self.over[g]),
            "cut": bool(self.cut[g]),
        }

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
        self.ales.clear()  # ALEInterface.__del__ frees each emulator
        self.views.clear()

    # -- starting games -----------------------------------------------------------------------------------------

    def reset(self, obs_out: np.ndarray | None = None, seed: int | None = None) -> None:
        """Start every game (game g seeded with seed + g when a seed is given); with `obs_out`, write both
        players' seed-profile observations into it (the vector envs' layout)."""
        for g in range(self.num_games):
            rgb = self._reset_game(g, None if seed is None else seed + g)
            if self.resizer is not None:
                self.resizer.blue[g] = rgb[:, :, 2]
        if self.resizer is not None:
            frames = self.resizer.resize(self.num_games)
            for g in range(self.num_games):
                self.seed_stack.reset(g, frames[g])
        if obs_out is not None:
            self.write_players(obs_out)

    def reset_game(self, g: int, seed: int | None = None) -> None:
        """Start game g again (after its next no-op start, if any)."""
        rgb = self._reset_game(g, seed)
        if self.seed_stack is not None:
            self.seed_stack.reset(g, seed_frame(rgb))

    def _reset_game(self, g: int, seed: int | None) -> np.ndarray:
        """Reset game g (seeding it first, as pettingzoo's _seed does, if a seed is given), play its no-op
        start, start the non-seed views; returns the first RGB frame (the seed stack is the caller's)."""
        obj = self._objs[g]
        if seed is not None:
            ale = self.ales[g]
            ale.setInt(b"random_seed", int(seed))
            ale.loadROM(pong_rom_path())
            ale.setMode(self.mode)
            self._sticky_rngs[g] = np.random.default_rng(int(seed))
        self._acts[g] = self.action_map[0]
        self.lib.reset_game(obj)
        noop_frames = self.starts[g].pop(0) if self.starts[g] else 0
        for _ in range(noop_frames):
            self.lib.actMulti(obj, self._c_acts[g], self._c_rews[g])
            if self.record_colour:
                self.lib.getScreenRGB(obj, self._c_rgb[g][self._prev[g]])
                self.colour_frames[g].append(self._rgb[g, self._prev[g]].copy())
        self.frames[g], self.steps[g] = noop_frames, 0
        self.points[g] = self.penalties[g] = 0
        self.over[g] = self.cut[g] = False
        self._frame_in_step[g] = 0
        slot = self._prev[g]
        self.lib.getScreenRGB(obj, self._c_rgb[g][slot])
        if self.need_gray:
            self.lib.getScreenGrayscale(obj, self._c_gray[g][slot])
        for view in self.views.values():
            view.reset(g, self._gray[g, slot] if self.need_gray else None, self._rgb[g, slot])
        return self._rgb[g, slot]

    # -- playing ------------------------------------------------------------------------------------------------

    def step(self, actions, obs_out, final_out, rewards_out, terminated_out, truncated_out) -> np.ndarray:
        """The vector envs' step: one agent step in every game, `actions` laid out as `write_players` lays out
        observations; rewards clipped to [-1, 1]. Returns the boolean mask of the games that ended.

        Ended games' last observations go to `final_out`; `obs_out` already holds the next game's first
        observation for them (same-step autoreset). Without autoreset, `obs_out` holds their last observations
        and `final_out` is left alone."""
        ended = self.play_step(np.asarray(actions).reshape(-1, 2), final_out=final_out)
        rewards_out[:] = np.clip(self.rewards, -1, 1).reshape(-1)
        terminated_out[:] = np.repeat(self.terminated, 2)
        truncated_out[:] = np.repeat(self.truncated, 2)
        self.write_players(obs_out)
        mask = np.zeros(self.num_games, bool)
        mask[ended] = True
        return mask

    def play_step(self, actions: np.ndarray, games=None, final_out: np.ndarray | None = None) -> list[int]:
        """One agent step of the given games (all by default): `actions[g]` is game g's (right, left) pair of
        action indices. Returns the games that ended; with autoreset they have started again (their results in
        `last_results`, their last seed-profile observations in `final_out` when given)."""
        games = range(self.num_games) if games is None else sorted(games)
        self._asked[games] = self.action_map[np.asarray(actions)[games]]
        if self._pool is None or len(games) < 2:
            ended = self._emulate(games)
        else:
            parts = self._pool.map(self._emulate, [[g for g in games if g in part] for part in self._partition])
            ended = sorted(g for part in parts for g in part)
        self._count(games)
        restarted = ended if self.autoreset else []
        for g in restarted:
            self.last_results[g] = self.result(g)
        if self.seed_stack is None:
            for g in restarted:
                self._reset_game(g, None)
            return ended

        # Start the next games now, so that one resize covers the ended games' last frames and the new games'
        # first frames. The step's pooled frames sit at the games' own positions; move them to the front.
        blue, count = self.resizer.blue, len(games)
        for j, g in enumerate(games):  # ascending, so a position is read before it is overwritten
            if j != g:
                blue[j] = blue[g]
        for j, g in enumerate(restarted):
            blue[count + j] = self._reset_game(g, None)[:, :, 2]
        frames = self.resizer.resize(count + len(restarted))
        if count == self.num_games:
            self.seed_stack.push_all(frames[:count])
        else:
            for j, g in enumerate(games):
                self.seed_stack.push(g, frames[j])
        if restarted:
            if final_out is not None:
                self.write_players(final_out, ended)
            for j, g in enumerate(ended):
                self.seed_stack.reset(g, frames[count + j])
        return ended

    def _count(self, games) -> None:
        """Count the step just played by the given games: rewards, points, serve penalties, how games ended."""
        every = len(games) == self.num_games
        games = slice(None) if every else list(games)
        self.rewards[games] = self._step_rewards if every else [self._step_rewards[g] for g in games]
        self.scored[:] = False
        if self.rewards[games].any():  # most steps score nothing
            rewards = self.rewards[games]
            point_right, point_left, penalty_right, penalty_left = score_events(rewards[:, 0], rewards[:, 1])
            self.scored[games] = np.stack([point_right, point_left], 1)
            self.points[games] += self.scored[games]
            self.penalties[games] += np.stack([penalty_right, penalty_left], 1)
        self.over[games] = self.terminated[games]
        self.cut[games] = self.truncated[games] & ~self.terminated[games]
        for g in range(self.num_games) if every else games:
            self.steps[g] += 1

    def begin_step(self, g: int, action_right: int, action_left: int) -> None:
        """Set both players' actions for game g's next agent step, whose frames `play_frame` then plays one at a
        time (a person's paddle can change its action between them)."""
        self._asked[g] = self.action_map[[action_right, action_left]]
        self._begin(g)
        self._fetch_every_frame[g] = True  # the screen is shown after every frame

    def play_frame(self, g: int, action_left: int | None = None) -> bool:
        """Play one raw frame of game g's current step, the left player's action replaced by `action_left` if
        given; returns True once the step is complete (4 frames, or the game ended), after which the
        observations show it. No autoreset here: `reset_game` starts the next game."""
        if action_left is not None:
            self._asked[g, LEFT] = self._acts[g, LEFT] = self.action_map[action_left]
        if not self._play(g, frames=1):
            return False
        self._end_step(g, into_resizer=False)
        self._count([g])
        return True

    def _emulate(self, games) -> list[int]:
        """Emulate one agent step of the given games and max-pool their last two frames (the seed profile's into
        the resizer's buffer at the games' positions); returns the games that ended. The emulator calls release
        the GIL (ctypes), so worker threads can run this on disjoint games."""
        ended = []
        for g in games:
            self._begin(g)
            self._play(g)
            self._end_step(g, into_resizer=True)
            if self.terminated[g] or self.truncated[g]:
                ended.append(g)
        return ended

    def _begin(self, g: int) -> None:
        if self._assist[g].any() and not self.ball_in_play(g):
            self._asked[g, self._assist[g]] = self.action_map[FIRE]
        self._frame_in_step[g] = 0
        self._step_rewards[g] = [0, 0]
        self._fetch_every_frame[g] = self.record_colour or self._may_end_early(g)
        if self.sticky_actions:
            self._repeats[g] = self._sticky_rngs[g].random((FRAME_SKIP, 2)) < self.sticky_actions
        else:
            self._acts[g] = self._asked[g]

    def _may_end_early(self, g: int) -> bool:
        """Whether game g's next step can end before its last raw frame. The usual path reads only the last
        two of the four frames; a step that ends on frame k needs frames k - 1 and k. Truncation is known from
        the frame counter; game over needs a player at 20 points."""
        if self.frames[g] + FRAME_SKIP - 1 >= self.max_cycles:
            return True
        self.lib.getRAM(self._objs[g], self._c_ram[g])
        ram = self._ram[g]
        return max(ram[RAM_SCORE_RIGHT], ram[RAM_SCORE_LEFT]) >= WINNING_SCORE - 1

    def _play(self, g: int, frames: int = FRAME_SKIP) -> bool:
        """Play up to `frames` raw frames of game g's current step; True once the step is complete."""
        act, game_over, get_rgb = self.lib.actMulti, self.lib.game_over, self.lib.getScreenRGB
        obj, c_acts, c_rews, c_rgb = self._objs[g], self._c_acts[g], self._c_rews[g], self._c_rgb[g]
        sticky, need_gray, slots = self.sticky_actions, self.need_gray, self.SLOTS
        prev, k, count = self._prev[g], self._frame_in_step[g], self.frames[g]
        fetch_every_frame = self._fetch_every_frame[g]
        reward_right = reward_left = 0
        complete = False
        for _ in range(frames):
            k += 1
            if sticky:
                np.copyto(self._acts[g], self._asked[g], where=~self._repeats[g, k - 1])
            act(obj, c_acts, c_rews)
            reward_right += c_rews[0]
            reward_left += c_rews[1]
            count += 1
            if fetch_every_frame or k >= FRAME_SKIP - 1:
                get_rgb(obj, c_rgb[(prev + k) % slots])
                if need_gray:
                    self.lib.getScreenGrayscale(obj, self._c_gray[g][(prev + k) % slots])
                if self.record_colour:
                    self.colour_frames[g].append(self._rgb[g, (prev + k) % slots].copy())
            over = game_over(obj)
            truncated = count >= self.max_cycles
            if over or truncated or k == FRAME_SKIP:
                self.terminated[g], self.truncated[g] = over, truncated
                complete = True
                break
        self._step_rewards[g][0] += reward_right
        self._step_rewards[g][1] += reward_left
        self._frame_in_step[g], self.frames[g] = k, count
        return complete

    def _end_step(self, g: int, into_resizer: bool) -> None:
        """Max-pool game g's last two frames of the step just played into its views: the seed profile's blue
        channel into the resizer's buffer at position g (`into_resizer`: the batched path), or straight into its
        stack."""
        prev, k, slots = self._prev[g], self._frame_in_step[g], self.SLOTS
        if k < FRAME_SKIP and not self._fetch_every_frame[g]:  # a guard: never max-pool frames not read
            raise RuntimeError(f"game {g} ended on frame {k} of a step that was not expected to end early")
        # The last two raw frames; when the game ended on the first frame, the other one is the previous step's
        # last frame (slot `prev`).
        last, before = (prev + k) % slots, (prev + k - 1) % slots
        gray = np.maximum(self._gray[g, last], self._gray[g, before]) if self.need_gray else None
        for view in self.views.values():  # the non-seed profiles are built from the grayscale screen
            view.push(g, gray, None)
        if self.seed_stack is not None and into_resizer:
            np.maximum(self._rgb[g, last, :, :, 2], self._rgb[g, before, :, :, 2], out=self.resizer.blue[g])
        elif self.seed_stack is not None:
            pooled = np.maximum(self._rgb[g, last], self._rgb[g, before], out=self._pooled[g])
            self.seed_stack.push(g, seed_frame(pooled))
        self._prev[g], self._frame_in_step[g] = (prev + k) % slots, 0
