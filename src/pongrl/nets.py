"""Neural networks: the convolutional torsos, the Q-network and the actor-critic built on them.

Two torsos, picked by `--network`:
- `nature` (Mnih et al. 2015), the default and the seeds' network: an `nn.Sequential` whose indices
  match the self-play card's `atari_network` (conv at 0, 2, 4; linear at 7), so state_dict keys line
  up with checkpoints made by that code;
- `small` (Mnih et al. 2013, the first DQN's network): two convolutions and 256 units, about a third
  of the arithmetic per frame, for learning faster in wall-clock time on a CPU.
Intermediate activations are easy to read out by iterating the Sequential.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import nn

from pongrl.game import FRAME_SIZE, FRAME_STACK, NUM_ACTIONS


# name: (convolutions as (filters, kernel, stride), dense units)
TORSOS = {
    "nature": (((32, 8, 4), (64, 4, 2), (64, 3, 1)), 512),  # Mnih et al. 2015: 18.7 MFLOP per frame stack
    "small": (((16, 8, 4), (32, 4, 2)), 256),  # Mnih et al. 2013: 5.9 MFLOP per frame stack
}


def conv_torso(network: str = "nature") -> nn.Sequential:
    """Convolutions with ReLU, flatten, dense with ReLU. For `nature` the indices are the seed's
    `atari_network` (conv at 0, 2, 4; linear at 7)."""
    convolutions, units = TORSOS[network]
    layers, channels, size = [], FRAME_STACK, FRAME_SIZE
    for filters, kernel, stride in convolutions:
        layers += [nn.Conv2d(channels, filters, kernel, stride=stride), nn.ReLU()]
        channels, size = filters, (size - kernel) // stride + 1
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(channels * size * size, units), nn.ReLU())


def torso_features(torso: nn.Sequential, x: torch.Tensor, bfloat16: bool) -> torch.Tensor:
    """The torso's features in float32. With `bfloat16` the torso runs under autocast (its weights stay
    float32, the convolutions and the dense layer compute in bfloat16): a PPO update step ran 1.6x faster
    on a CPU with bfloat16 units (docs/speed.md). The heads after it, and so the logits, values and
    Q-values the losses are made of, stay float32."""
    with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=bfloat16):
        return torso(x).float()


def torso_layers(torso: nn.Sequential, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The torso's activations after each ReLU, in float32: conv1, conv2, ... (N, C, H, W) and fc (N, units)."""
    layers, convolutions = {}, 0
    for layer in torso:
        x = layer(x)
        if isinstance(layer, nn.ReLU):
            if x.ndim == 4:
                convolutions += 1
                layers[f"conv{convolutions}"] = x
            else:
                layers["fc"] = x
    return layers


@contextmanager
def float32_arithmetic(network: nn.Module):
    """Run `network` (a QNetwork or ActorCritic) in float32 inside the block, whatever precision it
    trains in. Agents are judged this way: greedy play can hinge on near-ties between actions, and a
    bfloat16 torso breaks some of them the other way (a self-play checkpoint won a start 21-1 in
    float32 and lost it 0-21 in bfloat16), so judging in float32 everywhere keeps the evaluation during
    training equal to `pongrl eval` of the saved checkpoint, on any hardware."""
    saved, network.bfloat16 = network.bfloat16, False
    try:
        yield network
    finally:
        network.bfloat16 = saved


def torso_kind(state_dict: dict) -> str:
    """Which torso a state_dict was saved from, told by its first convolution's filter count."""
    first_filters = {convolutions[0][0]: name for name, (convolutions, _) in TORSOS.items()}
    for key, tensor in state_dict.items():
        if str(key).endswith("0.weight") and getattr(tensor, "ndim", 0) == 4:
            return first_filters.get(tensor.shape[0], "nature")  # an unknown shape fails to load, naming itself
    return "nature"


DISTRIBUTIONAL_KINDS = ("none", "c51", "qr")


