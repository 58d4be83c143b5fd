"""`pongrl probe`: the RAM ground truth against the screen, the probes on planted signals, the split by
game, and bad input."""

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

from pongrl.envs.single import PongGame
from pongrl.errors import PongrlError
from pongrl.probes.collect import GAMES_FOLDER, SETTINGS_FILE, _write_game, collect, game_files
from pongrl.probes.fit import ProbeData, fit, split_games, write_results
from pongrl.probes.labels import LABELS, read_labels

from cli_helpers import run, small_dqn

BALL_COLOUR = (236, 236, 236)
PLAYFIELD_ROWS = slice(34, 194)  # between the walls, which are drawn in the ball's colour


def test_ram_labels_agree_with_the_screen_and_the_score():
    game = PongGame(0, noop_max=0)
    game.reset(0)
    rng = np.random.default_rng(0)
    seen, previous = [], None
    points = {"player": 0, "enemy": 0}
    for _ in range(800):
        _, reward, terminated, _ = game.step(int(rng.integers(0, 6)))
        ram = game.ale.getRAM().copy()
        labels = read_labels(ram, previous)
        points["player" if reward > 0 else "enemy"] += reward != 0
        assert (labels["player_score"], labels["enemy_score"]) == (points["player"], points["enemy"])
        ys, xs = np.nonzero(np.all(game.rgb()[PLAYFIELD_ROWS] == BALL_COLOUR, axis=2))
        assert labels["ball_in_play"] == (labels["ball_y"] != 0)
        if labels["ball_in_play"] and len(xs):
            seen.append((labels["ball_x"], labels["ball_y"], xs.min(), ys.min() + PLAYFIELD_ROWS.start))
        if labels["ball_vx"]:
            assert labels["ball_toward_player"] == (labels["ball_vx"] > 0)
        previous = ram
    assert sum(points.values()) >= 3 and len(seen) > 200
    seen = np.array(seen, float)
    # The ball is drawn where its RAM bytes say, through one affine map per axis (x exactly).
    for ram_column, screen_column, tolerance in ((0, 2, 0.0), (1, 3, 2.5)):
        design = np.c_[seen[:, ram_column], np.ones(len(seen))]
        coefficients, *_ = np.linalg.lstsq(design, seen[:, screen_column], rcond=None)
        residuals = np.abs(design @ coefficients - seen[:, screen_column])
        assert abs(coefficients[0] - 1) < 0.01 and residuals.max() <= tolerance + 1e-9, (coefficients, residuals.max())


def test_the_left_paddles_labels_are_the_mirror_of_the_right_ones():
    # Two-player Pong with random actions: from the left, the paddles and scores swap, the ball's x is
    # where the mirrored screen draws it, and its horizontal motion turns around.
    from pongrl.envs.two_player import LEFT, RIGHT, TwoPlayerGames

    game = TwoPlayerGames(1, autoreset=False, profiles=("standard",), serve_assist=True)
    game.reset()
    rng = np.random.default_rng(1)
    previous, drawn, toward = None, 0, {True: 0, False: 0}
    for _ in range(700):
        game.play_step(np.array([[rng.integers(0, 6), rng.integers(0, 6)]]))
        ram = game.ram(0)
        right, left = read_labels(ram, previous), read_labels(ram, previous, mirrored=True)
        assert (left["player_y"], left["enemy_y"]) == (right["enemy_y"], right["player_y"])
        assert (left["player_score"], left["enemy_score"]) == (game.points[0, LEFT], game.points[0, RIGHT])
        assert (right["player_score"], right["enemy_score"]) == (game.points[0, RIGHT], game.points[0, LEFT])
        assert left["ball_y"] == right["ball_y"] and left["ball_vx"] == -right["ball_vx"]
        if right["ball_vx"]:
            assert left["ball_toward_player"] != right["ball_toward_player"]
            toward[bool(left["ball_toward_player"])] += 1
        mirrored_screen = game.screen(0)[PLAYFIELD_ROWS, ::-1]
        _, xs = np.nonzero(np.all(mirrored_screen == BALL_COLOUR, axis=2))
        if left["ball_in_play"] and len(xs):
            assert xs.min() == left["ball_x"] - 49, (xs.min(), left["ball_x"])  # the right side's affine map
            drawn += 1
        previous = ram
    assert drawn > 200 and min(toward.values()) > 20 and sum(game.points[0]) >= 2


