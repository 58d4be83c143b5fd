"""Single-player Pong against the game's built-in AI, on the real emulator (ale-py).

Protocol (the DQN seed's PongNoFrameskip-v4 + AtariPreprocessing + FrameStack4): no sticky
actions (evaluation may add them: `sticky_actions`, the ALE v5 protocol's 0.25), up to 30 no-ops
at reset, frame skip 4 with a max over the last two frames, grayscale, 84x84 (area interpolation), 4 stacked
frames (older slots zero after a reset), whole games of
21 points, at most 108,000 frames per episode. Rewards are the true score changes; learners
clip them themselves, so every reported return is the real game score.

Two implementations share the protocol:
- `make_pong_vector_env`: ale-py's C++ vector env (threads, async send/recv) for training and evaluation;
- `PongGame`: one emulator driven from Python, which also hands out the full-colour screen for
  videos. A test checks that both produce identical observations for the same actions.

Both are public through Gymnasium, registered when `pongrl` is imported:
`gymnasium.make("pongrl/Pong-v0")` is `PongEnv` (on `PongGame`), and
`gymnasium.make_vec("pongrl/Pong-v0", num_envs=N)` is `make_pong_vector_env` (the trainer's env).

A little over 400 lines on purpose: the single-player game and every way it is driven (one game, the vector envs
of training, the driver of the game runner) share its preprocessing, starts and sticky actions here, once.
"""

from __future__ import annotations

import os

import gymnasium
import numpy as np

import ale_py
from ale_py import roms
from ale_py.vector_env import AtariVectorEnv, AutoresetMode

from pongrl.game import FRAME_SIZE, FRAME_SKIP, FRAME_STACK, MAX_EPISODE_FRAMES, NOOP_MAX, NUM_ACTIONS


def make_pong_vector_env(
    num_envs: int = 1,
    sticky_actions: float = 0.0,
    noop_max: int = NOOP_MAX,
    num_threads: int = 0,
    autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
    render_mode: str | None = None,
) -> AtariVectorEnv:
    """`num_envs` emulators with the protocol, in ale-py's C++ vector env (a Gymnasium VectorEnv; not
    reset yet: `reset(seed=s)` seeds env i with s + i). `sticky_actions` is the probability that the
    emulator repeats the previous action on a frame (Machado et al. 2018; 0.25 in the ALE v5 protocol).

    Autoreset is same-step by default: when a game ends, `info["final_obs"]` holds its last
    observation and the returned observation already starts the next game. Rewards are the true
    score changes (not clipped). The vector env draws no frames: `render_mode` must stay None.
    """
    if render_mode is not None:
        raise ValueError("the vector form does not render: use gymnasium.make('pongrl/Pong-v0', render_mode=...)")
    return AtariVectorEnv(
        "pong",
        num_envs,
        num_threads=num_threads or min(num_envs, os.cpu_count() or 1),
        max_num_frames_per_episode=MAX_EPISODE_FRAMES,
        repeat_action_probability=sticky_actions,
        frameskip=FRAME_SKIP,
        noop_max=noop_max,
        img_height=FRAME_SIZE,
        img_width=FRAME_SIZE,
        stack_num=FRAME_STACK,
        grayscale=True,
        maxpool=True,
        reward_clipping=False,
        use_fire_reset=False,
        autoreset_mode=autoreset_mode,
    )


def make_vector_env(
    num_envs: int, seed: int, num_threads: int = 0, sticky_actions: float = 0.0
) -> tuple[AtariVectorEnv, np.ndarray]:
    """The trainer's and evaluator's vector env: `make_pong_vector_env`, reset with seeds seed,
    seed+1, ...; returns (env, first obs)."""
    env = make_pong_vector_env(num_envs, sticky_actions=sticky_actions, num_threads=num_threads)
    obs, _ = env.reset(seed=int(seed))
    return env, obs


