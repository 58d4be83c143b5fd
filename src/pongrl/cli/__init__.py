"""The `pongrl` command line: parses, calls the library, and turns problems into one-line messages.

Exit codes: 0 success, 1 a refused input or failed action (message on stderr), 2 a bad command
line, 128+N when a training run was stopped by signal N after writing its checkpoint.

One module per command group, each its commands' parsers and the calls of the library they make:
`training` (train, resume, branch, plot), `games` (eval, duel, league, video, play), `opponents` (robustness, exploit),
`agents` (zoo, card, export), `probe` (probe collect, fit, across); `common` holds the parser class and argument
types they share.
Importing this package loads neither torch nor the emulator: the commands import what they use.
"""

from __future__ import annotations

import os
import sys

from pongrl._version import __version__
from pongrl.cli import agents, games, league, opponents, probe, training
from pongrl.cli.common import Parser
from pongrl.errors import CheckpointWriteError, PongrlError

# Each command's parser, in the order `pongrl --help` lists them.
PARSERS = (
    training.add_train,
    training.add_resume,
    training.add_branch,
    games.add_eval,
    games.add_duel,
    games.add_league,
    league.add_status,
    opponents.add_robustness,
    opponents.add_exploit,
    agents.add_card,
    agents.add_export,
    games.add_play,
    probe.add_probe,
    agents.add_zoo,
    training.add_plot,
    games.add_video,
)

COMMANDS = {
    "probe": probe.cmd_probe,
    "play": games.cmd_play,
    "zoo": agents.cmd_zoo,
    "train": training.cmd_train,
    "resume": training.cmd_resume,
    "branch": training.cmd_branch,
    "eval": games.cmd_eval,
    "duel": games.cmd_duel,
    "league": games.cmd_league,
    "status": league.cmd_status,
    "robustness": opponents.cmd_robustness,
    "exploit": opponents.cmd_exploit,
    "export": agents.cmd_export,
    "plot": training.cmd_plot,
    "video": games.cmd_video,
    "card": agents.cmd_card,
}


def build_parser() -> Parser:
    parser = Parser(prog="pongrl", description="Train and study agents that play Atari Pong from pixels.")
    parser.add_argument("--version", action="version", version=f"pongrl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True
    for add in PARSERS:
        add(commands)
    return parser


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
        print(
            f"pongrl: error: rank {os.environ.get('RANK', '?')}: another process of this torchrun job stopped "
            f"({first_line}); continue from the last checkpoint with pongrl resume",
            file=sys.stderr,
        )
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
