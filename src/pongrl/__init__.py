"""pongrl: train and study agents that play Atari Pong from pixels.

The library in a few names (see docs/api.md; the CLI is a thin shell over them):

- `load_agent(spec)`: any agent (a checkpoint, a run, a safetensors file, `zoo:NAME`, `hf://...`); an
  `Agent` gives `act`/`predict` (actions), `preferences` (Q-values or policy logits) and `layers`
  (every layer's activations) for a batch of observations; `export_seed_format(agent, out)` writes a
  policy as the self-play card's state_dict.
- `train(algo, run_dir, ...)` -> `Run`: metrics, checkpoints, `resume`, `branch`, `agent`.
- `evaluate(agent, ...)` and `evaluate_protocols(agent)` against the built-in AI; `duel(first, second)`;
  `run_league(inputs)` (ratings of many agents); `record_video(first, second, out)`.
- `train_league(league_dir, **settings)` and `resume_league(league_dir)`: a league that trains itself (a main agent,
  exploiters, prioritized matchmaking; `LeagueSettings` lists its settings), `league_status(league_dir)`;
- `exploit(agent, run_dir, steps)` -> `Run`: a PPO best response trained against a frozen agent;
  `exploitability(run)`: the points it wins per game at a budget of agent steps.
- `collect_probes(agents, frames, out_dir)` and `fit_probes(out_dir)`: what every layer knows;
  `learn_features(agent, out_dir)` -> `Dictionary`: a sparse dictionary of a layer, its features matched to the
  labels (`load_dictionary(path)` reads one back, `feature_gallery(agent, path, out)` draws its features,
  `steer_features(agent, path)` steers along them); `opponent_aim(agent, out_dir)`: does it aim by the opponent?
- `PongrlError`: every problem the user can fix.

`import pongrl` loads neither torch nor the emulator: the names load their module on first use.
"""

import importlib

import gymnasium

from pongrl._version import __version__ as __version__
from pongrl.errors import CheckpointWriteError, PongrlError

# Single-player Pong with the DQN protocol, for any Gymnasium user: `import pongrl` then
# `gymnasium.make("pongrl/Pong-v0")` or `gymnasium.make_vec("pongrl/Pong-v0", num_envs=N)`.
gymnasium.register(
    id="pongrl/Pong-v0",
    entry_point="pongrl.envs.single:PongEnv",
    vector_entry_point="pongrl.envs.single:make_pong_vector_env",
)

# name -> (module, attribute)
_EXPORTS = {
    "Agent": ("pongrl.agent", "Agent"),
    "load_agent": ("pongrl.agent", "load_agent"),
    "export_seed_format": ("pongrl.agent", "export_seed_format"),
    "Run": ("pongrl.training", "Run"),
    "train": ("pongrl.training", "train"),
    "make_config": ("pongrl.training", "make_config"),
    "evaluate": ("pongrl.evaluation", "evaluate"),
    "evaluate_protocols": ("pongrl.evaluation", "evaluate_protocols"),
    "duel": ("pongrl.arena", "duel"),
    "run_league": ("pongrl.league.ratings", "run_league"),
    "LeagueSettings": ("pongrl.league.settings", "LeagueSettings"),
    "train_league": ("pongrl.league.driver", "train_league"),
    "resume_league": ("pongrl.league.driver", "resume_league"),
    "league_status": ("pongrl.league.tables", "status"),
    "exploit": ("pongrl.exploiters", "exploit"),
    "exploitability": ("pongrl.exploiters", "exploitability"),
    "record_video": ("pongrl.media", "record_video"),
    "collect_probes": ("pongrl.probes.collect", "collect"),
    "fit_probes": ("pongrl.probes.fit", "fit"),
    "Dictionary": ("pongrl.probes.dictionary", "Dictionary"),
    "learn_features": ("pongrl.probes.features", "learn_features"),
    "load_dictionary": ("pongrl.probes.dictionary", "load_dictionary"),
    "feature_gallery": ("pongrl.probes.gallery", "gallery"),
    "steer_features": ("pongrl.probes.steer_features", "steer_features"),
    "opponent_aim": ("pongrl.probes.aim", "aim"),
}
__all__ = ["PongrlError", "CheckpointWriteError", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        module, attribute = _EXPORTS[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'pongrl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_EXPORTS))
