"""`pongrl probe aim`: does the agent aim by where it believes the opponent is? Steer a layer along the probe of
the opponent's paddle height (`enemy_y`, or its velocity `enemy_vy`) while the agent plays the built-in AI or,
with `opponent`, another agent on the two-player game (the agent on the right, serves pressed for both), beside
random directions of the same size (the intervene machinery: paired games, one batch), and watch where the agent
sends the ball. `kind` is intervene's: `steer` moves the probe's reading by alpha along the probe (the smallest
such edit), `steer-pattern` adds alpha times the label's pattern (the layer as it is, on average, with the
opponent alpha units away).

Each return of the agent (the ball flying toward the agent's paddle on one step and away on the next) is followed
until the ball turns back or leaves play: its `arrival_y` is the ball's height on the last step of that flight (RAM
rows, on the opponent's side of the court), its `aim` the arrival's height minus the opponent paddle's byte at the
moment of the return (RAM rows; the paddle's byte is its lowest row, the ball's 14 rows below its top), its `angle`
the ball's vertical velocity on the first step after the return. An agent that aims away from the opponent sends
the ball elsewhere when it believes the opponent moved: a steer of +alpha rows on enemy_y ("the opponent is alpha
rows lower") moves its arrivals up, and a random direction of the same size does not. Per condition: each game's
mean arrival, aim and angle, and their shifts from the unperturbed games, game by game (game k of every condition
starts alike), with 95% intervals, and how many of the unperturbed games are distinct: against another agent, two
greedy players without sticky actions often play the same game from different starts, and an interval over
repeated games claims more than they show.

Moving the opponent's paddle in the emulator's RAM instead (the counterfactual way) does not work against the
built-in AI: the cartridge rewrites its paddle's byte every frame (`counterfactual`).
"""

from __future__ import annotations

import numpy as np

from pongrl.errors import PongrlError
from pongrl.game import RAM_BALL_X, RAM_BALL_Y, RAM_LEFT_PADDLE_Y

OPPONENT_LABELS = ("enemy_y", "enemy_vy")
MEASURES = ("arrival_y", "aim", "angle")
COLUMNS = [
    "agent",
    "opponent",
    "layer",
    "label",
    "probe_r2",
    "kind",
    "direction",
    "alpha",
    "edit_size",
    "games",
    "distinct_games",
    "returns",
    *[f"{measure}{part}" for measure in MEASURES for part in ("", "_shift", "_shift_low", "_shift_high")],
    "score",
]


class ReturnTracker:
    """The agent's returns in one game, from its RAM step by step (module docstring): (arrival_y, aim, angle) each."""

    def __init__(self):
        self.returns: list[tuple[int, int, int]] = []
        self.previous = None  # (ball x, ball y) on the step before, or None out of play
        self.direction = 0  # the ball's last horizontal direction in play: +1 toward the agent (right), -1 away
        self.flight = None  # [opponent's byte at the return, the ball's last height, angle or None]

    def see(self, ram: np.ndarray) -> None:
        x, y = int(ram[RAM_BALL_X]), int(ram[RAM_BALL_Y])
        if not y:  # out of play: a flight away from the agent ends here (a point for the agent, or a miss)
            self._land()
            self.previous, self.direction = None, 0
            return
        if self.previous is not None and x != self.previous[0]:
            direction = 1 if x > self.previous[0] else -1
            if direction == -1 and self.direction == 1:  # the agent has just returned the ball
                self.flight = [int(ram[RAM_LEFT_PADDLE_Y]), y, None]
            elif direction == 1 and self.direction == -1:  # the opponent returned it
                self._land()
            elif self.flight is not None:
                if self.flight[2] is None:
                    self.flight[2] = y - self.previous[1]
                self.flight[1] = y
            self.direction = direction
        self.previous = (x, y)

    def _land(self) -> None:
        if self.flight is not None and self.flight[2] is not None:
            opponent, arrival, angle = self.flight
            self.returns.append((arrival, arrival - opponent, angle))
        self.flight = None

    def means(self) -> dict[str, float]:
        values = np.array(self.returns, np.float64).reshape(-1, 3)
        return {
            measure: float(values[:, i].mean()) if len(values) else float("nan") for i, measure in enumerate(MEASURES)
        }


