"""The `pongrl` command line: parses, calls, and turns problems into one-line messages.

Exit codes: 0 success, 1 a refused input or failed action (message on stderr), 2 a bad command
line, 128+N when a training run was stopped by signal N after writing its checkpoint.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from pongrl import config as config_module
from pongrl.probes import cli as probe_cli
from pongrl.errors import CheckpointWriteError, PongrlError
from pongrl.game import CLASSIC_MODE, MAX_CYCLES


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line (plus a hint), exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _torch_threads(text: str) -> int:
    value = _positive_int(text)
    if value > config_module.MAX_TORCH_THREADS:  # a typo here would start that many threads at the first layer
        raise argparse.ArgumentTypeError(f"expected at most {config_module.MAX_TORCH_THREADS}, got {text!r}")
    return value


def _add_torch_threads(parser: argparse.ArgumentParser) -> None:
    """For the commands that only play (eval, duel, video, card): share a machine with a training run."""
    parser.add_argument("--torch-threads", dest="play_threads", type=_torch_threads, default=None, metavar="N",
                        help="torch intra-op threads for the agents' forward passes (default: torch's, one per core)")


def _add_sticky_actions(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sticky-actions", type=_float, default=0.0, metavar="P",
                        help="games against the built-in AI: the emulator repeats the previous action on each frame "
                             "with probability P (0.25 in the ALE v5 protocol), a held-out test for policies that the "
                             "deterministic protocol lets repeat one winning pattern (default 0, the training protocol)")


def _add_config_flags(parser: argparse.ArgumentParser, cls, presets: dict, only: set[str] | None = None) -> None:
    """One flag per config field (or per field in `only`), defaulting to None so the preset decides
    unless given."""
    defaults = cls()
    skip = {"algo", "preset"}
    for field in dataclasses.fields(cls):
        if field.name in skip or (only is not None and field.name not in only):
            continue
        flag = "--" + field.name.replace("_", "-")
        default = presets.get("default", {}).get(field.name, getattr(defaults, field.name))
        seed_value = presets.get("seed", {}).get(field.name)
        shown = ("default: as the run had it" if only is not None else
                 f"default {default}" + (f"; seed preset {seed_value}" if seed_value is not None else ""))
        helptext = f"{config_module.FIELD_HELP.get(field.name, '')} ({shown})"
        if isinstance(default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=helptext)
        elif isinstance(default, int):
            kind = _int if field.name == "seed" or field.name in config_module.NON_NEGATIVE else _positive_int
            parser.add_argument(flag, type=kind, default=None, metavar="N", help=helptext)
        elif isinstance(default, float):
            parser.add_argument(flag, type=_float, default=None, metavar="X", help=helptext)
        else:
            parser.add_argument(flag, type=str, default=None, help=helptext)


RESUME_FLAGS, BRANCH_FLAGS = config_module.RESUME_SETTINGS, config_module.BRANCH_SETTINGS
DQN_FIELDS = {f.name for f in dataclasses.fields(config_module.DQNConfig)}


def _add_two_agent_flags(parser: argparse.ArgumentParser) -> None:
    """The rules of a game between two agents: the frame cap, the serve assist and the game variation."""
    parser.add_argument("--max-frames", type=_positive_int, default=MAX_CYCLES,
                        help=f"raw frames after which a two-agent game is cut and counted a draw (default {MAX_CYCLES})")
    _add_two_agent_rules(parser)


def _add_two_agent_rules(parser: argparse.ArgumentParser) -> None:
    """The serve assist and the game variation, which rule games between two agents only (eval and video
    take them for their duels)."""
    parser.add_argument("--serve-assist", action="store_true",
                        help="two-agent games: press FIRE for both players while the ball is out of play, so that "
                             "agents trained against the built-in AI (which never serve) do not stall the game; "
                             "no effect against the built-in AI, whose game serves by itself")
    parser.add_argument("--game-mode", type=_int, choices=config_module.CHOICES["game_mode"],
                        default=CLASSIC_MODE,
                        help="two-agent games: the cartridge's two-player Pong variation, 4 (pong_v3's classic, the "
                             "default) or 3 (fast balls, as in the single-player game; `train selfplay --game-mode 3`)")


def _add_match_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--games", type=_positive_int, default=10, help="games to play, sides alternating (default 10)")
    parser.add_argument("--seed", type=_int, default=0, help="match seed (default 0)")
    parser.add_argument("--sample", nargs="?", const="both", default="none", choices=list(SAMPLE_CHOICES),
                        help="sample actions from the policy instead of greedy: both players (--sample), "
                             "or only the first or the second (default none)")
    _add_two_agent_flags(parser)


SAMPLE_CHOICES = {"none": (False, False), "first": (True, False), "second": (False, True), "both": (True, True)}


AGENT_HELP = ("a checkpoint file or run directory (its latest checkpoint), a seed-format state_dict, a safetensors "
              "agent, zoo:NAME (pongrl zoo lists them) or hf://OWNER/REPO/FILE (a file on the Hugging Face Hub)")


def build_parser() -> Parser:
    parser = Parser(prog="pongrl", description="Train and study agents that play Atari Pong from pixels.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True

    train = commands.add_parser("train", help="train an agent (dqn, ppo, selfplay)")
    algos = train.add_subparsers(dest="algo", metavar="ALGO", parser_class=Parser)
    algos.required = True
    dqn = algos.add_parser("dqn", help="DQN against the built-in AI")
    dqn.add_argument("--run-dir", help="where the run goes (default runs/pong__dqn__<preset>__<seed>__<time>)")
    dqn.add_argument("--preset", default="default", choices=sorted(config_module.DQN_PRESETS),
                     help="hyperparameters to start from: 'seed' is the blog's run, 'default' learns fastest here")
    dqn.add_argument("--force", action="store_true", help="start over in a run directory that already holds a run")
    _add_config_flags(dqn, config_module.DQNConfig, config_module.DQN_PRESETS)
    for algo, helptext in (("ppo", "PPO against the built-in AI"),
                           ("selfplay", "PPO self-play on two-player Pong (the self-play model card)")):
        presets = config_module.CONFIG_CLASSES[algo][1]
        sub = algos.add_parser(algo, help=helptext)
        sub.add_argument("--run-dir", help=f"where the run goes (default runs/pong__{algo}__<preset>__<seed>__<time>)")
        sub.add_argument("--preset", default="default", choices=sorted(presets),
                         help="hyperparameters to start from: 'seed' is the model card's run (default: default)")
        sub.add_argument("--force", action="store_true", help="start over in a run directory that already holds a run")
        _add_config_flags(sub, config_module.PPOConfig, presets)

    resume = commands.add_parser("resume", help="continue a run from its latest checkpoint")
    resume.add_argument("run_dir", metavar="RUN")
    steps = resume.add_mutually_exclusive_group()
    steps.add_argument("--total-steps", type=_positive_int, help="train until this many env steps in all")
    steps.add_argument("--extra-steps", type=_positive_int, help="train this many more env steps")
    resume.add_argument("--checkpoint", help="resume from this checkpoint of the run instead of the latest")
    # The settings a resume may change (where it runs, how it reports); the others define the experiment.
    _add_config_flags(resume, config_module.DQNConfig, {}, only=RESUME_FLAGS)

    branch = commands.add_parser("branch", help="start a new run from a run's checkpoint, with some settings changed")
    branch.add_argument("run_dir", metavar="RUN", help="the run to branch from (it is only read)")
    branch.add_argument("--run-dir", dest="new_run_dir", required=True, help="where the new run goes (must not hold a run)")
    branch.add_argument("--checkpoint", help="branch at this checkpoint of RUN instead of its latest")
    steps = branch.add_mutually_exclusive_group()
    steps.add_argument("--total-steps", type=_positive_int, help="train until this many env steps in all")
    steps.add_argument("--extra-steps", type=_positive_int, help="train this many more env steps")
    # Every setting of either algorithm; the run's own algorithm decides which apply.
    _add_config_flags(branch, config_module.DQNConfig, {}, only=BRANCH_FLAGS & DQN_FIELDS)
    _add_config_flags(branch, config_module.PPOConfig, {}, only=BRANCH_FLAGS - DQN_FIELDS)

    evaluate = commands.add_parser("eval", help="play whole games against the built-in AI")
    evaluate.add_argument("checkpoint", metavar="AGENT", help=AGENT_HELP)
    evaluate.add_argument("--episodes", type=_positive_int, default=None, help="games to play (default 10)")
    evaluate.add_argument("--epsilon", type=_float, default=0.0, help="random-action probability (default 0)")
    evaluate.add_argument("--seed", type=_int, default=0, help="emulator seed (default 0)")
    evaluate.add_argument("--json", action="store_true", help="print machine-readable JSON")
    evaluate.add_argument("--opponent", default="builtin",
                          help="builtin (default), or an AGENT to play a duel against instead")
    evaluate.add_argument("--sample", action="store_true", help="sample actions from the policy instead of greedy")
    evaluate.add_argument("--every-start", action="store_true",
                          help="greedy play, one game from each of the protocol's 31 starts (0-30 no-op frames): "
                               "the emulator is deterministic, so their mean is the exact expected score")
    evaluate.add_argument("--protocols", action="store_true",
                          help="both protocols against the built-in AI: exact (greedy from each of the 31 starts, "
                               "with how many distinct games they were) and sticky actions 0.25 over --episodes "
                               "greedy games (default 100) with the 95%% interval of the mean")
    _add_sticky_actions(evaluate)
    _add_two_agent_rules(evaluate)
    _add_torch_threads(evaluate)

    duel = commands.add_parser("duel", help="a match between two players (checkpoints, seed state_dicts or builtin)")
    duel.add_argument("first", metavar="A", help=AGENT_HELP + ", or builtin")
    duel.add_argument("second", metavar="B", help=AGENT_HELP + ", or builtin")
    _add_match_flags(duel)
    _add_sticky_actions(duel)
    duel.add_argument("--json", action="store_true", help="print machine-readable JSON")
    _add_torch_threads(duel)

    league = commands.add_parser("league", help="rate a run's checkpoints (and others) by playing them against each other")
    league.add_argument("inputs", nargs="+", metavar="RUN_OR_AGENT",
                        help="run directories (all their checkpoints), checkpoint, state_dict or safetensors files, "
                             "zoo:NAME (zoo:* for every shipped agent) and hf://OWNER/REPO/FILE")
    league.add_argument("--games-per-pair", type=_positive_int, default=4, help="games per pair, sides alternating (default 4)")
    league.add_argument("--include-builtin", action="store_true", help="the built-in AI plays too, as the rating anchor (0)")
    league.add_argument("--sticky-actions", type=_float, default=0.0, metavar="P",
                        help="the games against the built-in AI are played with sticky actions P (0.25: the ALE v5 "
                             "protocol; default 0, the exact protocol); games between agents are not affected")
    league.add_argument("--out", help="folder for matches.jsonl, ratings.csv/.md and ratings.png "
                                      "(default FIRST_RUN/league)")
    league.add_argument("--schedule", choices=("auto", "all", "neighbours"), default="auto",
                        help="all pairs, or each checkpoint against its run's neighbours (default auto: all up to 12 players)")
    league.add_argument("--seed", type=_int, default=0, help="match seed (default 0)")
    league.add_argument("--sample", action="store_true", help="sample actions from the policies instead of greedy")
    _add_two_agent_flags(league)
    league.add_argument("--workers", type=_positive_int, default=os.cpu_count() or 1,
                        help="matches played at once, one process each (default: the number of cores)")

    card = commands.add_parser("card", help="write a Hugging Face model card folder for a run (nothing is uploaded)")
    card.add_argument("checkpoint", metavar="AGENT", help=AGENT_HELP)
    card.add_argument("--out", required=True, help="folder to write")
    card.add_argument("--games", type=_positive_int, default=10, help="evaluation games against the built-in AI (default 10)")
    card.add_argument("--seed", type=_int, default=0, help="evaluation seed (default 0)")
    card.add_argument("--video-frames", type=_positive_int, default=7_200,
                      help="emulator frames of the replay video at most (default 7200, two minutes)")
    card.add_argument("--force", action="store_true", help="replace --out if it exists")
    card.add_argument("--sample", action="store_true",
                      help="score and film the agent with actions sampled from its policy instead of greedy")
    _add_torch_threads(card)

    export = commands.add_parser("export", help="write a PPO agent as the bare state_dict the self-play card's code loads")
    export.add_argument("checkpoint", metavar="AGENT", help=AGENT_HELP + " (a PPO or self-play agent)")
    export.add_argument("--out", required=True, help="FILE.pt to write")
    export.add_argument("--force", action="store_true", help="overwrite --out if it exists")

    play = commands.add_parser("play", help="play Pong against an agent in the browser, or watch agents play")
    play.add_argument("agent", metavar="AGENT", nargs="?", default=None,
                      help=AGENT_HELP + " (default: the zoo agent with the best score under sticky actions)")
    play.add_argument("--opponent", default=None,
                      help="builtin or an AGENT to watch AGENT play against (default: you, with the keyboard)")
    play.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    play.add_argument("--port", type=_int, default=8000, help="port to listen on (default 8000; 0 picks a free one)")
    play.add_argument("--seed", type=_int, default=0, help="seed of the built-in AI's games (default 0)")

    probe_cli.add_parser(commands, AGENT_HELP, _positive_int, _int)

    zoo = commands.add_parser("zoo", help="list the agents that ship with pongrl (zoo:NAME) with their scores")
    zoo.add_argument("--json", action="store_true", help="print machine-readable JSON")

    plot = commands.add_parser("plot", help="plot runs (return and loss) and leagues (ratings and win rates)")
    plot.add_argument("runs", nargs="+", metavar="RUN_OR_LEAGUE")
    plot.add_argument("--out", help="PNG file (default RUN/plots/curves.png of the first run)")

    video = commands.add_parser("video", help="record an agent playing the built-in AI or another agent, in full colour")
    video.add_argument("checkpoint", metavar="AGENT", help=AGENT_HELP)
    video.add_argument("--opponent", default="builtin", help="builtin (default) or an AGENT")
    video.add_argument("--out", help="FILE.mp4 or FILE.gif (default RUN/videos/<checkpoint>[_vs_<opponent>].mp4)")
    length = video.add_mutually_exclusive_group()
    length.add_argument("--games", type=_positive_int, default=None, help="whole games to record (default 1)")
    length.add_argument("--frames", type=_positive_int, default=None,
                        help="emulator frames to record, 60 per second (stops early when the games end)")
    video.add_argument("--scale", type=_positive_int, default=2, help="pixel scale of the native 210x160 screen (default 2)")
    video.add_argument("--seed", type=_int, default=0, help="emulator seed (default 0)")
    video.add_argument("--epsilon", type=_float, default=0.0, help="random-action probability (default 0)")
    video.add_argument("--sample", action="store_true", help="sample actions from the policies instead of greedy")
    _add_two_agent_rules(video)
    _add_torch_threads(video)
    return parser


def cmd_train(args) -> int:
    from pongrl import training

    cls, _ = config_module.CONFIG_CLASSES[args.algo]
    overrides = {f.name: getattr(args, f.name, None) for f in dataclasses.fields(cls) if f.name not in ("algo", "preset")}
    run = training.train(args.algo, args.run_dir, args.preset, force=args.force, verbose=True, handle_signals=True,
                         **{name: value for name, value in overrides.items() if value is not None})
    return run.outcome.exit_code


def cmd_resume(args) -> int:
    from pongrl import training

    run = training.Run(args.run_dir).resume(args.extra_steps, args.total_steps, args.checkpoint, verbose=True,
                                            handle_signals=True, **{name: getattr(args, name) for name in RESUME_FLAGS})
    return run.outcome.exit_code


def cmd_branch(args) -> int:
    from pongrl import training

    changes = {name: getattr(args, name, None) for name in BRANCH_FLAGS}
    run = training.Run(args.run_dir).branch(args.new_run_dir, args.checkpoint, args.extra_steps, args.total_steps,
                                            verbose=True, handle_signals=True, **changes)
    return run.outcome.exit_code


def cmd_eval(args) -> int:
    from pongrl.agent import load_agent
    from pongrl.evaluation import evaluate_agent, evaluate_every_start, summarize

    if not 0.0 <= args.epsilon <= 1.0:
        raise PongrlError(f"--epsilon must be in [0, 1], got {args.epsilon}")
    against_builtin = args.opponent.strip().lower() == "builtin"
    if args.every_start:
        clash = [flag for flag, given in (("--episodes", args.episodes is not None), ("--sample", args.sample),
                                          ("--epsilon", args.epsilon > 0), ("--opponent", not against_builtin),
                                          ("--sticky-actions", args.sticky_actions > 0)) if given]
        if clash:
            raise PongrlError(f"--every-start plays greedy games against the built-in AI, one per start; "
                              f"it does not take {', '.join(clash)}")
    if args.protocols:
        clash = [flag for flag, given in (("--every-start", args.every_start), ("--sample", args.sample),
                                          ("--epsilon", args.epsilon > 0), ("--opponent", not against_builtin),
                                          ("--sticky-actions", args.sticky_actions > 0)) if given]
        if clash:
            raise PongrlError(f"--protocols plays greedy games against the built-in AI under both protocols; "
                              f"it does not take {', '.join(clash)}")
    if against_builtin:
        from pongrl.arena import refuse_game_mode_against_builtin
        refuse_game_mode_against_builtin(args.game_mode)
    if args.protocols:
        return _eval_protocols(args)
    episodes = args.episodes or 10
    if not against_builtin or args.sample:  # a match: sampled play against the built-in AI too (summarize_match)
        return _play_duel(args, args.checkpoint, args.opponent, episodes, MAX_CYCLES)
    agent = load_agent(args.checkpoint)
    if args.every_start:
        games = evaluate_every_start(agent, args.seed)
    else:
        games = evaluate_agent(agent, episodes, args.seed, args.epsilon, sticky_actions=args.sticky_actions)
    summary = summarize(games)
    if args.json:
        print(json.dumps({"checkpoint": agent.name, "env_step": agent.env_step, "epsilon": args.epsilon,
                          "seed": args.seed, "every_start": args.every_start, "sticky_actions": args.sticky_actions,
                          **summary, "per_game": games}))
        return 0
    for index, game in enumerate(games, 1):
        label = f"start {game['start_noop_frames']:2d}" if args.every_start else f"game {index:3d}"
        print(f"{label}: {game['points_won']:2d}-{game['points_lost']:2d}  score {game['score']:+3d}  "
              f"{game['length']} steps" + ("  (cut by the frame cap)" if game["truncated"] else ""))
    if args.every_start:
        won, lost = sum(game["score"] > 0 for game in games), sum(game["score"] < 0 for game in games)
        drawn = f", {summary['games'] - won - lost} even" if won + lost < summary["games"] else ""
        print(f"{agent.name} (step {agent.env_step}): mean score {summary['mean']:+.2f} over all {summary['games']} "
              f"starts against the built-in AI ({won} won, {lost} lost{drawn}): the exact expected score of greedy "
              f"play under the protocol")
    else:
        sticky = f", sticky actions {args.sticky_actions:g}" if args.sticky_actions else ""
        print(f"{agent.name} (step {agent.env_step}): mean score {summary['mean']:+.2f} +- {summary['std']:.2f} "
              f"over {summary['games']} games against the built-in AI{sticky}")
    return 0


def _eval_protocols(args) -> int:
    from pongrl.agent import load_agent
    from pongrl.evaluation import STICKY_GAMES, describe_protocols, evaluate_protocols

    agent = load_agent(args.checkpoint)
    result = evaluate_protocols(agent, args.episodes or STICKY_GAMES, args.seed)
    if args.json:
        print(json.dumps({"checkpoint": agent.name, "env_step": agent.env_step, **result}))
        return 0
    print(f"{agent.name} (step {agent.env_step}) against the built-in AI, greedy:")
    for line in describe_protocols(result):
        print("  " + line)
    return 0


def cmd_duel(args) -> int:
    return _play_duel(args, args.first, args.second, args.games, args.max_frames)


def _play_duel(args, first_spec: str, second_spec: str, games: int, max_frames: int) -> int:
    """A match and its report, for duel and for eval's matches; `args.sample` is duel's choice of players
    or eval's flag (both players)."""
    from pongrl.arena import duel

    sample = SAMPLE_CHOICES[args.sample] if isinstance(args.sample, str) else (args.sample, args.sample)
    result = duel(first_spec, second_spec, games, args.seed, sample, max_frames, args.serve_assist,
                  args.sticky_actions, args.game_mode)
    games, first_name, second_name = result["per_game"], result["first"], result["second"]
    if args.json:
        players = {key: result[key] for key in ("first", "second", "first_env_step", "second_env_step")}
        print(json.dumps({**players, "seed": args.seed, "sample": list(sample), "serve_assist": args.serve_assist,
                          "sticky_actions": args.sticky_actions, "game_mode": args.game_mode, **result}))
        return 0
    for index, game in enumerate(games, 1):
        print(f"game {index:3d}: {first_name} ({game['first_side']}) {game['first_points']:2d}-{game['second_points']:2d} "
              f"{second_name}  {game['outcome']}" + ("  (cut by the frame cap)" if game["cut"] else "")
              + (f"  serve penalties {game['first_serve_penalties']}-{game['second_serve_penalties']}"
                 if game["first_serve_penalties"] or game["second_serve_penalties"] else ""))
    low, high = result["win_rate_95"]
    print(f"{first_name} vs {second_name}: {result['wins']} won, {result['losses']} lost, {result['draws']} drawn; "
          f"win rate {result['win_rate']:.2f} (95% interval {low:.2f}..{high:.2f}, draws count half); "
          f"mean point difference {result['mean_point_difference']:+.2f} +- {result['point_difference_stderr']:.2f} (s.e.); "
          f"serve penalties {result['first_serve_penalties']}-{result['second_serve_penalties']}"
          + (f"; sticky actions {args.sticky_actions:g}" if args.sticky_actions else "")
          + (f"; game variation {args.game_mode}" if args.game_mode != CLASSIC_MODE else ""))
    return 0


