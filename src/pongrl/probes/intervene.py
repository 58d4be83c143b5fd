"""`pongrl probe intervene`: does the agent use what a probe reads? Move or remove the probe's direction inside
the network while it plays the built-in AI, and watch what its behaviour does.

A direction is a linear probe of one label on one layer (the torso's conv1, conv2, ... or fc, after the ReLU),
fitted on a collect of the same agent (`pongrl probe collect`; see `pongrl.probes.directions`). The probe reads
the label as y = h . w + b on the layer's activations h, so:
- steer by alpha: h + alpha w / |w|^2, which moves the probe's reading by exactly alpha units of the label
  (alpha = +10 on ball_y: "the ball is 10 rows lower than it is");
- steer-pattern by alpha: h + alpha p, p the label's pattern (how the layer moves on average per unit of the
  label: `directions`), the layer as it would be, on average, with the label alpha units away; the smallest
  edit that moves the probe's reading (steer) can lie along units that barely vary and that the policy ignores;
- steer-partial by alpha: h + alpha p', p' the label's pattern with the other labels of the intervention held
  fixed (the layer regressed on all of them at once): the ball's height and its landing point are tied on the
  agent's frames (closely in the last steps before the ball arrives), so each one's plain pattern carries some
  of the other's; the partial one does not;
- ablate: remove the component along u = w / |w| (h - (h . u) u), or replace it by its mean over the collect
  (mean ablation: h - (h . u - mean) u).
The control is the same edit along random directions (seeded, unit length; the same |delta| when steering): one
by default, or several draws (`random_draws`), each its own row.

Each condition plays `games` greedy games against the built-in AI through the game runner (game k of every
condition starts after the same no-op frames, its emulator reseeded alike, so that under sticky actions it draws
the same sticky actions until the edit changes what the agent does; all conditions' games run in one batch, each
row of the network's forward pass under its own condition's edit, the network before the edited layer run once
for the unperturbed and the perturbed preferences), and reports, each with its 95% interval over games:
- the paddle's offset from the real ball (the agent's paddle height minus the ball's, RAM rows, in-play steps),
  and its shift from the unperturbed games: a paddle that goes where the steered belief says the ball is
  shifts by about alpha;
- the KL divergence of the perturbed policy from the unperturbed one on the same frames (a DQN agent's policy
  read as the softmax of its Q-values), and how often the greedy action changes;
- the score against the built-in AI.
Each steering row also says the edit's size against the layer's mean activation norm (`edit_size`): a probe
can read a label along a direction in which a small move changes the reading a lot.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np
import torch

from pongrl.errors import PongrlError
from pongrl.game import RAM_BALL_Y, RAM_RIGHT_PADDLE_Y
from pongrl.probes.collect import projection
from pongrl.probes.directions import fit_direction, layer_width
from pongrl.probes.effects import EFFECT_COLUMNS, kl_divergence, mean_interval
from pongrl.probes.labels import REGRESSION_LABELS

KINDS = ("steer", "steer-pattern", "steer-partial", "ablate", "mean-ablate")
STEERING_KINDS = ("steer", "steer-pattern", "steer-partial")  # the kinds with an alpha
PATTERN_KINDS = ("steer-pattern", "steer-partial")  # along a pattern: only on a layer stored whole
RANDOM_DIRECTION_SEED = 20261203
# Games played at once, every condition's in one batch: a batch this wide keeps the network's forward passes cheap
# per game on two cores, while the emulators (one per game) stay a few hundred MB.
PARALLEL_GAMES = 64
COLUMNS = [
    "agent",
    "layer",
    "label",
    "probe_r2",
    "kind",
    "direction",
    "alpha",
    "edit_size",
    "games",
    "score",
    "score_low",
    "score_high",
    "paddle_offset",
    "paddle_offset_low",
    "paddle_offset_high",
    *EFFECT_COLUMNS,
    "paddle_offset_games",  # each game's mean offset, space-separated: game k of every condition is paired
]


def steerable_layers(agent) -> dict[str, int]:
    """The layers an intervention can edit, by their probe names, with their places in the torso that chooses
    the actions (`agent.policy_parts()`): the ReLU after each convolution (conv1, ...) and after the fully
    connected layer (fc)."""
    torso, _ = agent.policy_parts()
    layers, convolutions, before = {}, 0, None
    for position, module in enumerate(torso):
        if isinstance(module, torch.nn.ReLU):
            if isinstance(before, torch.nn.Conv2d):
                convolutions += 1
                layers[f"conv{convolutions}"] = position
            else:
                layers["fc"] = position
        before = module
    return layers


class LayerEdits:
    """The edits of one layer: `edits` lists (kind, vector, mean), to steer by adding `vector`, or to remove the
    component along the unit `vector` (back to `mean` for a mean ablation). `apply` edits each row of a batch
    of the layer's activations by its own edit, so that one batch carries the games of many conditions."""

    def __init__(self, edits: list[tuple[str, np.ndarray, float]]):
        width = len(edits[0][1]) if edits else 0
        self.shift = torch.zeros(len(edits), width)
        self.unit = torch.zeros(len(edits), width)
        self.target = torch.zeros(len(edits))
        for index, (kind, vector, mean) in enumerate(edits):
            if kind in STEERING_KINDS:
                self.shift[index] = torch.as_tensor(vector, dtype=torch.float32)
            else:
                self.unit[index] = torch.as_tensor(vector, dtype=torch.float32)
                self.target[index] = mean if kind == "mean-ablate" else 0.0

    def apply(self, activations: torch.Tensor, edit_of_row: list[int]) -> torch.Tensor:
        index = torch.as_tensor(edit_of_row)
        flat = activations.reshape(len(activations), -1)
        unit = self.unit[index]
        reading = (flat * unit).sum(1)
        flat = flat - (reading - self.target[index])[:, None] * unit + self.shift[index]
        return flat.reshape(activations.shape)


