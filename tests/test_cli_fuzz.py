"""Random command lines against every command (property-based, with hypothesis): whatever the flags
and values, pongrl answers with exit code 0, 1 (a refused input) or 2 (a bad command line), never
a traceback, a refusal in one line, and nothing written outside the working folder.

Training itself and a league's jobs are replaced by stubs here: the property is about parsing, validation
and refusal, and a valid random configuration would otherwise train for hours (a new league in `missing`
starts its jobs as processes, where no stub reaches). Positional arguments are drawn
from inputs that hold no agent (missing paths, garbage, `builtin`), so no command plays games.
"""

import argparse
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pongrl import cli, training
from pongrl.league import driver
from pongrl.run import TrainingOutcome

from cli_helpers import run


def command_specs():
    """(command words, options, positionals) of every leaf command of the real parser."""
    specs = []

    def walk(parser, words):
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subparsers:
            for name, sub in subparsers[0].choices.items():
                walk(sub, words + [name])
            return
        options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
        positionals = [a for a in parser._actions if not a.option_strings]
        specs.append((words, options, positionals))

    walk(cli.build_parser(), [])
    return specs


SPECS = command_specs()
NUMBERS = st.one_of(
    st.integers(-10, 10**9).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["0", "-1", "1e-3", "1_000", "0x10", "", " "]),
)
WORDS = st.sampled_from(
    [
        "builtin",
        "auto",
        "all",
        "stop",
        "continue",
        "fast",
        "reference",
        "seed",
        "default",
        "standard",
        "cuda",
        "cpu",
        "huber",
        "gibberish",
        "--",
        "-x",
        "none",
    ]
)
PATHS = st.sampled_from(
    [
        "missing",
        "missing.pt",
        "garbage.pt",
        "empty_dir",
        "builtin",
        "out.mp4",
        "out.gif",
        "out.txt",
        "card_out",
        "league_out",
    ]
)


@st.composite
def command_lines(draw):
    words, options, positionals = draw(st.sampled_from(SPECS))
    argv = list(words)
    for action in positionals:
        count = 1 if action.nargs in (None, 1) else draw(st.integers(1, 3))
        argv += [draw(PATHS) for _ in range(count)]
    for action in draw(st.lists(st.sampled_from(options), max_size=5)) if options else []:
        argv.append(draw(st.sampled_from(action.option_strings)))
        if action.nargs == 0:
            continue
        if action.choices:
            # A command line is text: numeric choices (--game-mode's 3 and 4) are drawn as the words a user types.
            argv.append(draw(st.one_of(st.sampled_from([str(choice) for choice in action.choices]), WORDS)))
        elif action.dest in ("run_dir", "out", "checkpoint"):
            argv.append(draw(PATHS))
        else:
            argv.append(draw(st.one_of(NUMBERS, WORDS)))
    if draw(st.booleans()):
        argv.insert(draw(st.integers(0, len(argv))), draw(st.one_of(WORDS, NUMBERS)))
    return argv


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "garbage.pt").write_bytes(b"\x80\x04not really a pickle")
    (work / "empty_dir").mkdir()
    monkeypatch.chdir(work)
    finished = TrainingOutcome(0, None, 0, "")
    monkeypatch.setattr(
        training, "_training_loop", lambda algo: lambda config, run_dir, resume_from=None, **options: finished
    )
    # A league is validated in full before its driver starts; the driver would run the jobs.
    monkeypatch.setattr(driver, "drive", lambda league_dir, workers, ray, verbose, new=None: 0)
    return tmp_path


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=command_lines())
def test_random_command_lines_never_crash(argv, sandbox, capsys):
    code, out, err = run(argv, capsys)
    assert code in (0, 1, 2), (argv, code, err)
    if code != 0:
        assert len(err.strip().splitlines()) == 1, (argv, err)
    assert sorted(os.listdir(sandbox)) == ["work"], argv  # nothing written beside the working folder