class PongGame:
    """One emulator with the training protocol, exposing the colour screen as well as the stack.

    `profile` picks what the agent sees (pongrl.envs.views): "standard" is the DQN protocol above, a
    (4, 84, 84) stack; "seed" is the self-play card's view, (84, 84, 4) channel-last: the blue channel
    of the max over the last two RGB frames, resized by tinyscaler as SuperSuit does, score rows
    blanked. The single-player agent holds the right paddle, the card's `first_0`, so nothing is
    mirrored. `extra_profiles` keeps more views of the same game (`observation(profile)`), for agents
    that watch a game another one plays.
    """

    def __init__(
        self,
        seed: int,
        noop_max: int = NOOP_MAX,
        profile: str = "standard",
        sticky_actions: float = 0.0,
        extra_profiles: tuple[str, ...] = (),
    ):
        from pongrl.envs.views import VIEWS

        self.ale = ale_py.ALEInterface()
        self.ale.setInt("random_seed", int(seed) % (2**31))  # also drives the sticky actions, if any
        self.ale.setFloat("repeat_action_probability", sticky_actions)
        self.ale.setInt("frame_skip", 1)
        self.ale.setInt("max_num_frames_per_episode", MAX_EPISODE_FRAMES)
        self.ale.loadROM(roms.get_rom_path("pong"))
        self.actions = self.ale.getMinimalActionSet()
        self.rng = np.random.default_rng(seed)
        self.noop_max = noop_max
        self.profile = profile
        self.views = {name: VIEWS[name]() for name in (profile, *extra_profiles)}
        self.need_gray, self.need_rgb = "standard" in self.views, "seed" in self.views
        self.colour_frames: list[np.ndarray] = []

    def _screens(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The current grayscale and RGB screens, each only if a view needs it."""
        return (
            self.ale.getScreenGrayscale() if self.need_gray else None,
            self.ale.getScreenRGB() if self.need_rgb else None,
        )

    def observation(self, profile: str | None = None) -> np.ndarray:
        """The current stack in `profile` (default: the game's own), a copy."""
        return self.views[profile or self.profile].observation(0).copy()

    def seed_emulator(self, seed: int) -> None:
        """Reseed the emulator's own random stream (it draws only the sticky actions)."""
        self.ale.setInt("random_seed", int(seed) % (2**31))
        self.ale.loadROM(roms.get_rom_path("pong"))

    def reset(self, noop_frames: int | None = None) -> np.ndarray:
        """Start a game after `noop_frames` no-op frames, or a number drawn from 0..noop_max. Without
        sticky actions the emulator has no randomness of its own, so the count fixes the start."""
        self.ale.reset_game()
        if noop_frames is None:
            noop_frames = int(self.rng.integers(0, self.noop_max + 1)) if self.noop_max else 0
        for _ in range(noop_frames):
            self.ale.act(self.actions[0])
            if self.ale.game_over():
                self.ale.reset_game()
        gray, rgb = self._screens()
        for view in self.views.values():
            view.reset(0, gray, rgb)
        return self.observation()

    def rgb(self) -> np.ndarray:
        """The full-colour screen at native resolution (210x160x3)."""
        return self.ale.getScreenRGB()

    def step(self, action: int, record_colour: bool = False) -> tuple[np.ndarray, float, bool, bool]:
        """Play one agent step (4 frames); returns (observation, score change, terminated, truncated)."""
        reward = 0.0
        last_two = []
        for skipped in range(FRAME_SKIP):
            reward += self.ale.act(self.actions[action])
            if record_colour:
                self.colour_frames.append(self.ale.getScreenRGB())
            if skipped >= FRAME_SKIP - 2:
                last_two.append(self._screens())
            if self.ale.game_over():
                break
        if not last_two:  # the game ended on the step's first or second frame: the screen as it is
            last_two.append(self._screens())
        gray, rgb = (None if last_two[0][k] is None else np.maximum(last_two[0][k], last_two[-1][k]) for k in (0, 1))
        for view in self.views.values():
            view.push(0, gray, rgb)
        terminated = self.ale.game_over(with_truncation=False)
        truncated = not terminated and self.ale.game_over()
        return self.observation(), reward, terminated, truncated


class PongEnv(gymnasium.Env):
    """Single-player Pong against the built-in AI with the DQN protocol, as a Gymnasium env
    (`gymnasium.make("pongrl/Pong-v0")`): the seed blog's PongNoFrameskip-v4 + AtariPreprocessing +
    4 stacked frames, in one class on the real emulator.

    Observations (4, 84, 84) uint8, newest frame last; six actions (NOOP, FIRE, RIGHT, LEFT, RIGHTFIRE,
    LEFTFIRE); rewards are the true score changes (-1, 0, +1); a game ends at 21 points (terminated)
    or after 108,000 frames (truncated). `reset(seed=)` fixes the no-op start (0..`noop_max` frames)
    and, with `sticky_actions` > 0, the emulator's sticky-action stream; `info["noop_frames"]` says
    how many no-ops were played.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60 // FRAME_SKIP}

    def __init__(self, sticky_actions: float = 0.0, noop_max: int = NOOP_MAX, render_mode: str | None = None):
        if not 0.0 <= sticky_actions < 1.0:
            raise ValueError(f"sticky_actions must be in [0, 1), got {sticky_actions}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.observation_space = gymnasium.spaces.Box(0, 255, (FRAME_STACK, FRAME_SIZE, FRAME_SIZE), np.uint8)
        self.action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self.render_mode = render_mode
        self.noop_max = noop_max
        self._game = PongGame(0, noop_max=noop_max, sticky_actions=sticky_actions)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._game.seed_emulator(seed)
        noop_frames = int(self.np_random.integers(0, self.noop_max + 1))
        return self._game.reset(noop_frames), {"noop_frames": noop_frames}

    def step(self, action):
        obs, reward, terminated, truncated = self._game.step(int(action))
        return obs, reward, terminated, truncated, {}

    def render(self) -> np.ndarray | None:
        """The full-colour screen (210, 160, 3) with render_mode="rgb_array"."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() without a render_mode: make the env with render_mode='rgb_array'")
            return None
        return self._game.rgb()


class GameVectorEnv:
    """Several `PongGame`s stepped in turn, with the vector API of `ChannelLastVectorEnv`: autoreset,
    `info["final_obs"]` for ended games. Used where the C++ vector env cannot produce the pixels
    (the seed profile needs the colour screen)."""

    def __init__(
        self, num_envs: int, seed: int, profile: str, starts: list[list[int]] | None = None, sticky_actions: float = 0.0
    ):
        """`starts[i]`, if given, lists the no-op frame counts game i starts its games with, in order
        (drawn at random once the list runs out)."""
        self.games = [PongGame(seed + i, profile=profile, sticky_actions=sticky_actions) for i in range(num_envs)]
        self.num_envs = num_envs
        self.starts = [list(game_starts) for game_starts in starts] if starts else [[] for _ in range(num_envs)]
        self.obs = np.stack([self._reset(i) for i in range(num_envs)])

    def _reset(self, i: int) -> np.ndarray:
        return self.games[i].reset(self.starts[i].pop(0) if self.starts[i] else None)

    def reset(self) -> tuple[np.ndarray, dict]:
        return self.obs.copy(), {}

    def step(self, actions: np.ndarray):
        rewards = np.zeros(self.num_envs, np.float32)
        terminated = np.zeros(self.num_envs, bool)
        truncated = np.zeros(self.num_envs, bool)
        final_obs = None
        for i, game in enumerate(self.games):
            obs, rewards[i], terminated[i], truncated[i] = game.step(int(actions[i]))
            if terminated[i] or truncated[i]:
                final_obs = self.obs.copy() if final_obs is None else final_obs
                final_obs[i] = obs
                obs = self._reset(i)
            self.obs[i] = obs
        info = {"final_obs": final_obs} if final_obs is not None else {}
        return self.obs.copy(), rewards, terminated, truncated, info

    def close(self) -> None:
        self.games.clear()


class SinglePlayerGames:
    """`num_games` games against the built-in AI for pongrl's game runner (pongrl.runner), with the two-player
    driver's face: the agent holds the right paddle (side 0), the built-in AI the left one (it needs no
    actions). The single-player game serves by itself, so there are no serve penalties.

    Two engines: `vectorized`, ale-py's C++ vector env (emulator threads; the standard profile only; it draws
    the no-op starts from `seed` and starts each next game by itself: `autoreset`); otherwise one `PongGame`
    per game, game i seeded with seed + i (any profiles, RAM, colour frames, queued starts: `starts[i]` lists
    game i's successive no-op counts, None or a list run out meaning drawn; `emulator_seeds[i]` likewise the
    seeds its emulator is reseeded with as each game starts, None meaning its stream goes on)."""

    def __init__(
        self,
        num_games: int,
        seed: int,
        profiles: tuple[str, ...] = ("standard",),
        sticky_actions: float = 0.0,
        starts: list[list[int | None]] | None = None,
        record_colour: bool = False,
        vectorized: bool = False,
        emulator_seeds: list[list[int | None]] | None = None,
    ):
        n = num_games
        self.num_games, self.seed, self.profiles = n, seed, tuple(profiles)
        self.record_colour = record_colour
        self.starts = [list(game_starts) for game_starts in starts] if starts else [[] for _ in range(n)]
        self.emulator_seeds = [list(seeds) for seeds in emulator_seeds] if emulator_seeds else [[] for _ in range(n)]
        self.points = np.zeros((n, 2), np.int64)
        self.penalties = np.zeros((n, 2), np.int64)  # none in the single-player game
        self.scored = np.zeros((n, 2), bool)
        self.over = np.zeros(n, bool)
        self.cut = np.zeros(n, bool)
        self.steps = [0] * n
        self.last_results: list[dict | None] = [None] * n
        self.autoreset = vectorized
        self._obs = None
        if vectorized:
            if (
                self.profiles != ("standard",)
                or record_colour
                or any(start is not None for game_starts in self.starts for start in game_starts)
                or any(seed is not None for seeds in self.emulator_seeds for seed in seeds)
            ):
                raise ValueError(
                    "the vector engine plays the standard profile from drawn starts and its own seeds, without colour"
                )
            self.env, self.games = make_pong_vector_env(n, sticky_actions=sticky_actions), []
            self.colour_frames: list[list[np.ndarray]] = [[] for _ in range(n)]
        else:
            self.env = None
            self.games = [
                PongGame(
                    seed + i, profile=self.profiles[0], sticky_actions=sticky_actions, extra_profiles=self.profiles[1:]
                )
                for i in range(n)
            ]
            self.colour_frames = [game.colour_frames for game in self.games]

    def reset(self) -> None:
        """Start every game."""
        if self.env is not None:
            self._obs, _ = self.env.reset(seed=int(self.seed))
            for g in range(self.num_games):
                self._clear(g)
        else:
            for g in range(self.num_games):
                self.reset_game(g)

    def reset_game(self, g: int) -> None:
        """Start game g again, after its next queued start and emulator seed (PongGame engine)."""
        emulator_seed = self.emulator_seeds[g].pop(0) if self.emulator_seeds[g] else None
        if emulator_seed is not None:
            self.games[g].seed_emulator(emulator_seed)
        self.games[g].reset(self.starts[g].pop(0) if self.starts[g] else None)
        if self.record_colour:
            self.colour_frames[g].append(self.games[g].rgb())
        self._clear(g)

    def _clear(self, g: int) -> None:
        self.points[g] = 0
        self.over[g] = self.cut[g] = False
        self.steps[g] = 0

    def observation(self, g: int, side: int, profile: str = "standard") -> np.ndarray:
        """What the agent (right paddle, side 0) of game g sees in `profile` (a view valid until the next step)."""
        if side != 0:
            raise ValueError("in the single-player game the agent plays the right paddle (side 0)")
        return self._obs[g] if self.env is not None else self.games[g].views[profile].observation(0)

    def play_step(self, actions: np.ndarray, games=None) -> list[int]:
        """One agent step of the given games (all by default; the vector engine steps every game, the others
        with NOOP): `actions[g, 0]` is game g's agent's action. Returns the given games that ended."""
        games = range(self.num_games) if games is None else list(games)
        self.scored[:] = False
        if self.env is not None:
            agent_actions = np.zeros(self.num_games, np.int64)
            agent_actions[games] = np.asarray(actions)[games, 0]
            self._obs, rewards, terminated, truncated, _ = self.env.step(agent_actions)
            outcomes = zip(range(self.num_games), rewards, terminated, truncated)
        else:
            outcomes = [
                (g, *self.games[g].step(int(actions[g][0]), record_colour=self.record_colour)[1:]) for g in games
            ]
        ended = []
        for g, reward, terminated, truncated in outcomes:
            if reward:
                self.scored[g, 0 if reward > 0 else 1] = True
                self.points[g, 0 if reward > 0 else 1] += 1
            self.steps[g] += 1
            self.over[g], self.cut[g] = terminated, truncated and not terminated
            if terminated or truncated:
                if self.autoreset:
                    self.last_results[g] = self.result(g)
                    self._clear(g)
                ended.append(g)
        return [g for g in ended if g in games] if self.env is not None else ended

    def result(self, g: int) -> dict:
        """Game g's counts so far, as the two-player driver gives them."""
        return {
            "points": tuple(int(p) for p in self.points[g]),
            "penalties": (0, 0),
            "steps": self.steps[g],
            "over": bool(self.over[g]),
            "cut": bool(self.cut[g]),
        }

    def done(self, g: int) -> bool:
        return bool(self.over[g] or self.cut[g])

    def ram(self, g: int) -> np.ndarray:
        return self.games[g].ale.getRAM()

    def screen(self, g: int) -> np.ndarray:
        return self.games[g].rgb()

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
        self.games.clear()


class ChannelLastVectorEnv:
    """The training vector env with observations laid out (N, 84, 84, 4), as the PPO agent (and the
    self-play card's code) expects. `step` returns true score changes and `info["final_obs"]` when a
    game ends."""

    def __init__(self, num_envs: int, seed: int, sticky_actions: float = 0.0):
        self.env, obs = make_vector_env(num_envs, seed, sticky_actions=sticky_actions)
        self.num_envs = num_envs
        self.first_obs = self._layout(obs)

    @staticmethod
    def _layout(obs: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(obs.transpose(0, 2, 3, 1))

    def reset(self) -> tuple[np.ndarray, dict]:
        return self.first_obs, {}

    def step(self, actions: np.ndarray):
        obs, rewards, terminated, truncated, info = self.env.step(np.asarray(actions, dtype=np.int64))
        info = {"final_obs": self._layout(info["final_obs"])} if "final_obs" in info else {}
        return self._layout(obs), rewards.astype(np.float32), terminated, truncated, info

    def close(self) -> None:
        self.env.close()
