"""`pongrl probe collect`: play games and record, for every agent step, the RAM ground truth and each
agent's activations at every layer on the same frames.

The first agent plays the right paddle against the built-in AI; every agent named (the first included)
watches the same game in its own observation profile, and so does an untrained network of the first
agent's architecture (seeded weights: the "random-init" baseline of AtariARI's table). Layers wider than
REDUCED_WIDTH floats (the input and the convolutions) are stored through a fixed random projection to
REDUCED_WIDTH dimensions (a seeded Gaussian matrix, the same for every run and checkpoint; by the
Johnson-Lindenstrauss lemma a linear probe loses little), the others whole, as float16.

Storage: one HDF5 file per game (`DIR/games/game_NNNNN.h5`, datasets chunked by rows), written to a temp
file and renamed when the game is complete, so an interrupted collect keeps every game it finished and
`collect` run again continues after them; `DIR/collect.json` names the agents and settings, and a
second collect into the same DIR must name the same ones.
"""
from __future__ import annotations

import io
import json
import os
import zlib

import numpy as np
import torch

from pongrl.agent import NUM_ACTIONS, Agent, PolicyAgent, QAgent
from pongrl.arena import BUILTIN, load_player
from pongrl.checkpoint import atomic_write_bytes
from pongrl.errors import PongrlError
from pongrl.nets import ActorCritic, QNetwork, torso_kind
from pongrl.probes.labels import LABELS, read_labels

REDUCED_WIDTH = 1024
PROJECTION_SEED = 20261202
RANDOM_INIT_SEED = 0
GAMES_FOLDER = "games"
SETTINGS_FILE = "collect.json"
FORWARD_BATCH = 256


def projection(layer: str, width: int) -> torch.Tensor | None:
    """The fixed (width, REDUCED_WIDTH) Gaussian projection of a layer wider than REDUCED_WIDTH, scaled
    by 1/sqrt(REDUCED_WIDTH); seeded by the layer's name and width, so every run draws the same one."""
    if width <= REDUCED_WIDTH:
        return None
    generator = torch.Generator().manual_seed(PROJECTION_SEED + zlib.crc32(f"{layer}:{width}".encode()))
    return torch.randn(width, REDUCED_WIDTH, generator=generator) / REDUCED_WIDTH ** 0.5


class Recorder:
    """One agent's layers, reduced as documented above."""

    def __init__(self, agent: Agent):
        self.agent = agent
        self._projections: dict[str, torch.Tensor | None] = {}

    def layers(self, observations: np.ndarray) -> dict[str, np.ndarray]:
        parts: dict[str, list[np.ndarray]] = {}
        for first in range(0, len(observations), FORWARD_BATCH):
            for name, values in self.agent.layers(observations[first:first + FORWARD_BATCH]).items():
                if name not in self._projections:
                    self._projections[name] = projection(name, values.shape[1])
                matrix = self._projections[name]
                reduced = values if matrix is None else (torch.from_numpy(values) @ matrix).numpy()
                parts.setdefault(name, []).append(reduced.astype(np.float16))
        return {name: np.concatenate(chunks) for name, chunks in parts.items()}


def random_init_like(agent: Agent) -> Agent:
    """An untrained network of the agent's architecture, with seeded weights."""
    torch.manual_seed(RANDOM_INIT_SEED)
    weights = agent.network.state_dict()
    if isinstance(agent, QAgent):
        return QAgent(QNetwork(NUM_ACTIONS, torso_kind(weights)), name="random-init")
    network = ActorCritic(NUM_ACTIONS, share_network=agent.network.share_network, network=torso_kind(weights)).eval()
    return PolicyAgent(network, agent.obs_profile, name="random-init")


def game_files(out_dir: str) -> list[str]:
    folder = os.path.join(out_dir, GAMES_FOLDER)
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.startswith("game_") and name.endswith(".h5"))


def _write_game(path: str, labels: dict, steps: np.ndarray, game: int, layers: list[dict]) -> None:
    import h5py

    buffer = io.BytesIO()  # one game's data, then one atomic write: a file on disk is always a whole game
    with h5py.File(buffer, "w") as data:
        data.attrs["game"] = game
        data.create_dataset("step", data=steps)
        for name, values in labels.items():
            data.create_dataset(f"labels/{name}", data=np.asarray(values, np.int32))
        for index, agent_layers in enumerate(layers):
            for name, values in agent_layers.items():
                data.create_dataset(f"agents/{index}/{name}", data=values,
                                    chunks=(min(len(values), 256), values.shape[1]))
    atomic_write_bytes(path, buffer.getvalue())


