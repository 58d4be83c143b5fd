"""`pongrl probe intervene`: edits along a probe's direction inside a network, on a planted network whose
action is known to depend on one direction, and end to end on a real collect (games on the real emulator)."""

import csv
import os

import numpy as np
import pytest
import torch

from pongrl.agent import QAgent
from pongrl.game import NUM_ACTIONS
from pongrl.nets import QNetwork
from pongrl.probes.intervene import EditedNetwork, LayerEdits

from cli_helpers import run

UP, DOWN = 2, 3


def planted_agent(direction: np.ndarray) -> QAgent:
    """A DQN agent whose Q(UP) - Q(DOWN) is 2 fc . direction, every other Q-value 0: its action depends on that
    direction of its fc layer and nothing else."""
    torch.manual_seed(0)
    network = QNetwork(NUM_ACTIONS)
    with torch.no_grad():
        network.head.weight.zero_()
        network.head.bias.zero_()
        network.head.weight[UP] = torch.as_tensor(direction, dtype=torch.float32)
        network.head.weight[DOWN] = -torch.as_tensor(direction, dtype=torch.float32)
    return QAgent(network, name="planted")


def test_steering_along_the_used_direction_changes_the_action_as_computed_and_a_random_one_does_not():
    obs = np.random.default_rng(0).integers(0, 256, (1, 4, 84, 84), dtype=np.uint8)
    fc = planted_agent(np.zeros(512)).layers(obs)["fc"][0].astype(np.float64)  # the same seeded torso
    assert fc.any()
    rng = np.random.default_rng(1)
    direction = rng.standard_normal(512)
    direction -= (fc @ direction + 1.0) / (fc @ fc) * fc  # fc . direction = -1: DOWN is chosen
    agent = planted_agent(direction)
    assert agent.act(obs)[0] == DOWN
    reading = lambda: float(agent.layers(obs)["fc"][0].astype(np.float64) @ direction)  # noqa: E731

    def edited(kind, vector):
        base, perturbed = EditedNetwork(agent, {"fc": LayerEdits([(kind, vector, 0.0)])}).preferences(obs, [("fc", 0)])
        np.testing.assert_array_equal(base, agent.preferences(obs))  # the unperturbed pass is the agent's own
        return perturbed[0]

    # Steer by alpha = +2 units of the reading fc . direction: -1 becomes +1, Q(UP) - Q(DOWN) = +2, UP.
    delta = 2.0 * direction / (direction @ direction)
    q_values = edited("steer", delta)
    assert q_values.argmax() == UP
    assert q_values[UP] - q_values[DOWN] == pytest.approx(2.0, abs=1e-3)
    assert agent.act(obs)[0] == DOWN and reading() == pytest.approx(-1.0, abs=1e-3)  # the agent is untouched

    # The same |delta| along a random direction barely moves the reading: the action stays.
    random_unit = rng.standard_normal(512)
    random_unit /= np.linalg.norm(random_unit)
    assert edited("steer", random_unit * np.linalg.norm(delta)).argmax() == DOWN

    # Ablating the used direction sets the reading to 0 (a tie broken to the lower action index); ablating a
    # direction the head does not read changes no Q-value at all.
    unit = direction / np.linalg.norm(direction)
    q_ablated = edited("ablate", unit)
    assert q_ablated[UP] == pytest.approx(0.0, abs=1e-4) and q_ablated[DOWN] == pytest.approx(0.0, abs=1e-4)
    unused = rng.standard_normal(512)
    unused -= (unused @ unit) * unit
    unused /= np.linalg.norm(unused)
    np.testing.assert_allclose(edited("ablate", unused), agent.preferences(obs)[0], atol=1e-4)


