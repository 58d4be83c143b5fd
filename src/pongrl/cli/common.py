"""What every command group of the CLI shares: the parser class that refuses a bad command line in one
line, the argument types (numbers that say what they expected), the help text of an AGENT argument and
the --torch-threads flag of the commands that only play.
"""

from __future__ import annotations

import argparse

from pongrl import config as config_module

AGENT_HELP = (
    "a checkpoint file or run directory (its latest checkpoint), a seed-format state_dict, a safetensors "
    "agent, zoo:NAME (pongrl zoo lists them) or hf://OWNER/REPO/FILE (a file on the Hugging Face Hub)"
)


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line (plus a hint), exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    """An integer above zero; underscores are allowed as in Python (1_000_000)."""
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def integer(text: str) -> int:
    """Any integer; underscores are allowed as in Python."""
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def finite_float(text: str) -> float:
    """A number that is neither NaN nor infinite."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def torch_threads(text: str) -> int:
    """A thread count for torch, at most config.MAX_TORCH_THREADS."""
    value = positive_int(text)
    if value > config_module.MAX_TORCH_THREADS:  # a typo here would start that many threads at the first layer
        raise argparse.ArgumentTypeError(f"expected at most {config_module.MAX_TORCH_THREADS}, got {text!r}")
    return value


def add_torch_threads(parser: argparse.ArgumentParser) -> None:
    """For the commands that only play (eval, duel, video, card): share a machine with a training run.
    pongrl.cli.main applies it before the command runs."""
    parser.add_argument(
        "--torch-threads",
        dest="play_threads",
        type=torch_threads,
        default=None,
        metavar="N",
        help="torch intra-op threads for the agents' forward passes (default: torch's, one per core)",
    )
