"""The league's driver: starts rounds, hands ready jobs to an executor, retries a job that fails once, and
writes the tables as results come in. Everything it decides is recomputed from the directory, so after a stop of
any kind `pongrl resume DIR` goes on from where the files say.

Executors run `pongrl.league.jobs.run_job`: `LocalExecutor` in one process per job on this machine (a process
dies with the driver, so no orphan keeps training after kill -9), `RayExecutor` as Ray tasks on a cluster
(`pip install pongrl[ray]`; the league directory must be at the same path on every node).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time

from pongrl.errors import PongrlError
from pongrl.league import schedule, settings as league_settings, tables
from pongrl.league.settings import LeagueSettings, read_json, write_json

POLL_SECONDS = 2.0
ATTEMPTS = 2  # a job that fails is retried once, then reported


def _die_with_parent() -> None:
    """In a job's process before it starts: Linux sends it SIGKILL when the driver dies, however it dies."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class LocalExecutor:
    """Jobs as processes on this machine, `workers` at once, one torch thread each."""

    def __init__(self, league_dir: str, workers: int):
        self.league_dir, self.workers = league_dir, workers
        self.running: dict[str, tuple[subprocess.Popen, object]] = {}

    def submit(self, job_id: str) -> None:
        folder = schedule.job_dir(self.league_dir, job_id)
        os.makedirs(folder, exist_ok=True)
        log = open(os.path.join(folder, "log.txt"), "a")
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        command = [sys.executable, "-m", "pongrl.league.jobs", self.league_dir, job_id]
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, preexec_fn=_die_with_parent)
        self.running[job_id] = (process, log)

    def finished(self) -> list[tuple[str, str | None]]:
        """(job, None) for each job that ended well, (job, why) for each that failed."""
        ended = []
        for job_id, (process, log) in list(self.running.items()):
            code = process.poll()
            if code is None:
                continue
            log.close()
            del self.running[job_id]
            ended.append((job_id, None if code == 0 else f"exit code {code}; {_last_line(self.league_dir, job_id)}"))
        return ended

    def stop(self) -> None:
        for process, log in self.running.values():
            process.terminate()
        for process, log in self.running.values():
            process.wait()
            log.close()
        self.running.clear()


class RayExecutor:
    """Jobs as Ray tasks of one CPU each on the cluster at `address` ("auto": the one Ray finds; "local": a new
    one on this machine with `workers` CPUs)."""

    def __init__(self, league_dir: str, workers: int, address: str):
        try:
            import ray
        except ImportError:
            raise PongrlError("--ray needs Ray: pip install 'pongrl[ray]'") from None
        self.ray, self.league_dir, self.workers = ray, league_dir, workers
        if address not in ("auto", "local"):
            _check_answers(address)
        try:
            if address == "local":
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise PongrlError(f"--ray {address}: no Ray cluster answers ({str(error).splitlines()[0][:120]})") from None
        self.remote = ray.remote(num_cpus=1, max_retries=0)(_ray_job)
        self.running: dict[str, object] = {}

    def submit(self, job_id: str) -> None:
        self.running[job_id] = self.remote.remote(os.path.abspath(self.league_dir), job_id)

    def finished(self) -> list[tuple[str, str | None]]:
        if not self.running:
            return []
        refs = list(self.running.values())
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        ended = []
        for job_id, ref in list(self.running.items()):
            if ref not in ready:
                continue
            del self.running[job_id]
            try:
                self.ray.get(ref)
                ended.append((job_id, None))
            except Exception as error:  # a task's exception or its worker's death: the job failed this attempt
                ended.append((job_id, f"{type(error).__name__}: {str(error).strip().splitlines()[-1][:200]}"))
        return ended

    def stop(self) -> None:
        for ref in self.running.values():
            self.ray.cancel(ref, force=True)
        self.running.clear()
        self.ray.shutdown()


def _ray_job(league_dir: str, job_id: str) -> None:
    """A job as a Ray task, its output in the job's log as the local executor keeps it."""
    from pongrl.league.jobs import run_job

    folder = schedule.job_dir(league_dir, job_id)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "log.txt"), "a") as log:
        saved = os.dup(1), os.dup(2)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            run_job(league_dir, job_id)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)


