"""A league's jobs: one member's training segment, or one member's matches. `run_job(league_dir, job_id)` is the
whole of a job, run the same way by a local process (`python -m pongrl.league.jobs DIR JOB`) or a Ray task.

A job reads its inputs from the league directory (its entry in `rounds/rNNN.json`) and writes its outputs there:
a training job's run (`jobs/ID/run`, checkpointed, so that a stopped job continues where its last checkpoint was),
the member's weights, then `result.json`; a matches job one file per opponent as each is played, then
`result.json`. A job whose `result.json` exists is done: running it again does nothing. A lock on the job's
folder keeps two processes from running one job at once (a second waits, then finds it done).
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import time

from pongrl.errors import PongrlError
from pongrl.league import schedule
from pongrl.league.settings import read_json, write_json


def job_round(job_id: str) -> int:
    return int(job_id.split("-", 1)[0].removeprefix("r"))


def job_spec(league_dir: str, job_id: str) -> dict:
    jobs = schedule.read_round(league_dir, job_round(job_id))["jobs"]
    if job_id not in jobs:
        raise PongrlError(f"{league_dir}: no job {job_id} in its round")
    return jobs[job_id]


def run_job(league_dir: str, job_id: str) -> dict:
    """Do job `job_id` of the league in `league_dir` (continuing what a stopped attempt left) and return its
    result; a job already done returns its result at once."""
    import torch

    torch.set_num_threads(1)
    spec = job_spec(league_dir, job_id)
    folder = schedule.job_dir(league_dir, job_id)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result_path = schedule.result_file(league_dir, job_id)
        if os.path.exists(result_path):
            return read_json(result_path)
        started = time.time()
        write_json(
            os.path.join(folder, "running.json"),
            {"pid": os.getpid(), "host": socket.gethostname(), "started": started},
        )
        if spec["kind"] == "train":
            result = train_member(league_dir, folder, spec)
        else:
            result = play_matches(league_dir, folder, spec)
        result["seconds"] = time.time() - started
        write_json(result_path, result)
        return result


def member_config(league_dir: str, spec: dict):
    """The self-play run's settings of a training job."""
    from pongrl.exploiters import exploit_config
    from pongrl.training import make_config

    settings = dict(spec["settings"])
    init = schedule.resolve(league_dir, spec["init"]) if spec.get("init") else ""
    if spec["role"] == "main-exploiter":
        target = schedule.resolve(league_dir, spec["target"])
        return exploit_config(target, spec["steps"], init=init, **settings)
    return make_config("selfplay", "default", total_steps=spec["steps"], init=init, **settings)


def train_member(league_dir: str, folder: str, spec: dict) -> dict:
    """Train (or continue training) the member, then write its weights into the league."""
    from pongrl.agent import load_agent, save_safetensors_agent
    from pongrl.exploiters import exploitability
    from pongrl.opponents import weights_digest
    from pongrl.training import Run, train

    run_dir = os.path.join(folder, "run")
    config = member_config(league_dir, spec)
    try:
        resumable = Run(run_dir).latest_checkpoint is not None
    except PongrlError:
        resumable = False  # no run yet, or one stopped before its first checkpoint
    if resumable:
        run = Run(run_dir).resume(total_steps=spec["steps"], verbose=True)
    else:
        run = train(config=config, run_dir=run_dir, force=True, verbose=True)
    if run.outcome.exit_code != 0:
        raise PongrlError(f"{run_dir}: training stopped before its end ({run.outcome.message})")
    agent = load_agent(run.latest_checkpoint)
    weights = agent.state_dict()
    path = os.path.join(league_dir, schedule.member_file(spec["member"]))
    # A member's agent steps count from its first weights: a main's include every round before.
    before = load_agent(schedule.resolve(league_dir, spec["init"])).env_step if spec.get("init") else 0
    save_safetensors_agent(path, weights, "selfplay", before + run.step, "seed")
    result = {
        "member": spec["member"],
        "role": spec["role"],
        "steps": run.step,
        "weights_sha256": weights_digest(weights),
    }
    if spec["role"] == "main-exploiter":
        result["exploitability"] = exploitability(run)
    return result


def play_matches(league_dir: str, folder: str, spec: dict) -> dict:
    """The member against the built-in AI (a main), the battery and every earlier member; each opponent's row is
    kept as it is played, so that a stopped job plays only those it had not finished."""
    from pongrl.agent import load_agent
    from pongrl.arena import play_two_player
    from pongrl.evaluation import evaluate_protocols
    from pongrl.robustness import row_from_builtin, row_from_games
    from pongrl.runner import AgentPlayer
    from pongrl.scripted import scripted_player

    agent = load_agent(schedule.resolve(league_dir, spec["spec"]))
    me = AgentPlayer(agent)
    units = [("builtin", None)] if spec["builtin_games"] else []
    units += [("scripted", name) for name in spec["battery"]]
    units += [("agent", other) for other in spec["against"]]
    rows = []
    for index, (kind, opponent) in enumerate(units):
        path = os.path.join(folder, "rows", f"{index:03d}.json")
        if os.path.exists(path):
            rows += read_json(path)
            continue
        start = time.time()
        if kind == "builtin":
            scores = evaluate_protocols(agent, spec["builtin_games"], spec["seed"])
            played = [row_from_builtin("exact", scores["exact"]), row_from_builtin("sticky", scores["sticky"])]
        else:
            if kind == "scripted":
                name, player = opponent, scripted_player(opponent, "standard", seed=spec["seed"] + index)
            else:
                other = load_agent(schedule.resolve(league_dir, opponent["spec"]))
                name, player = opponent["name"], AgentPlayer(other)
            records = play_two_player(
                me,
                player,
                spec["games"],
                spec["seed"],
                max_frames=spec["max_frames"],
                serve_assist=True,
                sticky_actions=spec["sticky_actions"],
            )
            played = [row_from_games(name, kind, records)]
        write_json(path, played)
        rows += played
        for row in played:
            print(
                f"{spec['member']} vs {row['opponent']}: {row['point_difference']:+.2f} points a game over "
                f"{row['games']} games ({time.time() - start:.0f} s)",
                flush=True,
            )
    return {"member": spec["member"], "rows": rows}


def main(argv: list[str]) -> int:
    """`python -m pongrl.league.jobs LEAGUE_DIR JOB_ID`: one job in its own process (the local executor's way)."""
    league_dir, job_id = argv
    try:
        run_job(league_dir, job_id)
    except PongrlError as error:
        print(f"pongrl: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