def test_one_batch_carries_each_row_under_its_own_edit():
    """Rows of one forward pass under different edits (and none) each get what they would get alone."""
    rng = np.random.default_rng(4)
    obs = rng.integers(0, 256, (3, 4, 84, 84), dtype=np.uint8)
    direction = rng.standard_normal(512)
    agent = planted_agent(direction)
    unit = direction / np.linalg.norm(direction)
    edits = [("steer", 3.0 * unit, 0.0), ("mean-ablate", unit, 0.5)]
    conv_edit = [("steer", rng.standard_normal(64 * 7 * 7), 0.0)]
    network = EditedNetwork(agent, {"fc": LayerEdits(edits), "conv3": LayerEdits(conv_edit)})
    alone = [network.preferences(obs[row : row + 1], [("fc", row)])[1][0] for row in range(2)]
    plain = agent.preferences(obs[2:3])[0]
    base, together = network.preferences(obs, [("fc", 0), ("fc", 1), None])
    np.testing.assert_allclose(base, agent.preferences(obs), atol=1e-5)
    np.testing.assert_allclose(together[0], alone[0], atol=1e-4)
    np.testing.assert_allclose(together[1], alone[1], atol=1e-4)
    np.testing.assert_allclose(together[2], plain, atol=1e-4)
    # The mean ablation sets the reading along the unit to 0.5: Q(UP) - Q(DOWN) = 2 |direction| 0.5.
    assert together[1][UP] - together[1][DOWN] == pytest.approx(np.linalg.norm(direction), rel=1e-3)
    # The steer moves fc . unit by 3: Q(UP) - Q(DOWN) by 2 |direction| 3.
    shift = (together[0][UP] - together[0][DOWN]) - (base[0][UP] - base[0][DOWN])
    assert shift == pytest.approx(6 * np.linalg.norm(direction), rel=1e-3)
    # An edit at a convolution runs the rest of the network again: the same as adding it by hand.
    _, mixed = network.preferences(obs, [("fc", 0), ("conv3", 0), None])
    torso, head = agent.policy_parts()
    with torch.no_grad():
        conv3 = torso[:6](agent.network_input(obs[1:2]))
        by_hand = head(torso[6:](conv3 + torch.as_tensor(conv_edit[0][1], dtype=torch.float32).reshape(conv3.shape)))
    np.testing.assert_allclose(mixed[1], by_hand[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(mixed[0], together[0], atol=1e-5)
    np.testing.assert_allclose(mixed[2], plain, atol=1e-4)
    assert np.abs(mixed[1] - base[1]).max() > 1e-3  # the conv3 edit did change the preferences


@pytest.fixture(scope="module")
def collect_dir(tmp_path_factory, request):
    from pongrl.agent import save_safetensors_agent

    folder = tmp_path_factory.mktemp("intervene")
    agent_path = str(folder / "dqn.safetensors")
    torch.manual_seed(3)
    save_safetensors_agent(agent_path, QNetwork(NUM_ACTIONS).state_dict(), "dqn", 0, "standard")
    out = str(folder / "collect")
    from pongrl.probes.collect import collect

    collect([agent_path], 1_500, out, sample=True, seed=0)
    return agent_path, out


def test_intervene_end_to_end_writes_its_table_and_chart(collect_dir, tmp_path, capsys):
    agent, probes = collect_dir
    out = str(tmp_path / "results")
    code, stdout, err = run(
        [
            "probe",
            "intervene",
            agent,
            "--probes",
            probes,
            "--layer",
            "fc",
            "--label",
            "ball_y",
            "--alpha",
            "-10",
            "10",
            "--kind",
            "steer",
            "ablate",
            "--games",
            "1",
            "--out",
            out,
        ],
        capsys,
    )
    assert code == 0, err
    with open(os.path.join(out, "intervene.csv")) as handle:
        rows = list(csv.DictReader(handle))
    # the unperturbed games, then (steer at 2 alphas + ablate) x (probe, random), one game each
    assert len(rows) == 1 + 3 * 2
    from pongrl.probes.intervene import Intervention

    assert Intervention(["fc"], ["ball_y"], ["steer", "ablate"], [-10, 10], 1).games_to_play() == len(rows)
    assert Intervention(["fc"], ["ball_y"], ["steer", "ablate"], [-10, 10], 3, random_draws=2).games_to_play() == 3 * (
        1 + 3 * 3
    )
    assert {(r["kind"], r["direction"]) for r in rows[1:]} == {
        (k, d) for k in ("steer", "ablate") for d in ("probe", "random")
    }
    assert all(r["score"] not in ("", "nan") for r in rows)
    assert all(len(r["paddle_offset_games"].split()) == 1 for r in rows)  # each game's offset, for paired slopes
    assert float(rows[0]["paddle_shift"]) == 0.0  # the unperturbed games against themselves
    steered = [r for r in rows if r["kind"] == "steer"]
    assert all(float(r["kl"]) >= 0 for r in steered)
    assert os.path.getsize(os.path.join(out, "intervene.png")) > 1000
    assert "unperturbed: score" in stdout
    assert stdout.count("steering response") == 2  # the steer's slope over alpha, probe and random; no ablation's


@pytest.mark.parametrize(
    "args, message",
    [
        (["--layer", "conv9", "--label", "ball_y"], "no layer 'conv9'"),
        (["--layer", "fc", "--label", "player_score"], "no probe of 'player_score'"),
        (["--layer", "fc", "--label", "ball_y", "--alpha", "up"], "expected a"),
        (["--layer", "fc", "--label", "ball_y", "--kind", "twist"], "--kind must be one of"),
        (["--layer", "fc", "--label", "ball_y", "--sticky-actions", "1.5"], "--sticky-actions must be in [0, 1)"),
        (["--layer", "conv3", "--label", "ball_y", "--kind", "steer-pattern"], "needs a layer stored whole"),
        (["--layer", "conv3", "--label", "ball_y", "landing_y", "--kind", "steer-partial"], "needs a layer stored"),
        (["--layer", "fc", "--label", "ball_y", "--kind", "steer-partial"], "give at least two labels"),
    ],
)
def test_bad_intervene_input_is_one_line_and_leaves_earlier_results(collect_dir, tmp_path, capsys, args, message):
    agent, probes = collect_dir
    out = tmp_path / "results"
    out.mkdir()
    (out / "intervene.csv").write_text("earlier results\n")
    code, _, err = run(
        ["probe", "intervene", agent, "--probes", probes, "--games", "1", "--out", str(out), *args], capsys
    )
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1, err
    assert (out / "intervene.csv").read_text() == "earlier results\n"


def test_ram_edits_move_the_ball_drawn_on_the_next_frame_and_the_built_in_ai_keeps_its_paddle():
    from pongrl.envs.single import PongGame
    from pongrl.game import RAM_BALL_X, RAM_BALL_Y, RAM_LEFT_PADDLE_Y

    def drawn(game):
        ys, xs = np.nonzero(np.all(game.rgb()[34:194] == (236, 236, 236), axis=2))
        return (int(ys.min()) + 34, int(xs.min())) if len(xs) else None

    game = PongGame(0, noop_max=0)
    game.reset(0)
    checked = 0
    for step in range(1_500):
        game.step(int(step % 6))
        ram = game.ale.getRAM()
        if not (70 <= ram[RAM_BALL_Y] <= 170 and 80 <= ram[RAM_BALL_X] <= 160) or step % 9:
            continue
        state = game.ale.cloneState()
        game.ale.act(game.actions[0])
        row, column = drawn(game)
        for byte, delta, expected in (
            (RAM_BALL_Y, 12, (row + 12, column)),
            (RAM_BALL_Y, -9, (row - 9, column)),
            (RAM_BALL_X, 7, (row, column + 7)),
        ):
            game.ale.restoreState(state)
            game.ale.setRAM(byte, int(game.ale.getRAM()[byte]) + delta)
            game.ale.act(game.actions[0])
            assert drawn(game) == expected, (byte, delta)
        game.ale.restoreState(state)
        game.ale.act(game.actions[0])
        unedited = int(game.ale.getRAM()[RAM_LEFT_PADDLE_Y])
        game.ale.restoreState(state)
        game.ale.setRAM(RAM_LEFT_PADDLE_Y, int(game.ale.getRAM()[RAM_LEFT_PADDLE_Y]) + 25)
        game.ale.act(game.actions[0])
        assert abs(int(game.ale.getRAM()[RAM_LEFT_PADDLE_Y]) - unedited) <= 2  # the built-in AI put it back
        game.ale.restoreState(state)
        checked += 1
        if checked == 10:
            break
    assert checked == 10


def test_counterfactual_moves_write_their_table(collect_dir, tmp_path, capsys):
    agent, probes = collect_dir
    out = str(tmp_path / "cf.csv")
    code, stdout, err = run(
        [
            "probe",
            "counterfactual",
            agent,
            "--probes",
            probes,
            "--layer",
            "fc",
            "--move",
            "ball_y=+10",
            "ball_x=-6",
            "--states",
            "3",
            "--out",
            out,
        ],
        capsys,
    )
    assert code == 0, err
    with open(out) as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["move"], int(r["delta"])) for r in rows] == [("ball_y", 10), ("ball_x", -6)]
    assert all(int(r["states"]) == 3 and float(r["kl"]) >= 0 for r in rows)
    code, _, err = run(
        ["probe", "counterfactual", agent, "--probes", probes, "--layer", "fc", "--move", "paddle=3"], capsys
    )
    assert code == 1 and "can move ball_y, ball_x" in err and len(err.strip().splitlines()) == 1