class EditedNetwork:
    """The agent's policy network with edits at some of its layers (`layer_edits`, by probe name). One call
    gives a batch's unperturbed preferences and each row's preferences under its own edit (`edits[row]`: (layer,
    index in that layer's LayerEdits), or None): the network up to an edited layer runs once for both, only the
    part after it runs again for the edited rows. In float32, as agents play (nets.float32_arithmetic)."""

    def __init__(self, agent, layer_edits: dict[str, LayerEdits]):
        self.agent, self.layer_edits = agent, layer_edits
        self.torso, self.head = agent.policy_parts()
        places = steerable_layers(agent)
        self.edited_at = {places[layer]: layer for layer in layer_edits}

    @torch.inference_mode()
    def preferences(self, obs: np.ndarray, edits: list[tuple[str, int] | None]) -> tuple[np.ndarray, np.ndarray]:
        """(unperturbed, perturbed) preferences, (N, actions) each; rows without an edit are the same in both."""
        x, kept = self.agent.network_input(obs), {}
        for place, module in enumerate(self.torso):
            x = module(x)
            if place in self.edited_at:
                kept[place] = x
        base = self.head(x)
        perturbed = base.clone()
        for place, activations in kept.items():
            layer = self.edited_at[place]
            rows = [row for row, edit in enumerate(edits) if edit is not None and edit[0] == layer]
            if not rows:
                continue
            h = self.layer_edits[layer].apply(activations[rows], [edits[row][1] for row in rows])
            for module in self.torso[place + 1 :]:
                h = module(h)
            perturbed[rows] = self.head(h)
        return base.numpy(), perturbed.numpy()


class InterveningPlayer:
    """The agent at the right paddle, each game under its condition's edit (`game_edits[game]`: (layer, index
    in that layer's LayerEdits) or None): acts greedily on the perturbed preferences, and records per game the
    KL divergence from its unperturbed policy on the same frames and whether the action changed."""

    def __init__(self, network: EditedNetwork, game_edits: list[tuple[str, int] | None]):
        self.network, self.game_edits = network, game_edits
        self.profile = network.agent.obs_profile
        self.kl = [[] for _ in game_edits]
        self.changed = [[] for _ in game_edits]
        self.games_now: list[int] = []

    def act(self, observations: np.ndarray) -> np.ndarray:
        edits = [self.game_edits[game] for game in self.games_now]
        base, perturbed = self.network.preferences(observations, edits)
        edited = [row for row, edit in enumerate(edits) if edit is not None]
        if edited:
            kl = kl_divergence(perturbed[edited], base[edited])
            changed = perturbed[edited].argmax(1) != base[edited].argmax(1)
            for row, row_kl, row_changed in zip(edited, kl, changed):
                game = self.games_now[row]
                self.kl[game].append(float(row_kl))
                self.changed[game].append(bool(row_changed))
        return perturbed.argmax(1)


