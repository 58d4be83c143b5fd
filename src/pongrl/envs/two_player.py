"""Two-player Pong (PettingZoo `pong_v3`) for self-play, with the self-play seed's observations.

The seed (a cleanRL PPO self-play run) builds its observations with this chain:

    pettingzoo.atari.pong_v3.parallel_env()
    -> supersuit max_observation_v0(2) -> frame_skip_v0(4) -> clip_reward_v0(-1, 1)
    -> color_reduction_v0("B") (blue channel) -> resize_v1(84, 84) (tinyscaler, bilinear)
    -> frame_stack_v1(4) (channel-last, zeros before the first frame)
    -> rows 0..8 set to 0 (the score) -> `second_0`'s image mirrored left-right.

Agents: `first_0` moves the right paddle, `second_0` the left one; one policy serves both, so every
game contributes two batch entries, player 0 (`first_0`) then player 1 (`second_0`).

Three parts:
- seed-profile helpers (`seed_frame`, `SeedResizer`, `SeedFrameStack`): the blue/resize/stack/blank/
  mirror steps on their own, usable by any emulator loop (two-player here, or a single-player env
  that wants the seed's observations);
- `ReferenceSelfPlayEnv`: the seed's chain built from PettingZoo and SuperSuit themselves;
- `FastSelfPlayEnv`: the same observations, rewards and episode ends, driving `multi_agent_ale_py`
  (the emulator under pong_v3) directly with the preprocessing in numpy/tinyscaler.

Both vector envs are Gymnasium `VectorEnv`s of 2G sub-envs, one per player: `reset(seed=) -> (obs
(2G, 84, 84, 4) uint8, {})`; `step(actions (2G,)) -> obs, rewards (float32, clipped to [-1, 1]),
terminated, truncated (bool), infos`, with same-step autoreset (`metadata["autoreset_mode"]`): when
a game ends, `obs` already starts the next game. `infos` follows Gymnasium's vector conventions
(a key's boolean mask under "_key"), with keys only on steps where a game ended:
- "final_obs": (2G, 84, 84, 4), the ended games' last observations, and for the other games their
  current ones, so `infos.get("final_obs", obs)` is always the observation to bootstrap from;
  "_final_obs" marks the ended games' players;
- "episode": per-player arrays of length 2G, valid where "_episode" is True: "points_won",
  "points_lost" (the true score), "serve_penalties", "r" (the clipped return) and "l" (agent
  steps), the last two named as Gymnasium's RecordEpisodeStatistics names them.

Facts the implementation relies on (multi_agent_ale_py 0.1.12, pettingzoo 1.27.0, supersuit 3.11.0):
- rewards per raw frame: a point is +1 for the scorer and -1 for the other; a player who does not
  serve within 2 seconds (120 frames) gets -1 alone, and the score does not change;
- `max_cycles` counts raw frames (4 per agent step) and ends the game as a truncation;
- with repeat_action_probability 0 the ALE seed changes nothing in Pong: games are determined by
  the actions alone.
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import gymnasium
import numpy as np
import tinyscaler
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from pongrl.game import (CLASSIC_MODE, FRAME_SIZE, FRAME_SKIP, FRAME_STACK, MAX_CYCLES, NUM_ACTIONS, PLAYERS,
                         RAM_SCORE_LEFT, RAM_SCORE_RIGHT, SCORE_ROWS, SCREEN_HEIGHT, SCREEN_WIDTH, WINNING_SCORE)


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


# ---------------------------------------------------------------------------------------------
# Seed profile: blue channel, tinyscaler bilinear 84x84, stack of 4, score blanked, mirroring.
# ---------------------------------------------------------------------------------------------

def seed_frame(rgb: np.ndarray) -> np.ndarray:
    """One (210, 160, 3) RGB frame (already max-pooled) -> the seed's (84, 84) uint8 image.

    This is SuperSuit's color_reduction_v0("B") + resize_v1(84, 84) with the same library and
    call: tinyscaler.scale(..., size=(84, 84), mode="bilinear"). tinyscaler converts uint8 to
    float32 / 255, scales, and converts back with `(x * 255).astype(uint8)` (truncation, not
    rounding), which no other resizer reproduces, so it is used here too. Score rows are not
    blanked here: that belongs to the stack (the seed blanks after stacking).
    """
    blue = np.ascontiguousarray(rgb[:, :, 2])
    return tinyscaler.scale(blue, (FRAME_SIZE, FRAME_SIZE), mode="bilinear")


class SeedResizer:
    """Batched `seed_frame` for blue images, bit-identical to it (a test checks).

    tinyscaler always works on 4-channel float32 images and computes every channel with the same
    arithmetic independently (SIMD lanes); for a grey image it copies the grey value into all four
    channels. Putting four different blue images into the four channels therefore gives each
    image exactly the result of its own call, with a quarter of the calls and conversions.
    """

    def __init__(self, capacity: int):
        groups = max(1, -(-capacity // 4))
        self.blue = np.zeros((groups * 4, SCREEN_HEIGHT, SCREEN_WIDTH), np.uint8)  # filled by the caller
        self._packed = np.zeros((SCREEN_HEIGHT, SCREEN_WIDTH, 4), np.float32)
        self._scaled = np.empty((FRAME_SIZE, FRAME_SIZE, 4), np.float32)
        self._out = np.empty((groups * 4, FRAME_SIZE, FRAME_SIZE), np.uint8)

    def resize(self, count: int) -> np.ndarray:
        """Resize `self.blue[:count]`; returns (count, 84, 84) uint8, a view valid until the next call."""
        for first in range(0, count, 4):
            for channel in range(4):
                self._packed[:, :, channel] = self.blue[first + channel]
            # tinyscaler's own conversions, step for step: float32 * (1/255) in, * 255 and
            # truncation to uint8 out.
            self._packed *= np.float32(1.0 / 255.0)
            tinyscaler.scale(self._packed, (FRAME_SIZE, FRAME_SIZE), mode="bilinear", dst=self._scaled)
            self._scaled *= np.float32(255.0)
            self._out[first:first + 4] = self._scaled.transpose(2, 0, 1)  # float -> uint8 truncates
        return self._out[:count]


class SeedFrameStack:
    """Frame stacks of the seed for `n` games: (84, 84, 4) uint8 channel-last, newest last.

    Like SuperSuit's frame_stack_v1, a reset fills the older slots with zeros (not with copies of
    the first frame). Every stored frame has its score rows 0..8 set to 0, so the whole stack has
    them blank, as the seed's in-place `obs[:9] = 0` leaves it.

    The four uint8 channels of a pixel are one little-endian uint32 (channel 0 the low byte), so
    "drop the oldest frame, append the new one" is `(pixel >> 8) | (new << 24)` on whole images,
    much faster than moving channel-last bytes, and a left-right mirror moves whole pixels.
    """

    def __init__(self, n: int):
        assert sys.byteorder == "little", "the uint32 view of the stacks assumes a little-endian machine"
        self.stacks = np.zeros((n, FRAME_SIZE, FRAME_SIZE, FRAME_STACK), np.uint8)
        self._pixels = self.stacks.view(np.uint32)[..., 0]  # (n, 84, 84), the same memory
        self._new = np.zeros((n, FRAME_SIZE, FRAME_SIZE), np.uint32)

    def reset(self, i: int, frame: np.ndarray) -> None:
        """Start game i's stack: zeros, then `frame` (84, 84) as the newest."""
        self._pixels[i] = 0
        self._pixels[i, SCORE_ROWS:] = frame[SCORE_ROWS:].astype(np.uint32) << 24

    def push_all(self, frames: np.ndarray) -> None:
        """Append one (84, 84) frame to every game's stack; `frames` is (n, 84, 84) uint8."""
        self._new[:, SCORE_ROWS:] = frames[:, SCORE_ROWS:]
        self._new <<= 24
        self._pixels >>= 8
        self._pixels |= self._new

    def push(self, i: int, frame: np.ndarray) -> None:
        """Append a frame to game i's stack only."""
        self._pixels[i] >>= 8
        self._pixels[i, SCORE_ROWS:] |= frame[SCORE_ROWS:].astype(np.uint32) << 24

    def observation(self, i: int, mirror: bool = False) -> np.ndarray:
        """Game i's stack as a player sees it: `mirror=True` for `second_0` (left-right flip)."""
        return self.stacks[i, :, ::-1] if mirror else self.stacks[i]

    def write_players(self, out: np.ndarray, games=None) -> None:
        """Write both players' observations of the given games (all by default) into `out`,
        shaped (2 * n, 84, 84, 4) uint8: entry 2g is `first_0`, entry 2g + 1 `second_0`, mirrored."""
        pairs = out.view(np.uint32)[..., 0].reshape(-1, 2, FRAME_SIZE, FRAME_SIZE)
        if games is None:
            pairs[:, 0] = self._pixels
            pairs[:, 1] = self._pixels[:, :, ::-1]
        else:
            pairs[games, 0] = self._pixels[games]
            pairs[games, 1] = self._pixels[games][:, :, ::-1]


