"""A run directory and everything a training loop reports into it.

    RUN/config.yaml        the full configuration
    RUN/metrics.csv        one row per log interval (and per evaluation)
    RUN/events.out.*       TensorBoard event files (CleanRL tag names)
    RUN/checkpoints/       step_*.pt + step_*.json, `latest`, the latest replay buffer

On resume, rows of metrics.csv and TensorBoard events after the checkpoint's step are dropped,
so the curve continues without a gap or a duplicated step.

A little over 400 lines on purpose: a run's folder, its metrics, its stops and its outcome are one contract
that every training loop shares, read in one place.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
import shutil
import signal
import sys
import threading
import time
from typing import Callable

from pongrl import config as config_module
from pongrl.checkpoint import CHECKPOINTS, atomic_write_bytes, list_checkpoints, read_latest, remove_partial_writes
from pongrl.errors import PongrlError

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.csv"


def checkpoint_dir(run_dir: str) -> str:
    return os.path.join(run_dir, CHECKPOINTS)


def holds_run(run_dir: str) -> bool:
    return any(os.path.exists(os.path.join(run_dir, name)) for name in (CONFIG_FILE, METRICS_FILE, CHECKPOINTS))


def refuse_existing_run(run_dir: str, hint: str = "use 'pongrl resume {run_dir}' or --force to start over") -> None:
    """A new run never goes where a run (or a file) already is."""
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise PongrlError(f"{run_dir}: exists and is not a directory")
    if holds_run(run_dir):
        raise PongrlError(f"{run_dir}: already holds a run ({hint.format(run_dir=run_dir)})")


def prepare_new_run(run_dir: str, config, force: bool) -> None:
    """Create the directory for a fresh run; refuse to overwrite a run unless `force`."""
    if not (force and os.path.isdir(run_dir)):
        refuse_existing_run(run_dir)
    if holds_run(run_dir):
        for name in os.listdir(run_dir):
            if name in (CONFIG_FILE, METRICS_FILE, CHECKPOINTS) or name.startswith("events.out.tfevents"):
                path = os.path.join(run_dir, name)
                shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
    try:
        os.makedirs(checkpoint_dir(run_dir), exist_ok=True)
    except OSError as error:
        raise PongrlError(f"{run_dir}: cannot create run directory ({error.strerror})") from None
    config_module.save_yaml(config, os.path.join(run_dir, CONFIG_FILE))


def open_existing_run(run_dir: str):
    """Load a run's config for resume; refuse a directory that is not a run."""
    if not os.path.isdir(run_dir):
        raise PongrlError(f"{run_dir}: no such run directory")
    if not os.path.exists(os.path.join(run_dir, CONFIG_FILE)):
        raise PongrlError(f"{run_dir}: not a pongrl run (no {CONFIG_FILE})")
    if not list_checkpoints(checkpoint_dir(run_dir)):
        raise PongrlError(f"{run_dir}: has no checkpoint to resume from")
    return config_module.load_yaml(os.path.join(run_dir, CONFIG_FILE))


class MetricsLog:
    """metrics.csv with a fixed header; rows are flushed as they are written."""

    def __init__(self, path: str, columns: list[str], resume_step: int | None = None):
        self.path = path
        self.columns = columns
        if resume_step is None or not os.path.exists(path):
            atomic_write_bytes(path, (",".join(columns) + "\n").encode())
        else:
            self._truncate_after(resume_step)
        self.handle = open(path, "a", newline="")
        self.writer = csv.DictWriter(self.handle, fieldnames=columns, extrasaction="ignore")

    def _truncate_after(self, step: int) -> None:
        with open(self.path, newline="") as handle:
            rows = [
                row for row in csv.DictReader(handle) if _is_int(row.get("env_step")) and int(row["env_step"]) <= step
            ]
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=self.columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_bytes(self.path, text.getvalue().encode())

    def write(self, row: dict) -> None:
        self.writer.writerow({key: _format(row.get(key)) for key in self.columns})
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


def _is_int(value) -> bool:
    try:
        int(value)
        return True
    except (TypeError, ValueError):
        return False


