"""What every learner carries across a stop, saved and restored in one place.

A learner's state is its modules (networks, optimizer: anything with state_dict/load_state_dict),
its counters (steps, episodes, wall seconds, resumes, emulator seed, and its own), the last games'
returns and lengths, and every RNG: python, numpy (global and the learner's generator), torch (global
and the generator that shuffles minibatches).
"""

from __future__ import annotations

import math
from collections import deque

import torch

from pongrl import config as config_module
from pongrl.checkpoint import load_checkpoint
from pongrl.errors import PongrlError
from pongrl.nets import QNetwork, head_settings, is_shared_torso
from pongrl.seeding import capture_rng, derived_seed, restore_rng, seed_everything


class LearnerState:
    algo_name = "learner"
    # Modules a checkpoint may lack because a branch added them (pongrl branch): they keep their fresh
    # state, and on_added() sets them up from the restored ones.
    optional_modules: tuple[str, ...] = ()

    def __init__(self, config, recent_episodes: int, **counters):
        self.config = config
        self.rng = seed_everything(config.seed)
        self.torch_generator = torch.Generator().manual_seed(config.seed)
        self.counters = dict(env_step=0, episodes=0, wall_seconds=0.0, resumes=0, env_seed=0, **counters)
        self.recent_returns: deque = deque(maxlen=recent_episodes)
        self.recent_lengths: deque = deque(maxlen=recent_episodes)
        self.notes: list[str] = []  # what restoring found worth saying, shown when the session reports

    def modules(self) -> dict:
        """Name -> object with state_dict()/load_state_dict(), saved under payload["state"]."""
        raise NotImplementedError

    def obs_profile(self) -> str:
        raise NotImplementedError

    def on_resume(self) -> None:
        """Called once a restored run is about to continue (the emulators start new games)."""

    def payload(self) -> dict:
        return {
            "algo": self.config.algo,
            "obs_profile": self.obs_profile(),
            "env_step": self.counters["env_step"],
            "config": config_module.to_dict(self.config),
            "state": {name: module.state_dict() for name, module in self.modules().items()},
            "counters": dict(self.counters),
            "recent_returns": list(self.recent_returns),
            "recent_lengths": list(self.recent_lengths),
            "rng": {**capture_rng(self.rng), "torch_generator": self.torch_generator.get_state()},
            "torch_version": str(torch.__version__),
        }

    def restore(self, payload: dict) -> None:
        config_module.check_same_experiment(payload, self.config)
        try:
            added = [name for name in self.optional_modules if name in self.modules() and name not in payload["state"]]
            for name, module in self.modules().items():
                if name not in added:
                    module.load_state_dict(payload["state"][name])
            self.counters.update(payload["counters"])
            self.recent_returns.extend(payload["recent_returns"])
            self.recent_lengths.extend(payload["recent_lengths"])
            restore_rng(payload["rng"], self.rng)
            if "torch_generator" in payload["rng"]:  # absent in the first DQN checkpoints, which did not use it
                self.torch_generator.set_state(payload["rng"]["torch_generator"])
        except (KeyError, RuntimeError, ValueError, TypeError) as error:
            raise PongrlError(
                f"{payload.get('path')}: incomplete {self.config.algo} checkpoint ({str(error)[:100]})"
            ) from None
        if added:
            self.on_added(added)

    def on_added(self, names: list[str]) -> None:
        """Set up the optional modules a branch added, from the restored state."""

    # The modules that `--init` fills with an agent's weights (the playing network, and any copy of it).
    initialized_networks: tuple[str, ...] = ()

    def start_from(self, weights: dict, spec: str) -> None:
        """Start from an agent's playing weights (`--init`), keeping the fresh optimizer and counters."""
        for name in self.initialized_networks:
            load_initial_weights(self.modules()[name], weights, spec)


