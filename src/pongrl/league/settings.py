"""A self-training league's settings, saved in its directory, and the directory's layout.

A league directory holds everything: `league.json` (the settings and the history of their changes), one file per
round (`rounds/r003.json`: the jobs of the round, fixed when the round starts), one folder per job
(`jobs/r003-main/`: its training run or its match rows, its log, its `result.json` once done), the members' weights
(`members/NAME.safetensors` with `NAME.json`), and the tables made from the results (`payoff.csv`, `rounds.csv`,
`plots/`). Every file is written whole or not at all (pongrl.checkpoint's atomic writes).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass

from pongrl.errors import PongrlError
from pongrl.game import MAX_CYCLES

LEAGUE_FILE = "league.json"
FORMAT = 1
EXPLOITER_INITS = ("scratch", "warm", "alternate", "strongest")
MATCHMAKING = ("hard", "even", "uniform")


@dataclass
class LeagueSettings:
    """What a league trains and how; `pongrl train league --help` shows each as a flag."""

    init: str = "zoo:selfplay-mix"
    """The main agent at round 0: a self-play agent (the self-play model card's view)."""
    rounds: int = 30
    """Rounds to train; a round trains the main, a main exploiter and a league exploiter, then plays matches."""
    seed: int = 1
    """Seeds every member's training and the matches (each job derives its own)."""
    members: str = "zoo:selfplay-builtin,zoo:selfplay,zoo:selfplay-separate,zoo:dqn,zoo:ppo"
    """Agents in the league from the start besides the main (comma-separated; empty for none)."""
    main_steps: int = 800_000
    """Agent steps the main trains per round."""
    main_exploiter_steps: int = 800_000
    """Agent steps of each main exploiter (a new one per round, against the main at the round's start)."""
    league_exploiter_steps: int = 400_000
    """Agent steps the league exploiter trains per round, against the whole league."""
    main_exploiter_init: str = "alternate"
    """scratch (random weights), warm (the last main exploiter's weights, or --warm-from at first), alternate
    (scratch in odd rounds, warm in even ones, so that both are measured) or strongest (the weights of the member
    that does best against the main in the payoff table, of the main's kind of network)."""
    warm_from: str = "zoo:selfplay-builtin"
    """The first warm-started main exploiter's weights (later ones start from the last main exploiter)."""
    league_exploiter_reset: int = 4
    """The league exploiter continues from its last weights and starts again from random ones every N rounds."""
    builtin_fraction: float = 0.375
    """Share of the main's games against the built-in AI (so that it keeps that skill)."""
    scripted_fraction: float = 0.125
    """Share of the main's games against the scripted battery."""
    league_fraction: float = 0.25
    """Share of the main's games against league members chosen by prioritized matchmaking."""
    snapshot_fraction: float = 0.125
    """Share of the main's games against its own recent snapshots (the rest is plain self-play)."""
    snapshot_every: int = 200_000
    """Agent steps between the main's own snapshots in that pool."""
    matchmaking: str = "hard"
    """How league opponents are weighted from the payoff table: hard ((1 - p)^power, p the main's win rate against
    them: the ones it beats least), even (p(1 - p): the close ones) or uniform."""
    matchmaking_power: float = 2.0
    """The exponent of hard matchmaking."""
    max_opponents: int = 16
    """At most this many league members in one training segment (the heaviest by matchmaking weight)."""
    learning_rate: float = 1e-4
    """Adam's learning rate of the main (constant: a league trains on and on); each exploiter trains at PPO's
    2.5e-4, decaying to 0 over its steps."""
    ent_coef: float = 0.01
    """PPO's entropy bonus for the main (each exploiter keeps 0.01): lower lets its policy sharpen, so that the
    actions it samples in training come closer to the greedy ones it is scored by."""
    num_envs: int = 16
    """Players per training rollout (two per game)."""
    network: str = "nature"
    """Every member's network (nature or small); a warm start needs the same."""
    num_steps: int = 128
    """Rollout length per player."""
    num_minibatches: int = 4
    """PPO minibatches per update."""
    update_epochs: int = 4
    """PPO epochs per update."""
    max_cycles: int = MAX_CYCLES
    """Raw frames after which a training game is cut."""
    checkpoint_every: int = 100_000
    """Agent steps between a member's checkpoints (what a stopped job continues from)."""
    sticky_actions: float = 0.25
    """Sticky actions for every player, in training and matches (the ALE v5 protocol)."""
    match_games: int = 10
    """Games per pair in the payoff table (sides alternating), and against each program of the battery."""
    battery: str = "all"
    """The scripted opponents of the payoff table and of the main's games (names of pongrl.scripted, or all)."""
    builtin_games: int = 20
    """Sticky-action games of each main snapshot against the built-in AI, beside the 31 exact starts (0: neither)."""
    max_frames: int = MAX_CYCLES
    """Raw frames after which a match game is cut and counted a draw."""


FIELDS = {field.name: field for field in dataclasses.fields(LeagueSettings)}


def field_help(name: str) -> str:
    """The docstring under a field, as flag help (read from the source, so that it is written once)."""
    import inspect

    source = inspect.getsource(LeagueSettings)
    after = source.split(f"    {name}:", 1)[1]
    doc = after.split('"""', 2)[1]
    return " ".join(doc.split())


def validate(settings: LeagueSettings) -> None:
    """Refuse settings no league can run, in one line each."""
    for name in ("rounds", "main_steps", "main_exploiter_steps", "league_exploiter_steps", "num_envs", "match_games"):
        if getattr(settings, name) < 1:
            raise PongrlError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(settings, name)}")
    if settings.num_envs % 2:
        raise PongrlError(f"--num-envs counts players and must be even, got {settings.num_envs}")
    if settings.main_exploiter_init not in EXPLOITER_INITS:
        raise PongrlError(f"--main-exploiter-init must be one of {', '.join(EXPLOITER_INITS)}")
    if settings.matchmaking not in MATCHMAKING:
        raise PongrlError(f"--matchmaking must be one of {', '.join(MATCHMAKING)}")
    shares = ("builtin_fraction", "scripted_fraction", "league_fraction", "snapshot_fraction")
    for name in shares:
        if not 0.0 <= getattr(settings, name) <= 1.0:
            raise PongrlError(f"--{name.replace('_', '-')} must be in [0, 1]")
    if sum(getattr(settings, name) for name in shares) > 1.0 + 1e-9:
        raise PongrlError("the main's shares of games (built-in, scripted, league, snapshots) add up to more than 1")
    if not 0.0 <= settings.sticky_actions < 1.0:
        raise PongrlError("--sticky-actions must be in [0, 1)")
    if settings.ent_coef < 0 or settings.learning_rate <= 0:
        raise PongrlError("--ent-coef must be at least 0 and --learning-rate above 0")
    if settings.builtin_games < 0 or settings.league_exploiter_reset < 1 or settings.max_opponents < 1:
        raise PongrlError("--builtin-games must be at least 0, --league-exploiter-reset and --max-opponents at least 1")
    if settings.battery.strip():
        from pongrl.scripted import scripted_names

        scripted_names(settings.battery)


