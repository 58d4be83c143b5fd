"""`pongrl probe counterfactual`: an intervention on the world instead of the network. From states of the agent's
own games against the built-in AI, the emulator's RAM is edited on a copy of the state (the ball moved by some
rows or columns), the game plays on for a few agent steps with the agent acting, and the probe's reading and
the agent's policy are compared with the same state played on unedited.

Which bytes move which objects on this cartridge (measured, and tested against the screen): byte 54 is the
ball's height and 49 its horizontal position; an edit of either moves the ball drawn on the next frame by
exactly that many rows or columns, and the ball flies on from there with its velocity. Byte 50, the built-in
AI's paddle, is rewritten by the built-in AI every frame (an edit does not hold), so its paddle cannot be moved
this way; 51, the agent's own paddle, is its own to move.

States where the ball bounces or leaves play in any branch are passed over. For each move and state, two
branches beside the unedited one: open loop (the unedited branch's actions
replayed, so that only the ball differs) gives the shift of the probe's reading (its gain: the shift over the
move, 1 when the layer tracks the moved ball exactly), the KL divergence of the edited game's policy from the
unedited one at the last step (a DQN agent's policy read as the softmax of its Q-values) and how often its
greedy action differs; closed loop (the agent acting) gives the shift of the agent's paddle after the steps
(does it follow the moved ball?); each with its 95% interval over states.
"""

from __future__ import annotations

import copy

import numpy as np

from pongrl.errors import PongrlError
from pongrl.game import RAM_BALL_X, RAM_BALL_Y, RAM_RIGHT_PADDLE_Y
from pongrl.probes.effects import EFFECT_COLUMNS

MOVABLE = {"ball_y": RAM_BALL_Y, "ball_x": RAM_BALL_X}  # what an edit can move, by its label's name
# States are taken with the ball in play and away from the walls and paddles, so that a move of a few rows or
# columns keeps the ball in open play for the steps that follow.
BALL_Y_RANGE = (70, 170)
BALL_X_RANGE = (80, 160)
STATE_EVERY = 7  # agent steps between two states taken from one game: neighbouring states are nearly the same
COLUMNS = [
    "agent",
    "layer",
    "label",
    "probe_r2",
    "move",
    "delta",
    "states",
    "reading_shift",
    "reading_shift_low",
    "reading_shift_high",
    "gain",
    *EFFECT_COLUMNS,
]


def parse_move(text: str) -> tuple[str, int]:
    """`ball_y=+10` -> ("ball_y", 10)."""
    name, _, delta = text.partition("=")
    if name not in MOVABLE:
        raise PongrlError(f"--move {text}: can move {', '.join(MOVABLE)} (as NAME=DELTA, e.g. ball_y=+10)")
    try:
        return name, int(delta)
    except ValueError:
        raise PongrlError(f"--move {text}: the delta must be a whole number of RAM units, e.g. ball_y=+10") from None


