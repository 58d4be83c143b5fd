"""`pongrl probe features` and `pongrl probe gallery`: a TopK dictionary recovers planted sparse features, the
matching finds a planted label and its control does not, the splice is the agent with its layer reconstructed,
the opponent's labels follow its paddle, end to end on a real collect, and bad input."""

import csv
import os

import numpy as np
import pytest
import torch

from pongrl.errors import PongrlError
from pongrl.probes.dictionary import Dictionary, load_dictionary, train_dictionary

from cli_helpers import run
from test_probes import write_collect

torch.set_num_threads(1)


class Payload:
    """An object whose loading would run code (a class of this module): weights_only refuses it."""


def planted_sparse_data(frames=6000, width=32, size=24, active=2, seed=0):
    """Activations made of `active` of `size` known unit directions per frame, with positive weights."""
    rng = np.random.default_rng(seed)
    directions = rng.normal(size=(size, width))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    codes = np.zeros((frames, size))
    for row in codes:
        row[rng.choice(size, active, replace=False)] = rng.uniform(1, 3, active)
    return (codes @ directions).astype(np.float32), directions


def dictionary_of(weights: dict, k: int, layer="fc") -> Dictionary:
    return Dictionary(
        layer,
        k,
        weights["scale"],
        weights["encoder"],
        weights["encoder_bias"],
        weights["decoder"],
        weights["decoder_bias"],
        agent={"name": "planted", "digest": "0" * 64, "env_step": 0},
    )


def test_a_topk_dictionary_recovers_planted_sparse_directions():
    x, directions = planted_sparse_data()
    weights, losses = train_dictionary(x, size=24, k=2, epochs=100, seed=0)
    dictionary = dictionary_of(weights, k=2)
    codes = dictionary.encode(x)
    assert ((codes > 0).sum(1) <= 2).all()  # never more than k features per frame
    reconstruction = dictionary.reconstruct(x).numpy()
    fve = 1 - ((x - reconstruction) ** 2).sum() / ((x - x.mean(0)) ** 2).sum()
    assert fve > 0.9, fve
    assert losses[-1] < losses[0] / 3
    # Most planted directions have a feature pointing the same way (decoder rows are unit vectors).
    cosines = np.abs(directions @ weights["decoder"].numpy().T).max(1)
    assert (cosines > 0.9).mean() >= 0.75, np.sort(cosines)
    np.testing.assert_allclose(np.linalg.norm(weights["decoder"].numpy(), axis=1), 1.0, atol=1e-5)


def test_a_dictionary_file_round_trips_and_anything_else_is_refused(tmp_path):
    x, _ = planted_sparse_data(frames=500)
    weights, _ = train_dictionary(x, size=8, k=2, epochs=1)
    dictionary = dictionary_of(weights, k=2)
    dictionary.features = {"frequency": [0.5] * 8}
    path = dictionary.save(str(tmp_path / "dictionary.pt"))
    loaded = load_dictionary(path)
    np.testing.assert_array_equal(loaded.encode(x[:50]).numpy(), dictionary.encode(x[:50]).numpy())
    assert loaded.agent == dictionary.agent and loaded.features == dictionary.features
    assert not [name for name in os.listdir(tmp_path) if name != "dictionary.pt"]  # no temp file left

    torch.save({"format": "pongrl-dictionary-1", "code": Payload()}, str(tmp_path / "pickled.pt"))
    (tmp_path / "truncated.pt").write_bytes(open(path, "rb").read()[:100])
    for name in ("pickled.pt", "truncated.pt", "missing.pt"):
        with pytest.raises(PongrlError, match="dictionary"):
            load_dictionary(str(tmp_path / name))


