"""pongrl's one game runner: every game pongrl plays outside training (evaluation, duels, leagues, videos, probe
collection, the page where a person plays) is played by `play_games` or, frame by frame, by `LiveGame`.

A game has two players, one per paddle, each an `AgentPlayer` (a loaded agent, greedy, epsilon-greedy or
sampling from its policy), the built-in AI (`BUILTIN`, which plays the left paddle of the single-player game)
or a `PersonPlayer` (keys read every frame). Games with the built-in AI run on the single-player driver
(`pongrl.envs.single.SinglePlayerGames`), the others on the two-player driver
(`pongrl.envs.two_player.TwoPlayerGames`); both show the runner the same face (`observation`, `play_step`,
`points`, `scored`, ...). Several games run in lockstep, so that each agent acts on one batch per step: the
first player of each game acts first, on all the games it plays, then the second.

A plan says who plays whom: `GamePlan(first, second, first_right, start)`, `start` being the no-op frames
before the game (None: drawn by the single-player driver; two-player games need one). Every game comes back as
a record from the first player's side: its side, both players' points and serve penalties, agent steps, how
it ended, and its course (who won each point and the steps between points: games that repeat one rally
pattern share it).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from pongrl.game import CLASSIC_MODE, LEFT, MAX_CYCLES, MAX_PARALLEL_GAMES, RIGHT


class AgentPlayer:
    """A loaded agent (pongrl.agent.Agent) at a paddle: greedy, epsilon-greedy with `epsilon`, or drawing its
    actions from its policy with `sample`, from `rng`."""

    def __init__(self, agent, rng: np.random.Generator | None = None, epsilon: float = 0.0, sample: bool = False):
        self.agent, self.epsilon, self.sample = agent, epsilon, sample
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.profile = agent.obs_profile

    def act(self, observations: np.ndarray) -> np.ndarray:
        return self.agent.act(observations, self.epsilon, self.rng, sample=self.sample)


class FunctionPlayer:
    """Any function from a batch of observations in `profile` to actions, at a paddle."""

    def __init__(self, act: Callable[[np.ndarray], np.ndarray], profile: str = "standard"):
        self.act, self.profile = act, profile


class PersonPlayer:
    """A person's keys (anything with `action()`), read at the start of every step and again every frame."""

    profile = None

    def __init__(self, keys):
        self.keys = keys

    def act(self, observations) -> np.ndarray:
        return np.full(len(observations), self.keys.action())


class _BuiltinAI:
    """The game's built-in AI: the single-player game moves the left paddle by itself."""

    profile = None

    def __repr__(self) -> str:
        return "BUILTIN"


BUILTIN = _BuiltinAI()


@dataclass
class GamePlan:
    """One game: `first` and `second` (players), whether `first` holds the right paddle, the no-op start, and
    (games against the built-in AI) the seed its emulator's random stream, the sticky actions, starts from:
    games of the same start and seed draw the same sticky actions whichever emulator plays them (None: the
    emulator's stream goes on from its last game)."""

    first: object
    second: object
    first_right: bool = True
    start: int | None = None
    emulator_seed: int | None = None

    def seats(self) -> tuple[object, object]:
        """(right player, left player)."""
        return (self.first, self.second) if self.first_right else (self.second, self.first)


def game_course(points: list[tuple[int, int]]) -> str:
    """A game's fingerprint from its points (agent step, +1 won / -1 lost by the first player): who won each, and
    the steps between consecutive points. The time to the first point is left out, since it carries the start."""
    course = [(sign, step - before) for (before, _), (step, sign) in zip(points, points[1:])]
    return hashlib.sha256(repr((points[0][1] if points else 0, course)).encode()).hexdigest()[:16]


