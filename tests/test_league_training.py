"""A league that trains itself (`pongrl train league`, pongrl.league): rounds of a main, a main exploiter and a
league exploiter with their matches, on the local executor and on a Ray cluster the test starts; kill -9 of the
driver and of a Ray worker, then resume, with no job lost or done twice; prioritized matchmaking; settings
changes refused or recorded; bad input in one line. Each league here trains a few hundred agent steps of a
small network; how a full-size league fares is docs/howto/league.md's."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

from cli_helpers import run
from pongrl.agent import save_safetensors_agent
from pongrl.config import opponent_weights
from pongrl.exploiters import exploit_config
from pongrl.game import NUM_ACTIONS
from pongrl.league import schedule
from pongrl.league.settings import LeagueSettings, create
from pongrl.nets import ActorCritic
from pongrl.opponents import AgentOpponents
from pongrl.training import make_config

TINY = (
    "--members '' --main-steps 256 --main-exploiter-steps 256 --league-exploiter-steps 256 --num-envs 8 "
    "--num-steps 32 --num-minibatches 2 --update-epochs 1 --max-cycles 200 --checkpoint-every 128 --match-games 2 "
    "--battery hold-up --builtin-games 0 --max-frames 300 --network small --builtin-fraction 0.25 "
    "--scripted-fraction 0.25 --league-fraction 0.25 --snapshot-fraction 0.25"
)


def tiny_agent(path) -> str:
    network = ActorCritic(NUM_ACTIONS, share_network=True, network="small")
    save_safetensors_agent(str(path), network.state_dict(), "selfplay", 0, "seed")
    return str(path)


def tiny_flags(tmp_path, rounds: int = 1) -> list[str]:
    import shlex

    return ["--init", tiny_agent(tmp_path / "init.safetensors"), "--rounds", str(rounds), *shlex.split(TINY)]


def cli(args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pongrl", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def all_jobs(league_dir) -> dict:
    jobs = {}
    for number in range(schedule.rounds_started(str(league_dir))):
        jobs.update(schedule.read_round(str(league_dir), number)["jobs"])
    return jobs


def check_complete(league_dir, rounds: int) -> None:
    """Every job of every round done once: each training run reached its steps with one row per logged step, each
    matches job has one row per opponent, every member's weights are there, the tables are made."""
    league_dir = str(league_dir)
    jobs = all_jobs(league_dir)
    assert schedule.rounds_started(league_dir) == rounds + 1
    for job_id, job in jobs.items():
        result = json.load(open(schedule.result_file(league_dir, job_id)))
        if job["kind"] == "train":
            assert result["steps"] == job["steps"]
            steps = [
                int(row.split(",")[0])
                for row in open(os.path.join(league_dir, "jobs", job_id, "run", "metrics.csv")).read().split()[1:]
            ]
            assert steps == sorted(set(steps)), f"{job_id}: a step logged twice"
            assert os.path.exists(os.path.join(league_dir, schedule.member_file(job["member"])))
        else:
            units = len(job["against"]) + len(job["battery"]) + (2 if job["builtin_games"] else 0)
            assert len(result["rows"]) == units
    summary = open(os.path.join(league_dir, "rounds.csv")).read().splitlines()
    assert len(summary) == rounds + 2  # the header, round 0, the rounds
    assert os.path.exists(os.path.join(league_dir, "plots", "payoff.png"))
    assert os.path.exists(os.path.join(league_dir, "plots", "rounds.png"))


