"""Agents that ship with pongrl (zoo:NAME) and agents from the Hugging Face Hub (hf://OWNER/REPO/FILE)."""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from pongrl import zoo
from pongrl.agent import load_agent, save_safetensors_agent
from pongrl.arena import load_player
from pongrl.errors import PongrlError
from pongrl.evaluation import play_games
from pongrl.league.ratings import collect_entrants
from pongrl.nets import ActorCritic, QNetwork

from cli_helpers import run as run_cli

OBS_STANDARD = np.random.default_rng(0).integers(0, 256, (3, 4, 84, 84), dtype=np.uint8)
OBS_SEED = np.ascontiguousarray(OBS_STANDARD.transpose(0, 2, 3, 1))


# ---- the zoo ------------------------------------------------------------------------------------------
def test_the_zoo_ships_agents_with_cards():
    assert zoo.names(), "pongrl ships agents in src/pongrl/zoo_agents"
    total = 0
    for name in zoo.names():
        card = zoo.card(name)
        path = zoo.weights_path(zoo.PREFIX + name)
        with open(path, "rb") as handle:
            assert hashlib.sha256(handle.read()).hexdigest() == card["sha256"], name
        assert card["trained_with"].startswith("pongrl ") and card["algo"] in ("dqn", "ppo", "selfplay")
        assert len(card["scores"]["every_start"]["scores"]) == 31
        total += os.path.getsize(path) + os.path.getsize(path[: -len(".safetensors")] + ".json")
    assert total < 60 * 2**20


# The emulator is deterministic and greedy play too, so a start fixes the whole game: a shipped agent must replay
# the scores its card records. A start's no-op count modulo the frame skip (4) decides most of the game, so the
# first four starts meet every phase; three later ones (8, 13, 28) check that the rest follow (at 8,
# zoo:selfplay-separate's game is not the one its phase gives at 0). Seven of the 31 keep the test short (a game
# that never ends runs to the emulator's 108,000-frame limit, about a minute); `python benchmarks/zoo_entry.py`
# scored all 31 on the shipped file. A series' checkpoints (kept for probes across training) replay their first two.
STARTS_REPLAYED = [0, 1, 2, 3, 8, 13, 28]
SERIES_STARTS_REPLAYED = [0, 1]


@pytest.mark.parametrize("name", zoo.names())
def test_a_shipped_agent_replays_the_exact_score_on_its_card(name):
    card = zoo.card(name)
    agent = load_agent(zoo.PREFIX + name)
    assert agent.env_step == card["env_step"] and agent.obs_profile == card["obs_profile"]
    starts = SERIES_STARTS_REPLAYED if card.get("series") else STARTS_REPLAYED
    recorded = [card["scores"]["every_start"]["scores"][start] for start in starts]
    games = play_games(lambda obs: agent.act(obs), len(starts), 0, agent.obs_profile, starts=starts)
    assert [game["start_noop_frames"] for game in games] == starts
    assert [game["score"] for game in games] == recorded


def test_zoo_names_in_commands_and_bad_names(capsys):
    code, out, _ = run_cli(["zoo", "--json"], capsys)
    assert code == 0 and [row["name"] for row in json.loads(out)] == [zoo.PREFIX + name for name in zoo.names()]
    code, out, _ = run_cli(["zoo"], capsys)
    assert code == 0 and all(zoo.PREFIX + name in out for name in zoo.names())
    code, _, err = run_cli(["eval", "zoo:no-such-agent"], capsys)
    err = err.strip()
    assert code == 1 and "\n" not in err
    assert err.startswith("pongrl: error: zoo:no-such-agent: no such agent in the zoo")
    entrants = collect_entrants(["zoo:*"], include_builtin=True)
    assert [e.name for e in entrants[:-1]] == [zoo.PREFIX + name for name in zoo.names()]
    with pytest.raises(PongrlError, match="no agent in the zoo matches"):
        collect_entrants(["zoo:nothing*"], include_builtin=True)
    player = load_player(zoo.PREFIX + zoo.names()[0])
    assert player.name == zoo.PREFIX + zoo.names()[0]


