"""Training from Python: `train` starts a run, `Run` opens one to read, continue, branch or play.

    import pongrl
    run = pongrl.train("dqn", "runs/pong", total_steps=50_000)   # any config field as a keyword
    run = run.resume(extra_steps=50_000)                          # the same curve, spliced
    curve = run.metrics()                                         # column -> numpy array
    agent = run.agent()                                           # its latest checkpoint, ready to play

The CLI's `train`, `resume` and `branch` are these calls with `verbose=True` and `handle_signals=True`.
From Python nothing is printed and no signal handler is installed unless asked, problems raise
`PongrlError`, and a call can follow another in the same process.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import numpy as np

from pongrl import config as config_module
from pongrl.checkpoint import checkpoints_folder, list_checkpoints, read_latest
from pongrl.errors import CheckpointWriteError, PongrlError
from pongrl.run import CONFIG_FILE, TrainingOutcome, open_existing_run, prepare_new_run, read_metrics


def _training_loop(algo: str):
    if algo == "dqn":
        from pongrl.algos import dqn

        return dqn.train
    from pongrl.algos import ppo

    return ppo.train


def _writes_run_files(algo: str, run_dir: str | None) -> bool:
    """Under torchrun: PPO only, with an explicit run directory (each rank must name the same one).
    Returns whether this process is the one that writes run files."""
    from pongrl.distributed import is_main_process, launched_by_torchrun

    if launched_by_torchrun():
        if algo == "dqn":
            raise PongrlError("DQN has no data-parallel mode: run it without torchrun")
        if run_dir is None:
            raise PongrlError("under torchrun give --run-dir, so that every process names the same run")
    return is_main_process()


def _say(verbose: bool, line: str) -> None:
    if verbose:
        print(f"pongrl: {line}", file=sys.stderr)


class Run:
    """A run directory: its settings ([`config`][]), curve ([`metrics`][]), checkpoints, and the ways to go on
    ([`resume`][], [`branch`][]). `outcome` says how the last training call of this object ended."""

    def __init__(self, run_dir: str, outcome: TrainingOutcome | None = None):
        if not os.path.isdir(run_dir):
            raise PongrlError(f"{run_dir}: no such run directory")
        if not os.path.exists(os.path.join(run_dir, CONFIG_FILE)):
            raise PongrlError(f"{run_dir}: not a pongrl run (no {CONFIG_FILE})")
        self.run_dir = run_dir
        """The run's directory, as given."""
        self.outcome = outcome
        """How the last training call of this object ended (step, checkpoint, exit_code, message, finished);
        None when the run was only opened."""

    def __repr__(self) -> str:
        return f"Run({self.run_dir!r})"

    @property
    def config(self):
        """The run's settings (a DQNConfig or PPOConfig), as saved in its config.yaml."""
        return config_module.load_yaml(os.path.join(self.run_dir, CONFIG_FILE))

    @property
    def algo(self) -> str:
        """The algorithm that trains it: dqn, ppo or selfplay."""
        return self.config.algo

    def checkpoints(self) -> list[str]:
        """Paths of the run's complete checkpoints, oldest first."""
        folder = checkpoints_folder(self.run_dir)
        return [os.path.join(folder, name + ".pt") for name in list_checkpoints(folder)]

    @property
    def latest_checkpoint(self) -> str | None:
        """The path of the run's latest checkpoint (the one `resume` starts from), None before the first."""
        latest = read_latest(checkpoints_folder(self.run_dir))
        return os.path.join(checkpoints_folder(self.run_dir), latest + ".pt") if latest else None

    @property
    def step(self) -> int:
        """The step of the latest checkpoint (env steps; agent steps for self-play): where `resume` starts.
        0 before the first checkpoint."""
        latest = read_latest(checkpoints_folder(self.run_dir))
        return int(latest.removeprefix("step_")) if latest else 0

    def metrics(self) -> dict[str, np.ndarray]:
        """The training curve from metrics.csv: column name -> float array, one entry per logged row
        (NaN where a row has no value, e.g. evaluations that ran only every few rows)."""
        rows = read_metrics(self.run_dir)
        columns = list(rows[0]) if rows else []
        return {
            column: np.array([float(row[column]) if row[column] not in ("", None) else np.nan for row in rows])
            for column in columns
        }

    def metrics_frame(self):
        """The curve as a pandas DataFrame (needs pandas, which pongrl does not install)."""
        try:
            import pandas
        except ImportError:
            raise PongrlError("metrics_frame needs pandas (pip install pandas); metrics() gives numpy arrays") from None
        return pandas.DataFrame(self.metrics())

    def agent(self, checkpoint: str | None = None):
        """The playing agent of `checkpoint` (a path or a step_* name of this run) or of the latest checkpoint."""
        from pongrl.agent import load_agent

        return load_agent(self._checkpoint_path(checkpoint) or self.run_dir)

    def _checkpoint_path(self, checkpoint: str | None) -> str | None:
        """A checkpoint given by path, or by its name in this run (`step_000000050000`, with or without .pt)."""
        if checkpoint and not os.path.exists(checkpoint):
            named = os.path.join(checkpoints_folder(self.run_dir), checkpoint.removesuffix(".pt") + ".pt")
            return named if os.path.exists(named) else checkpoint
        return checkpoint

    def resume(
        self,
        extra_steps: int | None = None,
        total_steps: int | None = None,
        checkpoint: str | None = None,
        verbose: bool = False,
        handle_signals: bool = False,
        **settings,
    ) -> "Run":
        """Continue training from `checkpoint` (the latest by default) for `extra_steps` more or up to
        `total_steps`; the curve is spliced at the checkpoint. Only the settings of RESUME_SETTINGS (device,
        threads, precision, reporting) may change: the others are the experiment ([`branch`][] changes them).
        A run whose checkpoint is already at `total_steps` is complete: it is returned as it is, nothing written
        (so a script may resume to the same total until it succeeds); fewer steps than done is an error."""
        from pongrl.branching import resume_point

        config = open_existing_run(self.run_dir)
        writes = _writes_run_files(config.algo, self.run_dir)
        payload, step = resume_point(
            self.run_dir, config, self._checkpoint_path(checkpoint), extra_steps, total_steps, complete_ok=True
        )
        fixed = sorted(name for name in settings if name not in config_module.RESUME_SETTINGS)
        if fixed:
            raise PongrlError(
                f"{fixed[0]} is the experiment's setting and cannot change on resume (branch may change it)"
            )
        if step == config.total_steps:
            message = f"{self.run_dir} is complete: step {step}, checkpoint {payload['path']}; nothing to train"
            _say(verbose, message)
            return Run(self.run_dir, TrainingOutcome(step, payload["path"], 0, message))
        for name, value in sorted(settings.items()):
            if value is not None:
                setattr(config, name, value)
        config_module.validate(config)
        if writes:
            config_module.save_yaml(config, os.path.join(self.run_dir, CONFIG_FILE))
            _say(verbose, f"resuming {self.run_dir} at step {step} until step {config.total_steps}")
        return _train(config, self.run_dir, payload["path"], verbose, handle_signals)

    def branch(
        self,
        new_run_dir: str,
        checkpoint: str | None = None,
        extra_steps: int | None = None,
        total_steps: int | None = None,
        verbose: bool = False,
        handle_signals: bool = False,
        **changes,
    ) -> "Run":
        """Train a new run in `new_run_dir` that starts from this run's `checkpoint` (the latest by default)
        with the settings `changes` applied, leaving this run as it was. Returns the new run."""
        from pongrl.branching import branch_run
        from pongrl.distributed import launched_by_torchrun

        if launched_by_torchrun():
            raise PongrlError(
                "pongrl branch runs in one process: branch first, then continue the new run with torchrun"
            )
        changes = {name: value for name, value in sorted(changes.items()) if value is not None}
        start_from = self._checkpoint_path(checkpoint)
        config, step, start = branch_run(self.run_dir, new_run_dir, changes, start_from, extra_steps, total_steps)
        summary = ", ".join(f"{name}={value}" for name, value in changes.items()) or "no setting changed"
        _say(
            verbose,
            f"branched {self.run_dir} at step {step} into {new_run_dir} ({summary}); "
            f"training until step {config.total_steps}",
        )
        return _train(config, new_run_dir, start, verbose, handle_signals)