def test_a_small_league_trains_its_rounds_and_keeps_its_tables(tmp_path, capsys, monkeypatch):
    league = tmp_path / "league"
    flags = tiny_flags(tmp_path, rounds=2)
    monkeypatch.chdir(tmp_path)  # --init as a path relative to where the command runs, not to the league
    flags[flags.index("--init") + 1] = "init.safetensors"
    flags[flags.index("--rounds") + 1] = "1"
    code, out, err = run(["train", "league", "league", *flags, "--workers", "2"], capsys)
    assert code == 0, err
    assert json.load(open(league / "league.json"))["settings"]["init"] == str(tmp_path / "init.safetensors")
    # the starting main was copied into the league: the league goes on without the file it started from
    assert schedule.read_round(str(league), 0)["new_members"][0]["spec"] == schedule.member_file("main-r000")
    assert all_jobs(league)["r001-main"]["init"] == schedule.member_file("main-r000")
    os.unlink(tmp_path / "init.safetensors")
    flags[flags.index("--rounds") + 1] = "2"
    flags += ["--ent-coef", "0.005"]
    code, out, err = run(["train", "league", "league", *flags, "--change", "rounds,ent-coef", "--workers", "2"], capsys)
    assert code == 0, err
    check_complete(league, 2)
    plan = schedule.read_round(str(league), 2)
    main = plan["jobs"]["r002-main"]
    # a change holds from the next round on, and the history says from which
    assert all_jobs(league)["r001-main"]["settings"]["ent_coef"] == 0.01 and main["settings"]["ent_coef"] == 0.005
    change = json.load(open(league / "league.json"))["history"][-1]
    assert change["round"] == 2 and change["settings"]["ent_coef"] == [0.01, 0.005]
    trained_with = yaml.safe_load(open(league / "jobs" / "r002-main" / "run" / "config.yaml"))
    assert trained_with["ent_coef"] == 0.005
    # round 2's main starts from round 1's, meets the members of round 1 but itself, weighted by matchmaking
    assert main["init"] == schedule.member_file("main-r001")
    assert main["opponents"] == ["main-r000", "mx-r001", "lx-r001"]
    assert len(main["weights"]) == 3 and all(weight > 0 for weight in main["weights"])
    assert main["settings"]["opponent_weights"].count(",") == 2
    # the main exploiter of round 1 starts from random weights, round 2's from round 1's (alternate)
    assert all_jobs(league)["r001-main-exploiter"]["init"] == ""
    assert plan["jobs"]["r002-main-exploiter"]["init"] == schedule.member_file("mx-r001")
    assert plan["jobs"]["r002-main-exploiter"]["target"] == schedule.member_file("main-r001")
    # a member's matches wait only for the training of the members they play: the main's for the main's alone
    training = ["r002-main", "r002-main-exploiter", "r002-league-exploiter"]
    assert plan["jobs"]["r002-matches-main-r002"]["after"] == training[:1]
    assert plan["jobs"]["r002-matches-mx-r002"]["after"] == training[:2]
    assert plan["jobs"]["r002-matches-lx-r002"]["after"] == training
    payoff = json.load(open(league / "payoff.json"))
    # each pair is in the table both ways, one the other's negative
    assert payoff["mx-r001"]["main-r000"]["point_difference"] == -payoff["main-r000"]["mx-r001"]["point_difference"]
    # had round 3 started each main exploiter from the member that does best against the main, it would start
    # from that one (every member here is of the main's network)
    settings = LeagueSettings(**json.load(open(league / "league.json"))["settings"])
    settings.main_exploiter_init = "strongest"
    against_main = {
        opponent: cell["point_difference"]
        for opponent, cell in payoff["main-r002"].items()
        if opponent in {member["name"] for member in schedule.members(str(league), 2)}
    }
    plan = schedule.plan_round(str(league), settings, 3)
    init = plan["jobs"]["r003-main-exploiter"]["init"]
    assert init.startswith("members/")  # (a tiny league's games may tie: any of the best will do)
    assert against_main[os.path.basename(init).removesuffix(".safetensors")] == min(against_main.values())
    code, out, err = run(["status", str(league)], capsys)
    assert code == 0 and "3 of 3 rounds complete" in out and "mx-r002" in out
    # done is done: resuming a complete league trains nothing more
    before = os.path.getmtime(schedule.result_file(str(league), "r002-main"))
    code, out, err = run(["resume", str(league)], capsys)
    assert code == 0 and "league complete" in out
    assert os.path.getmtime(schedule.result_file(str(league), "r002-main")) == before


