"""`pongrl train`, `resume`, `branch` and `plot`: runs are made, continued, branched and drawn.

Every setting of a run's config is a flag, made from the config dataclasses' fields (defaulting to None,
so that the preset, or the run being resumed or branched, decides unless the flag is given).
"""

from __future__ import annotations

import argparse
import dataclasses

from pongrl import config as config_module
from pongrl.cli import league
from pongrl.cli.common import Parser, finite_float, integer, positive_int

RESUME_FLAGS, BRANCH_FLAGS = config_module.RESUME_SETTINGS, config_module.BRANCH_SETTINGS
DQN_FIELDS = {f.name for f in dataclasses.fields(config_module.DQNConfig)}


def add_config_flags(
    parser: argparse.ArgumentParser, cls, presets: dict, only: set[str] | None = None, skip: tuple[str, ...] = ()
) -> None:
    """One flag per config field (or per field in `only`, less those in `skip`), defaulting to None so the
    preset decides unless given."""
    defaults = cls()
    skip = {"algo", "preset", *skip}
    for field in dataclasses.fields(cls):
        if field.name in skip or (only is not None and field.name not in only):
            continue
        flag = "--" + field.name.replace("_", "-")
        default = presets.get("default", {}).get(field.name, getattr(defaults, field.name))
        seed_value = presets.get("seed", {}).get(field.name)
        shown = (
            "default: as the run had it"
            if only is not None
            else f"default {default if default != '' else 'empty'}"
            + (f"; with --preset seed: {seed_value}" if seed_value is not None else "")
        )
        helptext = f"{config_module.FIELD_HELP.get(field.name, '')} ({shown})"
        if isinstance(default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=helptext)
        elif isinstance(default, int):
            kind = integer if field.name == "seed" or field.name in config_module.NON_NEGATIVE else positive_int
            parser.add_argument(flag, type=kind, default=None, metavar="N", help=helptext)
        elif isinstance(default, float):
            parser.add_argument(flag, type=finite_float, default=None, metavar="X", help=helptext)
        else:
            parser.add_argument(flag, type=str, default=None, help=helptext)


def add_train(commands) -> None:
    train = commands.add_parser("train", help="train an agent (dqn, ppo, selfplay) or a league")
    algos = train.add_subparsers(dest="algo", metavar="ALGO", parser_class=Parser)
    algos.required = True
    dqn = algos.add_parser("dqn", help="DQN against the built-in AI")
    add_new_run_flags(
        dqn,
        "runs/pong__dqn__<preset>__<seed>__<time>",
        config_module.DQN_PRESETS,
        "hyperparameters to start from: 'seed' is the run of the DQN blog post pongrl implements (TF-Agents on "
        "PongNoFrameskip-v4; a preset name, not the random seed of --seed), 'default' learns fastest here, "
        "'rainbow' is how "
        "zoo:dqn was trained (dueling, C51, prioritized replay, sticky actions 0.25, 1.5M env steps)",
    )
    add_config_flags(dqn, config_module.DQNConfig, config_module.DQN_PRESETS)
    for algo, helptext in (
        ("ppo", "PPO against the built-in AI"),
        ("selfplay", "PPO self-play on two-player Pong (the self-play model card)"),
    ):
        presets = config_module.CONFIG_CLASSES[algo][1]
        sub = algos.add_parser(algo, help=helptext)
        add_new_run_flags(
            sub,
            f"runs/pong__{algo}__<preset>__<seed>__<time>",
            presets,
            "hyperparameters to start from: 'seed' is the run of the self-play model card pongrl implements (CleanRL "
            "PPO self-play on pong_v3; a preset name, not the random seed of --seed) (default: default)",
        )
        add_config_flags(sub, config_module.PPOConfig, presets)
    league.add_league_train(algos)


def add_new_run_flags(parser: argparse.ArgumentParser, default_dir: str, presets: dict, preset_help: str) -> None:
    """Where a new run goes, the preset it starts from, and --force to start over in a used directory."""
    parser.add_argument("--run-dir", help=f"where the run goes (default {default_dir})")
    parser.add_argument("--preset", default="default", choices=sorted(presets), help=preset_help)
    parser.add_argument("--force", action="store_true", help="start over in a run directory that already holds a run")


