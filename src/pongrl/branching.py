"""Continuing a run: from which checkpoint (`resume_point`), and as a new run with some settings changed
(`branch_run`, `pongrl branch`): an ablation from a common point, leaving the original run as it was.

A branch starts where the run was at a checkpoint (weights, optimizer moments, counters, RNGs, its curve so far).
Settings that shape what the checkpoint holds (the network and its head, torso sharing, DQN's replay memory, the
opponent pool's size) stay: the branch point's state would not load under new ones.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import fields

from pongrl import config as config_module
from pongrl.checkpoint import load_checkpoint, resolve, save_checkpoint
from pongrl.errors import PongrlError
from pongrl.run import METRICS_FILE, checkpoint_dir, open_existing_run, prepare_new_run, refuse_existing_run

SAVED_STATE_SHAPE = {
    "dqn": {
        "network",
        "num_envs",
        "buffer_size",
        "n_step",
        "prioritized_replay",
        *("dueling", "distributional", "atoms", "quantiles", "v_min", "v_max"),  # the Q-network's head
    },
    "ppo": {"network", "share_network"},
    "selfplay": {"network", "share_network"},
}
# What lays out the games of each kind of opponent a checkpoint holds (pongrl.opponents): a branch keeps it.
OPPONENT_SHAPES = {
    "opponent_pool": {"num_envs", "opponent_pool", "pool_size"},
    "scripted_opponents": {"num_envs", "opponent_pool", "scripted_fraction", "scripted_opponents"},
    "agent_opponents": {"num_envs", "opponent_pool", "scripted_fraction", "agent_fraction", "opponent_agents"},
}


def resume_point(
    run_dir: str,
    config,
    checkpoint: str | None = None,
    extra_steps: int | None = None,
    total_steps: int | None = None,
    complete_ok: bool = False,
) -> tuple[dict, int]:
    """The checkpoint a resume or a branch continues from (`checkpoint`, which must be the run's, or the
    run's latest); sets config.total_steps from `extra_steps` or `total_steps`. Returns (payload, step).
    With `complete_ok` a `total_steps` the checkpoint has already reached is accepted (the run is complete:
    config.total_steps == step), so that a resume asked for the same total again is not an error."""
    chosen = checkpoint or resolve(run_dir)
    if checkpoint and os.path.dirname(os.path.abspath(resolve(checkpoint))) != os.path.abspath(checkpoint_dir(run_dir)):
        raise PongrlError(f"{checkpoint}: not a checkpoint of run {run_dir}")
    payload = load_checkpoint(chosen)
    step = int(payload["env_step"])
    if extra_steps:
        config.total_steps = step + extra_steps
    elif total_steps:
        config.total_steps = total_steps
    if complete_ok and total_steps == step:
        return payload, step
    if config.total_steps <= step:
        raise PongrlError(f"the checkpoint is at step {step}; ask for more with --extra-steps N or --total-steps N")
    return payload, step


def branch_run(
    run_dir: str,
    new_run_dir: str,
    changes: dict,
    checkpoint: str | None = None,
    extra_steps: int | None = None,
    total_steps: int | None = None,
):
    """Write the new run `new_run_dir` whose first checkpoint is `run_dir`'s at `checkpoint` (or its
    latest) with the settings `changes` (name -> value) applied; `run_dir` is only read. Returns (the new
    run's config, the branch point's step, the path of its first checkpoint), ready for the trainer."""
    if os.path.abspath(new_run_dir) == os.path.abspath(run_dir):
        raise PongrlError("--run-dir must be a new directory: a branch never writes into the run it starts from")
    refuse_existing_run(new_run_dir, hint="branch into a new directory")
    config = open_existing_run(run_dir)
    known = {f.name for f in fields(config)}
    foreign = sorted(name for name in changes if name not in known)
    if foreign:
        raise PongrlError(f"--{foreign[0].replace('_', '-')} is not a setting of a {config.algo} run")
    payload, step = resume_point(run_dir, config, checkpoint, extra_steps, total_steps)
    fixed = SAVED_STATE_SHAPE[config.algo].union(
        *(shape for module, shape in OPPONENT_SHAPES.items() if module in payload["state"])
    )
    reshaped = sorted(name for name, value in changes.items() if name in fixed and value != getattr(config, name))
    if reshaped:
        raise PongrlError(
            f"--{reshaped[0].replace('_', '-')} shapes what the checkpoint holds and cannot change in a branch"
        )
    for name, value in changes.items():
        setattr(config, name, value)
    config_module.validate(config)
    prepare_new_run(new_run_dir, config, force=False)
    # The new run's first checkpoint is the branch point, recorded with the new settings so that it resumes them.
    # DQN keeps its replay memory beside the latest checkpoint only: from an older one the branch refills it.
    replay = payload.get("replay_buffer")
    if replay and os.path.exists(os.path.join(os.path.dirname(payload["path"]), replay)):
        shutil.copyfile(
            os.path.join(os.path.dirname(payload["path"]), replay), os.path.join(checkpoint_dir(new_run_dir), replay)
        )
    branched = {k: v for k, v in payload.items() if k not in ("path", "format", "format_version")}
    branched["config"] = config_module.to_dict(config)
    start = save_checkpoint(checkpoint_dir(new_run_dir), branched, keep=config.keep_checkpoints, permanent=True)
    if os.path.exists(os.path.join(run_dir, METRICS_FILE)):  # the curve so far; rows past the branch point go
        shutil.copyfile(os.path.join(run_dir, METRICS_FILE), os.path.join(new_run_dir, METRICS_FILE))
    return config, step, start
