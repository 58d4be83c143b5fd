"""The arena, leagues, match videos and model cards, on the real emulators."""

import gc
import json
import os

import numpy as np
import pytest
import torch
import yaml

from pongrl.agent import Agent
from pongrl.arena import Player, load_player, play_match, summarize_match, wilson_interval
from pongrl.cli import main

from cli_helpers import run
import multi_agent_ale_py

from pongrl.envs.two_player import LEFT, RIGHT, TwoPlayerGames
from pongrl.envs.single import PongGame
from pongrl.league.ratings import fit_ratings
from pongrl.nets import ActorCritic

# Atari Pong RAM: byte 51 is the right paddle's height, byte 50 the left one's.
RAM_RIGHT_PADDLE, RAM_LEFT_PADDLE = 51, 50
UP, DOWN, NOOP = 2, 3, 0


class Scripted(Agent):
    """Always the same action, seeing the given profile."""

    def __init__(self, action: int, obs_profile: str = "standard"):
        super().__init__(f"always-{action}")
        self.action, self.obs_profile = action, obs_profile

    def preferences(self, obs):
        preferences = np.zeros((len(obs), 6))
        preferences[:, self.action] = 1
        return preferences


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    """A short PPO run with exactly three checkpoints (steps 256, 512, 768)."""
    run_dir = str(tmp_path_factory.mktemp("runs") / "ppo")
    assert (
        main(
            [
                "train",
                "ppo",
                "--run-dir",
                run_dir,
                "--total-steps",
                "768",
                "--num-envs",
                "2",
                "--num-steps",
                "64",
                "--checkpoint-every",
                "256",
                "--num-checkpoints",
                "0",
                "--keep-checkpoints",
                "3",
                "--eval-every",
                "0",
                "--log-every",
                "256",
                "--torch-threads",
                "1",
            ]
        )
        == 0
    )
    return run_dir


@pytest.fixture(scope="module")
def seed_state_dict(tmp_path_factory):
    """A bare seed-format state_dict (separate torsos), as the self-play card's code saves it."""
    torch.manual_seed(3)
    path = str(tmp_path_factory.mktemp("seed") / "agent.pt")
    torch.save(ActorCritic(6, share_network=False).state_dict(), path)
    return path


def checkpoint(run_dir, step):
    return os.path.join(run_dir, "checkpoints", f"step_{step:012d}.pt")


def test_each_paddle_answers_to_its_own_player():
    game = TwoPlayerGames(1, max_cycles=2_000, autoreset=False, profiles=("standard", "seed"))
    for right, left in ((UP, DOWN), (DOWN, UP)):
        game.reset()
        for _ in range(60):
            game.play_step(np.array([[right, left]]))
        right_height, left_height = (int(game.ram(0)[k]) for k in (RAM_RIGHT_PADDLE, RAM_LEFT_PADDLE))
        assert (right_height < left_height) == (right == UP) and abs(right_height - left_height) > 100
    # The left player's view is the mirror of what a right player with its profile would see.
    assert game.observation(0, LEFT, "seed").shape == (84, 84, 4)
    assert game.observation(0, RIGHT, "standard").shape == (4, 84, 84)
    twin = TwoPlayerGames(1, max_cycles=2_000, autoreset=False, profiles=("seed", "standard"))
    twin.reset()
    for _ in range(30):
        twin.play_step(np.array([[UP, NOOP]]))
    for profile in ("seed", "standard"):
        mirrored = (
            twin.observation(0, RIGHT, profile)[..., ::-1, :]
            if profile == "seed"
            else twin.observation(0, RIGHT, profile)[..., ::-1]
        )
        np.testing.assert_array_equal(twin.observation(0, LEFT, profile), mirrored)
    game.close()
    twin.close()


def test_the_builtin_ai_plays_the_left_paddle_and_the_agent_the_right():
    game = PongGame(0, noop_max=0)
    game.reset()
    left_heights = set()
    for _ in range(150):
        game.step(UP)
        left_heights.add(int(game.ale.getRAM()[RAM_LEFT_PADDLE]))
    assert game.ale.getRAM()[RAM_RIGHT_PADDLE] < 50  # held up by the agent
    assert len(left_heights) > 5  # the built-in AI moves its paddle by itself
    idle = Player("idle", Scripted(NOOP), "idle")
    builtin = load_player("builtin")
    games = play_match(idle, builtin, 2, seed=0)
    assert [(g["first_side"], g["first_points"], g["second_points"], g["outcome"]) for g in games] == [
        ("right", 0, 21, "loss")
    ] * 2
    flipped = play_match(builtin, idle, 2, seed=0)
    assert [(g["first_side"], g["first_points"], g["outcome"]) for g in flipped] == [("left", 21, "win")] * 2


