"""Seeding and capturing every random number generator a run uses, for exact resume."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> np.random.Generator:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def derived_seed(*parts: int) -> int:
    """A 31-bit seed (what the emulator accepts) derived from several integers."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] % 2**31)


def capture_rng(generator: np.random.Generator) -> dict:
    numpy_global = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy_global": (numpy_global[0], torch.from_numpy(numpy_global[1].copy()), *numpy_global[2:]),
        "torch": torch.get_rng_state(),
        "generator": generator.bit_generator.state,
    }


def restore_rng(state: dict, generator: np.random.Generator) -> None:
    random.setstate(state["python"])
    kind, keys, *rest = state["numpy_global"]
    np.random.set_state((kind, keys.numpy(), *rest))
    torch.set_rng_state(state["torch"])
    generator.bit_generator.state = state["generator"]