# ---- safetensors agents -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["dqn", "selfplay-shared", "selfplay-separate"])
def test_a_safetensors_agent_plays_as_the_network_it_was_saved_from(tmp_path, kind):
    torch.manual_seed(0)
    if kind == "dqn":
        network, algo, profile, obs = QNetwork(6), "dqn", "standard", OBS_STANDARD
        expected = network(torch.from_numpy(obs)).detach().numpy()
    else:
        network = ActorCritic(6, share_network=kind.endswith("shared"))
        algo, profile, obs = "selfplay", "seed", OBS_SEED
        expected = network.logits(torch.from_numpy(obs)).detach().numpy()
    path = str(tmp_path / "agent.safetensors")
    save_safetensors_agent(path, network.state_dict(), algo, 12345, profile)
    agent = load_agent(path)
    assert agent.env_step == 12345 and agent.obs_profile == profile
    np.testing.assert_allclose(agent.preferences(obs), expected, rtol=1e-5, atol=1e-6)


def test_a_damaged_safetensors_file_is_refused_in_one_line(tmp_path):
    path = tmp_path / "agent.safetensors"
    save_safetensors_agent(str(path), QNetwork(6).state_dict(), "dqn", 1, "standard")
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(PongrlError, match="not a readable safetensors file"):
        load_agent(str(path))


# ---- the Hugging Face Hub -----------------------------------------------------------------------------
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def hub_cache(root, repo_id: str, files: dict) -> str:
    """A Hugging Face cache in the Hub's own layout (models--OWNER--REPO/{refs/main, snapshots/COMMIT/...})
    holding `files` (name -> writer of that path), as huggingface_hub leaves it after a download."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    for name, write in files.items():
        target = repo / "snapshots" / COMMIT / name
        target.parent.mkdir(parents=True, exist_ok=True)
        write(str(target))
    return str(root)


class RunsCode:
    """A pickle that would run code when unpickled: weights_only loading must refuse it."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def cli(args, env):
    """`pongrl ARGS` in a fresh process with the given Hub settings (huggingface_hub reads them at import)."""
    env = {**os.environ, **env}
    return subprocess.run([sys.executable, "-m", "pongrl", *args], capture_output=True, text=True, env=env, timeout=300)


def test_hub_agents_load_from_the_cache_offline_and_pickled_code_is_refused(tmp_path, monkeypatch):
    torch.manual_seed(1)
    dqn, card_agent = QNetwork(6), ActorCritic(6, share_network=False)
    marker = tmp_path / "code-ran"
    cache = hub_cache(
        tmp_path / "cache",
        "alice/pong",
        {
            "dqn.safetensors": lambda p: save_safetensors_agent(p, dqn.state_dict(), "dqn", 7, "standard"),
            "checkpoints/agent.pt": lambda p: torch.save(card_agent.state_dict(), p),  # the self-play card's format
            "evil.pt": lambda p: torch.save({"weights": RunsCode(str(marker))}, p),
        },
    )
    offline = {"HF_HUB_CACHE": cache, "HF_HUB_OFFLINE": "1"}

    done = cli(["eval", "hf://alice/pong/dqn.safetensors", "--episodes", "1", "--json"], offline)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["checkpoint"] == "hf://alice/pong/dqn.safetensors" and result["env_step"] == 7

    # In this process (huggingface_hub read its settings when first imported, so they are set on it):
    # the card's bare state_dict from the cache plays as the network it came from.
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", cache)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    agent = load_agent("hf://alice/pong/checkpoints/agent.pt")
    expected = card_agent.logits(torch.from_numpy(OBS_SEED)).detach().numpy()
    np.testing.assert_allclose(agent.preferences(OBS_SEED), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(PongrlError, match="not a readable pongrl checkpoint"):
        load_agent("hf://alice/pong/evil.pt")
    assert not marker.exists()
    with pytest.raises(PongrlError, match="hf://OWNER/REPO/FILE"):
        load_agent("hf://alice/pong")

    missing = cli(["eval", "hf://alice/pong/missing.pt"], offline)
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        "pongrl: error: hf://alice/pong/missing.pt: not in the local Hugging Face cache, and HF_HUB_OFFLINE is set"
    )

    # Not offline but the Hub unreachable (a closed local port as its address): the cached copy is used.
    unreachable = {"HF_HUB_CACHE": cache, "HF_ENDPOINT": "http://127.0.0.1:9"}
    done = cli(
        [
            "duel",
            "hf://alice/pong/dqn.safetensors",
            "hf://alice/pong/checkpoints/agent.pt",
            "--games",
            "2",
            "--max-frames",
            "400",
            "--json",
        ],
        unreachable,
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["per_game"]) == 2