def test_collect_against_an_agent_from_the_left_records_mirrored_labels_and_a_twin_per_architecture(tmp_path, capsys):
    from pongrl.agent import save_safetensors_agent
    from pongrl.nets import ActorCritic, QNetwork

    import h5py

    dqn, selfplay = str(tmp_path / "dqn.safetensors"), str(tmp_path / "selfplay.safetensors")
    save_safetensors_agent(dqn, QNetwork(6).state_dict(), "dqn", 0, "standard")
    save_safetensors_agent(
        selfplay, ActorCritic(6, share_network=True, network="small").state_dict(), "selfplay", 0, "seed"
    )
    out = str(tmp_path / "collect")
    code, _, err = run(
        ["probe", "collect", selfplay, dqn, "--opponent", dqn, "--side", "left", "--frames", "120", "--out", out],
        capsys,
    )
    assert code == 0, err
    settings = json.load(open(os.path.join(out, SETTINGS_FILE)))
    assert settings["side"] == "left" and settings["opponent"]["name"] == "dqn.safetensors"
    assert [agent["name"] for agent in settings["agents"]][2:] == [
        "random-init (actor-critic-small-shared-seed)",
        "random-init (q-nature)",
    ]
    with h5py.File(game_files(out)[0], "r") as game:
        assert sorted(game["agents"].keys()) == ["0", "1", "2", "3"]
        assert game["agents/0/conv2"].shape == (120, 1024) and game["agents/1/fc"].shape == (120, 512)
        ball_x, in_play = game["labels/ball_x"][...], game["labels/ball_in_play"][...]
        assert (game["labels/player_x"][...] == 64).all()  # the left paddle's x byte: the agent's own paddle
    assert in_play.any() and (ball_x[in_play == 1] > 0).all()
    code, _, err = run(
        ["probe", "collect", dqn, "--side", "left", "--frames", "10", "--out", str(tmp_path / "o")], capsys
    )
    assert code == 1 and "--opponent AGENT" in err and err.count("\n") == 1


def write_collect(folder, games):
    """A collect in pongrl's format of one agent, "planted": `games` lists each game's (labels, layers)."""
    os.makedirs(os.path.join(folder, GAMES_FOLDER))
    lengths = [len(next(iter(layers.values()))) for _, layers in games]
    settings = {
        "format": "pongrl-probe-1",
        "frames": sum(lengths),
        "agents": [{"spec": "planted", "name": "planted", "sha256": "", "env_step": 0, "obs_profile": "standard"}],
    }
    with open(os.path.join(folder, SETTINGS_FILE), "w") as handle:
        json.dump(settings, handle)
    for game, ((labels, layers), frames) in enumerate(zip(games, lengths)):
        path = os.path.join(folder, GAMES_FOLDER, f"game_{game:05d}.h5")
        _write_game(path, labels, np.arange(frames, dtype=np.int32), game, [layers])
    return folder


