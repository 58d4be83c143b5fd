"""Self-play games with some games against the built-in AI (`pongrl train selfplay --builtin-fraction F`).

A self-play policy that only ever meets itself can lose every game to the built-in AI (zoo:selfplay does,
-17.90), whose returns it has never had to face. Here the last round(F x games) games of the self-play
vector env are single-player games against the built-in AI instead, laid out as the self-play env lays out
a game, so the trainer treats them like any other game:
- entry 2g is the learner on the right paddle, the card's `first_0`: the single-player emulator seen through
  the card's own view (blue channel, score rows blanked), nothing mirrored;
- entry 2g + 1 stands for the built-in AI: its observation is blank, its action is ignored, its reward is
  the learner's negated, and the trainer leaves it out of the update.
Rewards are the true score changes (no serve penalties: the single-player game serves by itself); the
games start after 0-30 random no-ops, and sticky actions, if any, are the emulator's own.
"""

from __future__ import annotations

import numpy as np

from pongrl.envs.single import GameVectorEnv
from pongrl.envs.selfplay import FastSelfPlayEnv, _SelfPlayVectorEnv

EPISODE_COUNTS = {
    "points_won": np.int64,
    "points_lost": np.int64,
    "serve_penalties": np.int64,
    "r": np.float64,
    "l": np.int64,
}  # what selfplay.Scoreboard reports of each finished game, per entry
# The seed offset of the built-in AI's games, so that their seeds never meet the self-play games' (seed + g).
BUILTIN_SEED_OFFSET = 10_000


class BuiltinGamesAsPlayers(_SelfPlayVectorEnv):
    """`num_games` games against the built-in AI with two entries each, as described above."""

    def __init__(self, num_games: int, seed: int, sticky_actions: float = 0.0):
        super().__init__(num_games, seed, max_cycles=0)  # the single-player game has its own frame cap
        self.games = GameVectorEnv(num_games, seed + BUILTIN_SEED_OFFSET, profile="seed", sticky_actions=sticky_actions)

    def _as_players(self, learner_obs: np.ndarray) -> np.ndarray:
        obs = np.zeros((self.num_envs, *learner_obs.shape[1:]), learner_obs.dtype)
        obs[0::2] = learner_obs
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self._start_reset(seed)
        obs, _ = self.games.reset()
        return self._as_players(obs), {}

    def step(self, actions):
        obs, score_change, terminated, truncated, info = self.games.step(np.asarray(actions)[0::2])
        rewards = np.repeat(score_change, 2) * np.tile([1.0, -1.0], self.num_games)
        ended = terminated | truncated
        final_obs = None
        if "final_obs" in info:  # the games that go on give their current observation, as the self-play env does
            final_obs = self._as_players(np.where(ended[:, None, None, None], info["final_obs"], obs))
        infos = self._scores.step_infos(rewards.astype(np.float32), ended, final_obs)
        return (
            self._as_players(obs),
            rewards.astype(np.float32),
            np.repeat(terminated, 2),
            np.repeat(truncated, 2),
            infos,
        )

    def close_extras(self, **kwargs) -> None:
        self.games.close()


class SelfPlayWithBuiltinEnv:
    """A self-play vector env whose last `builtin_games` games are played against the built-in AI
    (BuiltinGamesAsPlayers), with the self-play env's API: entries 2g and 2g + 1 are game g's players."""

    def __init__(self, self_play: FastSelfPlayEnv | None, builtin: BuiltinGamesAsPlayers):
        self.parts = [part for part in (self_play, builtin) if part is not None]
        self.num_envs = sum(part.num_envs for part in self.parts)
        self._bounds = np.cumsum([0] + [part.num_envs for part in self.parts])

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        return np.concatenate([part.reset(seed=seed)[0] for part in self.parts]), {}

    def step(self, actions):
        actions = np.asarray(actions)
        results = [
            part.step(actions[start:end]) for part, start, end in zip(self.parts, self._bounds, self._bounds[1:])
        ]
        obs, rewards, terminated, truncated = (np.concatenate([result[k] for result in results]) for k in range(4))
        infos = [result[4] for result in results]
        if not any(infos):
            return obs, rewards, terminated, truncated, {}
        # A part that ended no game this step gives its entries' current observations and zero counts, as
        # one self-play env gives them for its games that go on.
        parts = list(zip(infos, self.parts, self._split(obs)))
        ended = np.concatenate([info.get("_episode", np.zeros(part.num_envs, bool)) for info, part, _ in parts])
        episode = {
            name: np.concatenate(
                [info["episode"][name] if info else np.zeros(part.num_envs, dtype) for info, part, _ in parts]
            )
            for name, dtype in EPISODE_COUNTS.items()
        }
        final_obs = np.concatenate([info.get("final_obs", part_obs) for info, _, part_obs in parts])
        return (
            obs,
            rewards,
            terminated,
            truncated,
            {"final_obs": final_obs, "_final_obs": ended, "episode": episode, "_episode": ended},
        )

    def _split(self, obs: np.ndarray) -> list[np.ndarray]:
        return [obs[start:end] for start, end in zip(self._bounds, self._bounds[1:])]

    def close(self) -> None:
        for part in self.parts:
            part.close()


def builtin_game_entries(num_games: int, builtin_games: int) -> np.ndarray:
    """The batch entries the built-in AI plays: the second entry of each of the last `builtin_games` games."""
    return 2 * np.arange(num_games - builtin_games, num_games) + 1