@pytest.fixture
def captured(monkeypatch):
    """The games left out (end to end above): what the tests using this check is the edits each condition plays
    under, the EditedNetwork that `intervene` built, in captured["network"]."""
    import pongrl.probes.intervene as intervene_module

    captured = {}

    def no_games(network, conditions, games, seed, sticky_actions, progress=None):
        captured["network"] = network
        return [{"scores": [0.0], "offsets": [0.0], "kl": [0.0], "changed": [0.0]} for _ in conditions]

    monkeypatch.setattr(intervene_module, "play_conditions", no_games)
    return captured


def test_random_controls_are_distinct_draws_of_the_probes_size_and_the_first_draw_is_stable(collect_dir, captured):
    import pongrl.probes.intervene as intervene_module

    agent, probes = collect_dir

    def shifts(draws):
        plan = intervene_module.Intervention(["fc"], ["ball_y"], ["steer"], [10.0], 1, random_draws=draws)
        rows = intervene_module.intervene(agent, probes, plan)
        edits = captured["network"].layer_edits["fc"].shift.numpy()
        return [row["direction"] for row in rows[1:]], edits

    names, three = shifts(3)
    assert names == ["probe", "random", "random2", "random3"]
    norms = np.linalg.norm(three, axis=1)
    np.testing.assert_allclose(norms, norms[0], rtol=1e-5)  # every control as large as the probe's edit
    units = three / norms[:, None]
    cosines = np.abs(units[1:] @ units[1:].T)[np.triu_indices(3, 1)]
    assert cosines.max() < 0.3  # three different directions (random in 512 dimensions: |cos| about 0.04)
    _, one = shifts(1)
    np.testing.assert_allclose(one[1], three[1])  # the first draw does not depend on how many are drawn