def _check_answers(address: str) -> None:
    """A Ray address HOST:PORT must accept a connection within a few seconds."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise PongrlError(f"--ray {address}: expected auto, local or HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as error:
        raise PongrlError(f"--ray {address}: no Ray cluster answers ({error.strerror or error})") from None


def _last_line(league_dir: str, job_id: str) -> str:
    try:
        with open(os.path.join(schedule.job_dir(league_dir, job_id), "log.txt"), errors="replace") as log:
            lines = [line.strip() for line in log.read().splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][:200] if lines else "no output"


def _hold_driver_lock(league_dir: str):
    handle = open(os.path.join(league_dir, "driver.lock"), "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise PongrlError(f"{league_dir}: another pongrl process is driving this league") from None
    return handle


def drive(
    league_dir: str, workers: int = 1, ray: str | None = None, verbose: bool = True, new: LeagueSettings | None = None
) -> int:
    """Run the league in `league_dir` (made first with the settings `new`, once the executor has started) until its
    last round is done or a job fails twice. Returns the number of complete rounds. Failed jobs of an earlier
    attempt are retried."""
    if workers < 1:
        raise PongrlError(f"--workers must be at least 1, got {workers}")
    say = print if verbose else (lambda *args, **kwargs: None)
    executor = RayExecutor(league_dir, workers, ray) if ray else LocalExecutor(league_dir, workers)
    lock = None
    failures: dict[str, int] = {}
    try:
        if new is not None:
            league_settings.create(league_dir, new)
        league_settings.load(league_dir)
        lock = _hold_driver_lock(league_dir)
        for path in _failed_markers(league_dir):
            os.unlink(path)
        while True:
            settings, _ = league_settings.load(league_dir)
            rounds_done = tables.complete_rounds(league_dir)
            started = schedule.rounds_started(league_dir)
            if rounds_done == started:
                if started > settings.rounds:
                    tables.write_tables(league_dir)
                    plural = "s" if settings.rounds != 1 else ""
                    say(f"league complete: {settings.rounds} round{plural}; tables in {league_dir}")
                    return rounds_done
                if rounds_done:
                    tables.write_tables(league_dir)
                plan = schedule.start_round(league_dir, settings, started)
                say(f"round {started}: {len(plan['jobs'])} jobs")
                continue
            ready = _ready_jobs(league_dir, rounds_done, executor.running)
            while ready and len(executor.running) < workers and not _gave_up(failures):
                job_id = ready.pop(0)
                say(f"{time.strftime('%H:%M:%S')} start {job_id} (attempt {failures.get(job_id, 0) + 1})")
                executor.submit(job_id)
            if not executor.running:
                break  # nothing runs and nothing may start: a job failed twice
            time.sleep(POLL_SECONDS)
            for job_id, error in executor.finished():
                if error is None and schedule.done(league_dir, job_id):
                    say(f"{time.strftime('%H:%M:%S')} done {job_id}: {_describe(league_dir, job_id)}")
                    if tables.complete_rounds(league_dir) > rounds_done:
                        tables.write_tables(league_dir)
                    continue
                failures[job_id] = failures.get(job_id, 0) + 1
                error = error or "ended without its result"
                if failures[job_id] < ATTEMPTS:
                    say(f"{time.strftime('%H:%M:%S')} {job_id} failed ({error}); trying it once more")
                else:
                    write_json(os.path.join(schedule.job_dir(league_dir, job_id), "failed.json"), {"error": error})
                    say(f"{time.strftime('%H:%M:%S')} {job_id} failed twice ({error})")
        failed = next(job_id for job_id, count in failures.items() if count >= ATTEMPTS)
        raise PongrlError(
            f"job {failed} failed twice (its log: {os.path.join(schedule.job_dir(league_dir, failed), 'log.txt')}); "
            f"pongrl resume {league_dir} tries it again"
        )
    finally:
        executor.stop()
        if lock is not None:
            lock.close()


def _ready_jobs(league_dir: str, number: int, running) -> list[str]:
    """The jobs of round `number` that may start: not done, not running, and every job they wait for done."""
    jobs = schedule.read_round(league_dir, number)["jobs"]
    return [
        job_id
        for job_id, job in sorted(jobs.items(), key=lambda item: _priority(item[1]))
        if job_id not in running
        and not schedule.done(league_dir, job_id)
        and all(schedule.done(league_dir, before) for before in job.get("after", ()))
    ]


def _priority(job: dict) -> tuple:
    """The longest jobs first: the main's training, then the exploiters', then the matches, a main's first."""
    if job["kind"] == "train":
        return (0, schedule.ROLES.index(job["role"]))
    return (1, 0 if job["builtin_games"] else 1, job["member"])