def play_conditions(
    network: EditedNetwork,
    conditions: list[tuple[str, int] | None],
    games: int,
    seed: int,
    sticky_actions: float = 0.0,
    parallel: int = PARALLEL_GAMES,
    progress=None,
    watch=None,
    opponent=None,
) -> list[dict]:
    """`games` greedy games of the `network`'s agent against the built-in AI for each condition (its (layer,
    edit index), or None: the unperturbed agent), all in one batch of `parallel` games at a time; every
    condition's game k starts after the same no-op frames and from the same sticky-action stream (common random
    numbers: conditions differ by their edits, and a condition's games do not depend on what else the call
    plays). Per condition, per game: its score, mean paddle offset from the ball on in-play steps, mean KL and
    action-change rate. `watch(game, ram)`, if given, sees every game's RAM before each step (game k of condition
    c is game c * games + k). `opponent` (a player of pongrl.runner, e.g. an AgentPlayer) plays the left paddle
    of two-player Pong instead of the built-in AI, serves pressed for both; without sticky actions its games
    are paired as well (two greedy players draw nothing), with them they are not, so they are refused."""
    from pongrl.game import NOOP_MAX
    from pongrl.runner import BUILTIN, GamePlan, play_games, spread

    if opponent is not None and sticky_actions:
        raise ValueError("sticky actions against an agent would unpair the conditions' games")
    rng = np.random.default_rng(seed)
    starts = [int(start) for start in rng.integers(0, NOOP_MAX + 1, games)]
    # Without sticky actions the emulator draws nothing, and a reseed (a cartridge reload) would buy nothing.
    emulator_seeds = [int(value) for value in rng.integers(0, 2**31, games)] if sticky_actions else [None] * games
    game_edits = [condition for condition in conditions for _ in range(games)]
    player = InterveningPlayer(network, game_edits)
    plans = [
        GamePlan(player, opponent or BUILTIN, start=start, emulator_seed=emulator_seed)
        for _ in conditions
        for start, emulator_seed in zip(starts, emulator_seeds)
    ]
    rules = {} if opponent is None else {"serve_assist": True}
    slots = spread(plans, parallel)
    first_game = np.cumsum([0] + [len(slot) for slot in slots])
    played = [0] * len(slots)
    offsets = [[] for _ in plans]

    def before_step(driver, running) -> None:
        player.games_now = [first_game[slot] + played[slot] for slot in running]
        for slot, game in zip(running, player.games_now):
            ram = driver.ram(slot)
            if ram[RAM_BALL_Y]:
                offsets[game].append(int(ram[RAM_RIGHT_PADDLE_Y]) - int(ram[RAM_BALL_Y]))
            if watch is not None:  # another measure of the same games (`watch(game, ram)` before each step)
                watch(game, ram)

    def after_step(driver, running) -> None:
        for slot in running:
            if driver.done(slot):
                played[slot] += 1
                if progress:
                    progress(1)

    records = play_games(
        slots, before_step=before_step, after_step=after_step, seed=seed, sticky_actions=sticky_actions, **rules
    )
    results = []
    for number in range(len(conditions)):
        mine = range(number * games, (number + 1) * games)
        results.append(
            {
                "scores": [records[g]["first_points"] - records[g]["second_points"] for g in mine],
                "offsets": [float(np.mean(offsets[g])) if offsets[g] else float("nan") for g in mine],
                "kl": [float(np.mean(player.kl[g])) if player.kl[g] else float("nan") for g in mine],
                "changed": [float(np.mean(player.changed[g])) if player.changed[g] else float("nan") for g in mine],
            }
        )
    return results


def random_directions(draws: int) -> list[str]:
    """The names of the random control directions: random, random2, random3, ..."""
    return ["random"] + [f"random{draw}" for draw in range(2, draws + 1)]