def test_a_feature_that_carries_a_label_matches_it_and_the_shuffled_control_does_not(tmp_path):
    from pongrl.probes.features import MIN_MATCH_R2, match_labels
    from pongrl.probes.fit import ProbeData, split_games
    from pongrl.probes.labels import LABELS

    rng = np.random.default_rng(0)
    games = []
    for _ in range(6):
        frames = 400
        labels = {name: rng.integers(0, 200, frames) for name in LABELS}
        labels["ball_in_play"] = np.ones(frames, np.int64)
        # unit 0 follows ball_y; units 1-3 are noise
        layer = rng.normal(size=(frames, 4))
        layer[:, 0] = labels["ball_y"] / 50 + 0.1 * rng.normal(size=frames)
        games.append((labels, {"fc": layer.clip(0).astype(np.float16)}))
    folder = write_collect(str(tmp_path / "planted"), games)
    eye = torch.eye(4)  # each feature is one unit (k = size: no sparsity, so the test is of the matching alone)
    zero = torch.zeros(4)
    weights = {"scale": 1.0, "encoder": eye, "encoder_bias": zero, "decoder": eye, "decoder_bias": zero}
    dictionary = dictionary_of(weights, k=4)
    data = ProbeData(folder)
    features, per_label = match_labels(dictionary, data, "agents/0/fc", *split_games(data.frames_of), seed=0)
    assert features["best_label"][0] == "ball_y" and features["best_r2"][0] > 0.9
    assert features["matched"][0] == "ball_y"
    assert features["matched"][1:] == ["", "", ""]
    assert per_label["ball_y"]["features"] == 1
    assert per_label["ball_y"]["control_best_r2"] < MIN_MATCH_R2 <= per_label["ball_y"]["threshold"]


def test_the_opponents_velocity_and_next_move_follow_its_paddle_on_the_screen():
    from pongrl.envs.single import PongGame
    from pongrl.probes.labels import ENEMY_DOWN, ENEMY_STAYS, ENEMY_UP, UNDEFINED, predictive_labels, read_labels

    game = PongGame(0, noop_max=0)
    game.reset(0)
    rng = np.random.default_rng(0)
    steps, previous, bottoms = [], None, []
    for _ in range(700):
        game.step(int(rng.integers(0, 6)))
        ram = game.ale.getRAM().copy()
        steps.append(read_labels(ram, previous))
        rows = np.nonzero(np.all(game.rgb()[:, 16:20] == (213, 130, 74), axis=2).any(1))[0]
        # the built-in AI's paddle, where it is drawn whole (clipped at the walls it is shorter)
        bottoms.append(rows.max() if len(rows) >= 15 and rows.max() < 193 else None)
        previous = ram
    labels = {name: [step[name] for step in steps] for name in steps[0]}
    compared = 0
    for t in range(1, len(steps)):
        if bottoms[t] is not None and bottoms[t - 1] is not None and labels["enemy_vy"][t]:
            assert labels["enemy_vy"][t] == bottoms[t] - bottoms[t - 1]
            compared += 1
    assert compared > 100
    moves = predictive_labels(labels)["enemy_next_move"]
    velocity = np.array(labels["enemy_vy"])
    assert moves[-1] == UNDEFINED
    defined = moves[:-1] != UNDEFINED
    expected = np.select([velocity[1:] < 0, velocity[1:] > 0], [ENEMY_UP, ENEMY_DOWN], ENEMY_STAYS)
    assert (moves[:-1][defined] == expected[defined]).mean() > 0.99
    assert {ENEMY_UP, ENEMY_DOWN} <= set(moves[:-1][defined].tolist())


