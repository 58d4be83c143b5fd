"""`pongrl probe opponent-move`: the opponent's paddle moved in the world, not in the network. Does the agent
send the ball elsewhere when the opponent stands elsewhere as it returns the ball?

The emulator cannot move the opponent's paddle by a RAM edit (its byte is the paddle controller's reading, written
again every frame), so the paddle is moved the way a player moves it, on the two-player game: in the last
`move_steps` agent steps before the agent's return, the opponent's own actions are replaced by UP (or DOWN), and
the agent, playing greedily, sees the opponent's paddle go there; from the return on the opponent plays as itself
again. Nothing else differs: the opponent's paddle does not touch the ball on its way to the agent, and with greedy
players and no sticky actions a game is fixed by its start and the moves, so games from one start are the same
game until the move.

For each start, the game is first played unmoved until the agent has returned `returns` balls; then, for each of
those returns, two games from the same start with the opponent moved up or down before that return only. Against
the unmoved game, at that return: how far the opponent's paddle stands from where it stood (RAM rows), whether the
return changed (its step or arrival) or the agent missed, and how far the return's arrival moved: the ball's
height as it nears the opponent's side (its first step at or left of ARRIVAL_X, before the opponent can touch it,
so that the arrival answers to the agent's return alone). An agent that ignores the opponent returns every ball
exactly as before (no noise: the same game); one that aims away from the opponent sends the ball the other way
from where the opponent went (`away` > 0: the arrival's shift against the paddle's, in rows). A moved game that
was not the same game up to the move (batch arithmetic can break a near tie another way) is left out and counted.
"""

from __future__ import annotations

import numpy as np

from pongrl.errors import PongrlError
from pongrl.game import NOOP_MAX, RAM_BALL_X, RAM_BALL_Y, RAM_LEFT_PADDLE_Y

CONDITIONS = ("none", "up", "down")
# The ball's column (RAM) where a return's arrival is read: the opponent's paddle meets the ball at 68-69 and a
# step moves it at most 12 columns, so the first step at or left of 84 is always before the opponent can touch it:
# where the ball arrives there depends on the agent's return alone.
ARRIVAL_X = 84
BALL_BYTES = [RAM_BALL_X, RAM_BALL_Y]
FORCED_ACTION = {"up": 2, "down": 3}  # the minimal action set's RIGHT and LEFT: the paddle's two ways
COLUMNS = [
    "agent",
    "opponent",
    "condition",
    "move_steps",
    "distinct_games",
    "flights",
    "diverged",
    "returned",
    "changed",
    "ball_moved",
    "ball_still",
    "changed_ball_still",
    "paddle_shift",
    "paddle_shift_low",
    "paddle_shift_high",
    "arrival_shift",
    "arrival_shift_low",
    "arrival_shift_high",
    "away",
    "away_low",
    "away_high",
    "away_ball_still",
    "away_ball_still_low",
    "away_ball_still_high",
]


class FlightWatcher:
    """One game's view of the agent's incoming flights, from its RAM step by step: for each flight toward the
    agent, the step it began, the step the agent returned it (None: missed), the opponent paddle's byte then, and
    where the return arrived (the ball's height on its first step at or left of ARRIVAL_X)."""

    def __init__(self):
        self.flights: list[dict] = []
        self.previous_x = None
        self.direction = 0
        self.step = 0

    def landed(self, k: int) -> bool:
        """Whether flight k (from 1) is over: missed, or returned and its return turned back or left play."""
        if len(self.flights) < k:
            return False
        flight = self.flights[k - 1]
        return flight["over"]

    def see(self, ram: np.ndarray) -> None:
        x, y = int(ram[RAM_BALL_X]), int(ram[RAM_BALL_Y])
        current = self.flights[-1] if self.flights else None
        if not y:  # out of play: the flight was missed, or its return scored
            if current is not None:
                current["over"] = True
            self.previous_x, self.direction = None, 0
        else:
            if self.previous_x is not None and x != self.previous_x:
                direction = 1 if x > self.previous_x else -1
                if direction == 1 and self.direction != 1:  # a new flight toward the agent
                    if current is not None:
                        current["over"] = True
                    current = {"start": self.step, "return": None, "paddle": None, "arrival": None, "over": False}
                    self.flights.append(current)
                elif direction == -1 and self.direction == 1 and current is not None:  # the agent's return
                    current.update({"return": self.step, "paddle": int(ram[RAM_LEFT_PADDLE_Y])})
                returned = current is not None and current["return"] is not None
                if direction == -1 and returned and current["arrival"] is None and x <= ARRIVAL_X:
                    current["arrival"] = y
                self.direction = direction
            self.previous_x = x
        self.step += 1