# ---------------------------------------------------------------------------------------------
# Game results for infos, computed the same way from the clipped rewards in both envs.
# ---------------------------------------------------------------------------------------------

class Scoreboard:
    """Per-agent points won/lost, serve penalties, return and length of the current games.

    From each agent step's clipped rewards (r_first, r_second) of a game: (+1, -1) or (-1, +1) is a
    point; -1 for one player and 0 for the other is a serve penalty (the multi-agent ALE's -1 for
    not serving within 2 seconds; the score does not change). A point and a penalty cannot fall in
    the same 4 frames: penalties only happen while the ball is out of play.
    """

    def __init__(self, num_games: int):
        n = 2 * num_games
        self.won = np.zeros(n, np.int64)
        self.lost = np.zeros(n, np.int64)
        self.penalties = np.zeros(n, np.int64)
        self.returns = np.zeros(n, np.float64)
        self.lengths = np.zeros(n, np.int64)

    def update(self, rewards: np.ndarray, done: np.ndarray) -> tuple[dict, np.ndarray] | None:
        """Count this step; returns the finished games' results and their players' mask (or None),
        and restarts those games' counts."""
        pairs = rewards.reshape(-1, 2)
        point_first = (pairs[:, 0] > 0) & (pairs[:, 1] < 0)
        point_second = (pairs[:, 1] > 0) & (pairs[:, 0] < 0)
        won = np.stack([point_first, point_second], 1).reshape(-1)
        lost = np.stack([point_second, point_first], 1).reshape(-1)
        opponent = pairs[:, ::-1].reshape(-1)
        self.won += won
        self.lost += lost
        self.penalties += (rewards < 0) & (opponent == 0)
        self.returns += rewards
        self.lengths += 1
        if not done.any():
            return None
        agents_done = np.repeat(done, 2)
        episode = {
            "points_won": np.where(agents_done, self.won, 0),
            "points_lost": np.where(agents_done, self.lost, 0),
            "serve_penalties": np.where(agents_done, self.penalties, 0),
            "r": np.where(agents_done, self.returns, 0.0),
            "l": np.where(agents_done, self.lengths, 0),
        }
        for counter in (self.won, self.lost, self.penalties, self.returns, self.lengths):
            counter[agents_done] = 0
        return episode, agents_done

    def step_infos(self, rewards: np.ndarray, game_done: np.ndarray, final_obs: np.ndarray | None) -> dict:
        """Count the step and build the `infos` both vector envs return (the module docstring's
        "final_obs" and "episode" with their masks, present only on steps where a game ended)."""
        finished = self.update(rewards, game_done)
        if finished is None:
            return {}
        episode, agents_done = finished
        return {"final_obs": final_obs, "_final_obs": agents_done, "episode": episode, "_episode": agents_done}