def initial_weights(config, profile: str) -> dict:
    """The playing weights of the agent `config.init` names, refused unless it is of the run's kind of network (a
    Q-network for DQN, a policy for PPO) and sees the run's observation profile `profile`."""
    from pongrl.agent import load_agent  # the agents sit above the learners' machinery

    agent = load_agent(config.init)
    if (agent.algo == "dqn") != (config.algo == "dqn"):
        raise PongrlError(
            f"--init {config.init}: a {agent.algo} agent cannot start a {config.algo} run (another kind of network)"
        )
    if agent.obs_profile != profile:
        raise PongrlError(
            f"--init {config.init}: the agent sees the {agent.obs_profile} observation profile, the run trains on "
            f"the {profile} one"
        )
    weights = agent.state_dict()
    shared = is_shared_torso(weights)
    if config.algo != "dqn" and shared != config.share_network:
        # checked apart: a shared torso's state_dict holds the critic's copy too, so loading it would not tell
        torso = "share one torso" if shared else "have a torso each"
        flag = "--share-network" if shared else "--no-share-network"
        raise PongrlError(
            f"--init {config.init}: its network differs from the run's (its actor and critic {torso}: add {flag})"
        )
    return weights


def same_head(a: dict, b: dict) -> bool:
    """Two head settings alike, the value bounds up to a float16 file's rounding of its atoms."""
    if a.keys() != b.keys():
        return False
    return all(
        math.isclose(a[key], b[key], rel_tol=1e-3) if key in ("v_min", "v_max") else a[key] == b[key] for key in a
    )


def head_flags(settings: dict) -> str:
    """The `pongrl train dqn` flags that build a head of these settings."""
    flags = ["--dueling"] if settings["dueling"] else ["--no-dueling"]
    kind = settings["distributional"]
    flags.append(f"--distributional {kind}")
    if kind == "c51":
        flags.append(f"--atoms {settings['atoms']} --v-min {settings['v_min']:g} --v-max {settings['v_max']:g}")
    elif kind == "qr":
        flags.append(f"--quantiles {settings['atoms']}")
    return " ".join(flags)


def load_initial_weights(network: torch.nn.Module, weights: dict, spec: str) -> None:
    if isinstance(network, QNetwork):
        # Compared apart, to name the flags: load_state_dict would list mismatched tensors, or, where only the
        # value bounds differ, load the other support silently.
        given = head_settings(weights)
        if not same_head(given, head_settings(network.state_dict())):
            raise PongrlError(
                f"--init {spec}: its Q-network's head differs from the run's (start the run with {head_flags(given)})"
            )
    try:
        network.load_state_dict(weights)
    except (KeyError, RuntimeError, TypeError) as error:
        reason = str(error).strip().splitlines()[0][:120]
        raise PongrlError(f"--init {spec}: its network differs from the run's ({reason})") from None


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise PongrlError("--device cuda: no CUDA device is available")
    return torch.device(name)


def make_adam(parameters, learning_rate: float, eps: float) -> torch.optim.Adam:
    """Adam with the fused kernel where torch has one for this device: on these CPUs it takes ~1 ms
    per step against ~8.5 ms for torch's default per-tensor loop (docs/speed.md)."""
    parameters = list(parameters)
    try:
        return torch.optim.Adam(parameters, lr=learning_rate, eps=eps, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(parameters, lr=learning_rate, eps=eps, foreach=True)


def start_learner(state_class, config, resume_from: str | None):
    """A learner's state, fresh or restored from `resume_from`, with this session's emulator seed
    (derived from the run seed and the resume count, so every session plays new games). Returns
    (state, device)."""
    device = pick_device(config.device)
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    state = state_class(config, device)
    if resume_from is None and config.init:
        state.start_from(initial_weights(config, state.obs_profile()), config.init)
    if resume_from is not None:
        state.restore(load_checkpoint(resume_from))
        state.counters["resumes"] += 1
        state.on_resume()
    step = state.counters["env_step"]
    if step >= config.total_steps:
        raise PongrlError(f"the run is already at step {step}, at or past --total-steps {config.total_steps}")
    state.counters["env_seed"] = derived_seed(config.seed, state.counters["resumes"], step)
    return state, device
