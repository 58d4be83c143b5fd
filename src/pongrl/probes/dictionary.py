"""A sparse dictionary of one layer of an agent: a TopK sparse autoencoder (Gao et al. 2024, "Scaling and
evaluating sparse autoencoders"), and its file.

Each frame's activations h (divided by one scale, so that the mean |h|^2 is the layer's width and the learning rate
means the same on every layer) are encoded as z = TopK(W_enc (h - b_dec) + b_enc): the k largest pre-activations
kept (and ReLU'd), every other feature 0; and decoded as h_hat = W_dec z + b_dec, each feature's decoder row of unit
norm (its direction in the layer). Trained by Adam on the mean squared error, with Gao et al.'s auxiliary loss: the
features dead for DEAD_AFTER_FRAMES frames reconstruct what the live ones missed, so that fewer stay dead.

TopK rather than an L1 penalty (Bricken et al. 2023; Cunningham et al. 2023): k sets the sparsity directly, where
an L1 coefficient's effect depends on the layer's scale and has to be tuned per layer and agent, so dictionaries of
different agents and layers are compared at one sparsity; and the activations it keeps are not shrunk toward 0,
as an L1 penalty shrinks them.

A dictionary is saved (torch.save of tensors, numbers and strings: loaded with weights_only=True, written
atomically) with the digest of its agent's weights (`opponents.weights_digest`), and is refused with any other agent:
its features are directions in one network's layer and mean nothing in another's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import torch

from pongrl.checkpoint import write_torch_file
from pongrl.errors import PongrlError

FORMAT = "pongrl-dictionary-1"
BATCH = 1024
LEARNING_RATE = 1e-3
DEAD_AFTER_FRAMES = 20_000  # a feature that fired on none of the last this many train frames is dead (Gao et al.)
AUX_K = 256  # dead features the auxiliary loss lets reconstruct the residual, per frame
AUX_WEIGHT = 1 / 32  # Gao et al.'s coefficient of the auxiliary loss


@dataclass
class Dictionary:
    """A TopK sparse autoencoder of one layer (module docstring), with where it came from."""

    layer: str
    k: int
    scale: float  # activations are divided by it before encoding
    encoder: torch.Tensor  # (width, size)
    encoder_bias: torch.Tensor  # (size,)
    decoder: torch.Tensor  # (size, width), unit rows: the features' directions in the scaled layer
    decoder_bias: torch.Tensor  # (width,)
    agent: dict  # name, digest (of its weights), env_step
    source: dict = field(default_factory=dict)  # the collect it was learned on, its frames and split
    features: dict = field(default_factory=dict)  # per feature (lists): frequency, best_label, best_r2, matched
    metrics: dict = field(default_factory=dict)  # fve, dead, dense, agreement, ...

    @property
    def size(self) -> int:
        return self.decoder.shape[0]

    @property
    def width(self) -> int:
        return self.decoder.shape[1]

    def encode(self, activations) -> torch.Tensor:
        """(N, size) feature activations of (N, width) layer activations."""
        h = torch.as_tensor(activations, dtype=torch.float32) / self.scale
        return topk_codes(h, self.encoder, self.encoder_bias, self.decoder_bias, self.k)

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        """The layer's activations, in the layer's units, that the codes stand for."""
        return (codes @ self.decoder + self.decoder_bias) * self.scale

    def reconstruct(self, activations) -> torch.Tensor:
        return self.decode(self.encode(activations))

    def direction(self, feature: int) -> np.ndarray:
        """A feature's decoder direction in the layer (unit length: the scale divides out)."""
        return self.decoder[feature].double().numpy()

    def save(self, path: str) -> str:
        """Write it whole or not at all."""
        payload = {
            "format": FORMAT,
            "layer": self.layer,
            "k": self.k,
            "scale": self.scale,
            "weights": {
                "encoder": self.encoder,
                "encoder_bias": self.encoder_bias,
                "decoder": self.decoder,
                "decoder_bias": self.decoder_bias,
            },
            "agent": self.agent,
            "source": self.source,
            "features": self.features,
            "metrics": self.metrics,
        }
        write_torch_file(path, payload)
        return path


def topk_codes(h, encoder, encoder_bias, decoder_bias, k: int) -> torch.Tensor:
    """The TopK encoding: each row's k largest pre-activations, ReLU'd, every other 0."""
    pre = (h - decoder_bias) @ encoder + encoder_bias
    values, indices = pre.topk(k, dim=1)
    return torch.zeros_like(pre).scatter_(1, indices, values.relu())