def test_a_strongest_main_exploiter_starts_from_the_member_that_does_best_against_the_main(tmp_path):
    def agent(name, share_network=True, network="small"):
        weights = ActorCritic(NUM_ACTIONS, share_network=share_network, network=network).state_dict()
        save_safetensors_agent(str(tmp_path / f"{name}.safetensors"), weights, "selfplay", 0, "seed")
        return {"name": name, "spec": f"{name}.safetensors"}

    def row(opponent, point_difference):
        return {
            "kind": "agent",
            "opponent": opponent,
            "games": 10,
            "wins": 5,
            "losses": 5,
            "draws": 0,
            "point_difference": point_difference,
        }

    main = agent("main-r001")
    separate, peer, weak = agent("separate", share_network=False), agent("peer"), agent("weak")
    wide = agent("wide", network="nature")
    # the main's matches, and one a member played against it (its sign turned to the main's side)
    results = [
        {"member": "main-r001", "rows": [row("separate", -6.0), row("weak", 12.0), row("wide", -9.0)]},
        {"member": "peer", "rows": [row("main-r001", 3.0)]},
    ]
    scores = schedule.payoff(results)["main-r001"]
    assert {name: cell["point_difference"] for name, cell in scores.items()} == {
        "separate": -6.0,
        "weak": 12.0,
        "wide": -9.0,
        "peer": -3.0,
    }
    # wide and separate do better, but their networks are not the main's: the peer's weights start the exploiter
    others = [separate, peer, weak, wide]
    assert schedule.strongest_opponent(str(tmp_path), main, others, scores) == "peer.safetensors"
    assert schedule.strongest_opponent(str(tmp_path), main, [separate, wide], scores) == ""


def test_starting_members_given_as_files_are_named_by_their_files():
    settings = LeagueSettings(members="/a/agent.safetensors,/b/agent.safetensors,zoo:dqn")
    names = [member["name"] for member in schedule.starting_members(settings)]
    assert names == ["main-r000", "agent", "agent-2", "dqn"]


def test_kill_9_of_the_driver_then_resume_loses_no_job_and_does_none_twice(tmp_path):
    league = tmp_path / "league"
    flags = tiny_flags(tmp_path, rounds=1)
    flags[flags.index("--main-steps") + 1] = "1024"  # long enough to be killed in the middle of
    driver = subprocess.Popen(
        [sys.executable, "-m", "pongrl", "train", "league", str(league), *flags, "--workers", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    running = league / "jobs" / "r001-main" / "running.json"
    checkpoints = league / "jobs" / "r001-main" / "run" / "checkpoints"
    deadline = time.time() + 240
    while time.time() < deadline and not (checkpoints.is_dir() and any(checkpoints.glob("step_*.pt"))):
        time.sleep(0.2)
    assert running.exists(), "the main's training never started"
    job_pid = json.load(open(running))["pid"]
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    for _ in range(50):  # the job's process dies with its driver
        if not os.path.exists(f"/proc/{job_pid}") or open(f"/proc/{job_pid}/stat").read().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail("a job kept running after its driver was killed")
    assert not schedule.done(str(league), "r001-main")
    finished = cli(["resume", str(league), "--workers", "2"], timeout=600)
    assert finished.returncode == 0, finished.stderr
    check_complete(league, 1)
    log = open(league / "jobs" / "r001-main" / "log.txt").read()
    assert "resuming" in log  # the main went on from its checkpoint, not from the start

    # A job that fails is retried once, then reported: a member's weights lost after the fact make the next
    # round's jobs that read them fail. One more round is asked for (--change), which the history records.
    os.unlink(league / schedule.member_file("mx-r001"))
    changed = cli(["train", "league", str(league), *flags, "--rounds", "2", "--change", "rounds"])
    assert changed.returncode == 1
    assert changed.stderr.count("\n") == 1 and "failed twice" in changed.stderr and "pongrl resume" in changed.stderr
    assert "trying it once more" in changed.stdout
    assert any((league / "jobs" / job / "failed.json").exists() for job in os.listdir(league / "jobs"))
    history = json.load(open(league / "league.json"))["history"]
    assert history[-1]["round"] == 2 and history[-1]["settings"] == {"rounds": [1, 2]}


def test_status_times_a_resumed_job_by_its_runs_training_seconds(tmp_path):
    from pongrl.league.tables import job_state

    folder = tmp_path / "jobs" / "r001-main"
    (folder / "run").mkdir(parents=True)
    # 250 steps in 60 s of training, the last 50 of them since this attempt went on from a checkpoint 10 s ago
    (folder / "run" / "metrics.csv").write_text("env_step,wall_seconds\n200,48.0\n250,60.0\n")
    attempt = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time() - 10}
    (folder / "running.json").write_text(json.dumps(attempt))
    # 750 more steps at 250 a minute take three minutes
    assert job_state(str(tmp_path), "r001-main", {"kind": "train", "steps": 1000}).endswith("about 3 min left)")
    (folder / "run" / "metrics.csv").unlink()  # before the run's first row: no estimate, and no error
    assert job_state(str(tmp_path), "r001-main", {"kind": "train", "steps": 1000}).startswith("started 0 min ago")


def test_status_of_a_stopped_training_job_names_the_checkpoint_it_goes_on_from(tmp_path):
    from pongrl.league.tables import job_state

    folder = tmp_path / "jobs" / "r001-main"
    folder.mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process of this host that has ended: the job's driver was stopped
    (folder / "running.json").write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname(), "started": 0}))
    job = {"kind": "train", "steps": 1000}
    assert job_state(str(tmp_path), "r001-main", job) == (
        "stopped before its first checkpoint; starts again when its turn comes"
    )
    (folder / "run" / "checkpoints").mkdir(parents=True)
    (folder / "run" / "config.yaml").write_text("algo: selfplay\n")
    (folder / "run" / "checkpoints" / "latest").write_text("step_000000000500\n")
    assert job_state(str(tmp_path), "r001-main", job) == (
        "stopped; goes on from its checkpoint at step 500 when its turn comes"
    )