def collect(agent_specs: list[str], frames: int, out_dir: str, opponent: str = BUILTIN, sample: bool = False,
            seed: int = 0, progress=None) -> dict:
    """Play and record until `frames` agent steps are stored (whole games, the last one cut at `frames`).
    Returns a summary: frames, games, agents."""
    if frames <= 0:
        raise PongrlError(f"--frames must be positive, got {frames}")
    if opponent.strip().lower() != BUILTIN:
        raise PongrlError("probe collect plays against the built-in AI only for now (--opponent builtin)")
    players = [load_player(spec) for spec in agent_specs]
    if any(player.is_builtin for player in players):
        raise PongrlError("probe collect records trained agents' layers: builtin has none")
    agents = [player.agent for player in players]
    agents.append(random_init_like(agents[0]))
    settings = {"format": "pongrl-probe-1", "agents": [{"spec": spec, "name": player.name, "sha256": player.sha256,
                                                        "env_step": player.env_step, "obs_profile": player.agent.obs_profile}
                                                       for spec, player in zip(agent_specs, players)]
                + [{"spec": "random-init", "name": "random-init", "sha256": "", "env_step": 0,
                    "obs_profile": agents[0].obs_profile}],
                "opponent": BUILTIN, "sample": sample, "seed": seed, "reduced_width": REDUCED_WIDTH,
                "projection_seed": PROJECTION_SEED}
    settings_path = os.path.join(out_dir, SETTINGS_FILE)
    if os.path.exists(settings_path):
        with open(settings_path) as handle:
            before = json.load(handle)
        if {k: v for k, v in before.items() if k != "frames"} != settings:
            raise PongrlError(f"{out_dir}: holds a collect of other agents or settings; choose another --out")
    os.makedirs(os.path.join(out_dir, GAMES_FOLDER), exist_ok=True)
    done_files = game_files(out_dir)
    stored = sum(_rows(path) for path in done_files)
    # The frames asked for, so that fit can tell an interrupted collect (it never shrinks what is there).
    atomic_write_bytes(settings_path, json.dumps({**settings, "frames": max(frames, stored)}, indent=1).encode())

    recorders = [Recorder(agent) for agent in agents]
    profiles = [agent.obs_profile for agent in agents]
    game = len(done_files)
    rng = np.random.default_rng([seed, game])
    from pongrl.envs.single import PongGame

    while stored < frames:
        pong = PongGame(seed + game, profile=profiles[0], extra_profiles=tuple(set(profiles[1:]) - {profiles[0]}))
        pong.reset()
        observations = {profile: [] for profile in set(profiles)}
        labels = {name: [] for name in LABELS}
        previous_ram, done, steps = None, False, 0
        while not done and stored + steps < frames:
            ram = pong.ale.getRAM().copy()
            for name, value in read_labels(ram, previous_ram).items():
                labels[name].append(value)
            for profile in observations:
                observations[profile].append(pong.observation(profile))
            observation = observations[profiles[0]][-1][None]
            action = int(agents[0].act(observation, rng=rng, sample=sample)[0])
            _, _, terminated, truncated = pong.step(action)
            previous_ram, done, steps = ram, terminated or truncated, steps + 1
            if progress:
                progress(1)
        stacks = {profile: np.stack(frames_of) for profile, frames_of in observations.items()}
        layers = [recorder.layers(stacks[profile]) for recorder, profile in zip(recorders, profiles)]
        _write_game(os.path.join(out_dir, GAMES_FOLDER, f"game_{game:05d}.h5"), labels,
                    np.arange(steps, dtype=np.int32), game, layers)
        stored, game = stored + steps, game + 1
    return {"frames": stored, "games": game, "agents": [agent["name"] for agent in settings["agents"]]}


def _rows(path: str) -> int:
    import h5py

    try:
        with h5py.File(path, "r") as data:
            return len(data["step"])
    except (OSError, KeyError) as error:
        raise PongrlError(f"{path}: unreadable probe data ({error})") from None