def test_the_splice_is_the_agent_with_its_layer_replaced_by_the_reconstruction():
    from pongrl.agent import QAgent
    from pongrl.nets import QNetwork
    from pongrl.probes.features import Reconstruction, policy_after
    from pongrl.probes.intervene import EditedNetwork

    torch.manual_seed(0)
    agent = QAgent(QNetwork(6), name="net")
    obs = np.random.default_rng(0).integers(0, 256, (5, 4, 84, 84), dtype=np.uint8)
    fc = agent.layers(obs)["fc"]
    weights, _ = train_dictionary(np.repeat(fc, 40, 0), size=16, k=4, epochs=2)
    dictionary = dictionary_of(weights, k=4)
    base, spliced = EditedNetwork(agent, {"fc": Reconstruction(dictionary)}).preferences(obs, [("fc", 0)] * 5)
    np.testing.assert_allclose(base, agent.preferences(obs), atol=1e-5)
    by_hand = policy_after(agent, "fc")(dictionary.reconstruct(fc)).numpy()
    np.testing.assert_allclose(spliced, by_hand, atol=1e-4)
    assert np.abs(spliced - base).max() > 1e-4  # a lossy reconstruction does change the preferences


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """A real collect: an untrained DQN network plays the built-in AI for 1,500 frames (sampling: distinct games)."""
    from pongrl.agent import save_safetensors_agent
    from pongrl.nets import QNetwork
    from pongrl.probes.collect import collect

    folder = tmp_path_factory.mktemp("features")
    agent, other = str(folder / "dqn.safetensors"), str(folder / "other.safetensors")
    torch.manual_seed(3)
    save_safetensors_agent(agent, QNetwork(6).state_dict(), "dqn", 0, "standard")
    torch.manual_seed(4)
    save_safetensors_agent(other, QNetwork(6).state_dict(), "dqn", 0, "standard")
    out = str(folder / "collect")
    collect([agent], 1_500, out, sample=True, seed=0)
    return agent, other, out


def test_features_and_gallery_end_to_end(collected, tmp_path, capsys):
    from pongrl.probes.dictionary import agent_digest
    from pongrl.agent import load_agent

    agent, _, probes = collected
    out = str(tmp_path / "features")
    code, stdout, err = run(
        ["probe", "features", agent, "--probes", probes, "--size", "16", "--k", "4", "--epochs", "2"]
        + ["--games", "1", "--allow-small-test", "--out", out],
        capsys,
    )
    assert code == 0, err
    assert "variance explained" in stdout and "points per game over 1 paired games" in stdout
    dictionary = load_dictionary(os.path.join(out, "dictionary.pt"))
    assert dictionary.size == 16 and dictionary.layer == "fc" and dictionary.width == 512
    assert dictionary.agent["digest"] == agent_digest(load_agent(agent))
    metrics = dictionary.metrics
    assert 0 < metrics["fve"] <= 1 and 0 <= metrics["action_agreement"] <= 1
    assert metrics["dead"] + metrics["dense"] <= 16 and metrics["games"] == 1
    with open(os.path.join(out, "features.csv")) as handle:
        rows = list(csv.DictReader(handle))
    assert [int(row["feature"]) for row in rows] == list(range(16))
    assert all(0 <= float(row["frequency"]) <= 1 for row in rows)

    drawn = str(tmp_path / "gallery")
    code, stdout, err = run(
        ["probe", "gallery", agent, "--dictionary", os.path.join(out, "dictionary.pt"), "--features", "3", "0"]
        + ["--frames", "300", "--top", "3", "--out", drawn],
        capsys,
    )
    assert code == 0, err
    assert sorted(os.listdir(drawn)) == ["feature_00000.png", "feature_00003.png", "gallery.md"]
    assert os.path.getsize(os.path.join(drawn, "feature_00003.png")) > 2000
    assert open(os.path.join(drawn, "gallery.md")).read().index("00003") < open(
        os.path.join(drawn, "gallery.md")
    ).read().index("00000")  # in the order asked for


@pytest.fixture(scope="module")
def small_dictionary(collected, tmp_path_factory):
    from pongrl.probes.features import learn_features, write_results

    agent, _, probes = collected
    out = str(tmp_path_factory.mktemp("dictionary"))
    write_results(learn_features(agent, probes, size=8, k=2, epochs=1, games=0, allow_small_test=True), out)
    return os.path.join(out, "dictionary.pt")


ALLOW = "--allow-small-test"  # the test collect's split holds one test game