def _format(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def read_metrics(run_dir: str) -> list[dict]:
    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.exists(path):
        raise PongrlError(f"{run_dir}: no {METRICS_FILE}")
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _quiet_for_tensorboard_writer(default_hook):
    """A threading.excepthook that stays silent for TensorBoard's background writer thread. That thread
    keeps its exception and the writer raises it again in the main thread on the next write or on close,
    where pongrl's one-line error reports it (say the run directory was moved or deleted mid-run); the
    default hook would first print the thread's whole traceback."""

    def hook(args):
        if type(args.thread).__module__.startswith("tensorboard."):
            return
        default_hook(args)

    hook.pongrl_quiet = True
    return hook


class TensorBoard:
    """A SummaryWriter that also forwards to Weights & Biases when --track asks for it."""

    def __init__(self, run_dir: str, config, purge_step: int | None):
        from torch.utils.tensorboard import SummaryWriter

        if not getattr(threading.excepthook, "pongrl_quiet", False):
            threading.excepthook = _quiet_for_tensorboard_writer(threading.excepthook)
        self.writer = SummaryWriter(run_dir, purge_step=purge_step)
        if purge_step is None:
            hparams = "\n".join(f"|{k}|{v}|" for k, v in config_module.to_dict(config).items())
            self.writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + hparams)
        self.wandb = None
        if config.track:
            try:
                import wandb
            except ImportError:
                print("pongrl: --track ignored: wandb is not installed (pip install wandb)", file=sys.stderr)
            else:
                self.wandb = wandb.init(
                    project=config.wandb_project,
                    name=os.path.basename(os.path.abspath(run_dir)),
                    config=config_module.to_dict(config),
                    dir=run_dir,
                    resume="allow",
                )

    def scalars(self, values: dict, step: int) -> None:
        for tag, value in values.items():
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                self.writer.add_scalar(tag, value, step)
        if self.wandb is not None:
            self.wandb.log({k: v for k, v in values.items() if v is not None}, step=step)

    def close(self) -> None:
        self.writer.close()
        if self.wandb is not None:
            self.wandb.finish()