def league_file(league_dir: str) -> str:
    return os.path.join(league_dir, LEAGUE_FILE)


def is_league(league_dir: str) -> bool:
    return os.path.isfile(league_file(league_dir))


def write_json(path: str, data) -> None:
    from pongrl.checkpoint import atomic_write_bytes  # torch: not loaded by the command line's parser

    atomic_write_bytes(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


def read_json(path: str):
    try:
        with open(path) as handle:
            return json.load(handle)
    except json.JSONDecodeError:
        raise PongrlError(
            f"{path}: damaged (not JSON); the league's files are written whole, so it was edited"
        ) from None


def load(league_dir: str) -> tuple[LeagueSettings, list[dict]]:
    """The league's current settings and the history of their changes."""
    if not os.path.isdir(league_dir):
        raise PongrlError(f"{league_dir}: no such league directory")
    if not is_league(league_dir):
        raise PongrlError(f"{league_dir}: not a league (no {LEAGUE_FILE}; start one with pongrl train league)")
    saved = read_json(league_file(league_dir))
    if saved.get("format") != FORMAT:
        raise PongrlError(f"{league_dir}: a league of another format ({saved.get('format')!r})")
    return LeagueSettings(**saved["settings"]), saved["history"]


def save(league_dir: str, settings: LeagueSettings, history: list[dict]) -> None:
    write_json(
        league_file(league_dir), {"format": FORMAT, "settings": dataclasses.asdict(settings), "history": history}
    )


def refuse_used_directory(league_dir: str) -> None:
    if os.path.exists(league_dir) and (not os.path.isdir(league_dir) or os.listdir(league_dir)):
        raise PongrlError(f"{league_dir}: exists and is not empty (a new league needs an empty or new directory)")


def create(league_dir: str, settings: LeagueSettings) -> None:
    """A new league directory; one that holds anything else is refused (nothing there is touched)."""
    validate(settings)
    refuse_used_directory(league_dir)
    os.makedirs(league_dir, exist_ok=True)
    save(league_dir, settings, [{"round": 0, "time": time.strftime("%Y-%m-%d %H:%M:%S"), "settings": "initial"}])


def differences(saved: LeagueSettings, given: dict) -> list[tuple[str, object, object]]:
    """(name, saved value, given value) for every given setting that differs from the saved one."""
    return [
        (name, getattr(saved, name), value) for name, value in sorted(given.items()) if getattr(saved, name) != value
    ]


def change(league_dir: str, given: dict, allowed: set[str], from_round: int) -> LeagueSettings:
    """Apply the `given` settings that differ from the saved ones, if each is in `allowed` (the names a user asked
    to change); they hold from round `from_round` on, and the history says so. Otherwise refused, naming them."""
    settings, history = load(league_dir)
    changed = differences(settings, given)
    refused = [item for item in changed if item[0] not in allowed]
    if refused:
        name, old, new = refused[0]
        flag = "--" + name.replace("_", "-")
        raise PongrlError(
            f"{league_dir}: {flag} is {old!r} in this league, {new!r} given; to change it from the next round on, "
            f"add --change {name.replace('_', '-')}"
        )
    if changed:
        for name, _, value in changed:
            setattr(settings, name, value)
        validate(settings)
        history.append(
            {
                "round": from_round,
                "time": time.strftime("%Y-%m-%d %H:%M:%S"),
                "settings": {name: [old, new] for name, old, new in changed},
            }
        )
        save(league_dir, settings, history)
    return settings