def planted_collect(folder, games=6, frames_per_game=300, seed=0, lengths=None):
    """A collect whose one agent has a layer that is a known linear function of ball_y (plus noise) and another
    that is noise alone; `lengths` gives each game's frames instead."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(1, 16))
    recorded = []
    for frames_per_game in lengths or [frames_per_game] * games:
        labels = {name: rng.integers(0, 200, frames_per_game) for name in LABELS}
        labels["ball_in_play"] = (labels["ball_y"] > 100).astype(np.int64)  # a class the layer carries linearly
        ball_y = labels["ball_y"].astype(np.float64)
        carries = (ball_y - 100)[:, None] / 50 @ mixing + 0.05 * rng.normal(size=(frames_per_game, 16))
        layers = {
            "carries_ball_y": carries.astype(np.float16),
            "noise": rng.normal(size=(frames_per_game, 16)).astype(np.float16),
        }
        recorded.append((labels, layers))
    return write_collect(folder, recorded)


def test_a_planted_signal_is_found_where_it_is_and_nowhere_else(tmp_path):
    folder = planted_collect(str(tmp_path / "planted"))
    rows, _ = fit(folder, labels=["ball_y", "player_y", "ball_in_play"], allow_small_test=True)
    r2 = {(row["layer"], row["label"]): row for row in rows if row["metric"] == "r2"}
    assert r2[("carries_ball_y", "ball_y")]["score"] > 0.95
    assert abs(r2[("carries_ball_y", "ball_y")]["control"]) < 0.1  # shuffled labels: chance
    assert r2[("carries_ball_y", "player_y")]["score"] < 0.1
    assert r2[("noise", "ball_y")]["score"] < 0.1
    f1 = {(row["layer"], row["label"]): row for row in rows if row["metric"] == "f1"}
    assert f1[("noise", "ball_y")]["score"] < 0.05 and f1[("noise", "ball_y")]["control"] < 0.05
    # The classifiers are fitted side by side (every label and its control at once): each still finds its own.
    assert f1[("carries_ball_y", "ball_in_play")]["score"] > 0.9
    assert f1[("carries_ball_y", "ball_in_play")]["control"] < 0.7
    assert f1[("noise", "ball_in_play")]["score"] < 0.7
    csv_path, md_path = write_results(rows, folder)
    assert "carries_ball_y" in open(md_path).read() and len(open(csv_path).readlines()) == len(rows) + 1


def test_the_split_is_by_whole_games(tmp_path):
    folder = planted_collect(str(tmp_path / "planted"), games=7)
    data = ProbeData(folder)
    train, test = split_games(data.frames_of)
    assert not set(train) & set(test) and sorted(train + test) == sorted(data.games) and len(test) == 1
    rows, _ = fit(folder, layers=["noise"], labels=["ball_x"], allow_small_test=True)
    frames = dict(zip(data.games, data.rows))
    assert rows[0]["test_frames"] == sum(frames[g] for g in test)
    assert rows[0]["train_frames"] == sum(frames[g] for g in train)
    with pytest.raises(PongrlError, match="at least two games"):
        split_games({3: 300})


def test_collect_records_every_layer_and_an_interrupted_collect_keeps_its_games(tmp_path, capsys):
    # A real collect: an untrained DQN network plays the built-in AI; Ctrl-C after two games keeps
    # them; fit says the collect was interrupted and fits them; collect again finishes the job.
    from pongrl.agent import save_safetensors_agent
    from pongrl.nets import QNetwork

    agent = str(tmp_path / "agent.safetensors")
    save_safetensors_agent(agent, QNetwork(6).state_dict(), "dqn", 0, "standard")
    out = str(tmp_path / "collect")
    command = [sys.executable, "-m", "pongrl", "probe", "collect", agent, "--frames", "100000", "--out", out]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 900  # two games take about a minute alone, many more on a machine full of other work
    while len(game_files(out)) < 2 and time.time() < deadline and process.poll() is None:
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=240)  # a loaded CI machine once needed over 60 s
    assert process.returncode == 130 and "Traceback" not in err, err
    kept = game_files(out)
    assert len(kept) >= 2 and not [n for n in os.listdir(os.path.join(out, GAMES_FOLDER)) if not n.startswith("game_")]

    import h5py

    with h5py.File(kept[0], "r") as game:
        assert sorted(game["agents"].keys()) == ["0", "1"]  # the agent and its random-init baseline
        assert sorted(game["agents/0"].keys()) == ["conv1", "conv2", "conv3", "fc", "input", "output"]
        assert game["agents/0/conv1"].shape[1] == 1024 and game["agents/0/fc"].shape[1] == 512
        assert sorted(game["labels"].keys()) == sorted(LABELS)
    code, _, err = run(
        ["probe", "fit", out, "--layers", "fc", "--labels", "ball_in_play", "ball_y", "--allow-small-test"], capsys
    )
    assert code == 0 and "interrupted collect" in err, err
    rows = open(os.path.join(out, "probes.csv")).read().splitlines()
    assert len(rows) == 1 + 2 * 3  # two agents x (ball_y's R^2, and both labels' F1)

    frames = ProbeData(out).frames + 50  # finish: one more game, cut at the frames asked for
    code, _, err = run(["probe", "collect", agent, "--frames", str(frames), "--out", out], capsys)
    assert code == 0, err
    data = ProbeData(out)
    assert data.complete and data.frames == frames and len(data.games) == len(kept) + 1


def test_probe_refuses_bad_input_in_one_line(tmp_path, capsys):
    not_agent = tmp_path / "not_an_agent.pt"
    not_agent.write_bytes(b"garbage")
    folder = planted_collect(str(tmp_path / "planted"))
    for args, says in (
        (
            ["probe", "collect", str(not_agent), "--frames", "10", "--out", str(tmp_path / "o")],
            "not a readable pongrl checkpoint",
        ),
        (["probe", "collect", "builtin", "--frames", "10", "--out", str(tmp_path / "o")], "builtin"),
        (["probe", "fit", folder, "--layers", "conv9"], "no layer 'conv9'"),
        (["probe", "fit", folder, "--labels", "ball_z"], "no label 'ball_z'"),
        (["probe", "fit", folder, "--agents", "nobody"], "no agent 'nobody'"),
        (["probe", "fit", folder, "--results", str(not_agent)], "not a folder"),
        (["probe", "fit", str(tmp_path / "nothing")], "not a probe collect"),
    ):
        code, out, err = run(args, capsys)
        assert code == 1 and says in err and err.count("\n") == 1, (args, err)
    assert sorted(os.listdir(os.path.join(folder, GAMES_FOLDER))) == [f"game_{g:05d}.h5" for g in range(6)]


def test_the_study_across_a_runs_checkpoints(tmp_path, capsys):
    # A tiny DQN run with three checkpoints: all three record the frames its last one plays, the probes
    # are fitted per checkpoint, and the chart draws them against env steps.
    from pongrl.cli import main

    run_dir = str(tmp_path / "dqn")
    flags = [*small_dqn(), "--log-every", "200", "--keep-checkpoints", "5"]
    assert main(["train", "dqn", "--run-dir", run_dir, "--total-steps", "600", *flags]) == 0
    out = str(tmp_path / "study")
    code, _, err = run(
        [
            "probe",
            "across",
            run_dir,
            "--out",
            out,
            "--frames",
            "1700",
            "--layers",
            "fc",
            "--labels",
            "ball_y",
            "ball_in_play",
            "--allow-small-test",
        ],
        capsys,
    )
    assert code == 0, err
    rows = list(csv.DictReader(open(os.path.join(out, "probes.csv"))))
    steps = sorted({int(row["env_step"]) for row in rows if row["agent"] != "random-init"})
    assert steps == [200, 400, 600]
    assert {row["agent"] for row in rows} == {"dqn@200", "dqn@400", "dqn@600", "random-init"}
    assert os.path.getsize(os.path.join(out, "probes.png")) > 10_000
    assert json.load(open(os.path.join(out, SETTINGS_FILE)))["sample"] is True  # the player samples unless --greedy
    code, _, err = run(["probe", "across", str(tmp_path / "nothing"), "--out", out], capsys)
    assert code == 1 and "not a run directory with checkpoints" in err

    # Then steered: every checkpoint plays the built-in AI with its fc's ball_y direction moved by -10 and +10
    # rows and a random direction of the same size; the steering response of each is drawn against env steps.
    steer = ["--intervene-layer", "fc", "--intervene-label", "ball_y", "--alpha", "-10", "10", "--games", "1"]
    steer = [*steer[:4], "--intervene-kind", "steer", "steer-pattern", *steer[4:]]
    study = ["probe", "across", run_dir, "--out", out, "--frames", "1700", "--layers", "fc", "--labels", "ball_y"]
    code, stdout, err = run([*study, "--allow-small-test", *steer], capsys)
    assert code == 0, err
    steered = list(csv.DictReader(open(os.path.join(out, "intervene.csv"))))
    # per checkpoint: the unperturbed games, then 2 kinds x 2 alphas x (probe, random)
    assert len(steered) == 3 * (1 + 2 * 2 * 2)
    assert sorted({int(row["env_step"]) for row in steered}) == [200, 400, 600]
    assert {row["agent"] for row in steered} == {"dqn@200", "dqn@400", "dqn@600"}
    assert stdout.count("paddle rows per unit") == 3 * 2 * 2  # a response per checkpoint, kind and direction
    assert os.path.getsize(os.path.join(out, "used.png")) > 10_000
    before = open(os.path.join(out, "intervene.csv")).read()
    # Run again: nothing is played twice; with other settings: refused in one line, the table kept.
    code, _, err = run([*study, "--allow-small-test", *steer], capsys)
    assert code == 0, err
    assert open(os.path.join(out, "intervene.csv")).read() == before
    code, _, err = run([*study, "--allow-small-test", *steer[:-1], "2"], capsys)
    assert code == 1 and "other settings" in err and err.count("\n") == 1, err
    assert open(os.path.join(out, "intervene.csv")).read() == before
    for bad, says in (
        (["--intervene-layer", "fc"], "go together"),
        ([*steer[:4], "--alpha", "5", "5"], "two different --alpha"),
        (["--intervene-layer", "conv9", "--intervene-label", "ball_y"], "no layer 'conv9'"),
    ):
        code, _, err = run([*study, "--allow-small-test", *bad], capsys)
        assert code == 1 and says in err and err.count("\n") == 1, (bad, err)


def steering_row(direction, kind, alpha, offset, low, high) -> dict:
    """One planted row of a study's intervene.csv: a checkpoint's condition and its paddle offset's interval."""
    return {
        "run": "r",
        "env_step": 100,
        "agent": "r@100",
        "layer": "fc",
        "label": "landing_y",
        "direction": direction,
        "kind": kind,
        "alpha": alpha,
        "probe_r2": 0.5,
        "edit_size": 0.01,
        "paddle_offset": offset,
        "paddle_offset_low": low,
        "paddle_offset_high": high,
    }


