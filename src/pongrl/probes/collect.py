"""`pongrl probe collect`: play games and record, for every agent step, the RAM ground truth and each
agent's activations at every layer on the same frames.

The first agent plays the right paddle against the built-in AI, or a side of two-player Pong against
another agent (`opponent`, `side`; serves pressed for both, as agents trained against the built-in AI
never learned to serve). Every agent named (the first included) watches the same game from the first
agent's side in its own observation profile (mirrored on the left, where the labels are mirrored too),
and so does an untrained network of each architecture among them (seeded weights: the "random-init"
baseline of AtariARI's table). Layers wider than
REDUCED_WIDTH floats (the input and the convolutions) are stored through a fixed random projection to
REDUCED_WIDTH dimensions (a seeded Gaussian matrix, the same for every run and checkpoint; by the
Johnson-Lindenstrauss lemma a linear probe loses little), the others whole, as float16. Layers named in
`whole_layers` are stored whole however wide: a sparse dictionary (`probe features`) needs a layer's own
coordinates, to splice its reconstruction into the network and to steer along its features.

Storage: one HDF5 file per game (`DIR/games/game_NNNNN.h5`, datasets chunked by rows), written to a temp
file as the game is played (the layers of every CHUNK_FRAMES frames at a time) and renamed when the game is
complete, so an interrupted collect keeps every game it finished and
`collect` run again continues after them; `DIR/collect.json` names the agents and settings, and a
second collect into the same DIR must name the same ones.
"""

from __future__ import annotations

import json
import os
import signal
import zlib

import numpy as np
import torch

from pongrl.agent import Agent, PolicyAgent, QAgent
from pongrl.game import FRAME_SIZE, FRAME_STACK, LEFT, MAX_START_NOOP_FRAMES, NUM_ACTIONS, RIGHT
from pongrl.arena import BUILTIN, load_player
from pongrl.runner import BUILTIN as BUILTIN_AI
from pongrl.runner import AgentPlayer, GamePlan, play_games
from pongrl.checkpoint import TEMP_PREFIX, atomic_write_bytes, atomic_write_file
from pongrl.errors import PongrlError
from pongrl.nets import ActorCritic, head_settings, q_network_for, torso_kind, torso_layers
from pongrl.probes.labels import STEP_LABELS, predictive_labels, read_labels
from pongrl.run import StopSignal

REDUCED_WIDTH = 1024
PROJECTION_SEED = 20261202
RANDOM_INIT_SEED = 0
GAMES_FOLDER = "games"
SETTINGS_FILE = "collect.json"
FORWARD_BATCH = 256
CHUNK_FRAMES = 1024  # frames held in memory before their layers are computed and written


def projection(layer: str, width: int) -> torch.Tensor | None:
    """The fixed (width, REDUCED_WIDTH) Gaussian projection of a layer wider than REDUCED_WIDTH, scaled
    by 1/sqrt(REDUCED_WIDTH); seeded by the layer's name and width, so every run draws the same one."""
    if width <= REDUCED_WIDTH:
        return None
    generator = torch.Generator().manual_seed(PROJECTION_SEED + zlib.crc32(f"{layer}:{width}".encode()))
    return torch.randn(width, REDUCED_WIDTH, generator=generator) / REDUCED_WIDTH**0.5


def stored_projection(settings: dict, layer: str, width: int) -> torch.Tensor | None:
    """The projection a collect with these settings stored `layer` through, or None where it stored it whole."""
    if not settings.get("reduced_width") or layer in settings.get("whole_layers", ()):
        return None
    return projection(layer, width)