# ---------------------------------------------------------------------------------------------
# Reference: the seed's chain from PettingZoo + SuperSuit.
# ---------------------------------------------------------------------------------------------

def _seed_obs_modification(obs, _space, player_id):
    """The seed's `pong_obs_modification`: blank the score rows, mirror `second_0`."""
    obs[:SCORE_ROWS, :, :] = 0
    if "second" in player_id:
        obs = obs[:, ::-1, :]
    return obs


def make_seed_parallel_env(max_cycles: int = MAX_CYCLES, mode: int = CLASSIC_MODE):
    """The seed's get_env up to the vectorisation: a PettingZoo parallel env of one game. Another
    `mode` builds pong_v3's env on that variation (pong_v3 itself names only the classic one)."""
    import supersuit as ss
    from pettingzoo.atari import pong_v3

    if mode == CLASSIC_MODE:
        env = pong_v3.parallel_env(auto_rom_install_path=rom_install_path(), max_cycles=max_cycles)
    else:
        from pettingzoo.atari.base_atari_env import BaseAtariEnv, base_env_wrapper_fn, parallel_wrapper_fn

        def raw_env(**kwargs):
            return BaseAtariEnv(game="pong", num_players=2, mode_num=mode, env_name="pong_v3", **kwargs)

        env = parallel_wrapper_fn(base_env_wrapper_fn(raw_env))(auto_rom_install_path=rom_install_path(),
                                                                max_cycles=max_cycles)
    env = ss.max_observation_v0(env, 2)
    env = ss.frame_skip_v0(env, 4)
    env = ss.clip_reward_v0(env, lower_bound=-1, upper_bound=1)
    env = ss.color_reduction_v0(env, mode="B")
    env = ss.resize_v1(env, x_size=FRAME_SIZE, y_size=FRAME_SIZE)
    env = ss.frame_stack_v1(env, FRAME_STACK)
    return ss.lambda_wrappers.observation_lambda_v0(env, _seed_obs_modification)