def test_the_steering_response_is_the_slope_of_the_paddle_over_alpha():
    # Offsets planted at 3 + 0.5 alpha for the probe's direction and flat for the random one: slopes 0.5 and 0,
    # each interval around it, from the conditions' own intervals.
    from pongrl.probes.across import steering_response

    def row(direction, alpha, offset, half):
        return steering_row(direction, "steer", alpha, offset, offset - half, offset + half)

    rows = [row("probe", a, 3 + 0.5 * a, 2.0) for a in (-20, -10, 10, 20)]
    rows += [row("random", a, 3.0, 2.0) for a in (-20, 20)]
    rows.append({**row("none", 0, 3.0, 1.0), "kind": "none"})
    probe, random = steering_response(rows)
    assert (probe["direction"], random["direction"]) == ("probe", "random")
    assert probe["response"] == pytest.approx(0.5) and random["response"] == pytest.approx(0.0)
    # slope half-width: sqrt(sum(c^2 h^2)) / sum(c^2), c the centred alphas
    assert probe["response_high"] - probe["response"] == pytest.approx(2.0 * np.sqrt(1000) / 1000)
    assert random["response_high"] - random["response"] == pytest.approx(2.0 * np.sqrt(800) / 800)


def test_the_study_across_a_shipped_series_and_hand_picked_checkpoints(tmp_path, capsys, monkeypatch):
    # A series in the zoo (two self-play networks with cards naming their series) plays; one checkpoint
    # file of a DQN run is drawn beside it; each architecture gets its untrained twin.
    from pongrl import zoo
    from pongrl.agent import save_safetensors_agent
    from pongrl.cli import main
    from pongrl.nets import ActorCritic

    monkeypatch.setattr(zoo, "FOLDER", str(tmp_path / "zoo"))
    os.makedirs(zoo.FOLDER)
    for step in (1000, 2000):
        torch.manual_seed(step)
        name = f"tiny-{step}"
        save_safetensors_agent(
            os.path.join(zoo.FOLDER, name + ".safetensors"),
            ActorCritic(6, share_network=True, network="small").state_dict(),
            "selfplay",
            step,
            "seed",
            torch.float16,
        )
        json.dump(
            {"name": name, "series": "tiny", "env_step": step}, open(os.path.join(zoo.FOLDER, name + ".json"), "w")
        )
    run_dir = str(tmp_path / "dqn")
    assert (
        main(
            [
                "train",
                "dqn",
                "--run-dir",
                run_dir,
                "--total-steps",
                "200",
                "--num-envs",
                "2",
                "--buffer-size",
                "2000",
                "--learning-starts",
                "100",
                "--batch-size",
                "8",
                "--log-every",
                "200",
                "--checkpoint-every",
                "200",
                "--eval-every",
                "0",
                "--torch-threads",
                "1",
            ]
        )
        == 0
    )
    checkpoint = os.path.join(run_dir, "checkpoints", "step_000000000200.pt")
    out = str(tmp_path / "study")
    code, _, err = run(
        [
            "probe",
            "across",
            "zoo:tiny-*",
            checkpoint,
            "--out",
            out,
            "--frames",
            "900",
            "--layers",
            "fc",
            "--labels",
            "ball_y",
            "ball_in_play",
            "--allow-small-test",
        ],
        capsys,
    )
    assert code == 0, err
    settings = json.load(open(os.path.join(out, SETTINGS_FILE)))
    assert [agent["name"] for agent in settings["agents"]] == [
        "zoo:tiny-2000",
        "zoo:tiny-1000",
        "dqn@200",
        "random-init (actor-critic-small-shared-seed)",
        "random-init (q-nature)",
    ]
    rows = list(csv.DictReader(open(os.path.join(out, "probes.csv"))))
    assert {row["agent"] for row in rows} == {agent["name"] for agent in settings["agents"]}
    assert os.path.getsize(os.path.join(out, "probes.png")) > 10_000