class Recorder:
    """One agent's layers, reduced as documented above."""

    def __init__(self, agent: Agent, settings: dict):
        self.agent = agent
        self.settings = settings  # the collect's: which layers it stores through a projection (stored_projection)
        self._projections: dict[str, torch.Tensor | None] = {}

    def layers(self, observations: np.ndarray, inputs: dict | None = None) -> dict[str, np.ndarray]:
        """Every layer, reduced, as float16. `inputs` holds the reduced "input" layer by observation
        profile: every agent of a profile sees the same pixels, so its projection is computed once."""
        key = self.agent.obs_profile
        known = inputs.get(key) if inputs is not None else None
        parts: dict[str, list[np.ndarray]] = {}
        for first in range(0, len(observations), FORWARD_BATCH):
            for name, values in self.agent.layers(observations[first : first + FORWARD_BATCH]).items():
                if name == "input" and known is not None:
                    continue
                if name not in self._projections:
                    self._projections[name] = stored_projection(self.settings, name, values.shape[1])
                matrix = self._projections[name]
                reduced = values if matrix is None else (torch.from_numpy(values) @ matrix).numpy()
                parts.setdefault(name, []).append(reduced.astype(np.float16))
        layers = {name: np.concatenate(chunks) for name, chunks in parts.items()}
        if known is not None:
            layers["input"] = known
        elif inputs is not None and "input" in layers:
            inputs[key] = layers["input"]
        return layers


def architecture(agent: Agent) -> str:
    """A readable name of an agent's architecture: what its untrained twin must share."""
    torso = torso_kind(agent.network.state_dict())
    if isinstance(agent, QAgent):
        head = head_settings(agent.network.state_dict())
        return (
            f"q-{torso}"
            + ("-dueling" if head["dueling"] else "")
            + (f"-{head['distributional']}-{head['atoms']}" if head["distributional"] != "none" else "")
        )
    return f"actor-critic-{torso}-{'shared' if agent.network.share_network else 'separate'}-{agent.obs_profile}"


def random_init_like(agent: Agent, name: str = "random-init") -> Agent:
    """An untrained network of the agent's architecture, with seeded weights."""
    torch.manual_seed(RANDOM_INIT_SEED)
    weights = agent.network.state_dict()
    if isinstance(agent, QAgent):
        return QAgent(q_network_for(weights), name=name)
    network = ActorCritic(NUM_ACTIONS, share_network=agent.network.share_network, network=torso_kind(weights)).eval()
    return PolicyAgent(network, agent.obs_profile, name=name)


def untrained_twins(agents: list[Agent]) -> list[Agent]:
    """One untrained network per architecture among the agents: "random-init" alone, or
    "random-init (ARCHITECTURE)" each when the agents mix architectures."""
    kinds: dict[str, Agent] = {}
    for agent in agents:
        kinds.setdefault(architecture(agent), agent)  # the first agent of each kind
    if len(kinds) == 1:
        return [random_init_like(agents[0])]
    return [random_init_like(agent, f"random-init ({kind})") for kind, agent in kinds.items()]


def game_files(out_dir: str) -> list[str]:
    folder = os.path.join(out_dir, GAMES_FOLDER)
    if not os.path.isdir(folder):
        return []
    return sorted(
        os.path.join(folder, name) for name in os.listdir(folder) if name.startswith("game_") and name.endswith(".h5")
    )