# ---- zoo agents reach the self-play card's code and the Hub --------------------------------------------
def _card_agent_class():
    """The self-play model card's network, written from the card's text: `Agent(envs, share_network)` over
    `atari_network(orth_init=True)`, loaded by `Agent.load` (torch.load of a bare state_dict)."""
    from torch import nn

    def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
        torch.nn.init.orthogonal_(layer.weight, std)
        torch.nn.init.constant_(layer.bias, bias_const)
        return layer

    def atari_network(orth_init=False):
        init = layer_init if orth_init else lambda m: m
        return nn.Sequential(
            init(nn.Conv2d(4, 32, 8, stride=4)),
            nn.ReLU(),
            init(nn.Conv2d(32, 64, 4, stride=2)),
            nn.ReLU(),
            init(nn.Conv2d(64, 64, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
            init(nn.Linear(64 * 7 * 7, 512)),
            nn.ReLU(),
        )

    class Agent(nn.Module):
        def __init__(self, envs, share_network=False):
            super().__init__()
            self.actor_network = atari_network(orth_init=True)
            self.share_network = share_network
            self.critic_network = self.actor_network if share_network else atari_network(orth_init=True)
            self.actor = layer_init(nn.Linear(512, envs.single_action_space.n), std=0.01)
            self.critic = layer_init(nn.Linear(512, 1), std=1)

        def logits(self, x):
            x = x.clone()
            x[:, :, :, [0, 1, 2, 3]] /= 255.0
            return self.actor(self.actor_network(x.permute((0, 3, 1, 2))))

        def load(self, path):
            self.load_state_dict(torch.load(path), strict=True)
            if self.share_network:
                self.critic_network = self.actor_network

    return Agent


def _policy_zoo_agents() -> list[str]:
    return [name for name in zoo.names() if zoo.card(name)["algo"] != "dqn" and "small" not in name]


@pytest.mark.parametrize("name", _policy_zoo_agents())
def test_a_policy_zoo_agent_exports_into_the_card_agent_and_plays_the_same_actions(tmp_path, capsys, name):
    from types import SimpleNamespace

    out = str(tmp_path / "agent.pt")
    code, stdout, err = run_cli(["export", zoo.PREFIX + name, "--out", out], capsys)
    assert code == 0, err
    state = torch.load(out, weights_only=True)
    assert all(tensor.dtype == torch.float32 for tensor in state.values()), "float32 whatever the stored dtype"
    pongrl_agent = load_agent(zoo.PREFIX + name)
    envs = SimpleNamespace(single_action_space=SimpleNamespace(n=6))
    card_agent = _card_agent_class()(envs, share_network=pongrl_agent.network.share_network)
    card_agent.load(out)  # strict: every key of the card's Agent, no other
    obs = OBS_SEED if pongrl_agent.obs_profile == "seed" else OBS_STANDARD
    frames = torch.from_numpy(OBS_SEED).float()  # the card's Agent takes channel-last frames
    with torch.no_grad():
        card_logits = card_agent.logits(frames).numpy()
    np.testing.assert_allclose(card_logits, pongrl_agent.preferences(obs), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(card_logits.argmax(axis=1), pongrl_agent.act(obs))


def test_export_and_card_take_every_agent_spec_and_refuse_what_they_cannot_write(tmp_path, capsys):
    code, _, err = run_cli(["export", "zoo:dqn", "--out", str(tmp_path / "dqn.pt")], capsys)
    assert code == 1 and "only PPO agents" in err and not (tmp_path / "dqn.pt").exists()
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint at all")
    code, _, err = run_cli(["export", str(tmp_path / "junk.pt"), "--out", str(tmp_path / "x.pt")], capsys)
    assert code == 1 and err.count("\n") == 1 and "it is not a file written by torch.save" in err
    renamed = tmp_path / "renamed.pt"
    renamed.write_bytes(open(zoo.weights_path("zoo:dqn"), "rb").read())
    code, _, err = run_cli(["eval", str(renamed)], capsys)
    assert code == 1 and "give it a .safetensors name" in err and "weights_only" not in err

    card_dir = tmp_path / "card"
    code, out, err = run_cli(
        ["card", "zoo:ppo", "--out", str(card_dir), "--games", "1", "--video-frames", "60", "--seed", "3"], capsys
    )
    assert code == 0, err
    readme = (card_dir / "README.md").read_text()
    assert zoo.card("ppo")["trained_with"] in readme and "pongrl eval zoo:ppo" in readme
    exported = load_agent(str(card_dir / "model.safetensors"))
    np.testing.assert_array_equal(exported.act(OBS_STANDARD), load_agent("zoo:ppo").act(OBS_STANDARD))
    assert not (card_dir / "config.yaml").exists(), "a zoo agent's file records no config.yaml to copy"


def test_the_zoos_best_agent_is_the_best_under_sticky_actions(tmp_path, monkeypatch):
    monkeypatch.setattr(zoo, "FOLDER", str(tmp_path))
    for name, exact, sticky in (("memorizer", 20.5, 2.0), ("robust", 18.5, 17.0), ("unscored", 21.0, None)):
        (tmp_path / f"{name}.safetensors").write_bytes(b"")
        scores = {"every_start": {"mean": exact, "distinct_games": 4}}
        if sticky is not None:
            scores["sticky_actions"] = {"mean": sticky, "ci95": [sticky - 1, sticky + 1], "games": 100}
        (tmp_path / f"{name}.json").write_text(json.dumps({"algo": "dqn", "env_step": 1, "scores": scores}))
    assert zoo.best() == "zoo:robust"
    table = zoo.format_listing(zoo.listing())
    assert "+16.0..+18.0" in table and "distinct" in table


def test_the_zoos_best_agent_is_the_one_with_the_best_worst_case_when_reports_exist(tmp_path, monkeypatch):
    monkeypatch.setattr(zoo, "FOLDER", str(tmp_path))
    # (name, sticky score, worst case of its robustness report): the specialist beats the built-in AI by more
    for name, sticky, worst in (("specialist", 17.0, -9.0), ("allrounder", 14.0, 5.0), ("unreported", 19.0, None)):
        (tmp_path / f"{name}.safetensors").write_bytes(b"")
        card = {"algo": "selfplay", "env_step": 1, "scores": {"sticky_actions": {"mean": sticky}}}
        if worst is not None:
            card["robustness"] = {"worst": {"opponent": "hold-up", "point_difference": worst}}
        (tmp_path / f"{name}.json").write_text(json.dumps(card))
    assert zoo.best() == "zoo:allrounder"
    table = zoo.format_listing(zoo.listing())
    assert "worst case" in table and "-9.00" in table


def test_a_reader_that_closes_the_pipe_ends_the_listing_quietly():
    # `pongrl zoo | head -1`: the reader leaves before pongrl writes; that is no error and no traceback.
    process = subprocess.Popen([sys.executable, "-m", "pongrl", "zoo"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    error = process.stderr.read().decode()
    assert process.wait() == 0 and error == ""