def test_agents_of_one_profile_share_their_input_layer(tmp_path):
    # Two DQN networks and their twin see the same pixels: collect stores the same input for all three
    # (projected once), and fit gives them the same input probes without fitting them again.
    from pongrl.agent import save_safetensors_agent
    from pongrl.nets import QNetwork

    import h5py

    paths = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        paths.append(str(tmp_path / f"agent{seed}.safetensors"))
        save_safetensors_agent(paths[-1], QNetwork(6).state_dict(), "dqn", seed, "standard")
    out = str(tmp_path / "collect")
    collect(paths, 900, out, seed=3)
    with h5py.File(game_files(out)[0], "r") as game:
        inputs = [game[f"agents/{index}/input"][...] for index in range(3)]
        assert not np.array_equal(game["agents/0/fc"][...], game["agents/1/fc"][...])
    assert all(np.array_equal(inputs[0], other) for other in inputs[1:])
    rows, _ = fit(out, layers=["input"], labels=["ball_y", "ball_in_play"], allow_small_test=True)
    by_agent = {}
    for row in rows:
        by_agent.setdefault(row["agent"], []).append((row["label"], row["metric"], row["score"], row["control"]))
    assert len(by_agent) == 3 and len({tuple(v) for v in by_agent.values()}) == 1


def test_fit_warns_when_a_test_game_repeats_a_train_game(tmp_path, capsys):
    import shutil

    folder = planted_collect(str(tmp_path / "planted"), games=5)
    code, _, err = run(
        ["probe", "fit", folder, "--layers", "noise", "--labels", "ball_y", "--allow-small-test"], capsys
    )
    assert code == 0 and "repeat" not in err
    train, test = split_games({game: 300 for game in range(5)})
    # Game `test[0]` becomes a copy of a train game (under its own game number).
    copy = os.path.join(folder, GAMES_FOLDER, f"game_{test[0]:05d}.h5")
    shutil.copy(os.path.join(folder, GAMES_FOLDER, f"game_{train[0]:05d}.h5"), copy)
    import h5py

    with h5py.File(copy, "r+") as data:
        data.attrs["game"] = test[0]
    code, _, err = run(
        ["probe", "fit", folder, "--layers", "noise", "--labels", "ball_y", "--allow-small-test"], capsys
    )
    assert code == 0 and f"1 test game(s) repeat a train game frame for frame ({test[0]})" in err