class Progress:
    """A tqdm bar on a terminal; one plain log line per log interval otherwise."""

    def __init__(self, total: int, initial: int, description: str):
        self.interactive = sys.stderr.isatty()
        self.bar = None
        if self.interactive:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total, initial=initial, desc=description, unit="step", dynamic_ncols=True, smoothing=0.05
            )
        self.position = initial

    def update(self, position: int, status: dict) -> None:
        if self.bar is not None:
            self.bar.update(position - self.position)
            self.bar.set_postfix({k: v for k, v in status.items()}, refresh=False)
        self.position = position

    def log(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class StopSignal:
    """Turns SIGINT/SIGTERM (or the `signals` given) into a flag that a loop checks between steps, so it
    can write what it must and exit cleanly, never interrupted inside a library's call. A second signal
    while stopping is ignored until the write ends. Outside the main thread (where Python cannot take
    signals) or with `enabled=False` (the library's default, leaving the caller's handlers) it installs nothing."""

    def __init__(self, signals: tuple = (signal.SIGINT, signal.SIGTERM), enabled: bool = True):
        self.received: int | None = None
        self._signals = signals if enabled else ()
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in self._signals:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        self.received = signum

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False

    @property
    def exit_code(self) -> int:
        return 128 + self.received if self.received else 0


class Stopwatch:
    """Wall seconds spent training, carried across resumes."""

    def __init__(self, already: float = 0.0):
        self.already = already
        self.started = time.perf_counter()

    def seconds(self) -> float:
        return self.already + time.perf_counter() - self.started


class PhaseClock:
    """Wall seconds per phase of a training loop since the last metrics row, so that the next
    bottleneck shows in metrics.csv (`env_seconds`, `inference_seconds`, `update_seconds`, `eval_seconds`).

        mark = time.perf_counter(); ...; mark = phases.lap("inference", mark); env.step(...); phases.lap("env", mark)
    """

    PHASES = ("env", "inference", "update", "eval")
    COLUMNS = [f"{phase}_seconds" for phase in PHASES]

    def __init__(self):
        self.seconds = dict.fromkeys(self.PHASES, 0.0)

    def lap(self, phase: str, since: float) -> float:
        """Add the time since `since` to `phase`; returns now, the start of the next lap."""
        now = time.perf_counter()
        self.seconds[phase] += now - since
        return now

    def row(self) -> dict:
        """The columns for a metrics row, and a fresh start for the next one."""
        row = {f"{phase}_seconds": seconds for phase, seconds in self.seconds.items()}
        self.seconds = dict.fromkeys(self.PHASES, 0.0)
        return row


class TrainingSession:
    """The reporting side shared by every training loop: metrics.csv rows, TensorBoard scalars, the
    progress bar or plain log lines, and the wall clock carried across resumes.

    `resumed_at` is the step of the checkpoint a resume starts from (None for a fresh run): rows and
    events after it are dropped so the spliced curve has no duplicate.
    """

    def __init__(
        self,
        run_dir: str,
        config,
        columns: list[str],
        step: int,
        resumed_at: int | None,
        wall_seconds: float,
        description: str,
        writes: bool = True,
        verbose: bool = True,
        notes: list[str] = (),
    ):
        # Under torchrun only rank 0 writes (`writes=False` elsewhere): the other ranks keep the same
        # clock and decisions with silent stand-ins for the files and the terminal. `verbose=False`
        # silences the terminal only (the library's default).
        self.writes = writes
        self.run_dir = run_dir
        if writes:
            self.metrics = MetricsLog(os.path.join(run_dir, METRICS_FILE), columns, resumed_at)
            self.board = TensorBoard(run_dir, config, purge_step=resumed_at + 1 if resumed_at is not None else None)
        else:
            self.metrics = self.board = _Silent()
        self.progress = Progress(config.total_steps, step, description) if writes and verbose else _Silent()
        for note in notes:
            self.progress.log(note)
        self.stopwatch = Stopwatch(wall_seconds)
        self._clock = (time.perf_counter(), step)
        self.steps_per_second = 0.0
        self.checkpoint_dir = checkpoint_dir(run_dir)
        if writes:
            removed = remove_partial_writes(self.checkpoint_dir)
            if removed:
                self.progress.log(
                    f"pongrl: removed {removed} partial file(s) an interrupted checkpoint write left behind"
                )
        self.stop_on_disk_error = config.on_disk_error == "stop"
        self.disk_failed = False  # a checkpoint write failed and the run is to stop
        self.checkpoint_path: str | None = None  # the newest checkpoint written in this session
        self.saved_step: int | None = None  # its step
        self.checkpointed_step: int | None = None  # the step of the last attempt, the same on every rank

    def checkpoint(self, write: Callable[[], str], step: int) -> None:
        """Write a checkpoint of `step` with `write`. A disk fault (full, read-only, gone) leaves the
        previous checkpoint intact (writes go through temp files), is reported in one line, and stops
        the run or lets it go on, as --on-disk-error says."""
        self.checkpointed_step = step
        if not self.writes:
            return
        try:
            self.checkpoint_path, self.saved_step = write(), step
        except OSError as error:
            self.disk_failed = self.stop_on_disk_error
            intact = read_latest(self.checkpoint_dir)
            self.progress.log(
                f"pongrl: could not write the checkpoint of step {step} ({error.strerror or error}); "
                f"the previous one ({intact or 'none yet'}) is intact; "
                + ("stopping" if self.disk_failed else "training goes on (--on-disk-error continue)")
            )

    def needs_final_checkpoint(self, step: int) -> bool:
        """At the end of a loop: true unless this step was just checkpointed or the disk stopped the run."""
        return not self.disk_failed and self.checkpointed_step != step

    @staticmethod
    def crossed(every: int, before: int, after: int) -> bool:
        """True when a multiple of `every` lies in (before, after]: frequencies are in env steps
        whatever the number of steps one iteration takes."""
        return every > 0 and after // every > before // every

    def log(self, step: int, row: dict, scalars: dict) -> dict:
        """Write one metrics row (adding env_step, wall_seconds, steps_per_second) and its scalars."""
        now = time.perf_counter()
        self.steps_per_second = (step - self._clock[1]) / max(now - self._clock[0], 1e-9)
        self._clock = (now, step)
        row = {
            "env_step": step,
            "wall_seconds": round(self.stopwatch.seconds(), 1),
            "steps_per_second": self.steps_per_second,
            **row,
        }
        self.metrics.write(row)
        self.board.scalars({**scalars, "charts/SPS": self.steps_per_second}, step)
        if not self.progress.interactive:
            shown = [f"step {step}"] + [
                f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}"
                for key, value in row.items()
                if key not in ("env_step", "wall_seconds") and value is not None
            ]
            self.progress.log(" | ".join(shown))
        return row

    def show_progress(self, step: int, recent_returns, **extra) -> None:
        """Move the bar: steps/s of the last log interval, mean of the recent games, anything else."""
        returns = f"{sum(recent_returns) / len(recent_returns):+.1f}" if recent_returns else "-"
        self.progress.update(step, {"sps": f"{self.steps_per_second:.0f}", "return": returns, **extra})

    def close(self) -> None:
        self.progress.close()
        self.metrics.close()
        self.board.close()

    def end(self, stop: StopSignal, step: int) -> "TrainingOutcome":
        """Close and say how training ended (see TrainingOutcome)."""
        self.close()
        if not self.writes:
            return TrainingOutcome(step, None, 0, "")
        run_dir = self.run_dir
        if self.saved_step != step:
            intact = read_latest(self.checkpoint_dir)
            return TrainingOutcome(
                step,
                os.path.join(self.checkpoint_dir, intact + ".pt") if intact else None,
                1,
                f"stopped at step {step} without a checkpoint of it (the disk refused the write); the latest "
                f"intact one is {intact or 'none'}; free space or fix permissions, then: pongrl resume {run_dir}",
            )
        if stop.received:
            return TrainingOutcome(
                step,
                self.checkpoint_path,
                stop.exit_code,
                f"stopped at step {step}; checkpoint {self.checkpoint_path}; continue with: pongrl resume {run_dir}",
            )
        return TrainingOutcome(
            step, self.checkpoint_path, 0, f"finished at step {step}; checkpoint {self.checkpoint_path}"
        )


@dataclasses.dataclass(frozen=True)
class TrainingOutcome:
    """How a training session ended: at `step`, its newest intact `checkpoint`, the process `exit_code`
    (0 finished, 128 + N stopped by signal N after its checkpoint, 1 the last checkpoint could not be
    written) and a one-line `message` ("" on the torchrun ranks that do not write)."""

    step: int
    checkpoint: str | None
    exit_code: int
    message: str

    @property
    def finished(self) -> bool:
        return self.exit_code == 0


class _Silent:
    """Accepts any call and does nothing: the metrics, TensorBoard and terminal of a rank that does
    not write."""

    interactive = True  # so that TrainingSession.log prints nothing either

    def __getattr__(self, name):
        return lambda *args, **kwargs: None