def test_an_agent_against_itself_scores_zero_and_swapping_players_swaps_scores(ppo_run, seed_state_dict):
    first = load_player(checkpoint(ppo_run, 768))
    second = load_player(seed_state_dict)  # another profile: the seed's blue channel
    self_games = play_match(first, load_player(checkpoint(ppo_run, 768)), 2, seed=5, max_frames=1_200)
    assert [g["first_side"] for g in self_games] == ["right", "left"]
    assert self_games[0]["score"] == -self_games[1]["score"]
    assert summarize_match(self_games)["mean_point_difference"] == 0
    forward = play_match(first, second, 2, seed=5, max_frames=1_200)
    backward = play_match(second, first, 2, seed=5, max_frames=1_200)
    # Game 0 of one order is game 1 of the other: the same paddles, start and players.
    for a, b in ((forward[0], backward[1]), (forward[1], backward[0])):
        assert (a["first_points"], a["second_points"]) == (b["second_points"], b["first_points"])
        assert a["first_serve_penalties"] == b["second_serve_penalties"]
    assert all(g["cut"] and g["outcome"] == "draw" for g in forward)  # 1,200 frames cannot finish a game


def test_sampled_play_is_reproducible_and_differs_from_greedy(ppo_run):
    agent = load_player(checkpoint(ppo_run, 768)).agent
    obs = np.random.default_rng(0).integers(0, 255, (64, 4, 84, 84), dtype=np.uint8)
    a = agent.act(obs, rng=np.random.default_rng(1), sample=True)
    b = agent.act(obs, rng=np.random.default_rng(1), sample=True)
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 6 and len(set(a.tolist())) > 1  # an untrained policy is near uniform


def test_rating_fit_recovers_a_known_order():
    rng = np.random.default_rng(0)
    true = np.array([0.0, 150.0, 300.0, 600.0])  # Elo
    results = []
    for _ in range(400):
        i, j = rng.choice(4, 2, replace=False)
        p = 1 / (1 + 10 ** ((true[j] - true[i]) / 400))
        results.append((i, j, float(rng.random() < p)))
    results += [(0, 1, 0.5)] * 4  # draws count half
    ratings, errors = fit_ratings(4, results, anchor=0)
    assert ratings[0] == 0 and errors[0] == 0
    assert list(np.argsort(ratings)) == [0, 1, 2, 3]
    assert np.all(np.abs(ratings - true) < 3 * errors + 1e-9)
    assert wilson_interval(5, 10)[0] < 0.5 < wilson_interval(5, 10)[1]


def test_tiny_league_caches_matches_and_adds_only_new_pairs(ppo_run, tmp_path, capsys):
    out = str(tmp_path / "league")
    flags = ["--games-per-pair", "2", "--max-frames", "800", "--out", out, "--workers", "2"]
    code, stdout, err = run(["league", ppo_run, *flags], capsys)
    assert code == 0, err
    assert "3 pairs, 0 cached, 3 to play" in err
    with open(os.path.join(out, "matches.jsonl")) as handle:
        assert len(handle.readlines()) == 3
    code, stdout, err = run(["league", ppo_run, "--include-builtin", *flags], capsys)
    assert code == 0, err
    assert "6 pairs, 3 cached, 3 to play" in err
    with open(os.path.join(out, "ratings.csv")) as handle:
        rows = handle.read().splitlines()
    assert len(rows) == 5 and "built-in AI" in "".join(rows)
    assert open(os.path.join(out, "ratings.png"), "rb").read(4) == b"\x89PNG"
    # The games against the built-in AI under the ALE v5 protocol: those pairs play again, the others stay cached.
    code, _, err = run(["league", ppo_run, "--include-builtin", "--sticky-actions", "0.25", *flags], capsys)
    assert code == 0 and "6 pairs, 3 cached, 3 to play" in err, err
    with open(os.path.join(out, "matches.jsonl")) as handle:
        keys = [json.loads(line)["key"] for line in handle]
    assert sum("sticky_actions=0.25" in key for key in keys) == 3 and all("builtin" in k for k in keys if "sticky" in k)
    code, _, err = run(["league", ppo_run, "--sticky-actions", "0.25", *flags], capsys)
    assert code == 1 and "needs --include-builtin" in err and err.count("\n") == 1
    assert "| rank | player |" in stdout
    png = str(tmp_path / "plot.png")
    assert run(["plot", out, "--out", png], capsys)[0] == 0
    assert open(png, "rb").read(4) == b"\x89PNG"