def aim(
    agent,
    collect_dir: str,
    layer: str = "fc",
    label: str = "enemy_y",
    kind: str = "steer",
    alphas: tuple[float, ...] = (-20.0, 20.0),
    games: int = 10,
    seed: int = 0,
    random_draws: int = 1,
    sticky_actions: float = 0.0,
    progress=None,
    opponent: str | None = None,
) -> list[dict]:
    """The unperturbed games' row, then one per (direction, alpha): the probe of `label` on `layer` fitted on the
    collect in `collect_dir`, then `random_draws` random directions; steers move the probe's reading by alpha.
    `opponent`: an agent spec for the left paddle (None or builtin: the built-in AI)."""
    from pongrl.agent import as_agent
    from pongrl.probes.directions import fit_direction
    from pongrl.probes.effects import mean_interval
    from pongrl.probes.intervene import RANDOM_DIRECTION_SEED, EditedNetwork, Intervention, LayerEdits, play_conditions
    from pongrl.probes.intervene import random_directions

    if label not in OPPONENT_LABELS:
        raise PongrlError(f"--label must be one of {', '.join(OPPONENT_LABELS)} (the opponent's), got {label!r}")
    agent = as_agent(agent)
    if kind not in ("steer", "steer-pattern"):
        raise PongrlError(f"--kind must be steer or steer-pattern, got {kind!r}")
    Intervention((layer,), (label,), (kind,), alphas, games, seed, sticky_actions, random_draws).check(agent)
    rival = None
    if opponent is not None and opponent.strip().lower() != "builtin":
        from pongrl.arena import load_player
        from pongrl.runner import AgentPlayer

        if sticky_actions:  # two greedy players draw nothing: the games are paired only without them
            raise PongrlError("--sticky-actions against an agent would unpair the games: use 0 with --opponent")
        loaded = load_player(opponent)
        rival, opponent = AgentPlayer(loaded.agent), loaded.name
    else:
        opponent = "builtin"
    direction = fit_direction(collect_dir, agent, layer, label)
    rng = np.random.default_rng(RANDOM_DIRECTION_SEED)
    names = ("probe", *random_directions(random_draws))
    units = [direction.unit] + [
        vector / np.linalg.norm(vector) for vector in (rng.standard_normal(len(direction.unit)) for _ in names[1:])
    ]
    conditions, edits = [], []
    for name, unit in zip(names, units):
        for alpha in alphas:
            if kind == "steer":  # alpha label units of the probe's reading, along the probe
                size = alpha / np.linalg.norm(direction.weights)
                vector = unit * size
            else:  # alpha times the pattern; a random direction of the same size
                size = alpha * np.linalg.norm(direction.pattern)
                vector = alpha * direction.pattern if name == "probe" else unit * size
            edits.append(("steer", vector, 0.0))
            conditions.append((name, float(alpha), abs(size) / direction.activation_norm))
    trackers = [ReturnTracker() for _ in range((1 + len(edits)) * games)]
    network = EditedNetwork(agent, {layer: LayerEdits(edits)})
    played = [None] + [(layer, index) for index in range(len(edits))]
    results = play_conditions(
        network,
        played,
        games,
        seed,
        sticky_actions,
        progress=progress,
        watch=lambda g, ram: trackers[g].see(ram),
        opponent=rival,
    )
    per_game = [[trackers[c * games + k].means() for k in range(games)] for c in range(len(played))]
    rows = []
    for number, (name, alpha, edit_size) in enumerate([("none", 0.0, float("nan")), *conditions]):
        row = {
            "agent": agent.name,
            "opponent": opponent,
            "layer": layer if number else "none",
            "label": label if number else "",
            "probe_r2": direction.r2,
            "kind": kind if number else "none",
            "direction": name,
            "alpha": alpha,
            "edit_size": edit_size,
            "games": games,
            "returns": sum(len(trackers[number * games + k].returns) for k in range(games)),
            "distinct_games": len({tuple(trackers[number * games + k].returns) for k in range(games)}),
            "score": float(np.mean(results[number]["scores"])),
        }
        for measure in MEASURES:
            mine = [game[measure] for game in per_game[number]]
            shift = mean_interval(np.subtract(mine, [game[measure] for game in per_game[0]]))
            row[measure] = float(np.nanmean(mine)) if np.isfinite(mine).any() else float("nan")
            row.update(dict(zip([f"{measure}_shift", f"{measure}_shift_low", f"{measure}_shift_high"], shift)))
        rows.append(row)
    return rows


def describe(row: dict) -> str:
    if row["direction"] == "none":
        return (
            f"unperturbed, against {row['opponent']}: {row['returns']} returns in {row['games']} games "
            f"({row['distinct_games']} distinct), "
            f"arrival {row['arrival_y']:.1f}, "
            f"aim {row['aim']:+.1f} rows from the opponent, angle {row['angle']:+.2f}, score {row['score']:+.2f}"
        )
    return (
        f"{row['layer']} {row['label']} (probe R^2 {row['probe_r2']:.2f}) {row['kind']} {row['alpha']:+g} "
        f"{row['direction']} "
        f"(|delta| {row['edit_size']:.1%} of |h|): {row['returns']} returns, arrival shift "
        f"{row['arrival_y_shift']:+.1f} [{row['arrival_y_shift_low']:+.1f}, {row['arrival_y_shift_high']:+.1f}], "
        f"angle shift {row['angle_shift']:+.2f} [{row['angle_shift_low']:+.2f}, {row['angle_shift_high']:+.2f}], "
        f"score {row['score']:+.2f}"
    )


def write_results(rows: list[dict], out_path: str) -> str:
    from pongrl.checkpoint import write_csv  # atomic: makes the folder, writes the whole file or nothing

    return write_csv(out_path, rows, COLUMNS)