def load_dictionary(path: str) -> Dictionary:
    """A dictionary written by `pongrl probe features` (never unpickles code)."""
    if not os.path.isfile(path):
        raise PongrlError(f"{path}: no such dictionary file (pongrl probe features writes dictionary.pt)")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        if payload.get("format") != FORMAT:
            raise ValueError(f"format {payload.get('format')!r}")
        weights = payload["weights"]
        return Dictionary(
            payload["layer"],
            int(payload["k"]),
            float(payload["scale"]),
            weights["encoder"].float(),
            weights["encoder_bias"].float(),
            weights["decoder"].float(),
            weights["decoder_bias"].float(),
            payload["agent"],
            payload["source"],
            payload["features"],
            payload["metrics"],
        )
    except Exception as error:  # a truncated, foreign or pickled-code file: one line, whatever torch says
        reason = str(error).strip().splitlines()[0][:120] if str(error).strip() else type(error).__name__
        raise PongrlError(f"{path}: not a pongrl dictionary ({reason})") from None


def check_features(dictionary: Dictionary, features: list[int]) -> None:
    """Refuse a feature index the dictionary does not have."""
    for feature in features:
        if not 0 <= feature < dictionary.size:
            raise PongrlError(
                f"no feature {feature}: the dictionary has {dictionary.size:,} (0 to {dictionary.size - 1:,})"
            )


def agent_digest(agent) -> str:
    from pongrl.opponents import weights_digest

    return weights_digest(agent.state_dict())


def check_agent(dictionary: Dictionary, agent, path: str = "the dictionary") -> None:
    """Refuse a dictionary learned on another network's activations."""
    digest = agent_digest(agent)
    if digest != dictionary.agent["digest"]:
        raise PongrlError(
            f"{path}: learned on the activations of {dictionary.agent['name']} (weights digest "
            f"{dictionary.agent['digest'][:12]}), not of {agent.name} ({digest[:12]}): its features are "
            "directions in another network's layer"
        )


def train_dictionary(
    activations: np.ndarray, size: int, k: int, epochs: int, seed: int = 0, progress=None
) -> tuple[dict, list[float]]:
    """Learn a TopK dictionary of `size` features on (N, width) activations; returns its weights and scale (the
    keyword arguments of `Dictionary` that training sets) and the mean loss of each epoch. `progress(1)` after
    each batch."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    x = torch.as_tensor(activations, dtype=torch.float32)
    scale = float(torch.sqrt((x**2).sum(1).mean() / x.shape[1]).clamp_min(1e-8))
    x = x / scale
    width = x.shape[1]
    decoder = torch.randn(size, width, generator=generator)
    decoder /= decoder.norm(dim=1, keepdim=True)
    encoder = decoder.T.clone()  # Gao et al.: the encoder starts as the decoder's transpose
    decoder_bias = x.mean(0)  # the data's centre, so that features start on its variation
    encoder_bias = torch.zeros(size)
    for tensor in (decoder, encoder, decoder_bias, encoder_bias):
        tensor.requires_grad_(True)
    optimizer = torch.optim.Adam([encoder, encoder_bias, decoder, decoder_bias], lr=LEARNING_RATE)
    since_fired = torch.zeros(size)
    dead_after = min(DEAD_AFTER_FRAMES, len(x))
    losses = []
    for _ in range(epochs):
        total = 0.0
        batches = torch.randperm(len(x), generator=generator).split(BATCH)
        for index in batches:
            batch = x[index]
            codes = topk_codes(batch, encoder, encoder_bias, decoder_bias, k)
            residual = batch - (codes @ decoder + decoder_bias)
            loss = residual.pow(2).mean()
            since_fired += len(batch)
            since_fired[(codes > 0).any(0)] = 0
            dead = since_fired >= dead_after
            if dead.any():  # the dead features' own TopK reconstructs what the live ones missed
                pre = (batch - decoder_bias) @ encoder + encoder_bias
                pre = pre.masked_fill(~dead, -float("inf"))
                values, indices = pre.topk(min(AUX_K, int(dead.sum())), dim=1)
                aux_codes = torch.zeros_like(pre).scatter_(1, indices, values.relu())
                aux = (residual.detach() - aux_codes @ decoder).pow(2).mean()
                loss = loss + AUX_WEIGHT * aux
            optimizer.zero_grad()
            loss.backward()
            with torch.no_grad():  # no gradient along the unit rows' own length (Gao et al.)
                decoder.grad -= (decoder.grad * decoder).sum(1, keepdim=True) * decoder
            optimizer.step()
            with torch.no_grad():
                decoder /= decoder.norm(dim=1, keepdim=True)
            total += loss.item() * len(index)
            if progress:
                progress(1)
        losses.append(total / len(x))
    weights = {
        "scale": scale,
        "encoder": encoder.detach(),
        "encoder_bias": encoder_bias.detach(),
        "decoder": decoder.detach(),
        "decoder_bias": decoder_bias.detach(),
    }
    return weights, losses


def batches_per_epoch(frames: int) -> int:
    return -(-frames // BATCH)