@pytest.mark.parametrize(
    "args, message",
    [
        (["--layer", "conv9", ALLOW], "no layer 'conv9' to learn a dictionary of"),
        (["--layer", "conv2", ALLOW], "(layers stored whole in"),  # stored through the collect's projection
        (["--size", "4096", ALLOW], "needs 32,768 (8 per feature): collect about 41,000 frames"),
        (["--size", "8", "--k", "9", ALLOW], "--k (9) cannot exceed"),
        (["--sticky-actions", "1", ALLOW], "--sticky-actions must be in [0, 1)"),
        (["--size", "8", "--k", "2"], "under the floor of 1,000 frames in 2 games"),
    ],
)
def test_bad_features_input_is_one_line_and_writes_nothing(collected, tmp_path, capsys, args, message):
    agent, _, probes = collected
    out = tmp_path / "out"
    code, _, err = run(["probe", "features", agent, "--probes", probes, "--out", str(out), *args], capsys)
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_a_dictionary_of_another_agent_and_a_feature_out_of_range_are_refused(
    collected, small_dictionary, tmp_path, capsys
):
    agent, other, _ = collected
    out = tmp_path / "gallery"
    for who, args, message in (
        (other, [], "learned on the activations of"),
        (agent, ["--features", "8"], "no feature 8: the dictionary has 8 (0 to 7)"),
        (agent, ["--features", "-1"], "no feature -1"),
    ):
        code, _, err = run(
            ["probe", "gallery", who, "--dictionary", small_dictionary, "--frames", "50", "--out", str(out), *args],
            capsys,
        )
        assert code == 1 and message in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists()


def test_a_convolution_stored_whole_gets_a_dictionary_that_steers(collected, tmp_path, capsys):
    """`probe collect --whole-layers conv3` keeps conv3's own coordinates (the other wide layers stay projected),
    so that a dictionary of it can be learned, spliced and steered along; an unknown layer is refused."""
    import h5py

    agent, _, _ = collected
    probes = str(tmp_path / "collect")
    code, _, err = run(
        ["probe", "collect", agent, "--frames", "1200", "--sample", "--whole-layers", "conv3", "--out", probes], capsys
    )
    assert code == 0, err
    with h5py.File(os.path.join(probes, "games", "game_00000.h5")) as game:
        assert game["agents/0/conv3"].shape[1] == 64 * 7 * 7 and game["agents/0/conv2"].shape[1] == 1024
    out = str(tmp_path / "features")
    code, stdout, err = run(
        ["probe", "features", agent, "--probes", probes, "--layer", "conv3", "--size", "8", "--k", "2"]
        + ["--epochs", "1", "--games", "0", "--allow-small-test", "--out", out],
        capsys,
    )
    assert code == 0, err
    dictionary = load_dictionary(os.path.join(out, "dictionary.pt"))
    assert dictionary.layer == "conv3" and dictionary.width == 3136
    code, _, err = run(
        ["probe", "steer", agent, "--dictionary", os.path.join(out, "dictionary.pt"), "--features", "0"]
        + ["--alpha", "5", "--games", "1", "--out", str(tmp_path / "steer")],
        capsys,
    )
    assert code == 0, err
    with open(tmp_path / "steer" / "steer.csv") as handle:
        assert float(list(csv.DictReader(handle))[1]["edit_size"]) > 0

    bad = tmp_path / "bad"
    for who in (agent, "zoo:selfplay-mix"):  # both observation profiles (the self-play agents' frames are channel-last)
        code, _, err = run(
            ["probe", "collect", who, "--frames", "100", "--whole-layers", "conv3,conv9", "--out", str(bad)], capsys
        )
        assert code == 1 and "has no layer 'conv9' (its layers: input, conv1, conv2, conv3, fc)" in err, err
        assert len(err.strip().splitlines()) == 1 and not bad.exists()


