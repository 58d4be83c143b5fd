"""Two-player Pong as the self-play seed sees it, as Gymnasium vector envs of both players.

The seed (a cleanRL PPO self-play run) builds its observations with this chain:

    pettingzoo.atari.pong_v3.parallel_env()
    -> supersuit max_observation_v0(2) -> frame_skip_v0(4) -> clip_reward_v0(-1, 1)
    -> color_reduction_v0("B") (blue channel) -> resize_v1(84, 84) (tinyscaler, bilinear)
    -> frame_stack_v1(4) (channel-last, zeros before the first frame)
    -> rows 0..8 set to 0 (the score) -> `second_0`'s image mirrored left-right.

Agents: `first_0` moves the right paddle, `second_0` the left one; one policy serves both, so every
game contributes two batch entries, player 0 (`first_0`) then player 1 (`second_0`).

Two vector envs of the same game:
- `ReferenceSelfPlayEnv`: the seed's chain built from PettingZoo and SuperSuit themselves;
- `FastSelfPlayEnv`: the same observations, rewards and episode ends on pongrl's two-player driver
  (pongrl.envs.two_player), which drives `multi_agent_ale_py` (the emulator under pong_v3) directly.

Both are Gymnasium `VectorEnv`s of 2G sub-envs, one per player: `reset(seed=) -> (obs
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
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from pongrl.envs.two_player import TwoPlayerGames, rom_install_path, score_events
from pongrl.game import CLASSIC_MODE, FRAME_SIZE, FRAME_STACK, MAX_CYCLES, NUM_ACTIONS, SCORE_ROWS


class Scoreboard:
    """Per-agent points won/lost, serve penalties, return and length of the current games, from each
    agent step's clipped rewards (r_first, r_second) of a game, told apart by `two_player.score_events`."""

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
        point_first, point_second, penalty_first, penalty_second = score_events(pairs[:, 0], pairs[:, 1])
        self.won += np.stack([point_first, point_second], 1).reshape(-1)
        self.lost += np.stack([point_second, point_first], 1).reshape(-1)
        self.penalties += np.stack([penalty_first, penalty_second], 1).reshape(-1)
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

        env = parallel_wrapper_fn(base_env_wrapper_fn(raw_env))(
            auto_rom_install_path=rom_install_path(), max_cycles=max_cycles
        )
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
        self.envs = ss.concat_vec_envs_v1(
            ss.pettingzoo_env_to_vec_env_v1(make_seed_parallel_env(max_cycles, mode)),
            num_games,
            num_cpus=0,
            base_class="gymnasium",
        )

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


class FastSelfPlayEnv(_SelfPlayVectorEnv):
    """The seed's two-player Pong, `num_games` games, without PettingZoo/SuperSuit in the loop.

    Same observations, clipped rewards, terminations (game over at 21 points), truncations
    (`max_cycles` raw frames), autoreset and infos as `ReferenceSelfPlayEnv` for the same seed and
    actions; a test checks it frame for frame. Game i is seeded with seed + i.
    """

    def __init__(
        self,
        num_games: int,
        seed: int,
        max_cycles: int = MAX_CYCLES,
        num_threads: int = 1,
        mode: int = CLASSIC_MODE,
        sticky_actions: float = 0.0,
        profiles: tuple[str, ...] = ("seed",),
    ):
        super().__init__(num_games, seed, max_cycles)
        profiles = ("seed", *profiles)  # the seed's view is what the env returns; others are kept for player_views
        self.games = TwoPlayerGames(
            num_games, max_cycles, num_threads, mode, sticky_actions=sticky_actions, profiles=profiles
        )
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

    def player_views(self, entries, profile: str) -> np.ndarray:
        """What the players of these entries (2g: game g's `first_0`, 2g + 1 its `second_0`, mirrored) see now in
        another observation profile, one of `profiles` (pongrl.envs.views: "standard" gives (N, 4, 84, 84))."""
        return np.stack([self.games.observation(entry // 2, entry % 2, profile) for entry in entries])

    def assist_serves(self, entries) -> None:
        """Serve for the players of these entries from now on: FIRE while the ball is out of play, as matches
        between agents do. A frozen opponent that never learned to serve (an agent trained against the built-in
        AI, a paddle that never moves) would otherwise stall its game after every point it wins."""
        for entry in entries:
            self.games.assist_serves(entry // 2, entry % 2)

    def close_extras(self, **kwargs) -> None:
        self.games.close()