def _append_layers(data, layers: list[dict]) -> None:
    """Append a chunk of frames' layers (one dict per agent) to an open game file."""
    for index, agent_layers in enumerate(layers):
        for name, values in agent_layers.items():
            key = f"agents/{index}/{name}"
            if key not in data:
                data.create_dataset(
                    key,
                    shape=(0, values.shape[1]),
                    maxshape=(None, values.shape[1]),
                    dtype=values.dtype,
                    chunks=(CHUNK_FRAMES // 4, values.shape[1]),
                )
            dataset = data[key]
            dataset.resize(len(dataset) + len(values), axis=0)
            dataset[-len(values) :] = values


def _write_labels(data, labels: dict, steps: np.ndarray, game: int) -> None:
    data.attrs["game"] = game
    data.create_dataset("step", data=steps)
    for name, values in labels.items():
        data.create_dataset(f"labels/{name}", data=np.asarray(values, np.int32))


def _write_game(path: str, labels: dict, steps: np.ndarray, game: int, layers: list[dict]) -> None:
    """One whole game's file at once (tests build collects this way)."""
    import h5py

    def fill(temp_path: str) -> None:
        with h5py.File(temp_path, "w") as data:
            _append_layers(data, layers)
            _write_labels(data, labels, steps, game)

    atomic_write_file(path, fill)


def collect(
    agent_specs: list[str],
    frames: int,
    out_dir: str,
    opponent: str = BUILTIN,
    sample: bool = False,
    seed: int = 0,
    progress=None,
    reduce_layers: bool = True,
    side: str = "right",
    whole_layers: tuple[str, ...] = (),
) -> dict:
    """Play and record until `frames` agent steps are stored (whole games, the last one cut at `frames`).
    `whole_layers` names layers stored whole however wide (e.g. ("conv3",), for a dictionary of it);
    `reduce_layers=False` stores every layer whole (benchmarks/probe_projection.py measures what the
    projection costs that way). Returns a summary: frames, games, agents."""
    if frames <= 0:
        raise PongrlError(f"--frames must be positive, got {frames}")
    if side not in ("right", "left"):
        raise PongrlError(f"--side must be right or left, got {side!r}")
    against_builtin = opponent.strip().lower() == BUILTIN
    if against_builtin and side != "right":
        raise PongrlError(
            "against the built-in AI the agent plays the right paddle: --side left needs --opponent AGENT"
        )
    players = [load_player(spec) for spec in agent_specs]
    if any(player.is_builtin for player in players):
        raise PongrlError("probe collect records trained agents' layers: builtin has none")
    rival = None if against_builtin else load_player(opponent)
    agents = [player.agent for player in players]
    whole_layers = tuple(sorted(set(whole_layers)))
    if whole_layers:  # the layers' names, from the torso on one blank network input (the same shape for every agent)
        torso, _ = agents[0].policy_parts()
        with torch.inference_mode():
            known = ["input", *torso_layers(torso, torch.zeros(1, FRAME_STACK, FRAME_SIZE, FRAME_SIZE))]
        unknown = [layer for layer in whole_layers if layer not in known]
        if unknown:
            raise PongrlError(
                f"--whole-layers: {agents[0].name} has no layer {unknown[0]!r} (its layers: {', '.join(known)})"
            )
    twins = untrained_twins(agents)
    agents += twins
    named = [
        {
            "spec": spec,
            "name": player.name,
            "sha256": player.sha256,
            "env_step": player.env_step,
            "obs_profile": player.agent.obs_profile,
            "architecture": architecture(player.agent),
        }
        for spec, player in zip(agent_specs, players)
    ]
    untrained = [
        {
            "spec": "random-init",
            "name": twin.name,
            "sha256": "",
            "env_step": 0,
            "obs_profile": twin.obs_profile,
            "architecture": architecture(twin),
        }
        for twin in twins
    ]
    settings = {
        "format": "pongrl-probe-1",
        "agents": named + untrained,
        "opponent": BUILTIN if rival is None else {"spec": opponent, "name": rival.name, "sha256": rival.sha256},
        "side": side,
        "sample": sample,
        "seed": seed,
        "reduced_width": REDUCED_WIDTH if reduce_layers else None,
        "projection_seed": PROJECTION_SEED,
    }
    if whole_layers:  # only when named, so that collects made before this setting existed continue as they were
        settings["whole_layers"] = list(whole_layers)
    settings_path = os.path.join(out_dir, SETTINGS_FILE)
    if os.path.exists(settings_path):
        with open(settings_path) as handle:
            before = json.load(handle)
        if {k: v for k, v in before.items() if k != "frames"} != settings:
            raise PongrlError(f"{out_dir}: holds a collect of other agents or settings; choose another --out")
    os.makedirs(os.path.join(out_dir, GAMES_FOLDER), exist_ok=True)
    for name in os.listdir(os.path.join(out_dir, GAMES_FOLDER)):  # a game cut short by a kill, not by Ctrl-C
        if name.startswith(TEMP_PREFIX):
            os.unlink(os.path.join(out_dir, GAMES_FOLDER, name))
    done_files = game_files(out_dir)
    stored = sum(_rows(path) for path in done_files)
    # The frames asked for, so that fit can tell an interrupted collect (it never shrinks what is there).
    atomic_write_bytes(settings_path, json.dumps({**settings, "frames": max(frames, stored)}, indent=1).encode())

    recorders = [Recorder(agent, settings) for agent in agents]
    game = len(done_files)
    rng = np.random.default_rng([seed, game])
    # Ctrl-C stops the collect between two agent steps, never inside an h5py write or a forward pass: the
    # game being played is dropped (its temp file removed) and every finished game stays.
    with StopSignal((signal.SIGINT,)) as stop:
        while stored < frames:
            path = os.path.join(out_dir, GAMES_FOLDER, f"game_{game:05d}.h5")
            player = AgentPlayer(agents[0], rng, sample=sample)
            if rival is None:  # the agent on the right against the built-in AI, its game seeded for this game
                plan, rules = GamePlan(player, BUILTIN_AI), {"seed": seed + game}
            else:  # serves pressed for both: agents trained against the built-in AI never learned to serve
                plan = GamePlan(
                    player,
                    AgentPlayer(rival.agent, rng, sample=sample),
                    first_right=side == "right",
                    start=int(rng.integers(0, MAX_START_NOOP_FRAMES)),
                )
                rules = {"serve_assist": True}
            steps = _play_game(path, game, plan, rules, agents, recorders, frames - stored, progress, stop)
            stored, game = stored + steps, game + 1
        if stop.received:  # Ctrl-C during the last step's write: the collect is whole, but the user asked to stop
            raise KeyboardInterrupt
    return {"frames": stored, "games": game, "agents": [agent["name"] for agent in settings["agents"]]}


def _play_game(
    path: str,
    game: int,
    plan: GamePlan,
    rules: dict,
    agents: list[Agent],
    recorders: list[Recorder],
    frames_left: int,
    progress,
    stop: StopSignal,
) -> int:
    """Play one game (cut at `frames_left` steps) into its file, the layers recorded every CHUNK_FRAMES
    frames (a game can last 27,000 steps: never a whole game in memory). Every agent watches from the playing
    agent's side (`plan.first`). Returns the steps played."""
    import h5py

    profiles = [agent.obs_profile for agent in agents]
    side = RIGHT if plan.first_right else LEFT
    played = 0

    def record(data, observations: dict) -> None:
        stacks = {profile: np.stack(frames_of) for profile, frames_of in observations.items()}
        inputs: dict = {}
        _append_layers(
            data, [recorder.layers(stacks[profile], inputs) for recorder, profile in zip(recorders, profiles)]
        )

    def fill(temp_path: str) -> None:
        nonlocal played
        with h5py.File(temp_path, "w") as data:
            labels = {name: [] for name in STEP_LABELS}
            observations = {profile: [] for profile in set(profiles)}
            previous_ram = None

            def watch(driver, games) -> None:
                """Before each step: the RAM's labels and every profile's observation of what the agent sees now."""
                nonlocal observations, previous_ram, played
                if stop.received:
                    raise KeyboardInterrupt  # here, between steps: the temp file is removed, finished games stay
                ram = driver.ram(0).copy()
                for name, value in read_labels(ram, previous_ram, side == LEFT).items():
                    labels[name].append(value)
                for profile in observations:
                    observations[profile].append(driver.observation(0, side, profile).copy())
                previous_ram, played = ram, played + 1
                if len(observations[profiles[0]]) == CHUNK_FRAMES:
                    record(data, observations)
                    observations = {profile: [] for profile in observations}
                if progress:
                    progress(1)

            play_games(
                [[plan]], before_step=watch, stop=lambda: played >= frames_left, extra_profiles=tuple(profiles), **rules
            )
            if observations[profiles[0]]:
                record(data, observations)
            labels.update(predictive_labels(labels))  # from the game's later frames, now that it is recorded
            _write_labels(data, labels, np.arange(played, dtype=np.int32), game)

    atomic_write_file(path, fill)
    return played


def _rows(path: str) -> int:
    import h5py

    try:
        with h5py.File(path, "r") as data:
            return len(data["step"])
    except (OSError, KeyError) as error:
        raise PongrlError(f"{path}: unreadable probe data ({error})") from None