def test_duel_json_and_eval_against_a_checkpoint(ppo_run, seed_state_dict, capsys):
    duel = [
        "duel",
        checkpoint(ppo_run, 256),
        seed_state_dict,
        "--games",
        "2",
        "--max-frames",
        "600",
        "--json",
        "--sample",
        "first",
    ]
    code, out, err = run(duel, capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["sample"] == [True, False]
    assert json.loads(run(duel, capsys)[1])["per_game"] == result["per_game"]  # sampled play is reproducible
    assert result["games"] == 2 and result["wins"] + result["losses"] + result["draws"] == 2
    assert len(result["per_game"]) == 2 and 0 <= result["win_rate_95"][0] <= result["win_rate_95"][1] <= 1
    code, out, err = run(["eval", ppo_run, "--opponent", seed_state_dict, "--episodes", "2", "--seed", "1"], capsys)
    assert code == 0, err
    assert "win rate" in out


def test_match_video_has_the_frames_and_size_asked_for(ppo_run, seed_state_dict, tmp_path, capsys):
    import imageio.v3 as iio

    out = str(tmp_path / "duel.mp4")
    code, _, err = run(
        ["video", ppo_run, "--opponent", seed_state_dict, "--frames", "80", "--scale", "1", "--out", out], capsys
    )
    assert code == 0, err
    frames = iio.imread(out)
    assert frames.shape[0] == 80 and frames.shape[2:] == (160, 3) and frames.shape[1] > 210
    code, _, err = run(["video", ppo_run, "--games", "1", "--frames", "10"], capsys)
    assert code == 2  # --games and --frames exclude each other


def test_model_card_folder(ppo_run, tmp_path, capsys):
    out = str(tmp_path / "card")
    code, stdout, err = run(["card", ppo_run, "--out", out, "--games", "1", "--video-frames", "60"], capsys)
    assert code == 0, err
    text = open(os.path.join(out, "README.md")).read()
    metadata = yaml.safe_load(text.split("---")[1])
    assert metadata["library_name"] == "pongrl"
    exact, sticky = (result["metrics"][0] for result in metadata["model-index"][0]["results"])
    assert exact["type"] == sticky["type"] == "mean_reward" and "+/-" in exact["value"]
    assert "all 31 no-op starts" in exact["name"] and "distinct games" in exact["name"]
    assert "sticky actions 0.25" in sticky["name"] and "over 1 games" in sticky["name"]
    # Each score's command is on the card; the sticky one replays it (the exact one replays by construction).
    assert f"pongrl eval {ppo_run} --every-start\n" in text
    command = f"pongrl eval {ppo_run} --sticky-actions 0.25 --episodes 1 --seed 0"
    assert f"{command}\n" in text
    code, replayed, err = run([*command.split()[1:], "--json"], capsys)
    assert code == 0, err
    assert sticky["value"].split()[0] == f"{json.loads(replayed)['mean']:.2f}"
    state_dict = torch.load(os.path.join(out, "model.pt"), weights_only=True)
    from safetensors.torch import load_file

    tensors = load_file(os.path.join(out, "model.safetensors"))
    assert state_dict.keys() == tensors.keys() and "actor.weight" in tensors
    assert all(torch.equal(state_dict[k], tensors[k]) for k in tensors)
    assert os.path.getsize(os.path.join(out, "replay.mp4")) > 0
    # The folder is what the Hub takes as is: huggingface_hub reads its card and evaluation results, and
    # the safetensors file, once uploaded, loads as the agent (pongrl eval hf://OWNER/REPO/model.safetensors).
    from huggingface_hub import ModelCard

    hub_card = ModelCard.load(os.path.join(out, "README.md"))
    assert hub_card.data.library_name == "pongrl" and len(hub_card.data.eval_results) == 2
    assert {result.metric_type for result in hub_card.data.eval_results} == {"mean_reward"}
    from pongrl.agent import load_agent

    obs = np.random.default_rng(0).integers(0, 256, (2, 4, 84, 84), dtype=np.uint8)
    shipped, trained = load_agent(os.path.join(out, "model.safetensors")), load_agent(ppo_run)
    assert shipped.obs_profile == trained.obs_profile and shipped.env_step == trained.env_step
    np.testing.assert_array_equal(shipped.preferences(obs), trained.preferences(obs))
    assert run(["card", ppo_run, "--out", out, "--games", "1"], capsys)[0] == 1  # exists: refused without --force


def test_model_card_with_sampled_actions_names_them_and_is_reproduced_by_eval(ppo_run, tmp_path, capsys):
    out = str(tmp_path / "card")
    code, stdout, err = run(
        ["card", ppo_run, "--out", out, "--games", "1", "--seed", "3", "--video-frames", "60", "--sample"], capsys
    )
    assert code == 0, err
    text = open(os.path.join(out, "README.md")).read()
    metric = yaml.safe_load(text.split("---")[1])["model-index"][0]["results"][0]["metrics"][0]
    assert "sampled" in metric["name"] and "actions sampled from its policy" in text
    reproduce = next(line for line in text.splitlines() if line.startswith("pongrl eval "))
    assert reproduce.endswith("--seed 3 --sample")
    code, eval_out, err = run(reproduce.split()[1:] + ["--json"], capsys)
    assert code == 0, err
    assert metric["value"].split()[0] == f"{json.loads(eval_out)['mean_point_difference']:.2f}"


def test_model_card_names_how_each_kind_of_agent_played():
    from pongrl.card import how_it_plays

    assert how_it_plays("dqn", False) == how_it_plays("selfplay", False) == "greedy"
    assert how_it_plays("dqn", True) == "epsilon-greedy with epsilon 0.05"  # no policy to sample from
    assert how_it_plays("selfplay", True) == "with actions sampled from its policy, as in training"


def test_a_zoo_agents_hub_card_carries_both_protocols_the_card_chain_its_robustness_and_exploiters(
    tmp_path, capsys, monkeypatch
):
    # A zoo agent's Hub card takes the scores measured on its shipped file, with their commands, and whatever
    # robustness figures its zoo card holds (here a planted section: per-opponent rows and a worst case).
    from huggingface_hub import ModelCard

    from pongrl import zoo

    recorded = zoo.card("selfplay-builtin")
    recorded["scores"]["card_chain"] = {
        **recorded["scores"]["sticky_actions"],
        "games": 30,
        "mean": 11.5,
        "std": 4.0,
        "ci95": [10.0, 13.0],
        "command": "pongrl eval zoo:selfplay-builtin --chain card --sticky-actions 0.25 --episodes 30 --seed 0",
    }
    recorded["robustness"] = {  # as pongrl.robustness reports it
        "agent": "zoo:selfplay-builtin",
        "settings": {"games_per_opponent": 10, "sticky_actions": 0.25, "seed": 0},
        "rows": [
            {"opponent": "builtin, sticky 0.25", "points_won": 20.1, "point_difference": 14.3, "ci95": [13.0, 15.6]},
            {
                "opponent": "holds UP",
                "points_won": 21.0,
                "point_difference": 18.0,
                "ci95": [16.5, 19.5],
                "scores": [18],
            },
        ],
        "worst": {"opponent": "builtin, sticky 0.25", "point_difference": 14.3},
        "mean_point_difference": 16.15,
        "command": "pongrl robustness zoo:selfplay-builtin",
    }
    warm = {
        "recipe": "warm-started from zoo:selfplay-mix",
        "init": "zoo:selfplay-mix",
        "seed": 2,
        "rows": [
            {
                "budget_agent_steps": 1000000,
                "games": 21,
                "points_won_per_game": 9.3,
                "points_lost_per_game": 21.0,
                "mean_point_difference": -11.7,
            }
        ],
        "curve": [[10240, -20.0], [1000000, -11.7]],
        "command": "pongrl exploit zoo:selfplay-builtin --init zoo:selfplay-mix --seed 2 --steps 1000000",
        "date": "2026-12-07",
        "hardware": "a test machine",
    }
    # the card compares itself with another zoo agent: its warm-started exploiter (the same recipe, another start)
    # is shown beside, its exploiter from random weights (a recipe this card lacks) is not
    other_warm = {**warm, "recipe": "warm-started from zoo:selfplay", "init": "zoo:selfplay", "command": "warm other"}
    other_warm["rows"] = [{**warm["rows"][0], "points_won_per_game": 12.4, "mean_point_difference": -8.6}]
    other_scratch = {**warm, "recipe": "from random weights", "init": "", "command": "scratch other"}
    recorded["exploitability"] = {
        "meaning": "exploiters trained against this agent",
        "compared_with": "other",
        "runs": [warm],
    }
    other = {"exploitability": {"runs": [other_scratch, other_warm]}}
    real_card = zoo.card
    monkeypatch.setattr(
        zoo, "card", lambda name: {"selfplay-builtin": recorded, "other": other}.get(name) or real_card(name)
    )
    out = tmp_path / "card"
    code, stdout, err = run(["card", "zoo:selfplay-builtin", "--out", str(out), "--video-frames", "60"], capsys)
    assert code == 0, err
    assert "all 31 no-op starts vs the built-in AI, greedy (4 distinct games): 12.77 +/- 12.25" in stdout
    assert "(95% interval +13.57..+15.07): 14.32 +/- 3.78" in stdout
    text = (out / "README.md").read_text()
    metadata = yaml.safe_load(text.split("---")[1])
    exact, sticky, chain, worst = (r["metrics"][0] for r in metadata["model-index"][0]["results"])
    assert len(ModelCard.load(out / "README.md").data.eval_results) == 4, "the Hub reads every result"
    scores = recorded["scores"]
    assert exact["value"] == "{:.2f} +/- {:.2f}".format(scores["every_start"]["mean"], scores["every_start"]["std"])
    assert "(4 distinct games)" in exact["name"]
    assert sticky["value"].startswith("14.32 +/- ") and "over 100 games" in sticky["name"]
    assert "95% interval +13.57..+15.07" in sticky["name"]
    assert chain["value"] == "11.50 +/- 4.00" and "card's own chain" in chain["name"] and "30 games" in chain["name"]
    assert worst["value"] == "14.30" and "builtin, sticky 0.25" in worst["name"]
    for score in (*scores.values(), recorded["robustness"]):
        assert f"\n  {score['command']}\n" in text or f"\n{score['command']}\n" in text
    assert "## Robustness" in text and "| holds UP | 21.00 | 18.00 | 16.50..19.50 |" in text
    assert "| opponent | points_won | point_difference | ci95 |" in text, "per-game score lists stay off the table"
    assert "- mean_point_difference: 16.15" in text
    assert "## Exploitability\n\nExploiters trained against this agent." in text
    assert "| warm-started from zoo:selfplay-mix | 2 | this agent | 1,000,000 | 21 | 9.3 | 21.0 | -11.7 |" in text
    assert "| warm-started from zoo:selfplay | 2 | zoo:other | 1,000,000 | 21 | 12.4 | 21.0 | -8.6 |" in text
    assert "from random weights" not in text and "scratch other" not in text
    assert f"\n{warm['command']}\n" in text and "seed 2, against this agent (2026-12-07, a test machine)" in text
    assert "](exploiters.png)" in text and (out / "exploiters.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "args, message",
    [
        (["duel", "builtin", "builtin"], "cannot play against itself"),
        (["duel", "/nonexistent.pt", "builtin"], "no such file"),
        (["duel", "builtin", "builtin", "--games", "0"], "positive integer"),
        (["league", "/nonexistent"], "no such file"),
    ],
)
def test_bad_arena_input_is_one_line(args, message, capsys):
    code, out, err = run(args, capsys)
    assert code in (1, 2) and message in err and len(err.strip().splitlines()) == 1


def test_corrupt_and_incompatible_files_are_refused(tmp_path, capsys):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a checkpoint at all")
    code, _, err = run(["duel", str(corrupt), "builtin"], capsys)
    assert code == 1 and "corrupt.pt" in err
    wrong_actions = ActorCritic(6, share_network=True).state_dict()
    wrong_actions["actor.weight"] = torch.zeros(4, 512)  # a four-action game's agent
    wrong_actions["actor.bias"] = torch.zeros(4)
    path = str(tmp_path / "four_actions.pt")
    torch.save(wrong_actions, path)
    code, _, err = run(["duel", path, "builtin"], capsys)
    assert code == 1 and "do not fit" in err


def test_ratings_table_scores_each_player_from_its_own_side():
    from pongrl.league.ratings import Entrant, ratings_table

    def game(first_points, second_points):
        return {
            "first_side": "right",
            "first_points": first_points,
            "second_points": second_points,
            "score": first_points - second_points,
            "outcome": "win" if first_points > second_points else "loss",
            "cut": False,
            "first_serve_penalties": 0,
            "second_serve_penalties": 0,
            "length": 100,
            "start_noop_frames": 0,
        }

    entrants = [Entrant("a", "a", "a.pt", "run", 10), Entrant("builtin", "built-in AI", "builtin", "", 0)]
    records = [{"first": "builtin", "second": "a", "games": [game(21, 15), game(21, 15), game(18, 21)]}]
    rows = {row["player"]: row for row in ratings_table(entrants, records)}
    assert rows["a"]["win_rate_vs_builtin"] == round(1 / 3, 3) and rows["a"]["score_vs_builtin"] == -3.0
    assert rows["built-in AI"]["rating"] == 0 and rows["a"]["rating"] < 0 and rows["a"]["games"] == 3


def test_an_interrupted_league_keeps_its_finished_matches(ppo_run, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    out = str(tmp_path / "league")
    command = [
        sys.executable,
        "-m",
        "pongrl",
        "league",
        ppo_run,
        "--games-per-pair",
        "2",
        "--max-frames",
        "2000",
        "--workers",
        "1",
        "--out",
        out,
    ]
    # A test runner started in the background inherits an ignored SIGINT (the shell's rule for `&` jobs);
    # give the league the default disposition, as an interactive terminal would.
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    matches = os.path.join(out, "matches.jsonl")
    deadline = time.time() + 240
    while time.time() < deadline and process.poll() is None:
        if os.path.exists(matches) and os.path.getsize(matches) > 0:
            process.send_signal(signal.SIGINT)
            break
        time.sleep(0.2)
    _, err = process.communicate(timeout=240)
    assert process.returncode == 130 and "interrupted" in err and "Traceback" not in err, (process.returncode, err)
    with open(matches) as handle:
        finished = len(handle.readlines())
    assert 1 <= finished < 3
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert rerun.returncode == 0, rerun.stderr
    assert f"3 pairs, {finished} cached, {3 - finished} to play" in rerun.stderr


def live_emulators() -> int:
    """Emulator owners alive in this process after a collection (each game object holds one emulator;
    the vector envs are closed explicitly and own no Python object to count)."""
    gc.collect()
    owners = (PongGame, TwoPlayerGames, multi_agent_ale_py.ALEInterface)
    return sum(type(o) in owners for o in gc.get_objects())


def open_files() -> set[str]:
    """What this process's file descriptors point at (a descriptor closed while listing is skipped)."""
    targets = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.add(f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            pass
    return targets


def test_video_duel_eval_and_league_release_their_emulators(ppo_run, seed_state_dict, tmp_path, capsys):
    commands = [
        ["video", ppo_run, "--frames", "40", "--scale", "1", "--out", str(tmp_path / "builtin.mp4")],
        [
            "video",
            ppo_run,
            "--opponent",
            seed_state_dict,
            "--frames",
            "40",
            "--scale",
            "1",
            "--out",
            str(tmp_path / "duel.mp4"),
        ],
        ["duel", checkpoint(ppo_run, 256), seed_state_dict, "--games", "2", "--max-frames", "200"],
        ["eval", checkpoint(ppo_run, 256), "--episodes", "1"],
        [
            "league",
            checkpoint(ppo_run, 256),
            seed_state_dict,
            "--games-per-pair",
            "2",
            "--max-frames",
            "200",
            "--workers",
            "1",
            "--out",
            str(tmp_path / "league"),
        ],
    ]
    emulators = live_emulators()
    for command in commands:
        # Each command runs twice: the first run may open what lives as long as the process (matplotlib's
        # font cache, multiprocessing's resource tracker); the second must leave nothing more behind.
        files_after = []
        for _ in range(2):
            code, _, err = run(command, capsys)
            assert code == 0, err
            assert live_emulators() == emulators, command[0]
            files_after.append(open_files())
        assert files_after[1] == files_after[0], command[0]


@pytest.mark.parametrize("assist", [False, True])
def test_the_serve_assist_serves_for_players_that_never_do(assist):
    game = TwoPlayerGames(1, max_cycles=6_000, autoreset=False, profiles=("standard",), serve_assist=assist)
    game.reset()
    passed_through = []
    while not game.done(0):
        in_play = game.ball_in_play(0)
        game.play_step(np.array([[NOOP, DOWN]]))
        if in_play:  # in play the players' own actions always reach the emulator
            passed_through.append(tuple(game._acts[0]) == tuple(game.action_map[[NOOP, DOWN]]))
    game.close()
    assert passed_through and all(passed_through)
    points, penalties = list(game.points[0]), list(game.penalties[0])
    if assist:  # the game runs to 21 without a single serve penalty
        assert game.over[0] and max(points) == 21 and penalties == [0, 0]
    else:  # the first scorer idles at the serve, a penalty every 2 seconds, and the game stalls
        assert game.cut[0] and max(points) < 21 and sum(penalties) > 20


def test_duel_with_the_serve_assist(ppo_run, capsys):
    code, out, err = run(
        [
            "duel",
            checkpoint(ppo_run, 256),
            checkpoint(ppo_run, 512),
            "--games",
            "2",
            "--max-frames",
            "3000",
            "--serve-assist",
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["serve_assist"] is True
    assert result["first_serve_penalties"] == result["second_serve_penalties"] == 0


@pytest.mark.parametrize("mode", [3, 4])
def test_match_game_is_the_self_play_game_in_either_variation(mode):
    """Both players seeing the card's profile, a match's game (a step at a time, or a frame at a time as a
    person's game is played) is the self-play env's game, frame for frame."""
    from pongrl.envs.selfplay import FastSelfPlayEnv

    env = FastSelfPlayEnv(1, 0, mode=mode)
    game, framed = (TwoPlayerGames(1, mode=mode, autoreset=False, profiles=("seed", "standard")) for _ in range(2))
    try:
        obs, _ = env.reset(seed=0)
        game.reset()
        framed.reset()
        rng = np.random.default_rng(1)
        for step in range(401):
            for match in (game, framed):
                assert np.array_equal(obs[0], match.observation(0, RIGHT)), step
                assert np.array_equal(obs[1], match.observation(0, LEFT)), step
            actions = rng.integers(0, 6, 2)
            obs, *_ = env.step(actions)
            game.play_step(actions[None])
            framed.begin_step(0, int(actions[0]), int(actions[1]))
            while not framed.play_frame(0):
                pass
        assert sum(game.points[0]) > 0  # the steps went through scored points
        assert list(framed.points[0]) == list(game.points[0])
        assert np.array_equal(framed.observation(0, RIGHT, "standard"), game.observation(0, RIGHT, "standard"))
    finally:
        env.close()
        game.close()
        framed.close()


def test_the_two_player_variation_changes_the_game_and_its_league_key():
    from pongrl.league.ratings import match_key

    def points(mode):
        game = TwoPlayerGames(1, mode=mode, autoreset=False)
        game.reset()
        rng = np.random.default_rng(1)
        for _ in range(400):
            game.play_step(rng.integers(0, 6, (1, 2)))
        game.close()
        return list(game.points[0])

    assert points(3) != points(4)  # the same actions, another game
    classic = match_key("a", "b", 0, 2, False, 800)
    assert match_key("a", "b", 0, 2, False, 800, game_mode=4) == classic  # keys cached before the flag stay valid
    assert match_key("a", "b", 0, 2, False, 800, game_mode=3) != classic
    assert match_key("a", "builtin", 0, 2, False, 800, game_mode=3) == match_key("a", "builtin", 0, 2, False, 800)


def test_game_mode_in_a_duel_and_refused_against_the_built_in_ai(ppo_run, capsys):
    code, out, err = run(
        [
            "duel",
            checkpoint(ppo_run, 256),
            checkpoint(ppo_run, 512),
            "--games",
            "2",
            "--max-frames",
            "400",
            "--game-mode",
            "3",
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    assert json.loads(out)["game_mode"] == 3
    for args in (
        ["eval", ppo_run, "--game-mode", "3"],
        ["duel", ppo_run, "builtin", "--game-mode", "3"],
        ["video", ppo_run, "--game-mode", "3", "--frames", "10"],
    ):
        code, out, err = run(args, capsys)
        assert code == 1 and "between two agents" in err and len(err.strip().splitlines()) == 1, (args, err)
    code, out, err = run(["duel", ppo_run, ppo_run, "--game-mode", "5"], capsys)
    assert code == 2 and "invalid choice" in err