def test_changed_settings_are_refused_unless_named_and_bad_input_gets_one_line(tmp_path):
    league = tmp_path / "league"
    flags = tiny_flags(tmp_path, rounds=1)
    # a league as `pongrl train league` leaves it before its first round: the settings are what a change meets
    create(str(league), LeagueSettings(init=flags[1], members="", main_steps=256))
    saved = open(league / "league.json").read()
    refused = cli(["train", "league", str(league), "--main-steps", "512"])
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "--main-steps is 256 in this league, 512 given" in refused.stderr and "--change main-steps" in refused.stderr
    assert open(league / "league.json").read() == saved
    not_league = tmp_path / "elsewhere"
    not_league.mkdir()
    for args, words in (
        (["resume", str(not_league), "--workers", "2"], "not a league"),
        (["status", str(not_league)], "not a league"),
        (["train", "league", str(tmp_path / "new"), "--init", "zoo:dqn"], "not a self-play agent"),
        (["train", "league", str(tmp_path / "new"), *flags, "--ray", "127.0.0.1:9"], "no Ray cluster answers"),
        (["train", "league", str(tmp_path / "new"), *flags, "--league-fraction", "0.9"], "add up to more than 1"),
    ):
        result = cli(args)
        assert result.returncode == 1 and result.stderr.count("\n") == 1 and words in result.stderr, (
            args,
            result.stderr,
        )
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "new").exists()  # nothing written


def test_matchmaking_weighs_the_opponents_the_player_beats_least():
    settings = LeagueSettings()
    opponents = [{"name": name} for name in ("easy", "even", "hard", "unmet")]
    results = [
        {
            "member": "me",
            "rows": [
                {
                    "kind": "agent",
                    "opponent": "easy",
                    "wins": 10,
                    "losses": 0,
                    "draws": 0,
                    "games": 10,
                    "point_difference": 15,
                },
                {
                    "kind": "agent",
                    "opponent": "even",
                    "wins": 5,
                    "losses": 5,
                    "draws": 0,
                    "games": 10,
                    "point_difference": 0,
                },
            ],
        },
        {
            "member": "hard",
            "rows": [  # the opponent's own matches count, from the player's side
                {
                    "kind": "agent",
                    "opponent": "me",
                    "wins": 9,
                    "losses": 1,
                    "draws": 0,
                    "games": 10,
                    "point_difference": 9,
                },
            ],
        },
    ]
    rates = schedule.win_rates(results, "me")
    assert rates["easy"] == (11 / 12, 10) and rates["hard"] == (2 / 12, 10)
    weights = schedule.matchmaking_weights(settings, rates, opponents)
    assert weights[2] > weights[1] == weights[3] > weights[0] > 0  # hard; even and unmet (p = 1/2); easy
    settings.max_opponents = 2
    chosen, chosen_weights = schedule.heaviest(settings, opponents, weights)
    assert [o["name"] for o in chosen] == ["even", "hard"]  # the earlier of two equals, in the league's order
    assert chosen_weights == [weights[1], weights[2]]


