"""`pongrl zoo`, `card` and `export`: the agents that ship with pongrl, and an agent written out for others
(a Hugging Face model card folder, or the bare state_dict the self-play card's code loads).
"""

from __future__ import annotations

import json

from pongrl.cli.common import AGENT_HELP, add_torch_threads, integer, positive_int


def add_card(commands) -> None:
    card = commands.add_parser("card", help="write a Hugging Face model card folder for a run (nothing is uploaded)")
    card.add_argument("checkpoint", metavar="AGENT", help=AGENT_HELP)
    card.add_argument("--out", required=True, help="folder to write")
    card.add_argument(
        "--games",
        type=positive_int,
        default=10,
        help="games under sticky actions 0.25 against the built-in AI, beside the exact protocol's 31 (default 10; "
        "a zoo agent's card carries the scores measured on its shipped file), or the games of --sample",
    )
    card.add_argument("--seed", type=integer, default=0, help="evaluation seed (default 0)")
    card.add_argument(
        "--video-frames",
        type=positive_int,
        default=7_200,
        help="emulator frames of the replay video at most (default 7200, two minutes)",
    )
    card.add_argument("--force", action="store_true", help="replace --out if it exists")
    card.add_argument(
        "--sample",
        action="store_true",
        help="score and film the agent with actions sampled from its policy instead of greedy",
    )
    add_torch_threads(card)


def add_export(commands) -> None:
    export = commands.add_parser(
        "export",
        help="write a PPO agent as the bare state_dict the self-play model card's code loads (the seed format)",
    )
    export.add_argument("checkpoint", metavar="AGENT", help=AGENT_HELP + " (a PPO or self-play agent)")
    export.add_argument("--out", required=True, help="FILE.pt to write")
    export.add_argument("--force", action="store_true", help="overwrite --out if it exists")


def add_zoo(commands) -> None:
    zoo = commands.add_parser(
        "zoo", help="list the agents that ship with pongrl (zoo:NAME): version, SHA-256 of the weights, scores"
    )
    zoo.add_argument("--json", action="store_true", help="print machine-readable JSON (with the full SHA-256)")


def cmd_card(args) -> int:
    from pongrl.card import write_card

    result = write_card(args.checkpoint, args.out, args.games, args.seed, args.video_frames, args.force, args.sample)
    print(f"{result['out']}: model card for step {result['env_step']}; nothing was uploaded")
    for metric in result["results"]:
        print(f"  {metric['name']}: {metric['value']}")
    return 0


def cmd_export(args) -> int:
    from pongrl.agent import export_seed_format

    agent = export_seed_format(args.checkpoint, args.out, args.force)
    print(
        f"{args.out}: seed-format state_dict ({'shared' if agent.network.share_network else 'separate'} torsos, "
        f"step {agent.env_step}, observation profile {agent.obs_profile})"
    )
    return 0


def cmd_zoo(args) -> int:
    from pongrl import zoo

    rows = zoo.listing()
    print(json.dumps(rows) if args.json else zoo.format_listing(rows))
    return 0