def spread(plans: list[GamePlan], max_parallel: int = MAX_PARALLEL_GAMES) -> list[list[GamePlan]]:
    """Games shared among at most `max_parallel` emulators, each playing a consecutive slice of them (a fixed
    quota, so short games do not crowd out long ones); the records come back in the plans' order."""
    count = min(len(plans), max_parallel)
    quota = [len(plans) // count + (i < len(plans) % count) for i in range(count)]
    bounds = np.cumsum([0] + quota)
    return [plans[bounds[i] : bounds[i + 1]] for i in range(count)]


def single_player_kind(plans: list[GamePlan]) -> bool:
    """Whether the plans are games against the built-in AI (all of them; a mix is refused)."""
    kinds = {BUILTIN in plan.seats() for plan in plans}
    if len(kinds) != 1:
        raise ValueError("games against the built-in AI and two-player games cannot share one call")
    for plan in plans:
        if plan.seats()[RIGHT] is BUILTIN:
            raise ValueError("the built-in AI plays the left paddle of the single-player game")
    return kinds.pop()


def open_driver(
    slots: list[list[GamePlan]],
    seed: int = 0,
    sticky_actions: float = 0.0,
    max_frames: int = MAX_CYCLES,
    serve_assist: bool | tuple[int, ...] = False,
    game_mode: int = CLASSIC_MODE,
    record_colour: bool = False,
    extra_profiles: tuple[str, ...] = (),
    vectorized: bool = False,
):
    """The emulator driver for these games, started: slot i plays `slots[i]` in turn, its games' starts queued. Games
    against the built-in AI use the single-player driver (game i seeded with seed + i; `vectorized`: ale-py's C++
    vector env, standard profile and drawn starts only), the others the two-player driver (variation `game_mode`,
    cut at `max_frames` raw frames)."""
    plans = [plan for slot in slots for plan in slot]
    profiles = tuple(
        dict.fromkeys(
            [player.profile for plan in plans for player in plan.seats() if player.profile is not None]
            + list(extra_profiles)
        )
    )
    starts = [[plan.start for plan in slot] for slot in slots]
    emulator_seeds = [[plan.emulator_seed for plan in slot] for slot in slots]
    if single_player_kind(plans):
        from pongrl.envs.single import SinglePlayerGames

        driver = SinglePlayerGames(
            len(slots),
            seed,
            profiles or ("standard",),
            sticky_actions,
            starts,
            record_colour,
            vectorized,
            emulator_seeds=emulator_seeds,
        )
    else:
        from pongrl.envs.two_player import TwoPlayerGames

        if any(start is None for slot in starts for start in slot):
            raise ValueError("two-player games need their start (no-op frames)")
        if any(game_seed is not None for slot in emulator_seeds for game_seed in slot):
            raise ValueError("only games against the built-in AI take an emulator seed")
        driver = TwoPlayerGames(
            len(slots),
            max_frames,
            mode=game_mode,
            autoreset=False,
            sticky_actions=sticky_actions,
            profiles=profiles,
            serve_assist=serve_assist,
            record_colour=record_colour,
            starts=starts,
        )
    driver.reset()
    return driver


def choose_actions(driver, seatings: dict[int, tuple[object, object]], order: list[object]) -> np.ndarray:
    """Each player's actions in the games given (`seatings[g]` = (right player, left player)): every player in
    `order` acts once, on the batch of its seats (the built-in AI never: it moves by itself). Returns (games, 2)
    action indices by side."""
    actions = np.zeros((driver.num_games, 2), np.int64)
    for player in order:
        if player is BUILTIN:
            continue
        mine = [(g, side) for g, seats in seatings.items() for side in (RIGHT, LEFT) if seats[side] is player]
        if not mine:
            continue
        if player.profile is None:  # a person looks at the screen, not at an observation
            chosen = player.act([None] * len(mine))
        else:
            chosen = player.act(np.stack([driver.observation(g, side, player.profile) for g, side in mine]))
        for (g, side), action in zip(mine, chosen):
            actions[g, side] = action
    return actions


def play_games(
    slots: list[list[GamePlan]],
    *,
    driver=None,
    before_step: Callable | None = None,
    after_step: Callable | None = None,
    stop: Callable[[], bool] | None = None,
    **settings,
) -> list[dict]:
    """Play every slot's games in turn, the slots in lockstep (see `spread`); returns one record per game, in
    the order of the slots' plans. `settings` are `open_driver`'s (or pass an open `driver`, closed here).
    `before_step(driver, games)` runs before each step with the games about to play it, `after_step(driver,
    games)` after it (a game's records are taken after that, so it still sees an ended game; the slots it returns,
    if any, end their game there, as a probe does once it has seen what it needs, and go on to their next);
    `stop()` is asked before each step, and when it says so the games being played end there (games ended early
    have records that say "finished": False)."""
    driver = driver or open_driver(slots, **settings)
    try:
        return _play(driver, slots, before_step, after_step, stop)
    finally:
        driver.close()


def _play(driver, slots, before_step, after_step, stop) -> list[dict]:
    current = [0] * len(slots)  # the game each slot is playing
    records: list[list[dict]] = [[] for _ in slots]
    points: list[list[tuple[int, int]]] = [[] for _ in slots]
    steps = [0] * len(slots)
    order = list(dict.fromkeys(player for slot in slots for plan in slot for player in (plan.first, plan.second)))
    while True:
        running = [g for g, slot in enumerate(slots) if current[g] < len(slot)]
        if not running or (stop is not None and stop()):
            break
        if before_step is not None:
            before_step(driver, running)
        seatings = {g: slots[g][current[g]].seats() for g in running}
        ended = driver.play_step(choose_actions(driver, seatings, order), running)
        cut_short = set(after_step(driver, running) or ()) if after_step is not None else set()
        for g in running:
            steps[g] += 1
            if driver.scored[g].any():
                plan = slots[g][current[g]]
                first_side = RIGHT if plan.first_right else LEFT
                points[g].append((steps[g], 1 if driver.scored[g, first_side] else -1))
        for g in ended:
            result = driver.last_results[g] if driver.autoreset else driver.result(g)
            records[g].append(_record(slots[g][current[g]], result, points[g], finished=True))
            points[g], steps[g] = [], 0
            current[g] += 1
            if current[g] < len(slots[g]) and not driver.autoreset:
                driver.reset_game(g)
        for g in sorted(cut_short - set(ended)):
            records[g].append(_record(slots[g][current[g]], driver.result(g), points[g], finished=False))
            points[g], steps[g] = [], 0
            current[g] += 1
            if current[g] < len(slots[g]):
                driver.reset_game(g)
    for g, slot in enumerate(slots):  # games stopped before their end
        if current[g] < len(slot):
            records[g].append(_record(slot[current[g]], driver.result(g), points[g], finished=False))
    return [record for slot_records in records for record in slot_records]


def _record(plan: GamePlan, result: dict, points: list[tuple[int, int]], finished: bool) -> dict:
    mine, theirs = (RIGHT, LEFT) if plan.first_right else (LEFT, RIGHT)
    return {
        "first_side": "right" if plan.first_right else "left",
        "first_points": result["points"][mine],
        "second_points": result["points"][theirs],
        "first_serve_penalties": result["penalties"][mine],
        "second_serve_penalties": result["penalties"][theirs],
        "steps": result["steps"],
        "over": result["over"],
        "cut": result["cut"],
        "finished": finished,
        "start": plan.start,
        "course": game_course(points),
    }


class LiveGame:
    """One game played at a person's pace (the page of `pongrl play`): `begin_step` asks the players for the
    step's actions, `play_frame` plays one raw frame (a person's paddle takes the keys held at that frame) or,
    against the built-in AI, the whole step at once (its frames are in `colour_frames`). `reset` starts the next
    game. `record_colour` keeps every frame's colour screen."""

    def __init__(self, right, left, seed: int = 0, record_colour: bool = False):
        self.right, self.left = right, left
        self.person = left if isinstance(left, PersonPlayer) else None
        assisted = (RIGHT,) if self.person else True  # a person serves by pressing FIRE
        self.plan = GamePlan(right, left, first_right=True, start=None if left is BUILTIN else 0)
        self.driver = open_driver([[self.plan]], seed=seed, serve_assist=assisted, record_colour=record_colour)
        self.single_player = left is BUILTIN

    def reset(self) -> None:
        """Start the next game (two-player: at once; single-player: after its drawn no-op start)."""
        self.driver.starts[0] = [self.plan.start]
        self.driver.reset_game(0)

    def observation(self, side: int) -> np.ndarray:
        return self.driver.observation(0, side, (self.right if side == RIGHT else self.left).profile)

    def begin_step(self) -> None:
        self._actions = choose_actions(self.driver, {0: (self.right, self.left)}, [self.right, self.left])[0]
        if not self.single_player:
            self.driver.begin_step(0, int(self._actions[RIGHT]), int(self._actions[LEFT]))

    def play_frame(self) -> bool:
        """One frame (two-player) or the whole step (single-player); True once the step is complete."""
        if self.single_player:
            self.driver.play_step(self._actions[None], [0])
            return True
        return self.driver.play_frame(0, self.person.keys.action() if self.person else None)

    @property
    def points(self) -> tuple[int, int]:
        """(right, left)."""
        return tuple(int(p) for p in self.driver.points[0])

    @property
    def colour_frames(self) -> list[np.ndarray]:
        return self.driver.colour_frames[0]

    @property
    def done(self) -> bool:
        return self.driver.done(0)

    def screen(self) -> np.ndarray:
        return self.driver.screen(0)

    def ram(self) -> np.ndarray:
        return self.driver.ram(0)

    def close(self) -> None:
        self.driver.close()