def counterfactuals(
    agent_spec,
    collect_dir: str,
    layer: str,
    label: str,
    moves: list[tuple[str, int]],
    states: int = 50,
    steps_after: int = 4,
    seed: int = 0,
    progress=None,
) -> list[dict]:
    """One row (COLUMNS) per move, over `states` states of the agent's greedy games against the built-in AI."""
    from pongrl.agent import as_agent
    from pongrl.envs.single import PongGame
    from pongrl.probes.directions import fit_direction
    from pongrl.probes.effects import kl_divergence, mean_interval

    if states <= 0 or steps_after <= 0:
        raise PongrlError("--states and --steps-after must be positive")
    agent = as_agent(agent_spec)
    direction = fit_direction(collect_dir, agent, layer, label)
    game = PongGame(seed, profile=agent.obs_profile)
    observation, step, taken = game.reset(), 0, 0
    found = {move: {"reading": [], "paddle": [], "kl": [], "changed": []} for move in moves}

    def play_on(move, actions: list[int] | None = None) -> tuple[float, int, np.ndarray, list[int], bool]:
        """From the restored state: apply `move`, play `steps_after` agent steps, the agent choosing them or
        `actions` replayed; the probe's reading, the agent's paddle height and its preferences at the end, the
        actions played, and whether the ball flew straight on (in play, no bounce) all the while."""
        if move is not None:
            byte = MOVABLE[move[0]]
            game.ale.setRAM(byte, int(np.clip(int(game.ale.getRAM()[byte]) + move[1], 1, 255)))
        seen, played = game.observation(), []
        path = [game.ale.getRAM()[[RAM_BALL_X, RAM_BALL_Y]].astype(int)]
        for step_after in range(steps_after):
            action = int(agent.act(seen[None])[0]) if actions is None else actions[step_after]
            seen, *_ = game.step(action)
            played.append(action)
            path.append(game.ale.getRAM()[[RAM_BALL_X, RAM_BALL_Y]].astype(int))
        moves_made = np.diff(np.array(path), axis=0)
        straight = bool(
            np.all(np.array(path)[:, 1] > 0)
            and all(len({int(np.sign(v)) for v in moves_made[:, axis] if v}) <= 1 for axis in (0, 1))
        )
        reading = float(agent.layers(seen[None])[layer][0].astype(np.float64) @ direction.weights)
        return (reading, int(game.ale.getRAM()[RAM_RIGHT_PADDLE_Y]), agent.preferences(seen[None])[0], played, straight)

    def branch(move, actions=None):
        game.ale.restoreState(state)
        game.views = copy.deepcopy(views)
        return play_on(move, actions)

    while taken < states:
        observation, _, terminated, truncated = game.step(int(agent.act(observation[None])[0]))
        if terminated or truncated:
            observation = game.reset()
            continue
        step += 1
        ram = game.ale.getRAM()
        if step % STATE_EVERY or not (
            BALL_Y_RANGE[0] <= ram[RAM_BALL_Y] <= BALL_Y_RANGE[1]
            and BALL_X_RANGE[0] <= ram[RAM_BALL_X] <= BALL_X_RANGE[1]
        ):
            continue
        state, views = game.ale.cloneState(), copy.deepcopy(game.views)
        reading, paddle, preferences, actions, straight = branch(None)
        # Open loop (the unedited branch's actions replayed): only the ball differs, so the reading and the policy
        # at the end answer to the move alone. Closed loop (the agent acting): where its paddle goes. A state
        # counts only where the ball flies straight on in every open-loop branch: a bounce or a point inside one
        # would make the two worlds differ by more than the move.
        open_loop = {move: branch(move, actions) for move in moves}
        if not (straight and all(outcome[4] for outcome in open_loop.values())):
            game.ale.restoreState(state)
            game.views = views
            continue
        for move in moves:
            moved_reading, _, moved_preferences, _, _ = open_loop[move]
            _, moved_paddle, *_ = branch(move)
            found[move]["reading"].append(moved_reading - reading)
            found[move]["paddle"].append(moved_paddle - paddle)
            found[move]["kl"].append(float(kl_divergence(moved_preferences[None], preferences[None])[0]))
            found[move]["changed"].append(float(moved_preferences.argmax() != preferences.argmax()))
        game.ale.restoreState(state)
        game.views = views
        taken += 1
        if progress:
            progress(1)
    rows = []
    for move in moves:
        reading, paddle, kl = (mean_interval(found[move][key]) for key in ("reading", "paddle", "kl"))
        rows.append(
            {
                "agent": agent.name,
                "layer": layer,
                "label": label,
                "probe_r2": direction.r2,
                "move": move[0],
                "delta": move[1],
                "states": states,
                "reading_shift": reading[0],
                "reading_shift_low": reading[1],
                "reading_shift_high": reading[2],
                "gain": reading[0] / move[1] if move[1] else float("nan"),
                "paddle_shift": paddle[0],
                "paddle_shift_low": paddle[1],
                "paddle_shift_high": paddle[2],
                "kl": kl[0],
                "kl_low": kl[1],
                "kl_high": kl[2],
                "action_change": float(np.mean(found[move]["changed"])),
            }
        )
    return rows


def describe(row: dict) -> str:
    return (
        f"{row['move']} {row['delta']:+d}: {row['label']} probe on {row['layer']} (R^2 {row['probe_r2']:.2f}) "
        f"reads {row['reading_shift']:+.1f} [{row['reading_shift_low']:+.1f}, {row['reading_shift_high']:+.1f}]"
        f" (gain {row['gain']:.2f}); paddle {row['paddle_shift']:+.1f} rows; KL {row['kl']:.3f}; action "
        f"changed {row['action_change']:.0%} ({row['states']} states)"
    )


def write_results(rows: list[dict], path: str) -> str:
    """The rows as a CSV, written whole or not at all."""
    from pongrl.checkpoint import write_csv

    return write_csv(path, rows, COLUMNS)