def test_a_pattern_steer_adds_alpha_times_the_pattern_and_its_control_is_as_large(collect_dir, captured):
    import pongrl.probes.intervene as intervene_module
    from pongrl.agent import as_agent
    from pongrl.probes.directions import fit_direction

    agent, probes = collect_dir
    plan = lambda kind: intervene_module.Intervention(["fc"], ["ball_y"], [kind], [-10.0, 10.0], 1)  # noqa: E731
    rows = intervene_module.intervene(agent, probes, plan("steer-pattern"))
    rows_steer = intervene_module.intervene(agent, probes, plan("steer"))
    steer_shifts = captured["network"].layer_edits["fc"].shift.numpy()
    np.testing.assert_allclose(steer_shifts[2], -steer_shifts[3], rtol=1e-6)
    assert len(rows_steer) == len(rows)
    rows = intervene_module.intervene(agent, probes, plan("steer-pattern"))
    assert [(row["kind"], row["direction"], row["alpha"]) for row in rows[1:]] == [
        ("steer-pattern", direction, alpha) for direction in ("probe", "random") for alpha in (-10.0, 10.0)
    ]
    pattern = fit_direction(probes, as_agent(agent), "fc", "ball_y").pattern
    shifts = captured["network"].layer_edits["fc"].shift.numpy()
    np.testing.assert_allclose(shifts[:2], [-10 * pattern, 10 * pattern], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(shifts[2:], axis=1), 10 * np.linalg.norm(pattern), rtol=1e-5)
    np.testing.assert_allclose(shifts[2], -shifts[3], rtol=1e-6)  # -alpha along the random direction: the opposite edit
    assert rows[1]["edit_size"] > 0