def cmd_league(args) -> int:
    from pongrl import league
    from pongrl.media import plot_league

    if not 0.0 <= args.sticky_actions < 1.0:
        raise PongrlError(f"--sticky-actions must be in [0, 1), got {args.sticky_actions}")
    if args.sticky_actions and not args.include_builtin:
        raise PongrlError("--sticky-actions is the protocol of the games against the built-in AI: it needs --include-builtin")
    entrants = league.collect_entrants(args.inputs, args.include_builtin)
    out = args.out
    if out is None:
        runs = [spec for spec in args.inputs if os.path.isdir(spec)]
        if not runs:
            raise PongrlError("give --out DIR (no run directory among the inputs to put the league in)")
        out = os.path.join(runs[0], "league")
    pairs = league.schedule(entrants, args.schedule)
    records = league.play_league(entrants, pairs, out, args.games_per_pair, args.seed, args.sample, args.max_frames,
                                 args.workers, show_progress=sys.stderr.isatty(), serve_assist=args.serve_assist,
                                 game_mode=args.game_mode, sticky_actions=args.sticky_actions)
    rows = league.ratings_table(entrants, records)
    csv_path, md_path = league.write_tables(rows, out)
    png = os.path.join(out, "ratings.png")
    if any(row["env_step"] != "" for row in rows):
        plot_league(csv_path, png)
    with open(md_path) as handle:
        print(handle.read(), end="")
    print(f"pongrl: {csv_path}, {md_path}" + (f", {png}" if os.path.exists(png) else ""), file=sys.stderr)
    return 0