def test_steering_along_a_feature_plays_paired_games_beside_a_random_direction(
    collected, small_dictionary, tmp_path, capsys
):
    from pongrl.probes.dictionary import load_dictionary
    from pongrl.probes.steer_features import strongest_unmatched

    agent, other, _ = collected
    out = tmp_path / "steer"
    code, stdout, err = run(
        ["probe", "steer", agent, "--dictionary", small_dictionary, "--features", "1", "--alpha", "5"]
        + ["--games", "1", "--out", str(out)],
        capsys,
    )
    assert code == 0, err
    with open(out / "steer.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["label"], row["direction"], row["alpha"]) for row in rows] == [
        ("", "none", "0"),
        ("feature 1", "feature", "5"),
        ("feature 1", "random", "5"),
    ]
    # the random direction's edit is as large as the feature's
    assert float(rows[1]["edit_size"]) == pytest.approx(float(rows[2]["edit_size"])) and float(rows[1]["edit_size"]) > 0
    assert "unperturbed: score" in stdout and (out / "steer.png").stat().st_size > 1000
    dictionary = load_dictionary(small_dictionary)
    chosen = strongest_unmatched(dictionary, 8)
    assert all(not dictionary.features["matched"][i] and dictionary.features["frequency"][i] > 0 for i in chosen)
    for who, args, message in (
        (other, [], "learned on the activations of"),
        (agent, ["--features", "12"], "no feature 12"),
    ):
        code, _, err = run(
            ["probe", "steer", who, "--dictionary", small_dictionary, "--out", str(tmp_path / "x")] + args, capsys
        )
        assert code == 1 and message in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "x").exists()


def test_a_return_is_followed_to_where_the_ball_reaches_the_opponents_side():
    from pongrl.game import RAM_BALL_X, RAM_BALL_Y, RAM_LEFT_PADDLE_Y
    from pongrl.probes.aim import ReturnTracker

    def ram(x, y, opponent=100):
        values = np.zeros(128, np.uint8)
        values[RAM_BALL_X], values[RAM_BALL_Y], values[RAM_LEFT_PADDLE_Y] = x, y, opponent
        return values

    tracker = ReturnTracker()
    path = [(150, 120), (160, 120), (170, 121)]  # toward the agent
    path += [(165, 124), (160, 127), (150, 130), (140, 133)]  # returned: away, 3 rows down per step
    path += [(145, 133)]  # the opponent sends it back: the flight ended at 133
    path += [(160, 133), (170, 133), (160, 131), (150, 129), (0, 0)]  # a second return, then out of play
    for x, y in path:
        tracker.see(ram(x, y, opponent=90))
    assert tracker.returns == [(133, 133 - 90, 3), (129, 129 - 90, -2)]
    assert tracker.means() == {"arrival_y": 131.0, "aim": 41.0, "angle": 0.5}
    assert np.isnan(ReturnTracker().means()["aim"])  # no return, no aim


def test_aim_plays_paired_games_and_refuses_a_label_that_is_not_the_opponents(collected, tmp_path, capsys):
    from pongrl.probes.aim import aim

    agent, _, probes = collected
    out = tmp_path / "aim.csv"
    code, stdout, err = run(
        ["probe", "aim", agent, "--probes", probes, "--alpha", "10", "--games", "1", "--out", str(out)], capsys
    )
    assert code == 0, err
    with open(out) as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["direction"], row["alpha"]) for row in rows] == [("none", "0"), ("probe", "10"), ("random", "10")]
    assert rows[0]["arrival_y_shift"] in ("0", "nan")  # the unperturbed games against themselves (nan: no return)
    assert "unperturbed, against builtin:" in stdout
    with pytest.raises(PongrlError, match="the opponent's"):
        aim(agent, probes, label="ball_y", games=1)


def test_aim_against_another_agent_pairs_its_games_and_refuses_sticky_actions(collected, tmp_path, capsys):
    agent, other, probes = collected
    out = tmp_path / "aim.csv"
    args = ["probe", "aim", agent, "--probes", probes, "--opponent", other, "--games", "2", "--out", str(out)]
    code, stdout, err = run(args + ["--alpha", "0"], capsys)
    assert code == 0, err
    with open(out) as handle:
        rows = list(csv.DictReader(handle))
    assert {row["opponent"] for row in rows} == {"other.safetensors"} and "against other.safetensors" in stdout
    # A steer of size 0 is no edit: on the two-player game too, every condition replays the unperturbed games.
    assert len({(row["returns"], row["score"], row["arrival_y"]) for row in rows}) == 1, rows
    assert float(rows[0]["score"]) != -21.0  # not the built-in AI's games: an untrained agent scores against another

    refused = tmp_path / "refused.csv"
    code, stdout, err = run(args[:-1] + [str(refused), "--sticky-actions", "0.25"], capsys)
    assert code != 0 and "unpair" in err and len(err.strip().splitlines()) == 1 and not refused.exists()