def make_config(algo: str, preset: str = "default", **settings):
    """The settings of a new run: `preset` ("default" or "seed") with any config field overridden."""
    if algo not in config_module.CONFIG_CLASSES:
        raise PongrlError(f"unknown algorithm {algo!r} (choose from {', '.join(config_module.CONFIG_CLASSES)})")
    cls, _ = config_module.CONFIG_CLASSES[algo]
    known = {f.name for f in dataclasses.fields(cls)} - {"algo", "preset"}
    foreign = sorted(name for name in settings if name not in known)
    if foreign:
        raise PongrlError(f"{foreign[0]} is not a setting of {algo}")
    return config_module.make_config(algo, preset, settings)


def default_run_dir(config) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", f"pong__{config.algo}__{config.preset}__{config.seed}__{stamp}")


def train(
    algo: str | None = None,
    run_dir: str | None = None,
    preset: str = "default",
    *,
    config=None,
    force: bool = False,
    verbose: bool = False,
    handle_signals: bool = False,
    **settings,
) -> Run:
    """Train a new run and return it once training ends. Give the algorithm ("dqn", "ppo", "selfplay") with a
    preset and any config fields as keywords (`total_steps=50_000, sticky_actions=0.25`), or a ready `config`
    (see [`make_config`][]). `run_dir` defaults to runs/pong__ALGO__PRESET__SEED__TIME; an existing run there is
    refused unless `force`. The run keeps what it needs to continue exactly: [`Run.resume`][], [`Run.branch`][]."""
    if config is None:
        if algo is None:
            raise PongrlError("train needs an algorithm (dqn, ppo, selfplay) or a config")
        config = make_config(algo, preset, **settings)
    elif settings or (algo is not None and algo != config.algo):
        raise PongrlError("give either a config or an algorithm with settings, not both")
    else:
        config_module.validate(config)
    writes = _writes_run_files(config.algo, run_dir)
    run_dir = run_dir or default_run_dir(config)
    _check_agents(config)
    if writes:
        prepare_new_run(run_dir, config, force)
        _say(verbose, f"training {config.algo} ({config.preset} preset) into {run_dir}")
    return _train(config, run_dir, None, verbose, handle_signals)


def _check_agents(config) -> None:
    """The agents a new run names (`init`, `opponent_agents`) are loaded and checked before anything is written."""
    from pongrl.learner import initial_weights, load_initial_weights

    if config.algo == "dqn":
        from pongrl.algos.dqn import make_q_network as make_network

        profile = "standard"
    else:
        from pongrl.algos.ppo import load_opponent_agents, make_actor_critic as make_network, obs_profile

        profile = obs_profile(config)
        load_opponent_agents(config)
    if config.init:
        load_initial_weights(make_network(config), initial_weights(config, profile), config.init)


def _train(config, run_dir: str, resume_from: str | None, verbose: bool, handle_signals: bool) -> Run:
    outcome = _training_loop(config.algo)(config, run_dir, resume_from, verbose=verbose, handle_signals=handle_signals)
    if outcome.exit_code == 1:
        raise CheckpointWriteError(outcome.message)
    _say(verbose and bool(outcome.message), outcome.message)
    return Run(run_dir, outcome)