class QHead(nn.Module):
    """A Q-network's head past the torso when it is dueling or distributional: features (N, units) in,
    expected Q-values (N, A) out, like the plain linear head it replaces.

    Each action gets K numbers (`outputs`): K = 1 for an expected value; for C51 (Bellemare et al. 2017) the
    logits of a categorical distribution on the fixed `support` of K atoms; for QR-DQN (Dabney et al. 2018)
    K quantile values at the fractions `quantile_fractions`. Dueling (Wang et al. 2016) makes them from a
    value stream and an advantage stream, V + A - mean over actions of A, per atom as Rainbow does. The
    support and the fractions are buffers, so a state_dict says what head it came from (`head_settings`).
    """

    def __init__(
        self,
        units: int,
        num_actions: int,
        dueling: bool = False,
        distributional: str = "none",
        atoms: int = 1,
        v_min: float = -10.0,
        v_max: float = 10.0,
    ):
        super().__init__()
        self.num_actions, self.distributional = num_actions, distributional
        self.atoms = 1 if distributional == "none" else atoms
        if dueling:
            self.value = nn.Linear(units, self.atoms)
            self.advantage = nn.Linear(units, num_actions * self.atoms)
        else:
            self.output = nn.Linear(units, num_actions * self.atoms)
        if distributional == "c51":
            self.register_buffer("support", torch.linspace(v_min, v_max, atoms))
        elif distributional == "qr":
            self.register_buffer("quantile_fractions", (torch.arange(atoms, dtype=torch.float32) + 0.5) / atoms)

    @property
    def dueling(self) -> bool:
        return hasattr(self, "advantage")

    def outputs(self, features: torch.Tensor) -> torch.Tensor:
        """(N, A, K): logits (C51), quantile values (QR) or the Q-values themselves (K = 1)."""
        if not self.dueling:
            return self.output(features).view(-1, self.num_actions, self.atoms)
        advantage = self.advantage(features).view(-1, self.num_actions, self.atoms)
        value = self.value(features).view(-1, 1, self.atoms)
        return value + advantage - advantage.mean(dim=1, keepdim=True)

    def expected(self, outputs: torch.Tensor) -> torch.Tensor:
        """Expected Q-values (N, A) from `outputs`."""
        if self.distributional == "c51":
            return torch.softmax(outputs, dim=-1) @ self.support
        return outputs.mean(dim=-1)  # QR: the quantiles are equally likely; K = 1: the value itself

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.expected(self.outputs(features))


class QNetwork(nn.Module):
    """Maps a uint8 stack (N, 4, 84, 84) to one Q-value per action.

    Pixels are scaled by 1/255 inside the network, so callers hand over raw uint8 frames
    and the replay buffer never holds floats. The head is one linear layer (keys `head.weight`,
    `head.bias`, as every DQN checkpoint before the other heads had it), or a QHead when `dueling`
    or `distributional`; either way `head(features)` gives the expected Q-values.
    """

    def __init__(
        self,
        num_actions: int,
        network: str = "nature",
        precision: str = "float32",
        dueling: bool = False,
        distributional: str = "none",
        atoms: int = 51,
        v_min: float = -10.0,
        v_max: float = 10.0,
    ):
        super().__init__()
        self.torso = conv_torso(network)
        units = TORSOS[network][1]
        if dueling or distributional != "none":
            self.head: nn.Module = QHead(units, num_actions, dueling, distributional, atoms, v_min, v_max)
        else:
            self.head = nn.Linear(units, num_actions)
        self.bfloat16 = precision == "bfloat16"

    @property
    def distributional(self) -> str:
        return getattr(self.head, "distributional", "none")

    def features(self, frames: torch.Tensor) -> torch.Tensor:
        x = frames.float().mul_(1.0 / 255.0)
        return torso_features(self.torso, x, self.bfloat16)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(frames))

    def outputs(self, frames: torch.Tensor) -> torch.Tensor:
        """The head's numbers per action before they are reduced to expected Q-values (N, A, K)."""
        features = self.features(frames)
        return self.head.outputs(features) if isinstance(self.head, QHead) else self.head(features).unsqueeze(-1)

    def distribution(self, frames: torch.Tensor) -> torch.Tensor:
        """The return distribution per action (N, A, K): probabilities on `head.support` (C51), or the
        quantile values at `head.quantile_fractions` (QR; the Q-values, K = 1, for an expected-value head)."""
        outputs = self.outputs(frames)
        return torch.softmax(outputs, dim=-1) if self.distributional == "c51" else outputs