@dataclass(frozen=True)
class Intervention:
    """What an intervention plays: every (layer, label, kind, direction, alpha) condition for `games` games, the
    directions the probe's and `random_draws` random ones. Its fields are what a study's intervene.json records."""

    layers: tuple[str, ...]
    labels: tuple[str, ...]
    kinds: tuple[str, ...] = ("steer",)
    alphas: tuple[float, ...] = (-20.0, 20.0)
    games: int = 10
    seed: int = 0
    sticky_actions: float = 0.0
    random_draws: int = 1

    def __post_init__(self):
        for name in ("layers", "labels", "kinds"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "alphas", tuple(float(alpha) for alpha in self.alphas))

    def settings(self) -> dict:
        """The fields as JSON holds them."""
        return {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(self).items()}

    def conditions(self) -> list[tuple[str, str, str, str, float]]:
        """(layer, label, kind, direction, alpha) of every condition, in the order they are played."""
        return [
            (layer, label, kind, direction, alpha)
            for layer in self.layers
            for label in self.labels
            for kind in self.kinds
            for direction in ("probe", *random_directions(self.random_draws))
            for alpha in (self.alphas if kind in STEERING_KINDS else [0.0])
        ]

    def games_to_play(self) -> int:
        """How many games it plays: the unperturbed ones, then every condition's."""
        return (1 + len(self.conditions())) * self.games

    def check(self, agent) -> None:
        """Refuse, with one line, an intervention that cannot be played on `agent` (before any game is)."""
        from pongrl.agent import QAgent

        if not hasattr(agent, "network") or not (isinstance(agent, QAgent) or hasattr(agent.network, "actor_network")):
            raise PongrlError(f"{agent.name}: only pongrl's networks can be intervened on")
        available = steerable_layers(agent)
        for layer in self.layers:
            if layer not in available:
                raise PongrlError(f"no layer {layer!r} to intervene on in {agent.name} (it has {', '.join(available)})")
        for kind in self.kinds:
            if kind not in KINDS:
                raise PongrlError(f"--kind must be one of {', '.join(KINDS)}, got {kind!r}")
        for kind in set(self.kinds) & set(PATTERN_KINDS):
            projected = [layer for layer in self.layers if projection(layer, layer_width(agent, layer)) is not None]
            if projected:
                raise PongrlError(
                    f"{kind} needs a layer stored whole: {', '.join(projected)} is stored through a projection "
                    "(fc is stored whole)"
                )
        if "steer-partial" in self.kinds and len(set(self.labels)) < 2:
            raise PongrlError(
                "steer-partial holds the other labels fixed: give at least two labels (e.g. landing_y ball_y)"
            )
        for label in self.labels:
            if label not in REGRESSION_LABELS:
                raise PongrlError(
                    f"no probe of {label!r} to steer along: a direction needs a label on a scale "
                    f"({', '.join(REGRESSION_LABELS)})"
                )
        if any(not np.isfinite(alpha) for alpha in self.alphas):
            raise PongrlError("every --alpha must be a finite number")
        if self.games <= 0:
            raise PongrlError(f"the number of games must be positive, got {self.games}")
        if self.random_draws < 1:
            raise PongrlError(f"--random-draws must be at least 1, got {self.random_draws}")
        if not 0.0 <= self.sticky_actions < 1.0:
            raise PongrlError(f"--sticky-actions must be in [0, 1), got {self.sticky_actions}")


def intervene(agent_spec, collect_dir: str, plan: Intervention, progress=None) -> list[dict]:
    """Every condition's row (COLUMNS) of `plan` on `agent_spec`, after the unperturbed games; the directions
    fitted on the collect in `collect_dir`. Everything is checked before any game is played; `progress(1)` is
    called as each game ends."""
    from pongrl.agent import as_agent

    agent = as_agent(agent_spec)
    plan.check(agent)
    found = {
        (layer, label): fit_direction(
            collect_dir,
            agent,
            layer,
            label,
            held=tuple(other for other in plan.labels if other != label) if "steer-partial" in plan.kinds else (),
        )
        for layer in plan.layers
        for label in plan.labels
    }
    conditions = plan.conditions()
    rng = np.random.default_rng(RANDOM_DIRECTION_SEED)
    random_units, edits_of_layer, edit_of_condition = {}, {layer: [] for layer in plan.layers}, [None]
    edit_sizes = []  # |delta| over the layer's mean |h|, of each steering condition
    for layer, label, kind, direction, alpha in conditions:
        found_direction = found[(layer, label)]
        if layer not in random_units:  # a layer's draws in a fixed order: the first is the same for any count
            names = random_directions(plan.random_draws)
            vectors = [rng.standard_normal(found_direction.weights.shape[0]) for _ in names]
            random_units[layer] = {name: vector / np.linalg.norm(vector) for name, vector in zip(names, vectors)}
        unit = found_direction.unit if direction == "probe" else random_units[layer][direction]
        if kind == "steer":
            size = alpha / np.linalg.norm(found_direction.weights)  # |delta| of a steer by alpha label units
            vector, mean = unit * size, 0.0
        elif kind in PATTERN_KINDS:  # alpha times the pattern; a random direction of the same |delta|
            pattern = found_direction.pattern if kind == "steer-pattern" else found_direction.partial
            size = alpha * np.linalg.norm(pattern)  # signed, as a steer's: -alpha is the opposite edit
            vector, mean = (alpha * pattern if direction == "probe" else unit * size), 0.0
        else:  # a random direction's mean reading is unknown: its mean ablation is a plain ablation
            vector, mean = unit, (found_direction.mean_reading if direction == "probe" else 0.0)
        edits_of_layer[layer].append((kind, vector, mean))
        edit_of_condition.append((layer, len(edits_of_layer[layer]) - 1))
        edit_sizes.append(
            float(np.linalg.norm(vector)) / found_direction.activation_norm if kind in STEERING_KINDS else float("nan")
        )
    network = EditedNetwork(agent, {layer: LayerEdits(edits) for layer, edits in edits_of_layer.items()})
    results = play_conditions(network, edit_of_condition, plan.games, plan.seed, plan.sticky_actions, progress=progress)
    baseline, games = results[0], plan.games
    rows = [_row(agent, "none", "", float("nan"), "none", "none", 0.0, float("nan"), games, baseline, baseline)]
    for (layer, label, kind, direction, alpha), edit_size, result in zip(conditions, edit_sizes, results[1:]):
        found_direction = found[(layer, label)]
        rows.append(
            _row(agent, layer, label, found_direction.r2, kind, direction, alpha, edit_size, games, result, baseline)
        )
    return rows


