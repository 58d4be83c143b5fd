"""The command line end to end on the real emulator: train, resume, eval, video, plot, bad input."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from pongrl.cli import main
from pongrl.media import curve_series
from pongrl.run import read_metrics

from cli_helpers import run, small_dqn

SMALL = small_dqn(num_envs=2)


def metric_steps(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as handle:
        return [int(row["env_step"]) for row in csv.DictReader(handle)]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    run_dir = str(tmp_path_factory.mktemp("runs") / "dqn")
    assert (
        main(
            [
                "train",
                "dqn",
                "--run-dir",
                run_dir,
                "--total-steps",
                "400",
                *SMALL,
                "--eval-every",
                "400",
                "--eval-episodes",
                "1",
            ]
        )
        == 0
    )
    return run_dir


def test_train_writes_a_complete_run(trained_run):
    names = os.listdir(trained_run)
    assert {"config.yaml", "metrics.csv", "checkpoints"} <= set(names)
    assert any(n.startswith("events.out.tfevents") for n in names)
    assert metric_steps(trained_run) == [100, 200, 300, 400]
    checkpoints = os.listdir(os.path.join(trained_run, "checkpoints"))
    assert "latest" in checkpoints and "step_000000000400.pt" in checkpoints
    assert "replay_step_000000000400.npz" in checkpoints


def test_periodic_evaluation_lands_in_metrics(trained_run):
    with open(os.path.join(trained_run, "metrics.csv")) as handle:
        rows = {int(r["env_step"]): r for r in csv.DictReader(handle)}
    assert -21 <= float(rows[400]["eval_mean_return"]) <= 21
    assert rows[300]["eval_mean_return"] == ""
    # the phase clock: evaluation time lands in the row of the evaluation and nowhere else
    assert float(rows[400]["eval_seconds"]) > 0 and float(rows[300]["eval_seconds"]) == 0
    assert float(rows[400]["update_seconds"]) > 0 and float(rows[400]["env_seconds"]) > 0


def test_a_dqn_run_branches_with_its_replay_memory_and_a_new_learning_rate(trained_run, tmp_path, capsys):
    branch = str(tmp_path / "branch")
    assert main(["branch", trained_run, "--run-dir", branch, "--extra-steps", "100", "--learning-rate", "5e-5"]) == 0
    assert "learning_rate: 5.0e-05" in open(os.path.join(branch, "config.yaml")).read()
    assert metric_steps(branch) == [100, 200, 300, 400, 500]
    assert "replay_step_000000000500.npz" in os.listdir(os.path.join(branch, "checkpoints"))
    assert metric_steps(trained_run) == [100, 200, 300, 400]  # the parent keeps its curve and its replay memory
    assert "replay_step_000000000400.npz" in os.listdir(os.path.join(trained_run, "checkpoints"))
    capsys.readouterr()
    assert main(["branch", trained_run, "--run-dir", str(tmp_path / "b2"), "--ent-coef", "0.1"]) == 1
    assert capsys.readouterr().err == "pongrl: error: --ent-coef is not a setting of a dqn run\n"


def test_sigterm_writes_a_checkpoint_and_exits_cleanly(tmp_path):
    run_dir = str(tmp_path / "run")
    process = subprocess.Popen(
        [sys.executable, "-m", "pongrl", "train", "dqn", "--run-dir", run_dir, "--total-steps", "1000000", *SMALL],
        stderr=subprocess.PIPE,
        text=True,
    )
    metrics = os.path.join(run_dir, "metrics.csv")
    deadline = time.time() + 600
    while time.time() < deadline and not (os.path.exists(metrics) and len(open(metrics).readlines()) >= 3):
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "pongrl resume" in err
    from pongrl.checkpoint import load_checkpoint

    payload = load_checkpoint(run_dir)
    assert payload["env_step"] > 0
    assert payload["env_step"] >= metric_steps(run_dir)[-1], "the checkpoint is at least as new as the metrics"


def test_resume_continues_metrics_without_gap_or_duplicate(trained_run, capsys):
    code, _, err = run(["resume", trained_run, "--extra-steps", "200"], capsys)
    assert code == 0, err
    assert metric_steps(trained_run) == [100, 200, 300, 400, 500, 600]
    with open(os.path.join(trained_run, "metrics.csv")) as handle:
        rows = list(csv.DictReader(handle))
    episodes = [int(r["episodes"]) for r in rows]
    assert episodes == sorted(episodes), "counters continue rather than restart"
    seconds = [float(r["wall_seconds"]) for r in rows]
    assert seconds == sorted(seconds), "wall-clock time is spliced on"


def test_resume_from_an_older_checkpoint_drops_the_later_rows(tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    assert main(["train", "dqn", "--run-dir", run_dir, "--total-steps", "400", "--keep-checkpoints", "5", *SMALL]) == 0
    checkpoint = os.path.join(run_dir, "checkpoints", "step_000000000200.pt")
    code, _, err = run(["resume", run_dir, "--checkpoint", checkpoint, "--total-steps", "300"], capsys)
    assert code == 0, err
    assert metric_steps(run_dir) == [100, 200, 300]


def test_resuming_a_run_to_the_total_it_reached_says_it_is_complete_and_writes_nothing(tmp_path, capsys):
    # A script that resumes to the same total until it succeeds must stop once the run got there.
    from pongrl import Run

    run_dir = str(tmp_path / "run")
    assert main(["train", "dqn", "--run-dir", run_dir, "--total-steps", "200", *SMALL]) == 0
    capsys.readouterr()

    def files():
        found = {}
        for folder, _, names in os.walk(run_dir):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    found[path] = (os.stat(path).st_mtime_ns, handle.read())
        return found

    before = files()
    checkpoint = os.path.join(run_dir, "checkpoints", "step_000000000200.pt")
    code, out, err = run(["resume", run_dir, "--total-steps", "200"], capsys)
    assert code == 0, err
    assert err == f"pongrl: {run_dir} is complete: step 200, checkpoint {checkpoint}; nothing to train\n"
    assert files() == before
    complete = Run(run_dir).resume(total_steps=200)
    assert (complete.outcome.step, complete.outcome.checkpoint, complete.outcome.finished) == (200, checkpoint, True)
    assert complete.run_dir == run_dir and files() == before
    code, _, err = run(["resume", run_dir, "--total-steps", "100"], capsys)  # fewer steps than done
    assert code == 1 and "the checkpoint is at step 200" in err
    assert files() == before


def test_eval_plays_whole_games(trained_run, capsys):
    threads_before = torch.get_num_threads()
    torch.set_num_threads(2)  # not what the flag asks, so that the assertion below can fail
    try:
        code, out, err = run(["eval", trained_run, "--episodes", "1", "--json", "--torch-threads", "1"], capsys)
        assert torch.get_num_threads() == 1  # the flag reached torch (eval shares a machine with training runs)
    finally:
        torch.set_num_threads(threads_before)
    assert code == 0, err
    result = json.loads(out)
    game = result["per_game"][0]
    assert result["games"] == 1
    assert max(game["points_won"], game["points_lost"]) == 21 or game["truncated"]
    assert -21 <= result["mean"] <= 21


def test_video_and_plot(trained_run, tmp_path, capsys):
    out = str(tmp_path / "play.mp4")
    code, _, err = run(["video", trained_run, "--out", out, "--frames", "120"], capsys)
    assert code == 0, err
    import imageio.v3 as iio

    frames = iio.imread(out)
    assert frames.shape[0] == 120 and frames.shape[2:] == (320, 3)  # scale 2, names under the screen
    assert frames.shape[1] > 420
    gif = str(tmp_path / "play.gif")
    assert run(["video", trained_run, "--out", gif, "--frames", "40", "--scale", "1"], capsys)[0] == 0
    gif_frames = iio.imread(gif)  # 30 fps: every second frame; GIF merges identical neighbours
    assert 1 <= gif_frames.shape[0] <= 20 and gif_frames.shape[2] == 160
    png = str(tmp_path / "curves.png")
    code, _, err = run(["plot", trained_run, trained_run, "--out", png], capsys)
    assert code == 0, err
    assert open(png, "rb").read(4) == b"\x89PNG"
    series = curve_series(read_metrics(trained_run), self_play=False)
    assert series["loss_name"] == "TD loss" and series["train_return"] is not None


def test_train_refuses_an_existing_run_unless_forced(trained_run, capsys):
    before = open(os.path.join(trained_run, "metrics.csv")).read()
    code, _, err = run(["train", "dqn", "--run-dir", trained_run, "--total-steps", "100"], capsys)
    assert code == 1 and "already holds a run" in err
    assert open(os.path.join(trained_run, "metrics.csv")).read() == before


@pytest.mark.parametrize(
    "args, message",
    [
        (["fly"], "invalid choice"),
        (["train", "dqn", "--no-such-flag"], "unrecognized arguments"),
        (["train", "dqn", "--total-steps", "0"], "positive integer"),
        (["train", "dqn", "--total-steps", "-5"], "positive integer"),
        (["train", "dqn", "--learning-rate", "abc"], "expected a number"),
        (["train", "dqn", "--gamma", "1.5", "--run-dir", "/nonexistent-dir/x"], "gamma"),
        (["train", "ppo", "--torch-threads", "5000", "--run-dir", "/nonexistent-dir/x"], "at most 1024"),
        (["train", "dqn", "--network", "huge", "--run-dir", "/nonexistent-dir/x"], "--network must be one of"),
        (
            ["train", "selfplay", "--game-mode", "5", "--run-dir", "/nonexistent-dir/x"],
            "--game-mode must be one of 3, 4",
        ),
        (["train", "ppo", "--game-mode", "3", "--run-dir", "/nonexistent-dir/x"], "--game-mode is for self-play only"),
        (["resume", "/nonexistent-run"], "no such run directory"),
        (["eval", "/nonexistent.pt"], "no such file"),
        (["eval", "/nonexistent.pt", "--episodes", "0"], "positive integer"),
        (["duel", "builtin", "builtin", "--torch-threads", "0"], "positive integer"),
        (["video", "/nonexistent.pt", "--torch-threads", "5000"], "at most 1024"),
        (["video", "/nonexistent.pt"], "no such file"),
        (["plot", "/nonexistent-run"], "no metrics.csv"),
    ],
)
def test_bad_input_gets_one_line_and_a_nonzero_exit(args, message, capsys):
    code, _, err = run(args, capsys)
    assert code in (1, 2)
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_corrupt_and_mismatched_checkpoints_are_refused(trained_run, tmp_path, capsys):
    bad = tmp_path / "broken.pt"
    bad.write_bytes(open(os.path.join(trained_run, "checkpoints", "step_000000000400.pt"), "rb").read()[:5000])
    code, _, err = run(["eval", str(bad)], capsys)
    assert code == 1 and "not a readable pongrl checkpoint" in err
    other = str(tmp_path / "other")
    assert main(["train", "dqn", "--run-dir", other, "--total-steps", "200", *SMALL, "--seed", "7"]) == 0
    foreign = os.path.join(trained_run, "checkpoints", "step_000000000400.pt")
    code, _, err = run(["resume", other, "--checkpoint", foreign, "--extra-steps", "10"], capsys)
    assert code == 1 and "not a checkpoint of run" in err
    # a checkpoint copied in from another run is refused by its config
    import shutil

    for suffix in (".pt", ".json"):
        shutil.copy(foreign[:-3] + suffix, os.path.join(other, "checkpoints", "step_000000000999" + suffix))
    open(os.path.join(other, "checkpoints", "latest"), "w").write("step_000000000999\n")
    code, _, err = run(["resume", other, "--extra-steps", "10"], capsys)
    assert code == 1 and "does not match" in err


def test_console_script_reports_errors_without_a_traceback(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pongrl", "eval", str(tmp_path / "missing")], capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stderr.startswith("pongrl: error:") and "Traceback" not in result.stderr


def test_dqn_with_the_small_network_trains_resumes_and_plays(tmp_path, capsys):
    run_dir = str(tmp_path / "dqn-small")
    assert main(["train", "dqn", "--network", "small", "--run-dir", run_dir, "--total-steps", "200", *SMALL]) == 0
    assert main(["resume", run_dir, "--extra-steps", "100"]) == 0
    assert metric_steps(run_dir) == [100, 200, 300]
    capsys.readouterr()
    assert main(["eval", run_dir, "--episodes", "1", "--json"]) == 0
    assert '"games": 1' in capsys.readouterr().out
    # the run's network is part of the experiment: resume has no flag to switch it
    with pytest.raises(SystemExit) as exit_info:
        main(["resume", run_dir, "--extra-steps", "100", "--network", "nature"])
    assert exit_info.value.code == 2


def test_dqn_with_prioritized_replay_trains_and_resumes_with_its_priorities(tmp_path):
    run_dir = str(tmp_path / "dqn-per")
    assert main(["train", "dqn", "--prioritized-replay", "--run-dir", run_dir, "--total-steps", "200", *SMALL]) == 0
    with np.load(os.path.join(run_dir, "checkpoints", "replay_step_000000000200.npz")) as saved:
        priorities, max_priority = saved["priorities"], saved["max_priority"][0]
    drawn = priorities[(priorities > 0) & (priorities != 1.0)]
    assert len(drawn) > 0, "gradient steps replaced the initial priority of the transitions they drew"
    assert max_priority >= 1.0 and priorities.max() <= max_priority**0.5 + 1e-12  # stored as p^alpha, alpha 0.5
    assert main(["resume", run_dir, "--extra-steps", "100"]) == 0
    assert metric_steps(run_dir) == [100, 200, 300]


def test_resume_may_change_where_and_how_a_run_runs_and_nothing_else(tmp_path, capsys):
    run_dir = str(tmp_path / "dqn")
    assert main(["train", "dqn", "--run-dir", run_dir, "--total-steps", "100", *SMALL]) == 0
    assert main(["resume", run_dir, "--extra-steps", "100", "--torch-threads", "2", "--on-disk-error", "continue"]) == 0
    with open(os.path.join(run_dir, "config.yaml")) as handle:
        saved = handle.read()
    assert "torch_threads: 2" in saved and "on_disk_error: continue" in saved
    capsys.readouterr()
    assert main(["resume", run_dir, "--extra-steps", "100", "--on-disk-error", "sometimes"]) == 1
    assert "--on-disk-error must be one of" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # an experiment setting is not a resume flag
        main(["resume", run_dir, "--extra-steps", "100", "--learning-rate", "0.1"])


def test_resume_may_change_how_often_the_run_is_evaluated(tmp_path, capsys):
    run_dir = str(tmp_path / "dqn")
    assert main(["train", "dqn", "--run-dir", run_dir, "--total-steps", "200", *SMALL]) == 0  # no evaluation
    assert main(["resume", run_dir, "--extra-steps", "200", "--eval-every", "400", "--eval-episodes", "1"]) == 0
    with open(os.path.join(run_dir, "metrics.csv")) as handle:
        rows = {int(r["env_step"]): r for r in csv.DictReader(handle)}
    assert sorted(rows) == [100, 200, 300, 400]
    assert [rows[s]["eval_mean_return"] for s in (100, 200, 300)] == ["", "", ""]
    assert -21 <= float(rows[400]["eval_mean_return"]) <= 21
    saved = open(os.path.join(run_dir, "config.yaml")).read()
    assert "eval_every: 400" in saved and "eval_episodes: 1" in saved
    # and the run resumes again under its new settings, with no flag repeated
    assert main(["resume", run_dir, "--extra-steps", "100"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        main(["resume", run_dir, "--extra-steps", "100", "--eval-episodes", "0"])
    assert refused.value.code == 2 and "--eval-episodes: expected a positive integer" in capsys.readouterr().err


def test_eval_every_start_plays_one_greedy_game_per_start(trained_run, capsys, monkeypatch):
    import pongrl.evaluation

    monkeypatch.setattr(pongrl.evaluation, "NOOP_MAX", 2)  # three starts instead of 31, to stay short
    code, out, err = run(["eval", trained_run, "--every-start", "--json", "--torch-threads", "1"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["every_start"] and result["games"] == 3
    assert [game["start_noop_frames"] for game in result["per_game"]] == [0, 1, 2]
    # Another emulator seed replays the very same games: the start alone fixes each one.
    code, out, err = run(["eval", trained_run, "--every-start", "--seed", "9", "--torch-threads", "1"], capsys)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == ["start  0", "start  1", "start  2"]
    replayed = [(int(line.split("score")[1].split()[0]), int(line.split()[-2])) for line in lines[:3]]
    assert replayed == [(game["score"], game["length"]) for game in result["per_game"]]
    assert f"mean score {result['mean']:+.2f} over all 3 starts" in lines[-1]


@pytest.mark.parametrize(
    "extra",
    [["--episodes", "5"], ["--sample"], ["--epsilon", "0.1"], ["--opponent", "x.pt"], ["--sticky-actions", "0.25"]],
)
def test_eval_every_start_refuses_random_play_and_other_opponents(trained_run, capsys, extra):
    code, out, err = run(["eval", trained_run, "--every-start", *extra], capsys)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "--every-start" in err and extra[0] in err


def test_eval_with_sticky_actions_says_so_greedy_and_sampled(trained_run, capsys):
    code, out, err = run(
        ["eval", trained_run, "--episodes", "1", "--sticky-actions", "0.25", "--json", "--torch-threads", "1"], capsys
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["sticky_actions"] == 0.25 and result["games"] == 1
    code, out, err = run(
        ["eval", trained_run, "--episodes", "1", "--sticky-actions", "0.25", "--sample", "--torch-threads", "1"], capsys
    )
    assert code == 0, err
    assert out.strip().splitlines()[-1].endswith("sticky actions 0.25")


@pytest.mark.parametrize(
    "command, code, message",
    [
        (["eval", "RUN", "--sticky-actions", "1"], 1, "sticky-action probability must be in [0, 1)"),
        (["eval", "RUN", "--sticky-actions", "-0.1"], 1, "sticky-action probability must be in [0, 1)"),
        (["eval", "RUN", "--sticky-actions", "often"], 2, "expected a number"),
        (["duel", "RUN", "RUN", "--sticky-actions", "1"], 1, "sticky-action probability must be in [0, 1)"),
    ],
)
def test_sticky_actions_refuse_bad_input_in_one_line(trained_run, capsys, command, code, message):
    returned, out, err = run([trained_run if word == "RUN" else word for word in command], capsys)
    assert returned == code and out == ""
    assert err.count("\n") == 1 and message in err


def test_commands_print_pongrl_lines_only_not_the_emulators_banner(tmp_path):
    # The emulators print a banner from C++ on the process's stdout when one is created: only a real
    # process shows it. A video against the built-in AI (the Python single-player emulator) and a duel
    # on the two-player emulator.
    for command in (
        ["video", "zoo:selfplay", "--out", str(tmp_path / "x.gif"), "--frames", "100"],
        ["duel", "zoo:selfplay", "zoo:selfplay-separate", "--games", "1", "--max-frames", "200"],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "pongrl", *command, "--torch-threads", "1"], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        assert "A.L.E" not in result.stdout + result.stderr and "Stella" not in result.stdout + result.stderr


def test_training_under_sticky_actions_is_saved_kept_by_resume_and_changed_only_by_branch(tmp_path, capsys):
    run_dir = str(tmp_path / "sticky")
    assert main(["train", "dqn", "--run-dir", run_dir, "--total-steps", "200", *SMALL, "--sticky-actions", "0.25"]) == 0
    with open(os.path.join(run_dir, "config.yaml")) as handle:
        assert "sticky_actions: 0.25" in handle.read()
    code, _, err = run(["resume", run_dir, "--extra-steps", "100", "--sticky-actions", "0"], capsys)
    assert code == 2 and "--sticky-actions" in err, "the protocol is the experiment's: resume cannot change it"
    assert main(["resume", run_dir, "--extra-steps", "100"]) == 0
    with open(os.path.join(run_dir, "config.yaml")) as handle:
        assert "sticky_actions: 0.25" in handle.read()
    branch = str(tmp_path / "exact")
    assert main(["branch", run_dir, "--run-dir", branch, "--extra-steps", "100", "--sticky-actions", "0"]) == 0
    with open(os.path.join(branch, "config.yaml")) as handle:
        assert "sticky_actions: 0.0" in handle.read()


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "dqn", "--sticky-actions", "1"], "--sticky-actions must be in [0, 1), got 1.0"),
        (["train", "ppo", "--sticky-actions", "-0.5"], "--sticky-actions must be in [0, 1), got -0.5"),
        (["train", "dqn", "--sticky-actions", "sometimes"], "expected a number"),
        (["train", "selfplay", "--builtin-fraction", "1.5"], "--builtin-fraction must be in [0, 1], got 1.5"),
        (["train", "selfplay", "--builtin-fraction", "-0.1"], "--builtin-fraction must be in [0, 1], got -0.1"),
        (["train", "ppo", "--builtin-fraction", "0.5"], "--builtin-fraction is for self-play only"),
        (["train", "selfplay", "--sticky-actions", "0.25", "--env", "reference"], "--sticky-actions needs --env fast"),
    ],
)
def test_training_refuses_sticky_and_builtin_fractions_it_cannot_use(tmp_path, capsys, args, message):
    run_dir = tmp_path / "never"
    code, _, err = run([*args, "--run-dir", str(run_dir)], capsys)
    assert code in (1, 2) and message in err and err.count("\n") == 1
    assert not run_dir.exists(), "nothing is written"


def test_eval_reports_both_protocols_with_distinct_games_and_an_interval(trained_run, capsys):
    code, out, err = run(
        ["eval", trained_run, "--protocols", "--episodes", "4", "--json", "--torch-threads", "1"], capsys
    )
    assert code == 0, err
    result = json.loads(out)
    exact, sticky = result["exact"], result["sticky"]
    assert exact["games"] == 31 and 1 <= exact["distinct_games"] <= 31
    assert sticky["games"] == 4 and sticky["probability"] == 0.25
    low, high = sticky["ci95"]
    assert low <= sticky["mean"] <= high
    code, out, err = run(["eval", trained_run, "--protocols", "--episodes", "4", "--torch-threads", "1"], capsys)
    assert code == 0 and "exact protocol:" in out and "distinct games" in out and "95% interval" in out
    code, out, err = run(["eval", trained_run, "--protocols", "--sticky-actions", "0.25"], capsys)
    assert code == 1 and "--protocols" in err and err.count("\n") == 1


def test_summaries_count_distinct_games_and_give_an_interval_that_can_miss():
    from pongrl.evaluation import summarize

    games = [{"score": s, "fingerprint": f} for s, f in ((10, "a"), (12, "b"), (10, "a"), (14, "c"))]
    summary = summarize(games)
    assert summary["distinct_games"] == 3
    low, high = summary["ci95"]
    assert low < 11.5 < high
    assert high - low == pytest.approx(2 * 3.182446 * np.std([10, 12, 10, 14], ddof=1) / 2, rel=1e-5)
    assert summarize(games[:1])["ci95"] is None


def test_a_games_course_ignores_its_opening_and_tells_other_games_apart():
    from pongrl.evaluation import describe_protocols
    from pongrl.runner import game_course

    game = [(40, 1), (140, 1), (260, -1), (300, 1)]
    shifted = [(step + 7, sign) for step, sign in game]  # the same game after a longer no-op start
    assert game_course(game) == game_course(shifted)
    assert game_course(game) != game_course([(40, 1), (140, 1), (261, -1), (301, 1)])
    assert game_course(game) != game_course([(40, 1), (140, -1), (260, -1), (300, 1)])
    one_game = {
        "exact": {"mean": 21.0, "games": 31, "scores": [21] * 31, "distinct_games": 4},
        "sticky": {"mean": 15.0, "games": 1, "ci95": None, "probability": 0.25, "seed": 0},
    }
    assert "no interval from one game" in describe_protocols(one_game)[1]