def _gave_up(failures: dict) -> bool:
    return any(count >= ATTEMPTS for count in failures.values())


def _failed_markers(league_dir: str) -> list[str]:
    folder = os.path.join(league_dir, "jobs")
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return [
        os.path.join(folder, name, "failed.json")
        for name in names
        if os.path.exists(os.path.join(folder, name, "failed.json"))
    ]


def _describe(league_dir: str, job_id: str) -> str:
    result = read_json(schedule.result_file(league_dir, job_id))
    minutes = result.get("seconds", 0) / 60
    if "rows" in result:
        worst = min(result["rows"], key=lambda row: row["point_difference"]) if result["rows"] else None
        tail = f"worst {worst['point_difference']:+.2f} against {worst['opponent']}" if worst else "no opponent"
        return f"{len(result['rows'])} rows, {tail} ({minutes:.0f} min)"
    return f"{result['member']} at {result['steps']:,} agent steps ({minutes:.0f} min)"


def check_init(spec: str) -> None:
    """The main must start as a self-play agent (a policy on the self-play model card's view)."""
    from pongrl.agent import PolicyAgent, load_agent

    agent = load_agent(spec)
    if not isinstance(agent, PolicyAgent) or agent.obs_profile != "seed":
        raise PongrlError(
            f"--init {spec}: not a self-play agent (a {agent.algo} agent on the {agent.obs_profile} view); the main "
            "starts from a policy of the self-play model card's view, such as zoo:selfplay-mix"
        )


def absolute_spec(spec: str) -> str:
    """An agent spec with a file path made absolute; zoo and Hub names (which hold a colon) as they are."""
    return spec if not spec or ":" in spec else os.path.abspath(spec)


def train_league(
    league_dir: str,
    workers: int = 1,
    ray: str | None = None,
    change: tuple[str, ...] = (),
    verbose: bool = False,
    **given,
) -> int:
    """Start a league in `league_dir` with the settings `given` (pongrl.league.settings.LeagueSettings fields), or
    go on with the one there: settings that differ from its saved ones are refused unless named in `change`, and
    then hold from the next round on. Runs until the last round is done; returns the rounds complete."""
    unknown = sorted(set(given) - set(league_settings.FIELDS))
    if unknown:
        raise PongrlError(f"{unknown[0]} is not a league setting")
    # Agent files are saved as absolute paths: the league's jobs run from anywhere, and find the league's own
    # members by paths relative to its directory (schedule.resolve).
    for name in ("init", "members"):
        if name in given:
            given[name] = ",".join(absolute_spec(spec.strip()) for spec in given[name].split(","))
    if league_settings.is_league(league_dir):
        names = {name.replace("-", "_") for name in change}
        league_settings.change(league_dir, given, names, schedule.rounds_started(league_dir))
    else:
        if change:
            raise PongrlError(f"{league_dir}: --change is for a league that exists")
        settings = LeagueSettings(**given)
        league_settings.validate(settings)
        check_init(settings.init)
        from pongrl.agent import load_agent

        for spec in filter(None, (spec.strip() for spec in settings.members.split(","))):
            load_agent(spec)
        league_settings.refuse_used_directory(league_dir)
        return drive(league_dir, workers, ray, verbose, new=settings)
    return drive(league_dir, workers, ray, verbose)


def resume_league(league_dir: str, workers: int = 1, ray: str | None = None, verbose: bool = False) -> int:
    """Go on with the league in `league_dir` as its files leave it; returns the rounds complete."""
    league_settings.load(league_dir)
    return drive(league_dir, workers, ray, verbose)