def _enough(watcher: FlightWatcher, k: int, returns: int) -> bool:
    if k:
        return watcher.landed(k)
    done = [f for f in watcher.flights if f["over"] and f["return"] is not None and f["arrival"] is not None]
    return len(done) >= returns


class MovedOpponent:
    """The opponent's player, its actions replaced in each game's window (`forced[game]`: (flight, first step,
    last step, action)) by that action; `games_now` (set before each step) names the games of the batch, and
    `steps` each game's steps played."""

    def __init__(self, player, forced: list[tuple[int, int, int, int]]):
        self.player, self.forced = player, forced
        self.profile = player.profile
        self.games_now: list[int] = []
        self.steps = [0] * len(forced)

    def act(self, observations: np.ndarray) -> np.ndarray:
        actions = self.player.act(observations)
        for row, game in enumerate(self.games_now):
            _, first, last, action = self.forced[game]
            if first <= self.steps[game] < last:
                actions[row] = action
        return actions


def _play(agent, rival, start: int, forced: list[tuple[int, int, int, int]], returns: int = 0):
    """Games from one start, all alike but for the opponent's forced moves: `forced[g]` = (flight k, first step,
    last step, action), the opponent's action replaced in steps first..last - 1 and game g played until flight k
    is over (k = 0: until `returns` returned flights are over, or the game ends). Returns each game's watcher and
    its RAM at every step."""
    from pongrl.runner import AgentPlayer, GamePlan, play_games

    opponent = MovedOpponent(AgentPlayer(rival.agent), forced)
    plans = [GamePlan(AgentPlayer(agent), opponent, start=start) for _ in forced]
    watchers = [FlightWatcher() for _ in forced]
    rams: list[list[np.ndarray]] = [[] for _ in forced]

    def before_step(driver, running) -> None:  # one game per slot: slot g plays game g
        opponent.games_now = list(running)
        for g in running:
            ram = driver.ram(g)
            watchers[g].see(ram)
            rams[g].append(ram)

    def after_step(driver, running) -> list[int]:
        for g in running:
            opponent.steps[g] += 1
        return [g for g in running if _enough(watchers[g], forced[g][0], returns)]

    play_games([[plan] for plan in plans], before_step=before_step, after_step=after_step, serve_assist=True)
    return watchers, rams


def flight_records(agent, rival, returns: int, games: int, seed: int, move_steps: int, progress=None):
    """Every moved flight's record (condition, returned, changed, ball_moved, paddle_moved, and for a return the
    paddle's and the arrival's shifts), how many moved games were left out (module docstring), and how many
    distinct unmoved games the starts gave (a start whose game repeats an earlier one's is played once)."""
    starts = [int(start) for start in np.random.default_rng(seed).integers(0, NOOP_MAX + 1, games)]
    records, diverged = [], 0
    seen_games = set()
    for start in starts:
        # The game as it goes unmoved, far enough to hold `returns` returned flights (or to its end).
        (base,), (base_rams,) = _play(agent, rival, start, [(0, 0, 0, 0)], returns)
        # Two greedy players often play the same game from different starts: count each game once.
        fingerprint = hash(np.stack(base_rams).tobytes())
        if fingerprint in seen_games:
            if progress:
                progress(1)
            continue
        seen_games.add(fingerprint)
        flights = [f for f in base.flights if f["return"] is not None and f["arrival"] is not None][:returns]
        forced = [
            (base.flights.index(f) + 1, max(f["start"], f["return"] - move_steps), f["return"], FORCED_ACTION[c])
            for f in flights
            for c in CONDITIONS[1:]
        ]
        watchers, rams = _play(agent, rival, start, forced) if forced else ([], [])
        for g, (k, first, last, _) in enumerate(forced):
            if not np.array_equal(rams[g][first], base_rams[first]):
                diverged += 1  # not the same game up to the move (a near tie broken another way)
                continue
            unmoved, moved = base.flights[k - 1], watchers[g].flights[k - 1] if len(watchers[g].flights) >= k else None
            returned = moved is not None and moved["return"] is not None and moved["arrival"] is not None
            # The opponent's controls can nudge the ball on this cartridge (even with its paddle against the wall):
            # where the paddle stands elsewhere at the return and the ball's path up to it is the same, a changed
            # return answers to what the agent saw of the opponent, not to the ball.
            steps = range(first, min(last + 1, len(rams[g]), len(base_rams)))
            at_return = min(last, len(rams[g]) - 1)
            record = {
                "condition": CONDITIONS[1 + g % 2],
                "returned": returned,
                "changed": moved is None
                or moved["return"] != unmoved["return"]
                or moved["arrival"] != unmoved["arrival"],
                "ball_moved": any(not np.array_equal(rams[g][i][BALL_BYTES], base_rams[i][BALL_BYTES]) for i in steps),
                "paddle_moved": rams[g][at_return][RAM_LEFT_PADDLE_Y] != base_rams[at_return][RAM_LEFT_PADDLE_Y],
            }
            if returned:
                record["paddle"] = moved["paddle"] - unmoved["paddle"]
                record["arrival"] = moved["arrival"] - unmoved["arrival"]
                record["away"] = -np.sign(record["paddle"]) * record["arrival"]
            records.append(record)
        if progress:
            progress(1)
    return records, diverged, len(seen_games)