def test_a_partial_fit_can_write_its_results_elsewhere(tmp_path, capsys):
    # A study's full probes.csv took half an hour; a later fit of one agent's layer must not replace it.
    folder = planted_collect(str(tmp_path / "planted"))
    code, _, err = run(
        ["probe", "fit", folder, "--layers", "noise", "--labels", "ball_y", "--allow-small-test"], capsys
    )
    assert code == 0, err
    full = open(os.path.join(folder, "probes.csv")).read()
    results = str(tmp_path / "subset")
    code, _, err = run(
        [
            "probe",
            "fit",
            folder,
            "--agents",
            "planted",
            "--layers",
            "carries_ball_y",
            "--labels",
            "ball_y",
            "--results",
            results,
            "--allow-small-test",
        ],
        capsys,
    )
    assert code == 0, err
    rows = list(csv.DictReader(open(os.path.join(results, "probes.csv"))))
    assert {(row["agent"], row["layer"]) for row in rows} == {("planted", "carries_ball_y")}
    assert os.path.exists(os.path.join(results, "probes.md"))
    assert open(os.path.join(folder, "probes.csv")).read() == full


def test_a_collect_whose_last_game_is_cut_short_is_split_by_frames_and_a_tiny_test_is_refused(tmp_path, capsys):
    # Three games as `probe collect --frames 6000` gave them: two whole ones and the last cut at 35 frames.
    folder = planted_collect(str(tmp_path / "cut"), lengths=[2600, 3365, 35])
    data = ProbeData(folder)
    for seed in range(5):  # whatever the order, a test set of whole games as close to a fifth of the frames as can be
        train, test = split_games(data.frames_of, seed)
        assert sorted(train + test) == [0, 1, 2] and train
    code, out, err = run(["probe", "fit", folder, "--layers", "noise", "--labels", "ball_y"], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "under the floor of 1,000 frames in 2 games: collect about" in err and "--allow-small-test" in err
    assert not os.path.exists(os.path.join(folder, "probes.csv")), "nothing is written"
    code, out, err = run(
        ["probe", "fit", folder, "--layers", "noise", "--labels", "ball_y", "--allow-small-test"], capsys
    )
    assert code == 0, err
    rows = list(csv.DictReader(open(os.path.join(folder, "probes.csv"))))
    assert rows and all(row["small_test"] == "True" for row in rows)
    first = rows[0]
    said = (
        f"trained on {int(first['train_frames']):,} frames in {first['train_games']} game"
        f"{'' if first['train_games'] == '1' else 's'}, tested on {int(first['test_frames']):,} frames"
    )
    assert said in out and said in open(os.path.join(folder, "probes.md")).read() and "under the floor" in out

    # Ten games of unequal length: the test share is about a fifth of the frames, not of the games.
    lengths = [3000, 2800, 2600, 2400, 2200, 2000, 1800, 1600, 1400, 35]
    folder = planted_collect(str(tmp_path / "ten"), lengths=lengths)
    train, test = split_games(ProbeData(folder).frames_of)
    share = sum(lengths[game] for game in test) / sum(lengths)
    assert 0.12 < share < 0.28 and len(test) >= 2, (test, share)
    rows, _ = fit(folder, layers=["noise"], labels=["ball_y"])
    assert rows[0]["small_test"] is False and rows[0]["test_frames"] == sum(lengths[game] for game in test)


def test_predictive_labels_of_a_real_game_agree_with_the_screen_and_the_score():
    # zoo:dqn plays the built-in AI: it returns most balls, so the game has many landings and points.
    from pongrl.agent import load_agent
    from pongrl.probes.labels import UNDEFINED, predictive_labels

    agent = load_agent("zoo:dqn")
    game = PongGame(0)
    obs = game.reset(0)
    labels, screens, rewards, previous = {}, [], [], None
    for _ in range(900):
        ram = game.ale.getRAM().copy()
        for name, value in read_labels(ram, previous).items():
            labels.setdefault(name, []).append(value)
        screens.append(game.rgb()[PLAYFIELD_ROWS].copy())
        obs, reward, *_ = game.step(int(agent.act(obs[None])[0]))
        rewards.append(reward)
        previous = ram
    future = predictive_labels(labels)
    landings = sorted({t + future["steps_to_landing"][t] for t in range(900) if future["landing_y"][t] != UNDEFINED})
    assert len(landings) >= 8
    drawn = []
    for step in landings:
        ys, xs = np.nonzero(np.all(screens[step] == BALL_COLOUR, axis=2))
        assert xs.min() >= 132, (step, xs.min())  # at the right paddle's column (its left edge is column 140)
        drawn.append((labels["ball_y"][step], ys.min() + PLAYFIELD_ROWS.start))
        assert all(
            future["landing_y"][t] == labels["ball_y"][step]
            for t in range(900)
            if future["landing_y"][t] != UNDEFINED and t + future["steps_to_landing"][t] == step
        )
    drawn = np.array(drawn, float)
    slope, intercept = np.polyfit(drawn[:, 0], drawn[:, 1], 1)
    assert abs(slope - 1) < 0.05 and np.abs(drawn[:, 0] * slope + intercept - drawn[:, 1]).max() <= 2.5
    # The point's outcome is the sign of the next score change, for every step before it.
    points = [t for t, reward in enumerate(rewards) if reward]
    assert len(points) >= 3
    for t in range(900):
        following = [s for s in points if s >= t]
        if following:
            assert future["wins_point"][t] == int(rewards[following[0]] > 0), t
        else:
            assert future["wins_point"][t] == UNDEFINED


def test_a_predictive_label_is_probed_on_the_frames_that_hold_it(tmp_path):
    from pongrl.probes.labels import UNDEFINED

    rng = np.random.default_rng(0)
    mixing = rng.normal(size=(1, 16))
    recorded = []
    for _ in range(6):
        labels = {name: rng.integers(0, 200, 400) for name in LABELS}
        landing = labels["landing_y"].astype(np.float64)
        carries = (landing - 100)[:, None] / 50 @ mixing + 0.05 * rng.normal(size=(400, 16))
        labels["landing_y"][::3] = UNDEFINED  # a third of the frames hold no landing: the layer carries noise there
        carries[::3] = rng.normal(size=(len(carries[::3]), 16))
        recorded.append((labels, {"carries_landing": carries.astype(np.float16)}))
    folder = write_collect(str(tmp_path / "future"), recorded)
    rows, _ = fit(folder, labels=["landing_y", "wins_point"], allow_small_test=True)
    by_label = {row["label"]: row for row in rows}
    assert by_label["landing_y"]["metric"] == "r2" and by_label["landing_y"]["score"] > 0.9
    assert abs(by_label["landing_y"]["control"]) < 0.1 and by_label["wins_point"]["metric"] == "f1"


def test_the_balls_position_is_probed_on_in_play_frames(tmp_path):
    """A layer that holds the ball's height while it is in play and noise while it is out (its RAM byte then
    reads 0): R^2 on in-play frames finds it whole, where over all frames the jump to 0 would hide it."""
    from pongrl.probes.fit import _standardize, ridge_r2

    rng = np.random.default_rng(1)
    mixing = rng.normal(size=(1, 16))
    recorded = []
    for _ in range(6):
        labels = {name: rng.integers(0, 200, 400) for name in LABELS}
        in_play = rng.random(400) < 0.7
        labels["ball_in_play"] = in_play.astype(np.int64)
        labels["ball_y"] = np.where(in_play, rng.integers(40, 200, 400), 0)
        carries = (labels["ball_y"] - 120)[:, None] / 50 @ mixing + 0.05 * rng.normal(size=(400, 16))
        carries[~in_play] = 2 * rng.normal(size=((~in_play).sum(), 16))
        recorded.append((labels, {"carries_ball_y": carries.astype(np.float16)}))
    folder = write_collect(str(tmp_path / "in-play"), recorded)
    rows, data = fit(folder, labels=["ball_y"], allow_small_test=True)
    r2 = next(row for row in rows if row["metric"] == "r2")
    assert r2["score"] > 0.95 and abs(r2["control"]) < 0.1
    train, test = split_games(data.frames_of)
    x_train, x_test = _standardize(
        data.read("agents/0/carries_ball_y", train).astype(np.float32),
        data.read("agents/0/carries_ball_y", test).astype(np.float32),
    )
    y_train = data.read("labels/ball_y", train).astype(np.float64)[:, None]
    y_test = data.read("labels/ball_y", test).astype(np.float64)[:, None]
    assert ridge_r2(x_train, y_train, x_test, y_test)[0] < 0.6  # over all frames


def test_without_classifiers_of_scales_the_balls_labels_get_their_r2_alone():
    """`probe across` leaves out the classifiers of labels on a scale, the ball's in-play ones too."""
    from pongrl.probes.fit import probe_layer

    rng = np.random.default_rng(2)
    frames = 300
    x_train, x_test = rng.normal(size=(2, frames, 8)).astype(np.float32)

    def labels():
        in_play = rng.random(frames) < 0.7
        return {"ball_y": np.where(in_play, rng.integers(40, 200, frames), 0), "ball_in_play": in_play.astype(int)}

    rows = probe_layer(x_train, x_test, labels(), labels(), rng.permutation(frames), ["ball_y", "ball_in_play"], False)
    assert sorted((row["label"], row["metric"]) for row in rows) == [("ball_in_play", "f1"), ("ball_y", "r2")]


def test_the_pattern_is_how_the_layer_moves_with_the_label_where_the_probe_reads_a_quiet_unit(tmp_path):
    # Seven loud units carry ball_y under noise, an eighth carries it exactly but 50 times more quietly: the
    # probe (a standardized ridge) reads the quiet unit, the pattern (Cov(h, y) / Var(y)) is the loud units'
    # mixing, per row of ball_y: what the layer does when the ball moves.
    from pongrl.probes.directions import fit_direction

    rng = np.random.default_rng(1)
    mixing = np.append(rng.normal(size=7), 0.02)  # per 50 rows of ball_y
    recorded = []
    for _ in range(6):
        labels = {name: rng.integers(0, 200, 400) for name in LABELS}
        labels["ball_in_play"] = np.ones(400, np.int64)
        signal = (labels["ball_y"].astype(np.float64) - 100)[:, None] / 50 @ mixing[None, :]
        noise = np.hstack([rng.normal(size=(400, 7)), np.zeros((400, 1))])
        recorded.append((labels, {"mixed": (signal + noise).astype(np.float32)}))
    folder = write_collect(str(tmp_path / "planted"), recorded)

    class PlantedAgent:  # what fit_direction asks of an agent: its name, and its layer's width
        name, path, obs_profile = "planted", "", "standard"

        def layers(self, obs):
            return {"mixed": np.zeros((1, 8))}

    found = fit_direction(folder, PlantedAgent(), "mixed", "ball_y")
    assert found.r2 > 0.95
    assert abs(found.unit[7]) > 0.9  # the probe leans on the quiet unit
    np.testing.assert_allclose(found.pattern, mixing / 50, atol=0.02 / 50 + 0.1 * np.abs(mixing).max() / 50)
    assert abs(found.pattern[7]) / np.linalg.norm(found.pattern) < 0.02


def test_the_partial_pattern_holds_a_correlated_label_fixed(tmp_path):
    # Units 0-3 move with the ball's height, units 4-7 with where it lands; on these frames the two labels go
    # together (landing = height + noise), so each label's plain pattern carries the other's units, and its
    # partial pattern (both labels regressed at once) only its own.
    from pongrl.probes.directions import fit_direction

    rng = np.random.default_rng(2)
    height_mixing = np.concatenate([rng.normal(size=4), np.zeros(4)])
    landing_mixing = np.concatenate([np.zeros(4), rng.normal(size=4)])
    recorded = []
    for _ in range(6):
        labels = {name: rng.integers(0, 200, 2000) for name in LABELS}
        labels["ball_in_play"] = np.ones(2000, np.int64)
        labels["landing_y"] = np.clip(labels["ball_y"] + rng.integers(-30, 31, 2000), 0, 250)
        centred = lambda name: (labels[name].astype(np.float64) - 100)[:, None]  # noqa: E731
        layer = centred("ball_y") @ height_mixing[None, :] + centred("landing_y") @ landing_mixing[None, :]
        recorded.append((labels, {"mixed": (layer + rng.normal(size=(2000, 8))).astype(np.float32)}))
    folder = write_collect(str(tmp_path / "planted"), recorded)

    class PlantedAgent:  # what fit_direction asks of an agent: its name, and its layer's width
        name, path, obs_profile = "planted", "", "standard"

        def layers(self, obs):
            return {"mixed": np.zeros((1, 8))}

    landing = fit_direction(folder, PlantedAgent(), "mixed", "landing_y", held=("ball_y",))
    np.testing.assert_allclose(landing.partial, landing_mixing, atol=0.02)
    assert np.abs(landing.pattern[:4]).max() > 0.3  # the plain pattern leans on the height's units
    height = fit_direction(folder, PlantedAgent(), "mixed", "ball_y", held=("landing_y",))
    np.testing.assert_allclose(height.partial, height_mixing, atol=0.02)
    assert fit_direction(folder, PlantedAgent(), "mixed", "ball_y").partial is None  # only when asked for


def test_the_steering_response_is_taken_game_by_game_where_the_games_are_paired():
    # Game k of every condition shares its start and sticky actions: planted offsets whose games differ a lot from
    # one another (0, 40, 80, ... rows) but move by 0.5 rows per unit of alpha within a game. Taken game by game the
    # slope is 0.5 with a narrow interval; from the conditions' own intervals (rows without the games) it is wide.
    from pongrl.probes.across import steering_response
    from pongrl.probes.effects import mean_interval

    rng = np.random.default_rng(0)
    game_levels = 40.0 * np.arange(10)

    def row(alpha):
        offsets = game_levels + 0.5 * alpha + rng.normal(0, 0.5, 10)
        games = " ".join(f"{value:.4f}" for value in offsets)
        return {**steering_row("probe", "steer-pattern", alpha, *mean_interval(offsets)), "paddle_offset_games": games}

    rows = [row(alpha) for alpha in (-40.0, 40.0)]
    (paired,) = steering_response(rows)
    (unpaired,) = steering_response([{**r, "paddle_offset_games": ""} for r in rows])
    assert paired["response"] == pytest.approx(0.5, abs=0.02)
    assert unpaired["response"] == pytest.approx(paired["response"])
    assert paired["response_low"] < 0.5 < paired["response_high"]
    assert paired["response_high"] - paired["response_low"] < 0.05
    assert unpaired["response_high"] - unpaired["response_low"] > 10 * (
        paired["response_high"] - paired["response_low"]
    )