def _add_steps(parser: argparse.ArgumentParser) -> None:
    """How far a resumed or branched run trains: to a total, or so many steps more."""
    steps = parser.add_mutually_exclusive_group()
    steps.add_argument("--total-steps", type=positive_int, help="train until this many env steps in all")
    steps.add_argument("--extra-steps", type=positive_int, help="train this many more env steps")


def add_resume(commands) -> None:
    resume = commands.add_parser("resume", help="continue a run from its latest checkpoint, or a league")
    resume.add_argument("run_dir", metavar="RUN", help="a run directory, or a league directory")
    _add_steps(resume)
    resume.add_argument("--checkpoint", help="resume from this checkpoint of the run instead of the latest")
    # The settings a resume may change (where it runs, how it reports); the others define the experiment.
    add_config_flags(resume, config_module.DQNConfig, {}, only=RESUME_FLAGS)
    league.add_executor_flags(resume)  # a league's


def add_branch(commands) -> None:
    branch = commands.add_parser("branch", help="start a new run from a run's checkpoint, with some settings changed")
    branch.add_argument("run_dir", metavar="RUN", help="the run to branch from (it is only read)")
    branch.add_argument(
        "--run-dir", dest="new_run_dir", required=True, help="where the new run goes (must not hold a run)"
    )
    branch.add_argument("--checkpoint", help="branch at this checkpoint of RUN instead of its latest")
    _add_steps(branch)
    # Every setting of either algorithm; the run's own algorithm decides which apply.
    add_config_flags(branch, config_module.DQNConfig, {}, only=BRANCH_FLAGS & DQN_FIELDS)
    add_config_flags(branch, config_module.PPOConfig, {}, only=BRANCH_FLAGS - DQN_FIELDS)


def add_plot(commands) -> None:
    plot = commands.add_parser("plot", help="plot runs (return and loss) and leagues (ratings and win rates)")
    plot.add_argument("runs", nargs="+", metavar="RUN_OR_LEAGUE")
    plot.add_argument("--out", help="PNG file (default RUN/plots/curves.png of the first run)")


def cmd_train(args) -> int:
    from pongrl import training

    if args.algo == "league":
        return league.cmd_train_league(args)
    cls, _ = config_module.CONFIG_CLASSES[args.algo]
    overrides = {
        f.name: getattr(args, f.name, None) for f in dataclasses.fields(cls) if f.name not in ("algo", "preset")
    }
    run = training.train(
        args.algo,
        args.run_dir,
        args.preset,
        force=args.force,
        verbose=True,
        handle_signals=True,
        **{name: value for name, value in overrides.items() if value is not None},
    )
    return run.outcome.exit_code


def cmd_resume(args) -> int:
    from pongrl import training
    from pongrl.league.settings import is_league

    if is_league(args.run_dir):
        return league.cmd_resume_league(args)
    if args.workers or args.ray:
        from pongrl.league.settings import load

        load(args.run_dir)  # a run resumes in one process: these flags are a league's

    run = training.Run(args.run_dir).resume(
        args.extra_steps,
        args.total_steps,
        args.checkpoint,
        verbose=True,
        handle_signals=True,
        **{name: getattr(args, name) for name in RESUME_FLAGS},
    )
    return run.outcome.exit_code


def cmd_branch(args) -> int:
    from pongrl import training

    changes = {name: getattr(args, name, None) for name in BRANCH_FLAGS}
    run = training.Run(args.run_dir).branch(
        args.new_run_dir,
        args.checkpoint,
        args.extra_steps,
        args.total_steps,
        verbose=True,
        handle_signals=True,
        **changes,
    )
    return run.outcome.exit_code


def cmd_plot(args) -> int:
    from pongrl.league.settings import is_league
    from pongrl.media import plot

    if len(args.runs) == 1 and is_league(args.runs[0]):
        return league.cmd_plot_league(args.runs[0])
    print("\n".join(plot(args.runs, args.out)))
    return 0