def opponent_moves(
    agent_spec,
    opponent_spec: str,
    returns: int = 20,
    games: int = 4,
    seed: int = 0,
    move_steps: int = 4,
    progress=None,
) -> list[dict]:
    """One row per condition (COLUMNS) over `games` starts x the agent's first `returns` returned flights, the
    opponent moved in the last `move_steps` agent steps before each return (module docstring)."""
    from pongrl.agent import as_agent
    from pongrl.arena import load_player
    from pongrl.probes.effects import mean_interval

    if returns <= 0 or games <= 0 or move_steps <= 0:
        raise PongrlError("--returns, --games and --move-steps must be positive")
    agent = as_agent(agent_spec)
    rival = load_player(opponent_spec)
    if rival.is_builtin:
        raise PongrlError("--opponent must be an agent: the built-in AI's paddle cannot be moved by its controls")
    records, diverged, distinct = flight_records(agent, rival, returns, games, seed, move_steps, progress)

    def share(values) -> float:
        return float(np.mean(values)) if len(values) else float("nan")

    rows = []
    for condition in CONDITIONS[1:]:
        mine = [record for record in records if record["condition"] == condition]
        clean_records = [r for r in mine if r["paddle_moved"] and not r["ball_moved"]]
        clean = [r["changed"] for r in clean_records]
        row = {
            "agent": agent.name,
            "opponent": rival.name,
            "condition": condition,
            "move_steps": move_steps,
            "distinct_games": distinct,
            "flights": len(mine),
            "diverged": diverged,
            "returned": share([r["returned"] for r in mine]),
            "changed": share([r["changed"] for r in mine]),
            "ball_moved": share([r["ball_moved"] for r in mine]),
            "ball_still": len(clean),
            "changed_ball_still": share(clean),
        }
        for name in ("paddle", "arrival", "away"):
            column = "away" if name == "away" else f"{name}_shift"
            values = [r[name] for r in mine if name in r]
            row.update(dict(zip([column, f"{column}_low", f"{column}_high"], mean_interval(values))))
        away = mean_interval([r["away"] for r in clean_records if "away" in r])  # what the agent saw, alone
        row.update(dict(zip(["away_ball_still", "away_ball_still_low", "away_ball_still_high"], away)))
        rows.append(row)
    return rows


def describe(row: dict) -> str:
    return (
        f"opponent moved {row['condition']} ({row['flights']} flights of {row['distinct_games']} distinct games, "
        f"{row['diverged']} left out): paddle {row['paddle_shift']:+.1f} [{row['paddle_shift_low']:+.1f}, "
        f"{row['paddle_shift_high']:+.1f}] rows, the return changed in {row['changed']:.0%} of flights (the ball's "
        f"path moved in {row['ball_moved']:.0%}), returned {row['returned']:.0%}; arrival {row['arrival_shift']:+.1f} "
        f"[{row['arrival_shift_low']:+.1f}, {row['arrival_shift_high']:+.1f}] rows, away from the opponent "
        f"{row['away']:+.1f} [{row['away_low']:+.1f}, {row['away_high']:+.1f}]; of the {row['ball_still']} flights "
        f"with the paddle moved and the ball's path the same, {row['changed_ball_still']:.0%} changed, away from "
        f"the opponent {row['away_ball_still']:+.1f} [{row['away_ball_still_low']:+.1f}, "
        f"{row['away_ball_still_high']:+.1f}]"
    )


def write_results(rows: list[dict], out_path: str) -> str:
    from pongrl.checkpoint import write_csv  # atomic: makes the folder, writes the whole file or nothing

    return write_csv(out_path, rows, COLUMNS)
