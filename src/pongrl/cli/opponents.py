"""`pongrl robustness`: an agent against every kind of opponent (pongrl.robustness)."""

from __future__ import annotations

import json
import os
import sys

from pongrl.cli.common import AGENT_HELP, add_torch_threads, finite_float, integer, positive_int
from pongrl.errors import PongrlError


def add_robustness(commands) -> None:
    from pongrl.scripted import BATTERY  # no torch, no emulator

    robustness = commands.add_parser(
        "robustness",
        help="an agent against the built-in AI, scripted opponents and other agents: per-opponent points and the "
        "worst case",
    )
    robustness.add_argument("agent", metavar="AGENT", help=AGENT_HELP)
    robustness.add_argument(
        "--opponents",
        default="all",
        help="scripted opponents, comma-separated, all (default) or none: "
        + "; ".join(f"{name}: {description}" for name, (_, description) in BATTERY.items()),
    )
    robustness.add_argument(
        "--agents",
        default="zoo",
        help="other agents to meet, comma-separated specs, zoo (default: every other zoo agent but the checkpoints "
        "of a study series) or none",
    )
    robustness.add_argument(
        "--games", type=positive_int, default=10, help="two-player games per opponent, sides alternating (default 10)"
    )
    robustness.add_argument(
        "--no-builtin", action="store_true", help="leave out the built-in AI (both protocols otherwise)"
    )
    robustness.add_argument(
        "--builtin-games",
        type=positive_int,
        default=100,
        help="games under sticky actions 0.25 against the built-in AI (default 100; a zoo agent's card is read)",
    )
    robustness.add_argument(
        "--sticky-actions",
        type=finite_float,
        default=0.25,
        metavar="P",
        help="two-player games: the probability that a player's previous action repeats on a frame (default 0.25)",
    )
    robustness.add_argument("--seed", type=integer, default=0, help="starts and random players' seed (default 0)")
    robustness.add_argument("--out", help="also write the report to this JSON file (refused if it exists)")
    robustness.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    add_torch_threads(robustness)


def cmd_robustness(args) -> int:
    from pongrl.checkpoint import atomic_write_bytes
    from pongrl.robustness import format_report, robustness_report

    if args.out and os.path.exists(args.out):
        raise PongrlError(f"{args.out}: exists (choose another file)")
    agents = {"zoo": None, "none": []}.get(
        args.agents.strip(), [s.strip() for s in args.agents.split(",") if s.strip()]
    )
    opponents = "" if args.opponents.strip() == "none" else args.opponents

    def progress(name: str) -> None:
        if sys.stderr.isatty():
            print(f"pongrl: playing {name}", file=sys.stderr)

    report = robustness_report(
        args.agent,
        opponents=opponents,
        games=args.games,
        agents=agents,
        builtin=not args.no_builtin,
        builtin_games=args.builtin_games,
        sticky_actions=args.sticky_actions,
        seed=args.seed,
        progress=progress,
    )
    report["command"] = "pongrl robustness " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["robustness"] else None
    text = json.dumps(report, indent=1)
    if args.out:
        atomic_write_bytes(args.out, (text + "\n").encode())
    print(text if args.json else "\n".join(format_report(report)))
    return 0


def add_exploit(commands) -> None:
    from pongrl import config as config_module
    from pongrl.cli.training import add_config_flags, add_new_run_flags
    from pongrl.exploiters import EXPLOIT_DEFAULTS, FIXED_SETTINGS

    exploit = commands.add_parser(
        "exploit",
        help="train a PPO best response against a frozen agent in the two-player game (an exploiter)",
        description="A self-play run whose every game is against AGENT, frozen and greedy; the exploiter plays "
        "the right paddle in half of the games and the left in the others. Resume it with pongrl resume.",
    )
    exploit.add_argument("agent", metavar="AGENT", help="the target: " + AGENT_HELP)
    exploit.add_argument("--steps", type=positive_int, default=1_000_000, help="agent steps to train (default 1000000)")
    add_new_run_flags(
        exploit,
        "runs/exploit__<agent>__<seed>__<time>",
        config_module.SELFPLAY_PRESETS,
        "self-play hyperparameters to start from: 'seed' is the self-play model card's run (a preset name, not the "
        "random seed of --seed) (default: default)",
    )
    presets = {
        name: {**values, **EXPLOIT_DEFAULTS} if name == "default" else values
        for name, values in config_module.SELFPLAY_PRESETS.items()
    }
    add_config_flags(exploit, config_module.PPOConfig, presets, skip=FIXED_SETTINGS)


def cmd_exploit(args) -> int:
    import dataclasses

    from pongrl.config import PPOConfig
    from pongrl.exploiters import FIXED_SETTINGS, exploit, exploitability

    skipped = {"algo", "preset", *FIXED_SETTINGS}
    names = [field.name for field in dataclasses.fields(PPOConfig) if field.name not in skipped]
    settings = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    run = exploit(
        args.agent,
        args.run_dir,
        args.steps,
        preset=args.preset,
        force=args.force,
        verbose=True,
        handle_signals=True,
        **settings,
    )
    if run.outcome.exit_code == 0 and run.metrics().get("env_step", ()).size:
        summary = exploitability(run)
        if summary["games"]:
            print(
                f"{run.run_dir}: step {summary['step']}, last {summary['games']} games against {summary['target']}: "
                f"{summary['points_won_per_game']:.2f} points won, {summary['points_lost_per_game']:.2f} lost per game "
                f"({summary['mean_point_difference']:+.2f})"
            )
        else:
            print(f"{run.run_dir}: step {summary['step']}, no game against {summary['target']} has ended yet")
    return run.outcome.exit_code
