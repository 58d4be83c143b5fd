"""`pongrl eval`, `duel`, `league`, `video` and `play`: the commands that play games, and the flags
that rule a game (sticky actions against the built-in AI; the frame cap, serve assist and game variation
between two agents).

A little over 400 lines on purpose: these commands share the flags that rule a game and their checks, and
splitting them would copy those.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from pongrl import config as config_module
from pongrl.cli.common import AGENT_HELP, add_torch_threads, finite_float, integer, positive_int
from pongrl.errors import PongrlError
from pongrl.game import CLASSIC_MODE, MAX_CYCLES

# duel --sample's words -> whether (the first, the second) player samples its actions
SAMPLE_CHOICES = {"none": (False, False), "first": (True, False), "second": (False, True), "both": (True, True)}


def add_sticky_actions(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sticky-actions",
        type=finite_float,
        default=0.0,
        metavar="P",
        help="each player's previous action repeats on each frame with probability P (0.25 in the ALE v5 "
        "protocol; against the built-in AI the emulator's own, between two agents drawn per frame and player), a "
        "held-out test for policies that the deterministic protocol lets repeat one winning pattern "
        "(default 0, the training protocol)",
    )


def add_two_agent_flags(parser: argparse.ArgumentParser) -> None:
    """The rules of a game between two agents: the frame cap, the serve assist and the game variation."""
    parser.add_argument(
        "--max-frames",
        type=positive_int,
        default=MAX_CYCLES,
        help=f"raw frames after which a two-agent game is cut and counted a draw (default {MAX_CYCLES})",
    )
    add_two_agent_rules(parser)


def add_two_agent_rules(parser: argparse.ArgumentParser) -> None:
    """The serve assist and the game variation, which rule games between two agents only (eval and video
    take them for their duels)."""
    parser.add_argument(
        "--serve-assist",
        action="store_true",
        help="two-agent games: press FIRE for both players while the ball is out of play, so that "
        "agents trained against the built-in AI (which never serve) do not stall the game; "
        "no effect against the built-in AI, whose game serves by itself",
    )
    parser.add_argument(
        "--game-mode",
        type=integer,
        choices=config_module.CHOICES["game_mode"],
        default=CLASSIC_MODE,
        help="two-agent games: the cartridge's two-player Pong variation, 4 (pong_v3's classic, the "
        "default) or 3 (fast balls, as in the single-player game; `train selfplay --game-mode 3`)",
    )


def add_eval(commands) -> None:
    evaluate = commands.add_parser("eval", help="play whole games against the built-in AI")
    evaluate.add_argument("checkpoint", metavar="AGENT", help=AGENT_HELP)
    evaluate.add_argument("--episodes", type=positive_int, default=None, help="games to play (default 10)")
    evaluate.add_argument("--epsilon", type=finite_float, default=0.0, help="random-action probability (default 0)")
    evaluate.add_argument("--seed", type=integer, default=0, help="emulator seed (default 0)")
    evaluate.add_argument("--json", action="store_true", help="print machine-readable JSON")
    evaluate.add_argument(
        "--opponent", default="builtin", help="builtin (default), or an AGENT to play a duel against instead"
    )
    evaluate.add_argument("--sample", action="store_true", help="sample actions from the policy instead of greedy")
    evaluate.add_argument(
        "--every-start",
        action="store_true",
        help="greedy play, one game from each of the protocol's 31 starts (0-30 no-op frames): "
        "the emulator is deterministic, so their mean is the exact expected score",
    )
    evaluate.add_argument(
        "--protocols",
        action="store_true",
        help="both protocols against the built-in AI: exact (greedy from each of the 31 starts, "
        "with how many distinct games they were) and sticky actions 0.25 over --episodes "
        "greedy games (default 100) with the 95%% interval of the mean",
    )
    evaluate.add_argument(
        "--chain",
        choices=("pongrl", "card"),
        default="pongrl",
        help="the games' observation chain: pongrl's own (default), or, for agents with the self-play card's view, "
        "the card's chain as its users run it: Gymnasium's PongNoFrameskip-v4 with SuperSuit's wrappers, every "
        "game started without no-op frames",
    )
    add_sticky_actions(evaluate)
    add_two_agent_rules(evaluate)
    add_torch_threads(evaluate)


def add_duel(commands) -> None:
    duel = commands.add_parser("duel", help="a match between two players (checkpoints, seed state_dicts or builtin)")
    duel.add_argument("first", metavar="A", help=AGENT_HELP + ", or builtin")
    duel.add_argument("second", metavar="B", help=AGENT_HELP + ", or builtin")
    duel.add_argument("--games", type=positive_int, default=10, help="games to play, sides alternating (default 10)")
    duel.add_argument("--seed", type=integer, default=0, help="match seed (default 0)")
    duel.add_argument(
        "--sample",
        nargs="?",
        const="both",
        default="none",
        choices=list(SAMPLE_CHOICES),
        help="sample actions from the policy instead of greedy: both players (--sample), "
        "or only the first or the second (default none)",
    )
    add_two_agent_flags(duel)
    add_sticky_actions(duel)
    duel.add_argument("--json", action="store_true", help="print machine-readable JSON")
    add_torch_threads(duel)


def add_league(commands) -> None:
    league = commands.add_parser(
        "league", help="rate a run's checkpoints (and others) by playing them against each other"
    )
    league.add_argument(
        "inputs",
        nargs="+",
        metavar="RUN_OR_AGENT",
        help="run directories (all their checkpoints), checkpoint, state_dict or safetensors files, "
        "zoo:NAME (zoo:* for every shipped agent) and hf://OWNER/REPO/FILE",
    )
    league.add_argument(
        "--games-per-pair", type=positive_int, default=4, help="games per pair, sides alternating (default 4)"
    )
    league.add_argument(
        "--include-builtin", action="store_true", help="the built-in AI plays too, as the rating anchor (0)"
    )
    league.add_argument(
        "--sticky-actions",
        type=finite_float,
        default=0.0,
        metavar="P",
        help="the games against the built-in AI are played with sticky actions P (0.25: the ALE v5 "
        "protocol; default 0, the exact protocol); games between agents are not affected",
    )
    league.add_argument(
        "--out", help="folder for matches.jsonl, ratings.csv/.md and ratings.png (default FIRST_RUN/league)"
    )
    league.add_argument(
        "--schedule",
        choices=("auto", "all", "neighbours"),
        default="auto",
        help="all pairs, or each checkpoint against its run's neighbours (default auto: all up to 12 players)",
    )
    league.add_argument("--seed", type=integer, default=0, help="match seed (default 0)")
    league.add_argument("--sample", action="store_true", help="sample actions from the policies instead of greedy")
    add_two_agent_flags(league)
    league.add_argument(
        "--workers",
        type=positive_int,
        default=os.cpu_count() or 1,
        help="matches played at once, one process each (default: the number of cores)",
    )


def add_play(commands) -> None:
    play = commands.add_parser("play", help="play Pong against an agent in the browser, or watch agents play")
    play.add_argument(
        "agent",
        metavar="AGENT",
        nargs="?",
        default=None,
        help=AGENT_HELP + " (default: the zoo agent with the best worst case in its robustness report)",
    )
    play.add_argument(
        "--opponent",
        default=None,
        help="builtin or an AGENT to watch AGENT play against (default: you, with the keyboard)",
    )
    play.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    play.add_argument("--port", type=integer, default=8000, help="port to listen on (default 8000; 0 picks a free one)")
    play.add_argument("--seed", type=integer, default=0, help="seed of the built-in AI's games (default 0)")


def add_video(commands) -> None:
    video = commands.add_parser(
        "video", help="record an agent playing the built-in AI or another agent, in full colour"
    )
    video.add_argument("checkpoint", metavar="AGENT", help=AGENT_HELP)
    video.add_argument("--opponent", default="builtin", help="builtin (default) or an AGENT")
    video.add_argument("--out", help="FILE.mp4 or FILE.gif (default RUN/videos/<checkpoint>[_vs_<opponent>].mp4)")
    length = video.add_mutually_exclusive_group()
    length.add_argument("--games", type=positive_int, default=None, help="whole games to record (default 1)")
    length.add_argument(
        "--frames",
        type=positive_int,
        default=None,
        help="emulator frames to record, 60 per second (stops early when the games end)",
    )
    video.add_argument(
        "--scale", type=positive_int, default=2, help="pixel scale of the native 210x160 screen (default 2)"
    )
    video.add_argument("--seed", type=integer, default=0, help="emulator seed (default 0)")
    video.add_argument("--epsilon", type=finite_float, default=0.0, help="random-action probability (default 0)")
    video.add_argument("--sample", action="store_true", help="sample actions from the policies instead of greedy")
    add_two_agent_rules(video)
    add_torch_threads(video)


def _refuse_clashes(option: str, what_it_plays: str, clashes: tuple) -> None:
    """Refuse the flags given beside --every-start or --protocols: `clashes` is (flag, given) pairs."""
    clash = [flag for flag, given in clashes if given]
    if clash:
        raise PongrlError(f"{option} plays {what_it_plays}; it does not take {', '.join(clash)}")


def cmd_eval(args) -> int:
    from pongrl.agent import load_agent
    from pongrl.evaluation import (
        count_outcomes,
        evaluate_agent,
        evaluate_card_chain,
        evaluate_every_start,
        summarize,
    )

    if not 0.0 <= args.epsilon <= 1.0:
        raise PongrlError(f"--epsilon must be in [0, 1], got {args.epsilon}")
    against_builtin = args.opponent.strip().lower() == "builtin"
    if args.every_start:
        _refuse_clashes(
            "--every-start",
            "greedy games against the built-in AI, one per start",
            (
                ("--episodes", args.episodes is not None),
                ("--sample", args.sample),
                ("--epsilon", args.epsilon > 0),
                ("--opponent", not against_builtin),
                ("--sticky-actions", args.sticky_actions > 0),
            ),
        )
    if args.protocols:
        _refuse_clashes(
            "--protocols",
            "greedy games against the built-in AI under both protocols",
            (
                ("--every-start", args.every_start),
                ("--sample", args.sample),
                ("--epsilon", args.epsilon > 0),
                ("--opponent", not against_builtin),
                ("--sticky-actions", args.sticky_actions > 0),
            ),
        )
    if args.chain == "card":
        _refuse_clashes(
            "--chain card",
            "games against the built-in AI through the self-play card's chain",
            (
                ("--every-start", args.every_start),
                ("--protocols", args.protocols),
                ("--sample", args.sample),
                ("--opponent", not against_builtin),
            ),
        )
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
    elif args.chain == "card":
        games = evaluate_card_chain(agent, episodes, args.seed, args.epsilon, sticky_actions=args.sticky_actions)
    else:
        games = evaluate_agent(agent, episodes, args.seed, args.epsilon, sticky_actions=args.sticky_actions)
    summary = summarize(games)
    if args.json:
        print(
            json.dumps(
                {
                    "checkpoint": agent.name,
                    "env_step": agent.env_step,
                    "epsilon": args.epsilon,
                    "seed": args.seed,
                    "every_start": args.every_start,
                    "sticky_actions": args.sticky_actions,
                    "chain": args.chain,
                    **summary,
                    "per_game": games,
                }
            )
        )
        return 0
    for index, game in enumerate(games, 1):
        label = f"start {game['start_noop_frames']:2d}" if args.every_start else f"game {index:3d}"
        print(
            f"{label}: {game['points_won']:2d}-{game['points_lost']:2d}  score {game['score']:+3d}  "
            f"{game['length']} steps" + ("  (cut by the frame cap)" if game["truncated"] else "")
        )
    if args.every_start:
        outcomes = count_outcomes(summary["scores"])
        even = f", {outcomes['even']} even" if outcomes["even"] else ""
        print(
            f"{agent.name} (step {agent.env_step}): mean score {summary['mean']:+.2f} over all {summary['games']} "
            f"starts against the built-in AI ({outcomes['won']} won, {outcomes['lost']} lost{even}): the exact "
            f"expected score of greedy play under the protocol"
        )
    else:
        sticky = f", sticky actions {args.sticky_actions:g}" if args.sticky_actions else ""
        chain = " through the self-play card's chain" if args.chain == "card" else ""
        interval = "" if summary["ci95"] is None else " (95% interval {:+.2f}..{:+.2f})".format(*summary["ci95"])
        print(
            f"{agent.name} (step {agent.env_step}): mean score {summary['mean']:+.2f} +- {summary['std']:.2f} "
            f"over {summary['games']} games against the built-in AI{sticky}{chain}" + (interval if chain else "")
        )
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
    result = duel(
        first_spec,
        second_spec,
        games,
        args.seed,
        sample,
        max_frames,
        args.serve_assist,
        args.sticky_actions,
        args.game_mode,
    )
    games, first_name, second_name = result["per_game"], result["first"], result["second"]
    if args.json:
        players = {key: result[key] for key in ("first", "second", "first_env_step", "second_env_step")}
        print(
            json.dumps(
                {
                    **players,
                    "seed": args.seed,
                    "sample": list(sample),
                    "serve_assist": args.serve_assist,
                    "sticky_actions": args.sticky_actions,
                    "game_mode": args.game_mode,
                    **result,
                }
            )
        )
        return 0
    for index, game in enumerate(games, 1):
        print(
            f"game {index:3d}: {first_name} ({game['first_side']}) "
            f"{game['first_points']:2d}-{game['second_points']:2d} {second_name}  {game['outcome']}"
            + ("  (cut by the frame cap)" if game["cut"] else "")
            + (
                f"  serve penalties {game['first_serve_penalties']}-{game['second_serve_penalties']}"
                if game["first_serve_penalties"] or game["second_serve_penalties"]
                else ""
            )
        )
    low, high = result["win_rate_95"]
    print(
        f"{first_name} vs {second_name}: {result['wins']} won, {result['losses']} lost, {result['draws']} drawn; "
        f"win rate {result['win_rate']:.2f} (95% interval {low:.2f}..{high:.2f}, draws count half); "
        f"mean point difference {result['mean_point_difference']:+.2f} "
        f"+- {result['point_difference_stderr']:.2f} (s.e.); "
        f"serve penalties {result['first_serve_penalties']}-{result['second_serve_penalties']}"
        + (f"; sticky actions {args.sticky_actions:g}" if args.sticky_actions else "")
        + (f"; game variation {args.game_mode}" if args.game_mode != CLASSIC_MODE else "")
    )
    return 0


def cmd_league(args) -> int:
    from pongrl.league.ratings import run_league

    result = run_league(
        args.inputs,
        args.out,
        games_per_pair=args.games_per_pair,
        include_builtin=args.include_builtin,
        sticky_actions=args.sticky_actions,
        schedule=args.schedule,
        seed=args.seed,
        sample=args.sample,
        max_frames=args.max_frames,
        serve_assist=args.serve_assist,
        game_mode=args.game_mode,
        workers=args.workers,
        verbose=True,
    )
    print(result["markdown"], end="")
    paths = [result["ratings_csv"], result["ratings_md"]] + ([result["ratings_png"]] if result["ratings_png"] else [])
    print(f"pongrl: {', '.join(paths)}", file=sys.stderr)
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
        # The default file name would belong in pongrl.media; it stays here while media.py is being rewritten.
        run_dir = os.path.dirname(os.path.dirname(os.path.abspath(player.path)))
        suffix = "" if opponent.is_builtin else "_vs_" + opponent.name.replace("@", "_").replace(os.sep, "_")
        out = os.path.join(run_dir, "videos", os.path.basename(player.path).rsplit(".", 1)[0] + suffix + ".mp4")
    games = args.games or (1_000_000 if args.frames else 1)
    summary = record_video(
        player,
        opponent,
        out,
        games,
        args.frames,
        args.seed,
        args.sample,
        args.epsilon,
        args.scale,
        args.serve_assist,
        args.game_mode,
    )
    scores = ", ".join(f"{g['first_points']}-{g['second_points']}" for g in summary["games"])
    print(f"{out}: {summary['frames']} frames, {player.name} vs {opponent.name}: {scores}")
    return 0


def cmd_play(args) -> int:
    from pongrl import play, zoo

    return play.serve(args.agent or zoo.best(), args.opponent, args.host, args.port, args.seed)