def player_observation_space() -> gymnasium.spaces.Box:
    """What one player sees: the seed's (84, 84, 4) uint8 stack, channel-last."""
    return gymnasium.spaces.Box(0, 255, (FRAME_SIZE, FRAME_SIZE, FRAME_STACK), np.uint8)


class _SelfPlayVectorEnv(gymnasium.vector.VectorEnv):
    """What both self-play vector envs share: a Gymnasium vector env of 2 * `num_games` sub-envs
    (entry 2g is game g's `first_0`, 2g + 1 its `second_0`), the seed of the first reset and the
    scoreboard."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_games: int, seed: int, max_cycles: int):
        if num_games < 1:
            raise ValueError(f"num_games must be at least 1, got {num_games}")
        self.num_games = num_games
        self.num_agents = self.num_envs = 2 * num_games
        self.single_observation_space = player_observation_space()
        self.single_action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.seed = int(seed)
        self.max_cycles = max_cycles
        self._scores = Scoreboard(num_games)
        self._seeded = False

    def _start_reset(self, seed: int | None) -> int | None:
        """The constructor's seed on the first reset, the caller's after that (game g gets seed + g);
        the scores start over."""
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise TypeError(f"reset(seed=) takes one int (game g is seeded with seed + g), got {seed!r}")
        if seed is None and not self._seeded:
            seed = self.seed
        self._seeded = True
        self._scores = Scoreboard(self.num_games)
        return seed


class ReferenceSelfPlayEnv(_SelfPlayVectorEnv):
    """`num_games` games through the seed's own wrappers (slow: ~290 game steps/s on one core).

    Vectorised as in the seed with pettingzoo_env_to_vec_env_v1 and concat_vec_envs_v1(num_cpus=0).
    The seed passes base_class="gym", which SuperSuit 3.11 rejects; "gymnasium" is the same
    ConcatVecEnv without a wrapper around it. Game i is seeded with seed + i on the first reset;
    later games start with a plain ALE reset_game (SuperSuit's autoreset passes no seed).
    """

    def __init__(self, num_games: int, seed: int, max_cycles: int = MAX_CYCLES, mode: int = CLASSIC_MODE):
        import supersuit as ss

        super().__init__(num_games, seed, max_cycles)
        self.envs = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(
            make_seed_parallel_env(max_cycles, mode)), num_games, num_cpus=0, base_class="gymnasium")

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        obs, _ = self.envs.reset(seed=self._start_reset(seed))
        return np.asarray(obs), {}

    def step(self, actions):
        obs, rewards, terminated, truncated, agent_infos = self.envs.step(np.asarray(actions))
        obs = np.asarray(obs)
        rewards = np.asarray(rewards, np.float32)
        terminated = np.asarray(terminated, bool)
        truncated = np.asarray(truncated, bool)
        game_done = (terminated | truncated).reshape(-1, 2).all(1)
        final_obs = None
        if game_done.any():
            final_obs = obs.copy()
            for i, info in enumerate(agent_infos):
                if "terminal_observation" in info:
                    final_obs[i] = info["terminal_observation"]
        return obs, rewards, terminated, truncated, self._scores.step_infos(rewards, game_done, final_obs)

    def close_extras(self, **kwargs) -> None:
        self.envs.close()


# ---------------------------------------------------------------------------------------------
# Fast: multi_agent_ale_py driven directly.
# ---------------------------------------------------------------------------------------------

class TwoPlayerGames:
    """`num_games` two-player Pong emulators with the seed's preprocessing, in this process.

    Reproduces pettingzoo/atari/base_atari_env.py + the SuperSuit chain:
    - set-up: repeat_action_probability 0, load the ROM, mode 4 ("classic" two players; or `mode`); a seed
      sets random_seed, reloads the ROM and sets the mode again, then reset_game;
    - each raw frame acts with both players' actions mapped through the minimal action set;
      the frame counter (reset with the game) truncates at `max_cycles` raw frames; game_over()
      terminates both players (an inactive player's lives < 0 would too, but both are always
      active in two-player Pong);
    - frame skip 4, stopping early at the frame where the game ends; rewards summed over the
      frames, then clipped to [-1, 1];
    - max over the last two raw frames: across the step boundary when the game ends on a step's
      first frame, and the reset frame alone at a reset;
    - blue, tinyscaler bilinear 84x84, stack 4 (zeros at reset), score rows blanked, mirror.

    `sticky_actions` p > 0 (not in the seed) applies the ALE v5 protocol to both players: on every raw frame
    each player's previous frame's action is played again with probability p, instead of the one asked
    for. The emulator's own setting repeats the first player's action only (measured), so pongrl draws
    them here, per game from a generator seeded with the game's seed; a reset plays NOOP as the previous
    action, as ALE does.
    """

    SLOTS = 1 + FRAME_SKIP  # RGB frames kept per game: the previous step's last + this step's

    def __init__(self, num_games: int, max_cycles: int = MAX_CYCLES, num_threads: int = 1, mode: int = CLASSIC_MODE,
                 autoreset: bool = True, sticky_actions: float = 0.0):
        from multi_agent_ale_py.ale_python_interface import ale_lib
        from numpy.ctypeslib import as_ctypes

        self.lib = ale_lib  # the ctypes library: calling it directly skips the wrapper's allocations
        self.num_games = num_games
        self.max_cycles = max_cycles
        self.mode = mode
        self.autoreset = autoreset  # off: an ended game stays at its last frame until reset() (PettingZoo's API)
        self.ales = [open_emulator(mode) for _ in range(num_games)]
        assert all(ale.numPlayersActive() == 2 for ale in self.ales)
        self.action_map = self.ales[0].getMinimalActionSet().astype(np.intc)
        assert len(self.action_map) == NUM_ACTIONS
        self._objs = [ale.obj for ale in self.ales]

        # ctypes views made once per game: actions, rewards, RAM, and a ring of RGB frames whose
        # slot `self._prev[g]` holds the last frame of the previous step (no copying between steps).
        self._acts = np.zeros((num_games, 2), np.intc)  # what each raw frame plays
        self.sticky_actions = sticky_actions
        self._asked = np.zeros((num_games, 2), np.intc)  # what the players asked for this step (sticky actions)
        self._sticky_rngs = [np.random.default_rng(g) for g in range(num_games)]
        self._rews = np.zeros((num_games, 2), np.intc)
        self._ram = np.zeros((num_games, 128), np.uint8)
        self._rgb = np.zeros((num_games, self.SLOTS, SCREEN_HEIGHT, SCREEN_WIDTH, 3), np.uint8)
        self._c_acts = [as_ctypes(self._acts[g]) for g in range(num_games)]
        self._c_rews = [as_ctypes(self._rews[g]) for g in range(num_games)]
        self._c_ram = [as_ctypes(self._ram[g]) for g in range(num_games)]
        self._c_rgb = [[as_ctypes(self._rgb[g, k]) for k in range(self.SLOTS)] for g in range(num_games)]
        self._prev = [0] * num_games
        self.frames = [0] * num_games  # raw frames since each game's reset (pettingzoo's self.frame)

        self.stack = SeedFrameStack(num_games)
        self.resizer = SeedResizer(2 * num_games)  # a step resizes one frame per game + one per reset
        num_threads = max(1, min(num_threads, num_games))
        self._pool = ThreadPoolExecutor(num_threads) if num_threads > 1 else None
        self._partition = [range(t, num_games, num_threads) for t in range(num_threads)]

    def ram(self, g: int) -> np.ndarray:
        """Game g's emulator RAM (128 bytes), a copy."""
        self.lib.getRAM(self._objs[g], self._c_ram[g])
        return self._ram[g].copy()

    def screen(self, g: int) -> np.ndarray:
        """Game g's last raw RGB frame (210, 160, 3), a copy."""
        return self._rgb[g, self._prev[g]].copy()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
        self.ales.clear()  # ALEInterface.__del__ frees each emulator

    def _reset_game(self, g: int, seed: int | None) -> np.ndarray:
        """Reset game g (seeding it first, as pettingzoo's _seed does, if a seed is given) and
        return its first RGB frame."""
        if seed is not None:
            ale = self.ales[g]
            ale.setInt(b"random_seed", int(seed))
            ale.loadROM(pong_rom_path())
            ale.setMode(self.mode)
            self._sticky_rngs[g] = np.random.default_rng(int(seed))
        self._acts[g] = self.action_map[0]
        self.lib.reset_game(self._objs[g])
        self.frames[g] = 0
        self.lib.getScreenRGB(self._objs[g], self._c_rgb[g][self._prev[g]])
        return self._rgb[g, self._prev[g]]

    def reset(self, obs_out: np.ndarray, seed: int | None) -> None:
        for g in range(self.num_games):
            self.resizer.blue[g] = self._reset_game(g, None if seed is None else seed + g)[:, :, 2]
        frames = self.resizer.resize(self.num_games)
        for g in range(self.num_games):
            self.stack.reset(g, frames[g])
        self.stack.write_players(obs_out)

    def _may_end_early(self, g: int) -> bool:
        """Whether game g's next step can end before its last raw frame. The usual path reads only
        the last two of the four frames; a step that ends on frame k needs frames k - 1 and k.
        Truncation is known from the frame counter; game over needs a player at 20 points."""
        if self.frames[g] + FRAME_SKIP - 1 >= self.max_cycles:
            return True
        self.lib.getRAM(self._objs[g], self._c_ram[g])
        ram = self._ram[g]
        return max(ram[RAM_SCORE_RIGHT], ram[RAM_SCORE_LEFT]) >= WINNING_SCORE - 1

    def _emulate(self, games, rewards_out, terminated_out, truncated_out) -> list[int]:
        """Emulate one agent step (up to 4 raw frames) of the given games and max-pool their last
        two frames into the resizer's blue buffer; returns the games that ended. The emulator
        calls release the GIL (ctypes), so worker threads can run this on disjoint games."""
        act, game_over, get_rgb = self.lib.actMulti, self.lib.game_over, self.lib.getScreenRGB
        slots, blue, sticky = self.SLOTS, self.resizer.blue, self.sticky_actions
        ended = []
        for g in games:
            obj, c_acts, c_rews, c_rgb = self._objs[g], self._c_acts[g], self._c_rews[g], self._c_rgb[g]
            prev, frames = self._prev[g], self.frames[g]
            fetch_every_frame = self._may_end_early(g)
            reward_first = reward_second = 0
            over = truncated = False
            if sticky:
                repeats = self._sticky_rngs[g].random((FRAME_SKIP, 2)) < sticky
            else:
                self._acts[g] = self._asked[g]
            for k in range(1, FRAME_SKIP + 1):
                if sticky:
                    np.copyto(self._acts[g], self._asked[g], where=~repeats[k - 1])
                act(obj, c_acts, c_rews)
                reward_first += c_rews[0]
                reward_second += c_rews[1]
                frames += 1
                if fetch_every_frame or k >= FRAME_SKIP - 1:
                    get_rgb(obj, c_rgb[(prev + k) % slots])
                over = game_over(obj)
                truncated = frames >= self.max_cycles
                if over or truncated:
                    break
            if k < FRAME_SKIP and not fetch_every_frame:  # a guard: never max-pool frames not read
                raise RuntimeError(f"game {g} ended on frame {k} of a step that was not expected to end early")
            self.frames[g] = frames
            rewards_out[2 * g] = max(-1, min(1, reward_first))
            rewards_out[2 * g + 1] = max(-1, min(1, reward_second))
            terminated_out[2 * g:2 * g + 2] = over
            truncated_out[2 * g:2 * g + 2] = truncated
            # Max-pool the last two raw frames; when the game ended on the first frame, the
            # other one is the previous step's last frame (slot `prev`).
            last, before = self._rgb[g, (prev + k) % slots], self._rgb[g, (prev + k - 1) % slots]
            np.maximum(last[:, :, 2], before[:, :, 2], out=blue[g])
            self._prev[g] = (prev + k) % slots
            if over or truncated:
                ended.append(g)
        return ended

    def step(self, actions, obs_out, final_out, rewards_out, terminated_out, truncated_out) -> np.ndarray:
        """Play one agent step in every game; returns the boolean mask of the games that ended.

        Ended games' last observations go to `final_out`; `obs_out` already holds the next game's
        first observation for them (same-step autoreset). Without autoreset, `obs_out` holds their
        last observations and `final_out` is left alone.
        """
        self._asked[:] = self.action_map[np.asarray(actions).reshape(-1, 2)]
        outputs = (rewards_out, terminated_out, truncated_out)
        if self._pool is None:
            ended = self._emulate(range(self.num_games), *outputs)
        else:
            parts = self._pool.map(lambda games: self._emulate(games, *outputs), self._partition)
            ended = sorted(g for part in parts for g in part)
        blue = self.resizer.blue

        # Start the next games now, so that one resize covers the ended games' last frames and
        # the new games' first frames.
        restarted = ended if self.autoreset else []
        for j, g in enumerate(restarted):
            blue[self.num_games + j] = self._reset_game(g, None)[:, :, 2]
        frames = self.resizer.resize(self.num_games + len(restarted))
        self.stack.push_all(frames[:self.num_games])
        if restarted:
            self.stack.write_players(final_out, ended)
            for j, g in enumerate(ended):
                self.stack.reset(g, frames[self.num_games + j])
        self.stack.write_players(obs_out)
        mask = np.zeros(self.num_games, bool)
        mask[ended] = True
        return mask


class FastSelfPlayEnv(_SelfPlayVectorEnv):
    """The seed's two-player Pong, `num_games` games, without PettingZoo/SuperSuit in the loop.

    Same observations, clipped rewards, terminations (game over at 21 points), truncations
    (`max_cycles` raw frames), autoreset and infos as `ReferenceSelfPlayEnv` for the same seed and
    actions; a test checks it frame for frame. Game i is seeded with seed + i.
    """

    def __init__(self, num_games: int, seed: int, max_cycles: int = MAX_CYCLES, num_threads: int = 1,
                 mode: int = CLASSIC_MODE, sticky_actions: float = 0.0):
        super().__init__(num_games, seed, max_cycles)
        self.games = TwoPlayerGames(num_games, max_cycles, num_threads, mode, sticky_actions=sticky_actions)
        self._obs = np.zeros((self.num_agents, FRAME_SIZE, FRAME_SIZE, FRAME_STACK), np.uint8)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.games.reset(self._obs, self._start_reset(seed))
        return self._obs.copy(), {}

    def step(self, actions):
        n = self.num_agents
        rewards = np.zeros(n, np.float32)
        terminated = np.zeros(n, bool)
        truncated = np.zeros(n, bool)
        final_obs = np.empty_like(self._obs)
        ended = self.games.step(actions, self._obs, final_obs, rewards, terminated, truncated)
        obs = self._obs.copy()
        if ended.any():
            # Rows of games that go on hold their current observation, so
            # `infos.get("final_obs", obs)` is always the right bootstrap observation.
            running = np.repeat(~ended, 2)
            final_obs[running] = obs[running]
        return obs, rewards, terminated, truncated, self._scores.step_infos(rewards, ended, final_obs)

    def close_extras(self, **kwargs) -> None:
        self.games.close()