def cmd_card(args) -> int:
    from pongrl.card import write_card

    result = write_card(args.checkpoint, args.out, args.games, args.seed, args.video_frames, args.force, args.sample)
    print(f"{result['out']}: model card for step {result['env_step']} (mean score {result['mean_point_difference']:+.2f} "
          f"over {result['games']} games against the built-in AI); nothing was uploaded")
    return 0


def cmd_export(args) -> int:
    from pongrl.agent import PolicyAgent, load_agent
    from pongrl.checkpoint import write_torch_file
    from pongrl.nets import torso_kind

    if os.path.exists(args.out) and not args.force:
        raise PongrlError(f"{args.out}: exists (use --force to overwrite)")
    agent = load_agent(args.checkpoint)
    if not isinstance(agent, PolicyAgent):
        raise PongrlError(f"{args.checkpoint}: only PPO agents have the self-play card's format (this is a {agent.algo} agent)")
    weights = agent.state_dict()
    torso = torso_kind(weights)
    if torso != "nature":
        raise PongrlError(f"{args.checkpoint}: the self-play card's Agent has the Nature torso; this agent has the "
                          f"{torso!r} one, so it has no seed-format export")
    write_torch_file(args.out, weights)
    print(f"{args.out}: seed-format state_dict ({'shared' if agent.network.share_network else 'separate'} torsos, "
          f"step {agent.env_step}, observation profile {agent.obs_profile})")
    return 0


