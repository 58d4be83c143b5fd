"""Any trained agent behind one small interface: a batch of observations in its own profile in,
actions out. Each agent records its observation profile ("standard": the DQN protocol's grayscale
(N, 4, 84, 84) stack; "seed": the self-play card's blue-channel (N, 84, 84, 4) view) so that
evaluation never feeds it the wrong pixels.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from pongrl import hub, zoo
from pongrl.checkpoint import (
    atomic_write_bytes,
    is_checkpoint,
    read_weights_file,
    resolve,
    validate_checkpoint,
    write_torch_file,
)
from pongrl.errors import PongrlError
from pongrl.game import NUM_ACTIONS
from pongrl.nets import (
    ActorCritic,
    QNetwork,
    float32_arithmetic,
    is_shared_torso,
    q_network_for,
    torso_kind,
    torso_layers,
)

# A DQN agent has no policy to sample from; "sampled" play makes it epsilon-greedy with the
# evaluation epsilon of the Nature DQN paper.
SAMPLE_EPSILON_Q = 0.05


class Agent:
    """Greedy play from a network's preferences, with optional epsilon-random actions. Networks play
    in float32 here whatever precision trained them (see nets.float32_arithmetic). Get one with
    [`load_agent`][] or [`Run.agent`][pongrl.training.Run.agent]."""

    obs_profile = "standard"
    """The observations it takes: "standard", the DQN protocol's grayscale (N, 4, 84, 84) stacks, or "seed",
    the self-play card's blue-channel (N, 84, 84, 4) view."""
    path = ""
    """The file it was loaded from (load_agent sets it)."""
    algo = "dqn"
    """The algorithm that trained it: dqn, ppo or selfplay."""
    config: dict | None = None
    """Its run's settings, when the file kept them (a pongrl checkpoint does)."""
    network: torch.nn.Module
    """The network that plays."""

    def __init__(self, name: str = "agent", env_step: int = 0):
        self.name = name
        """Its name in matches, videos and tables: the `zoo:` or `hf://` spec it was loaded from, else its path."""
        self.env_step = env_step
        """The env steps of training behind it (0 when the file does not say)."""

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The playing network's weights in float32, whatever dtype they were stored in: for a policy,
        the self-play card's keys (`actor_network.*`, `critic_network.*`, `actor.*`, `critic.*`)."""
        return {
            key: value.detach().float().clone() if value.is_floating_point() else value.detach().clone()
            for key, value in self.network.state_dict().items()
        }

    def preferences(self, obs: np.ndarray) -> np.ndarray:
        """(N, 6) action preferences for a batch of observations: Q-values, or a policy's logits."""
        raise NotImplementedError

    def predict(self, obs: np.ndarray, deterministic: bool = True, rng: np.random.Generator | None = None):
        """Stable-Baselines3's name for acting: the action for one observation (an int) or the actions for a
        batch (an array); `deterministic=False` samples (see [`act`][]). Unlike SB3 it returns no recurrent state."""
        obs = np.asarray(obs)
        single = obs.ndim == 3
        actions = self.act(obs[None] if single else obs, rng=rng, sample=not deterministic)
        return int(actions[0]) if single else actions

    def layers(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Every layer's activations for a batch of observations, flattened to (N, width), in float32:
        "input" (the observation, scaled to [0, 1]), the torso's conv1, conv2, ... and fc, and "output"
        (Q-values or policy logits; an actor-critic also gives "value")."""
        raise NotImplementedError

    def network_input(self, obs: np.ndarray) -> torch.Tensor:
        """The network's input for a batch of observations: float pixels scaled to [0, 1], (N, 4, 84, 84)."""
        raise NotImplementedError

    def policy_parts(self) -> tuple[torch.nn.Sequential, torch.nn.Module]:
        """The torso and the head whose composition on [`network_input`][] gives the preferences."""
        raise NotImplementedError

    def act(
        self, obs: np.ndarray, epsilon: float = 0.0, rng: np.random.Generator | None = None, sample: bool = False
    ) -> np.ndarray:
        """Greedy actions for a batch of observations; `sample` draws from the agent's policy instead
        (epsilon-greedy with SAMPLE_EPSILON_Q for value-based agents)."""
        rng = rng or np.random.default_rng()
        if sample:
            return self.sample(obs, rng)
        actions = self.preferences(obs).argmax(axis=1)
        if epsilon > 0:
            explore = rng.random(len(actions)) < epsilon
            actions = np.where(explore, rng.integers(0, NUM_ACTIONS, len(actions)), actions)
        return actions

    def sample(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Actions drawn from the agent's policy (a policy's own draws; epsilon-greedy with SAMPLE_EPSILON_Q
        for value-based agents), from `rng` so that matches are reproducible."""
        return self.act(obs, SAMPLE_EPSILON_Q, rng)


class QAgent(Agent):
    """A DQN agent: greedy on its Q-values."""

    def __init__(self, network: QNetwork, name: str = "agent", env_step: int = 0):
        super().__init__(name, env_step)
        self.network = network.eval()

    @torch.inference_mode()
    def preferences(self, obs: np.ndarray) -> np.ndarray:
        with float32_arithmetic(self.network):
            return self.network(torch.from_numpy(obs)).numpy()

    def network_input(self, obs: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(obs).float().mul_(1.0 / 255.0)

    def policy_parts(self) -> tuple[torch.nn.Sequential, torch.nn.Module]:
        return self.network.torso, self.network.head

    @torch.inference_mode()
    def layers(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        x = self.network_input(obs)
        layers = {"input": x, **torso_layers(self.network.torso, x)}
        layers["output"] = self.network.head(layers["fc"])
        return {name: value.reshape(len(obs), -1).numpy() for name, value in layers.items()}

    @property
    def distributional(self) -> str:
        """The kind of its value head: "none" (expected Q-values), "c51" or "qr"."""
        return self.network.distributional

    @torch.inference_mode()
    def distribution(self, obs: np.ndarray) -> np.ndarray:
        """(N, 6, K) return distributions per action: probabilities on the atoms `self.network.head.support`
        (C51), or the quantile values at `self.network.head.quantile_fractions` (QR); K = 1, the Q-values,
        for an expected-value head. Their means (C51, QR) are [`preferences`][]."""
        with float32_arithmetic(self.network):
            return self.network.distribution(torch.from_numpy(obs)).numpy()


class PolicyAgent(Agent):
    """A PPO agent: the most likely action of its policy."""

    def __init__(
        self, network: ActorCritic, obs_profile: str, name: str = "agent", env_step: int = 0, algo: str = "ppo"
    ):
        super().__init__(name, env_step)
        self.network = network
        self.obs_profile = obs_profile
        self.algo = algo

    @torch.inference_mode()
    def preferences(self, obs: np.ndarray) -> np.ndarray:
        frames = torch.from_numpy(obs)
        if self.obs_profile == "standard":  # the env gives (N, 4, 84, 84); the network takes channel-last
            frames = frames.permute(0, 2, 3, 1)
        with float32_arithmetic(self.network):
            return self.network.logits(frames).numpy()

    def network_input(self, obs: np.ndarray) -> torch.Tensor:
        frames = torch.from_numpy(obs)
        if self.obs_profile == "standard":  # the network's own preparation takes channel-last frames
            frames = frames.permute(0, 2, 3, 1)
        return self.network._prepare(frames)

    def policy_parts(self) -> tuple[torch.nn.Sequential, torch.nn.Module]:
        return self.network.actor_network, self.network.actor

    @torch.inference_mode()
    def layers(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        x = self.network_input(obs)
        layers = {"input": x, **torso_layers(self.network.actor_network, x)}
        layers["output"] = self.network.actor(layers["fc"])
        critic_features = layers["fc"] if self.network.share_network else self.network.critic_network(x)
        layers["value"] = self.network.critic(critic_features)
        return {name: value.reshape(len(obs), -1).numpy() for name, value in layers.items()}

    def probabilities(self, obs: np.ndarray) -> np.ndarray:
        """The policy's action probabilities (softmax of its logits, in float64)."""
        logits = self.preferences(obs).astype(np.float64)
        probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
        return probabilities / probabilities.sum(axis=1, keepdims=True)

    def sample(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        probabilities = self.probabilities(obs)
        # Inverse-CDF draw per row, from the caller's generator so that matches are reproducible.
        draws = rng.random((len(obs), 1))
        return np.minimum((probabilities.cumsum(axis=1) < draws).sum(axis=1), NUM_ACTIONS - 1)


def _load_weights(network: torch.nn.Module, state_dict, path: str) -> None:
    try:
        network.load_state_dict(state_dict)
    except (KeyError, RuntimeError, TypeError, AttributeError) as error:
        reason = str(error).strip().splitlines()[0][:120]
        raise PongrlError(f"{path}: weights do not fit the network ({reason})") from None


# Where each algorithm's checkpoint keeps the network that plays, inside payload["state"].
PLAYING_NETWORK = {"dqn": "q_network", "ppo": "agent", "selfplay": "agent"}


def playing_weights(payload: dict) -> dict:
    """The state_dict of the network that plays, from a validated pongrl checkpoint."""
    algo = payload.get("algo")
    if algo not in PLAYING_NETWORK:
        raise PongrlError(f"{payload['path']}: algorithm {algo!r} cannot be loaded as an agent")
    try:
        return payload["state"][PLAYING_NETWORK[algo]]
    except (KeyError, TypeError):
        raise PongrlError(f"{payload['path']}: the checkpoint lacks its network weights") from None


def _seed_format_agent(
    weights: dict, path: str, name: str, obs_profile: str = "seed", env_step: int = 0, algo: str = "selfplay"
) -> Agent:
    """An actor-critic from the self-play card's state_dict keys (actor_network.*, ...)."""
    network = ActorCritic(NUM_ACTIONS, share_network=is_shared_torso(weights), network=torso_kind(weights))
    _load_weights(network, weights, path)
    return PolicyAgent(network.eval(), obs_profile, name=name, env_step=env_step, algo=algo)


def save_safetensors_agent(
    path: str, state_dict: dict, algo: str, env_step: int, obs_profile: str, dtype: torch.dtype | None = None
) -> None:
    """Write the playing network's weights as `load_safetensors_agent` reads them, atomically; `dtype`
    (torch.float16) stores the floating-point tensors smaller (loading casts them back to float32)."""
    from safetensors.torch import save

    # A shared torso appears under both actor_network.* and critic_network.* (the seed's keys);
    # safetensors refuses tensors that share memory, so each key gets its own copy.
    data = save(
        {
            key: (value.detach().to(dtype if dtype and value.is_floating_point() else value.dtype).clone().contiguous())
            for key, value in state_dict.items()
        },
        metadata={"algo": algo, "env_step": str(int(env_step)), "obs_profile": obs_profile},
    )
    atomic_write_bytes(path, data)


def load_safetensors_agent(path: str, name: str) -> Agent:
    """An agent from a safetensors file as `pongrl card` and the zoo write it: the playing network's
    state_dict, with "algo", "obs_profile" and "env_step" in the file's metadata. A file without that
    metadata is read by its keys: the self-play card's (a policy on its blue-channel view) or DQN's."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(path, "pt") as handle:
            metadata = handle.metadata() or {}
            weights = {key: handle.get_tensor(key) for key in handle.keys()}
    except (SafetensorError, OSError, ValueError):
        raise PongrlError(
            f"{path}: not a readable safetensors file (its header or tensors are damaged or truncated); "
            f"expected a safetensors agent as pongrl card or the zoo writes it"
        ) from None
    seed_keys = any(key.startswith("actor_network.") for key in weights)
    algo = metadata.get("algo", "selfplay" if seed_keys else "dqn")
    try:
        env_step = int(metadata.get("env_step", 0))
    except ValueError:
        raise PongrlError(f"{path}: its env_step metadata is not a number") from None
    if algo == "dqn":
        network = q_network_for(weights)
        _load_weights(network, weights, path)
        return QAgent(network, name=name, env_step=env_step)
    if algo not in PLAYING_NETWORK or not seed_keys:
        raise PongrlError(f"{path}: algorithm {algo!r} with these weights cannot be loaded as an agent")
    return _seed_format_agent(weights, path, name, metadata.get("obs_profile", "seed"), env_step, algo)


def load_agent(spec: str) -> Agent:
    """Load the playing part of a pongrl checkpoint of any algorithm (a run directory means its
    latest), a bare state_dict saved by the self-play card's code (`torch.save(agent.state_dict())`),
    or a safetensors agent; `spec` may name an agent of the zoo (`zoo:NAME`) or a Hub file (`hf://...`),
    which then names the agent."""
    path = resolve(spec)
    name = spec if zoo.is_zoo_spec(spec) or hub.is_hub_spec(spec) else path
    agent = load_safetensors_agent(path, name) if path.endswith(".safetensors") else _load_torch_file(path, name)
    agent.path = path
    return agent


def as_agent(agent_or_spec) -> Agent:
    """An Agent as given, or the agent that a spec names (see load_agent)."""
    if isinstance(agent_or_spec, Agent):
        return agent_or_spec
    if not isinstance(agent_or_spec, (str, os.PathLike)):
        raise PongrlError(f"expected an agent or the spec of one, got {type(agent_or_spec).__name__}")
    return load_agent(os.fspath(agent_or_spec))


def export_seed_format(agent_or_spec, out: str, force: bool = False) -> PolicyAgent:
    """Write a PPO or self-play agent (an Agent, or any spec load_agent takes) to `out` as the bare float32
    state_dict that the self-play card's `Agent.load` reads (`pongrl export`), atomically, and return the agent.
    Refused: an existing `out` unless `force`, a DQN agent (the card's format holds a policy) and a torso other
    than the card's Nature one."""
    if os.path.exists(out) and not force:
        raise PongrlError(f"{out}: exists (use --force to overwrite)")
    agent = as_agent(agent_or_spec)
    source = os.fspath(agent_or_spec) if isinstance(agent_or_spec, (str, os.PathLike)) else agent.name
    if not isinstance(agent, PolicyAgent):
        raise PongrlError(f"{source}: only PPO agents have the self-play card's format (this is a {agent.algo} agent)")
    weights = agent.state_dict()
    torso = torso_kind(weights)
    if torso != "nature":
        raise PongrlError(
            f"{source}: the self-play card's Agent has the Nature torso; this agent has the "
            f"{torso!r} one, so it has no seed-format export"
        )
    write_torch_file(out, weights)
    return agent


def _load_torch_file(path: str, name: str) -> Agent:
    path, payload = read_weights_file(path)
    if not is_checkpoint(payload):
        if isinstance(payload, dict) and any(str(k).startswith("actor_network.") for k in payload):
            return _seed_format_agent(payload, path, name)
        if isinstance(payload, dict) and "torso.0.weight" in payload:  # a Q-network's state_dict (a card's model.pt)
            network = q_network_for(payload)
            _load_weights(network, payload, path)
            return QAgent(network, name=name)
        raise PongrlError(f"{path}: neither a pongrl checkpoint nor a seed-format or Q-network state_dict")
    payload = validate_checkpoint(path, payload)
    step = int(payload.get("env_step", 0))
    weights = playing_weights(payload)
    if payload["algo"] == "dqn":
        network = q_network_for(weights)
        _load_weights(network, weights, path)
        agent: Agent = QAgent(network, name=name, env_step=step)
    else:
        try:
            shared, profile = bool(payload["config"]["share_network"]), payload["obs_profile"]
        except (KeyError, TypeError):
            raise PongrlError(f"{path}: the checkpoint lacks its configuration") from None
        network = ActorCritic(NUM_ACTIONS, share_network=shared, network=torso_kind(weights))
        _load_weights(network, weights, path)
        agent = PolicyAgent(network.eval(), profile, name=name, env_step=step, algo=payload["algo"])
    agent.config = payload.get("config") if isinstance(payload.get("config"), dict) else None
    return agent