def _row(agent, layer, label, r2, kind, direction, alpha, edit_size, games, result, baseline) -> dict:
    score = mean_interval(result["scores"])
    offset = mean_interval(result["offsets"])
    # Game k of this condition and of the unperturbed ones share their start and sticky actions: the shift is
    # measured game by game.
    shift = mean_interval(np.subtract(result["offsets"], baseline["offsets"]))
    kl = mean_interval(result["kl"])
    return {
        "agent": agent.name,
        "layer": layer,
        "label": label,
        "probe_r2": r2,
        "kind": kind,
        "direction": direction,
        "alpha": alpha,
        "edit_size": edit_size,
        "games": games,
        "score": score[0],
        "score_low": score[1],
        "score_high": score[2],
        "paddle_offset": offset[0],
        "paddle_offset_low": offset[1],
        "paddle_offset_high": offset[2],
        "paddle_shift": shift[0],
        "paddle_shift_low": shift[1],
        "paddle_shift_high": shift[2],
        "kl": kl[0],
        "kl_low": kl[1],
        "kl_high": kl[2],
        "action_change": mean_interval(result["changed"])[0],
        "paddle_offset_games": " ".join(f"{value:.4f}" for value in result["offsets"]),
    }


def describe(row: dict) -> str:
    """One condition's row in words."""
    if row["kind"] == "none":
        return f"unperturbed: score {row['score']:+.2f}, paddle offset from the ball {row['paddle_offset']:+.1f} rows"
    size = f"{row['alpha']:+g} (|delta| {row['edit_size']:.2%} of |h|) " if row["kind"] in STEERING_KINDS else ""
    return (
        f"{row['layer']} {row['label']} (probe R^2 {row['probe_r2']:.2f}) {row['kind']} {size}{row['direction']}:"
        f" paddle shift {row['paddle_shift']:+.1f} [{row['paddle_shift_low']:+.1f}, "
        f"{row['paddle_shift_high']:+.1f}], KL {row['kl']:.3f}, action changed {row['action_change']:.0%}, "
        f"score {row['score']:+.2f}"
    )


def write_results(rows: list[dict], out_dir: str) -> tuple[str, str]:
    """intervene.csv and intervene.png (paddle shift against alpha, the probe's direction beside a random one,
    one panel per label), each written whole or not at all."""
    from pongrl.checkpoint import atomic_write_file, write_csv
    from pongrl.probes.charts import plot_intervene

    os.makedirs(out_dir, exist_ok=True)
    csv_path, chart_path = os.path.join(out_dir, "intervene.csv"), os.path.join(out_dir, "intervene.png")

    write_csv(csv_path, rows, COLUMNS)
    steered = [row for row in rows if row["kind"] in STEERING_KINDS]
    atomic_write_file(chart_path, lambda temp_path: plot_intervene(steered, temp_path))
    return csv_path, chart_path