def test_opponent_weights_set_how_often_each_frozen_agent_is_drawn(tmp_path):
    specs = [tiny_agent(tmp_path / f"a{i}.safetensors") for i in range(3)]
    config = make_config("selfplay", opponent_agents=",".join(specs), opponent_weights="0,1,3", agent_fraction=1.0)
    assert opponent_weights(config) == [0.0, 0.25, 0.75]
    from pongrl.agent import load_agent

    opponents = AgentOpponents([load_agent(s) for s in specs], 0, 4, seed=1, weights=opponent_weights(config))
    draws = []
    for _ in range(500):
        opponents.games_ended(np.ones(4, bool))
        draws += list(opponents.opponent)
    counts = np.bincount(draws, minlength=3) / len(draws)
    assert counts[0] == 0 and abs(counts[2] - 0.75) < 0.05
    from pongrl.errors import PongrlError

    for bad in ("1,2", "1,x,2", "0,0,0", "1,-1,2"):
        with pytest.raises(PongrlError):
            make_config("selfplay", opponent_agents=",".join(specs), opponent_weights=bad, agent_fraction=1.0)
    with pytest.raises(PongrlError, match="fixed in an exploit run"):
        exploit_config(specs[0], 100, opponent_weights="1")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The test's cluster and driver agree on no token authentication: `ray start` turns it on whenever a token lies in
# ~/.ray (a local ray.init() leaves one), and the test must not depend on what earlier use of Ray left there.
RAY_ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


@pytest.fixture
def ray_cluster():
    """A local Ray cluster of 2 CPUs, started for the test with Ray's own command line (`ray start --head --block`,
    in a session of its own so that stopping it stops only what it started)."""
    if os.environ.get("PONGRL_REQUIRE_RAY") != "1":  # CI installs pongrl[ray] and sets it: there, never skipped
        pytest.importorskip("ray")
    import tempfile

    port = _free_port()
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    head = subprocess.Popen(
        [
            os.path.join(os.path.dirname(sys.executable), "ray"),
            "start",
            "--head",
            "--block",
            "--num-cpus",
            "2",
            "--port",
            str(port),
            "--include-dashboard",
            "false",
            "--temp-dir",
            temp_dir,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=RAY_ENV,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)
    else:
        os.killpg(head.pid, signal.SIGKILL)
        pytest.fail("the Ray head did not start")
    yield f"127.0.0.1:{port}"
    os.killpg(head.pid, signal.SIGTERM)
    try:
        head.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)


def test_a_league_on_a_ray_cluster_redoes_a_job_whose_worker_was_killed(tmp_path, ray_cluster):
    league = tmp_path / "league"
    flags = tiny_flags(tmp_path, rounds=1)
    flags[flags.index("--main-steps") + 1] = "1024"
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pongrl",
            "train",
            "league",
            str(league),
            *flags,
            "--workers",
            "2",
            "--ray",
            ray_cluster,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=RAY_ENV,
    )
    running = league / "jobs" / "r001-main" / "running.json"
    deadline = time.time() + 600
    while time.time() < deadline and not running.exists() and driver.poll() is None:
        time.sleep(0.2)
    if not running.exists():
        driver.kill()
        out, err = driver.communicate()
        pytest.fail(f"the main's training never started on the cluster: {out[-1000:]} {err[-2000:]}")
    time.sleep(2)
    os.kill(json.load(open(running))["pid"], signal.SIGKILL)  # the Ray worker running the job
    out, err = driver.communicate(timeout=400)
    assert driver.returncode == 0, err[-2000:]
    assert "r001-main failed" in out and "trying it once more" in out
    check_complete(league, 1)
