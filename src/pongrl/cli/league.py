"""`pongrl train league`, `pongrl status` and the league side of `resume` and `plot`: a league that trains
itself (pongrl.league.driver), each setting a flag made from pongrl.league.settings.LeagueSettings."""

from __future__ import annotations

import argparse
import dataclasses

from pongrl import config as config_module
from pongrl.cli.common import finite_float, integer, positive_int
from pongrl.league import settings as league_settings


CHOICES = {
    "main_exploiter_init": league_settings.EXPLOITER_INITS,
    "matchmaking": league_settings.MATCHMAKING,
    "network": config_module.CHOICES["network"],
}


def add_league_train(algos) -> None:
    train = algos.add_parser(
        "league",
        help="a league that trains itself: a main agent, exploiters, prioritized matchmaking (resume it any time)",
    )
    train.add_argument("league_dir", metavar="DIR", help="the league's directory (new, or a league to go on with)")
    defaults = league_settings.LeagueSettings()
    for field in dataclasses.fields(league_settings.LeagueSettings):
        default = getattr(defaults, field.name)
        kind = {int: integer if field.name == "seed" else positive_int, float: finite_float}.get(type(default), str)
        if field.name in ("builtin_games",):
            kind = integer
        train.add_argument(
            "--" + field.name.replace("_", "-"),
            type=kind,
            default=None,
            choices=CHOICES.get(field.name),
            metavar="X"
            if kind is finite_float
            else "N"
            if kind is not str
            else None
            if field.name in CHOICES
            else "SPEC",
            help=f"{league_settings.field_help(field.name)} (default {default})",
        )
    train.add_argument(
        "--change",
        default="",
        metavar="NAMES",
        help="comma-separated settings of an existing league to change from its next round on (the league's "
        "history records it); other differences are refused",
    )
    add_executor_flags(train)


def add_executor_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers", type=positive_int, default=None, help="jobs at once, one torch thread each (default 1)"
    )
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run the jobs as Ray tasks: auto (the cluster Ray finds), HOST:PORT, or local (a new one here); "
        "needs pip install 'pongrl[ray]'",
    )


def add_status(commands) -> None:
    status = commands.add_parser("status", help="a league's members, round, running jobs and last round's summary")
    status.add_argument("league_dir", metavar="DIR")


def cmd_train_league(args) -> int:
    from pongrl.league.driver import train_league

    given = {name: getattr(args, name) for name in league_settings.FIELDS if getattr(args, name, None) is not None}
    change = tuple(name.strip() for name in args.change.split(",") if name.strip())
    train_league(args.league_dir, args.workers or 1, args.ray, change, verbose=True, **given)
    return 0


def cmd_resume_league(args) -> int:
    from pongrl.league.driver import resume_league

    resume_league(args.run_dir, args.workers or 1, args.ray, verbose=True)
    return 0


def cmd_status(args) -> int:
    from pongrl.league.tables import status

    print("\n".join(status(args.league_dir)))
    return 0


def cmd_plot_league(league_dir: str) -> int:
    from pongrl.league.settings import load
    from pongrl.league.tables import write_tables

    load(league_dir)
    made = write_tables(league_dir)
    print("\n".join(made.get("charts", [])) or f"{league_dir}: no round complete yet")
    return 0