def cmd_plot(args) -> int:
    from pongrl.media import plot_league, plot_runs

    leagues = [d for d in args.runs if os.path.exists(os.path.join(d, "ratings.csv"))]
    runs = [d for d in args.runs if d not in leagues]
    outputs = []
    if runs:
        out = args.out if args.out and not leagues else os.path.join(runs[0], "plots", "curves.png")
        plot_runs(runs, out)
        outputs.append(out)
    for league_dir in leagues:
        out = args.out if args.out and not runs and len(leagues) == 1 else os.path.join(league_dir, "ratings.png")
        plot_league(os.path.join(league_dir, "ratings.csv"), out)
        outputs.append(out)
    print("\n".join(outputs))
    return 0


def cmd_video(args) -> int:
    from pongrl.arena import load_player
    from pongrl.media import record_video

    if not 0.0 <= args.epsilon <= 1.0:
        raise PongrlError(f"--epsilon must be in [0, 1], got {args.epsilon}")
    player, opponent = load_player(args.checkpoint), load_player(args.opponent)
    if player.is_builtin:
        raise PongrlError("the first player must be an agent (a checkpoint, run or state_dict)")
    if args.out:
        out = args.out
    else:
        run_dir = os.path.dirname(os.path.dirname(os.path.abspath(player.path)))
        suffix = "" if opponent.is_builtin else "_vs_" + opponent.name.replace("@", "_").replace(os.sep, "_")
        out = os.path.join(run_dir, "videos", os.path.basename(player.path).rsplit(".", 1)[0] + suffix + ".mp4")
    games = args.games or (1_000_000 if args.frames else 1)
    summary = record_video(player, opponent, out, games, args.frames, args.seed, args.sample, args.epsilon, args.scale,
                           args.serve_assist, args.game_mode)
    scores = ", ".join(f"{g['first_points']}-{g['second_points']}" for g in summary["games"])
    print(f"{out}: {summary['frames']} frames, {player.name} vs {opponent.name}: {scores}")
    return 0