def test_moving_the_opponent_pairs_its_games_and_tells_a_nudged_ball_from_a_seen_paddle(tmp_path, capsys):
    from pongrl.agent import load_agent
    from pongrl.arena import load_player
    from pongrl.probes.opponent_move import flight_records

    blind = load_agent("zoo:selfplay-mix")
    sees = blind.preferences

    def preferences(obs):  # the left quarter of its view, where the opponent's paddle is, kept dark
        obs = np.array(obs)
        obs[:, :, :21] = 0
        return sees(obs)

    blind.preferences = preferences
    records, diverged, distinct = flight_records(blind, load_player("zoo:selfplay-builtin"), 4, 1, 0, 4)
    assert diverged == 0 and len(records) == 8 and distinct == 1  # each moved game the unmoved one up to its move
    assert any(r["changed"] for r in records) and any(r["paddle_moved"] for r in records)
    # An agent that cannot see the opponent changes a return only where the opponent's controls nudged the ball.
    assert all(r["ball_moved"] for r in records if r["changed"]), records
    up = [r["paddle"] for r in records if r["condition"] == "up" and "paddle" in r]
    assert up and max(up) <= 0 and min(up) < 0  # UP moves the opponent's paddle up (a smaller byte) or not at all

    code, out, err = run(
        ["probe", "opponent-move", "zoo:selfplay-mix", "--opponent", "zoo:selfplay-builtin", "--returns", "2"]
        + ["--games", "1", "--out", str(tmp_path / "moves.csv")],
        capsys,
    )
    assert code == 0 and out.startswith("opponent moved up (2 flights of 1 distinct games, 0 left out)"), err + out
    code, out, err = run(["probe", "opponent-move", "zoo:selfplay-mix", "--opponent", "builtin"], capsys)
    assert code != 0 and "cannot be moved" in err and len(err.strip().splitlines()) == 1


def test_a_collect_of_other_weights_under_the_same_name_is_refused(collected):
    from pongrl.agent import load_agent
    from pongrl.probes.features import learn_features

    _, other, probes = collected
    impostor = load_agent(other)
    impostor.name = "dqn.safetensors"  # the collect's name for its agent (as when a zoo name gets new weights)
    with pytest.raises(PongrlError, match="recorded the activations of"):
        learn_features(impostor, probes, size=8, k=2, epochs=1, games=0, allow_small_test=True)


def test_the_chart_of_matches_draws_every_dictionary(small_dictionary, tmp_path):
    from pongrl.probes.charts import plot_feature_matches

    dictionary = load_dictionary(small_dictionary)
    path = plot_feature_matches({"one": dictionary, "two": dictionary}, str(tmp_path / "features.png"))
    assert os.path.getsize(path) > 5000 and os.listdir(tmp_path) == ["features.png"]


def test_the_left_paddles_byte_does_not_hold_an_edit_in_the_two_player_game_either():
    # Why `probe aim` moves the opponent inside the network and not in the emulator: the byte is rewritten.
    from pongrl.envs.two_player import TwoPlayerGames
    from pongrl.game import RAM_LEFT_PADDLE_Y

    game = TwoPlayerGames(1, autoreset=False, profiles=("standard",), serve_assist=True)
    game.reset()
    for _ in range(30):
        game.play_step(np.array([[0, 0]]))
    before = int(game.ram(0)[RAM_LEFT_PADDLE_Y])
    game.ales[0].setRAM(RAM_LEFT_PADDLE_Y, before - 30)
    game.play_step(np.array([[0, 0]]))  # neither player moves
    assert int(game.ram(0)[RAM_LEFT_PADDLE_Y]) == before
    game.close()