def head_settings(state_dict: dict) -> dict:
    """The QNetwork head settings (dueling, distributional, atoms, v_min, v_max) a state_dict was saved
    with, read from its keys and buffers, so that a bare weights file rebuilds the network it came from."""
    settings: dict = {"dueling": "head.value.weight" in state_dict, "distributional": "none"}
    if "head.support" in state_dict:
        support = state_dict["head.support"]
        settings.update(distributional="c51", atoms=len(support), v_min=float(support[0]), v_max=float(support[-1]))
    elif "head.quantile_fractions" in state_dict:
        settings.update(distributional="qr", atoms=len(state_dict["head.quantile_fractions"]))
    return settings


def q_network_for(state_dict: dict) -> QNetwork:
    """An untrained QNetwork of the torso and head a state_dict was saved from (load the weights into it)."""
    return QNetwork(NUM_ACTIONS, torso_kind(state_dict), **head_settings(state_dict))


def layer_init(layer: nn.Module, std: float = 2**0.5, bias: float = 0.0) -> nn.Module:
    """Orthogonal weights and constant bias, as CleanRL's PPO initialises its layers."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


def orthogonal_torso(network: str = "nature") -> nn.Sequential:
    torso = conv_torso(network)
    for layer in torso:
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            layer_init(layer)
    return torso


class ActorCritic(nn.Module):
    """The self-play model card's `Agent`: a Nature-CNN torso for the actor and one for the critic
    (the same module when `share_network`), an actor head (std 0.01) and a critic head (std 1).

    Attribute names match the seed, so its state_dict keys and shapes are the seed's
    (`actor_network.0.weight` [32,4,8,8] ... `actor_network.7.weight` [512,3136], `critic_network.*`,
    `actor.weight` [A,512], `critic.weight` [1,512]); a shared model lists the torso under both names,
    as the seed's does. Inputs are uint8 or float pixels in [0, 255], layout (N, 84, 84, 4).
    """

    def __init__(
        self,
        num_actions: int = NUM_ACTIONS,
        share_network: bool = False,
        network: str = "nature",
        precision: str = "float32",
    ):
        super().__init__()
        self.share_network = share_network
        self.bfloat16 = precision == "bfloat16"
        features = TORSOS[network][1]
        self.actor_network = orthogonal_torso(network)
        self.critic_network = self.actor_network if share_network else orthogonal_torso(network)
        self.actor = layer_init(nn.Linear(features, num_actions), std=0.01)
        self.critic = layer_init(nn.Linear(features, 1), std=1.0)

    @staticmethod
    def _prepare(frames: torch.Tensor) -> torch.Tensor:
        # (N, 84, 84, 4) -> (N, 4, 84, 84) as a channels_last view: no copy, and the fast conv layout.
        return frames.permute(0, 3, 1, 2).float().mul_(1.0 / 255.0)

    def forward(self, frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits (N, A) and values (N,) in one pass (the torso runs once when shared)."""
        x = self._prepare(frames)
        actor_features = torso_features(self.actor_network, x, self.bfloat16)
        critic_features = (
            actor_features if self.share_network else torso_features(self.critic_network, x, self.bfloat16)
        )
        return self.actor(actor_features), self.critic(critic_features).squeeze(-1)

    def logits(self, frames: torch.Tensor) -> torch.Tensor:
        """Action logits alone: with separate torsos the critic's is not run."""
        return self.actor(torso_features(self.actor_network, self._prepare(frames), self.bfloat16))

    def value(self, frames: torch.Tensor) -> torch.Tensor:
        return self.critic(torso_features(self.critic_network, self._prepare(frames), self.bfloat16)).squeeze(-1)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        result = super().load_state_dict(state_dict, strict=strict, assign=assign)
        if self.share_network:  # loading may have untied the shared torso: tie it again
            self.critic_network = self.actor_network
        return result


def is_shared_torso(state_dict: dict) -> bool:
    """A seed-format state_dict shares its torso when every critic_network tensor equals the actor's."""
    actor = {k[len("actor_network.") :]: v for k, v in state_dict.items() if k.startswith("actor_network.")}
    critic = {k[len("critic_network.") :]: v for k, v in state_dict.items() if k.startswith("critic_network.")}
    return bool(actor) and actor.keys() == critic.keys() and all(torch.equal(actor[k], critic[k]) for k in actor)
