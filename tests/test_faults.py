"""Faults a long run meets: a disk that refuses a checkpoint, old or hand-edited files, random command
lines, and whether two runs with the same seed learn the same thing."""

import csv
import errno
import os
import stat

import pytest
import torch
import yaml

from pongrl import checkpoint as checkpoint_module
from pongrl.checkpoint import load_checkpoint, read_latest
from pongrl.errors import PongrlError
from pongrl.cli import main

from cli_helpers import run, small_dqn

SMALL = small_dqn(num_envs=1)


class FailingDisk:
    """Stands in for atomic_write: writing a file whose name contains `fail` raises "no space left"."""

    def __init__(self, real, fail):
        self.real, self.fail = real, fail

    def __call__(self, path, write):
        if self.fail in os.path.basename(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return self.real(path, write)


def test_a_full_disk_stops_the_run_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch, capsys):
    run_dir = str(tmp_path / "run")
    # The checkpoint of step 400 cannot be written (its replay buffer is the first file it writes).
    monkeypatch.setattr(checkpoint_module, "atomic_write", FailingDisk(checkpoint_module.atomic_write, "000000000400"))
    code, _, err = run(["train", "dqn", "--run-dir", run_dir, "--total-steps", "600", *SMALL], capsys)
    assert code == 1
    lines = [line for line in err.splitlines() if "could not write" in line]
    assert len(lines) == 1 and "No space left on device" in lines[0] and "step 400" in lines[0]
    assert "step_000000000200" in lines[0]
    assert "stopping" in lines[0]
    checkpoints = os.path.join(run_dir, "checkpoints")
    assert read_latest(checkpoints) == "step_000000000200"
    assert load_checkpoint(os.path.join(checkpoints, "step_000000000200.pt"))["env_step"] == 200
    assert not [f for f in os.listdir(checkpoints) if f.startswith(".tmp")]  # no temp file left behind
    monkeypatch.undo()
    code, _, err = run(["resume", run_dir], capsys)  # room again: the run goes on from step 200
    assert code == 0, err
    assert read_latest(checkpoints) == "step_000000000600"


def test_continue_on_disk_error_trains_on(tmp_path, monkeypatch, capsys):
    run_dir = str(tmp_path / "run")
    monkeypatch.setattr(
        checkpoint_module, "atomic_write", FailingDisk(checkpoint_module.atomic_write, "step_000000000400.pt")
    )
    code, _, err = run(
        ["train", "dqn", "--run-dir", run_dir, "--total-steps", "600", *SMALL, "--on-disk-error", "continue"], capsys
    )
    assert code == 0, err
    assert "training goes on" in err
    checkpoints = os.path.join(run_dir, "checkpoints")
    assert read_latest(checkpoints) == "step_000000000600"
    assert load_checkpoint(os.path.join(checkpoints, "step_000000000600.pt"))["env_step"] == 600


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    run_dir = str(tmp_path_factory.mktemp("runs") / "dqn")
    assert main(["train", "dqn", "--run-dir", run_dir, "--total-steps", "200", *SMALL]) == 0
    return run_dir


def test_an_older_format_version_is_refused_with_its_number(small_run, tmp_path, capsys):
    payload = load_checkpoint(small_run)
    payload.pop("path")
    payload["format_version"] = 0
    old = str(tmp_path / "old.pt")
    torch.save(payload, old)
    code, _, err = run(["eval", old], capsys)
    assert code == 1 and "format version 0 is not supported" in err and "old.pt" in err


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c.update(warp_factor=9), "unknown config keys warp_factor"),
        (lambda c: c.update(gamma="high"), "'gamma' should be float"),
        (lambda c: c.update(batch_size=-3), "--batch-size must be positive"),
    ],
)
def test_a_hand_edited_config_is_refused(small_run, tmp_path, edit, message, capsys):
    import shutil

    copy = str(tmp_path / "copy")
    shutil.copytree(small_run, copy)
    path = os.path.join(copy, "config.yaml")
    with open(path) as handle:
        config = yaml.safe_load(handle)
    edit(config)
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    code, _, err = run(["resume", copy, "--extra-steps", "100"], capsys)
    assert code == 1 and message in err and "config.yaml" in err
    assert len(err.strip().splitlines()) == 1


def metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as handle:
        # everything but the clock: wall time, speed and the time per phase
        return [
            {k: v for k, v in row.items() if not (k.endswith("_seconds") or k == "steps_per_second")}
            for row in csv.DictReader(handle)
        ]


def test_two_runs_with_the_same_seed_learn_the_same_evaluated_or_not(tmp_path):
    """One emulator thread and one torch thread: the same seed gives the same losses and Q-values, and the
    evaluation against the built-in AI (its own emulator and generator) changes none of them, which is why a
    resume may change its cadence."""
    runs = [str(tmp_path / name) for name in ("a", "b")]
    evaluated = ["--eval-every", "300", "--eval-episodes", "1"]
    for run_dir, extra in zip(runs, ([], evaluated)):
        assert main(["train", "dqn", "--run-dir", run_dir, "--total-steps", "600", *SMALL, "--seed", "11", *extra]) == 0
    first, second = metrics(runs[0]), metrics(runs[1])
    assert [bool(row["eval_mean_return"]) for row in first] == [False] * 6
    assert [bool(row["eval_mean_return"]) for row in second] == [False, False, True, False, False, True]

    def learning(rows):
        return [{k: v for k, v in row.items() if not k.startswith("eval_")} for row in rows]

    assert len(first) == 6 and learning(first) == learning(second)
    assert any(row["loss"] for row in first)  # gradient steps happened, so the comparison means something


def test_resume_removes_the_partial_files_a_killed_write_left(small_run, tmp_path, capsys):
    import shutil

    copy = str(tmp_path / "copy")
    shutil.copytree(small_run, copy)
    partial = os.path.join(copy, "checkpoints", ".tmp-step_000000000400.ptab12cd")
    with open(partial, "wb") as handle:
        handle.write(b"half a checkpoint")
    code, _, err = run(["resume", copy, "--extra-steps", "100"], capsys)
    assert code == 0, err
    assert not os.path.exists(partial) and "removed 1 partial file" in err


def test_a_run_directory_deleted_mid_run_gives_one_line_not_the_writer_threads_traceback(tmp_path, monkeypatch, capsys):
    import shutil
    import threading
    import time

    from pongrl.config import make_config
    from pongrl.run import TensorBoard

    monkeypatch.setattr(threading, "excepthook", threading.excepthook)  # the board installs its own; undo it after
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    board = TensorBoard(str(run_dir), make_config("dqn", "default", {}), purge_step=None)
    board.scalars({"charts/episodic_return": -21.0}, 1)
    board.writer.flush()
    shutil.rmtree(run_dir)
    board.scalars({"charts/episodic_return": -20.0}, 2)
    with pytest.raises(OSError) as raised:
        for _ in range(100):  # the writer thread meets the missing directory on its next write
            board.writer.flush()
            time.sleep(0.05)
    assert "No such file or directory" in str(raised.value)
    with pytest.raises(OSError):  # closing the board at the end of a run reports it too
        board.close()
    assert "Traceback" not in capsys.readouterr().err
    # and the CLI's handler names the file as text, not bytes (TensorBoard's error names it in bytes)
    from pongrl import cli

    def command_meeting_that_error(args):
        raise raised.value

    monkeypatch.setitem(cli.COMMANDS, "plot", command_meeting_that_error)
    code, _, err = run(["plot", str(tmp_path)], capsys)
    assert code == 1 and err.startswith("pongrl: error: ") and "b'" not in err and str(run_dir) in err


def test_a_file_is_never_written_over_a_pipe_or_a_device(tmp_path):
    from pongrl.checkpoint import write_csv

    pipe = str(tmp_path / "pipe")
    os.mkfifo(pipe)  # stands for /dev/null, which a rename would replace with a plain file
    with pytest.raises(PongrlError, match="not a regular file"):
        write_csv(pipe, [{"a": 1}], ["a"])
    assert stat.S_ISFIFO(os.stat(pipe).st_mode) and os.listdir(tmp_path) == ["pipe"]