def test_a_partial_steer_adds_alpha_times_the_pattern_with_the_other_labels_held(collect_dir, captured):
    import pongrl.probes.intervene as intervene_module
    from pongrl.agent import as_agent
    from pongrl.probes.directions import fit_direction

    agent, probes = collect_dir
    plan = intervene_module.Intervention(["fc"], ["ball_y", "ball_x"], ["steer-partial"], [-10.0, 10.0], 1)
    rows = intervene_module.intervene(agent, probes, plan)
    assert [(row["label"], row["direction"], row["alpha"]) for row in rows[1:]] == [
        (label, direction, alpha)
        for label in ("ball_y", "ball_x")
        for direction in ("probe", "random")
        for alpha in (-10.0, 10.0)
    ]
    held_x = fit_direction(probes, as_agent(agent), "fc", "ball_y", held=("ball_x",))
    held_y = fit_direction(probes, as_agent(agent), "fc", "ball_x", held=("ball_y",))
    shifts = captured["network"].layer_edits["fc"].shift.numpy()
    np.testing.assert_allclose(shifts[0:2], [-10 * held_x.partial, 10 * held_x.partial], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(shifts[4:6], [-10 * held_y.partial, 10 * held_y.partial], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(shifts[2:4], axis=1), 10 * np.linalg.norm(held_x.partial), rtol=1e-5)
    assert not np.allclose(held_x.partial, held_x.pattern)  # holding ball_x fixed changed ball_y's pattern


def test_a_conditions_games_do_not_depend_on_what_else_the_call_plays_under_sticky_actions():
    # Game k of every condition starts from the same no-op frames and the same sticky-action stream, whichever
    # emulator of the batch plays it: three unperturbed conditions are three copies of one condition's games.
    from pongrl.probes.intervene import play_conditions

    from pongrl.envs.single import PongGame

    game, screens = PongGame(0), []
    game.reset(0)
    for step in range(300):
        screens.append(game.step(step % NUM_ACTIONS)[0])
    typical = planted_agent(np.zeros(512)).layers(np.stack(screens))["fc"].astype(np.float64).mean(0)
    direction = np.random.default_rng(5).standard_normal(512)
    direction -= (direction @ typical) / (typical @ typical) * typical  # its sign changes with the screen: UP or DOWN
    network = EditedNetwork(planted_agent(direction), {})
    alone = play_conditions(network, [None], games=2, seed=7, sticky_actions=0.25)
    three = play_conditions(network, [None, None, None], games=2, seed=7, sticky_actions=0.25, parallel=4)
    for result in three:
        assert result["offsets"] == alone[0]["offsets"] and result["scores"] == alone[0]["scores"]