def cmd_play(args) -> int:
    from pongrl import play, zoo

    return play.serve(args.agent or zoo.best(), args.opponent, args.host, args.port, args.seed)


def cmd_probe(args) -> int:
    return probe_cli.run(args)


def cmd_zoo(args) -> int:
    from pongrl import zoo

    rows = zoo.listing()
    print(json.dumps(rows) if args.json else zoo.format_listing(rows))
    return 0


COMMANDS = {"probe": cmd_probe, "play": cmd_play, "zoo": cmd_zoo, "train": cmd_train, "resume": cmd_resume, "branch": cmd_branch, "eval": cmd_eval, "duel": cmd_duel, "league": cmd_league,
            "export": cmd_export, "plot": cmd_plot, "video": cmd_video, "card": cmd_card}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "play_threads", None):
        import torch

        torch.set_num_threads(args.play_threads)
    try:
        return COMMANDS[args.command](args)
    except CheckpointWriteError as error:
        print(f"pongrl: {error}", file=sys.stderr)
        return 1
    except PongrlError as error:
        print(f"pongrl: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("pongrl: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as error:
        from pongrl.distributed import launched_by_torchrun

        if not launched_by_torchrun():
            raise
        # A collective failed: under torchrun that means another process of the job died.
        first_line = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        print(f"pongrl: error: rank {os.environ.get('RANK', '?')}: another process of this torchrun job stopped "
              f"({first_line}); continue from the last checkpoint with pongrl resume", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader of our output closed it (`pongrl zoo | head`): it wanted no more, which is no error.
        # stdout goes to /dev/null so that Python's own flush at exit does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:
        # os.fsdecode: some libraries (TensorBoard's file writer) name the file in bytes.
        where = f"{os.fsdecode(error.filename)}: " if error.filename else ""
        print(f"pongrl: error: {where}{error.strerror or error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
