"""The robustness report: an agent against scripted opponents and other agents, on the real two-player emulator."""

import json

import numpy as np

from cli_helpers import run
from pongrl.agent import Agent, load_agent
from pongrl.robustness import format_report, other_zoo_agents, robustness_report
from pongrl.zoo import card, names


class Always(Agent):
    """A planted agent: always the same action (NOOP: a paddle that never moves), in the standard profile."""

    obs_profile = "standard"

    def __init__(self, action: int = 0):
        super().__init__(f"always-{action}")
        self.action = action

    def preferences(self, obs):
        preferences = np.zeros((len(obs), 6))
        preferences[:, self.action] = 1
        return preferences


def test_a_paddle_that_never_moves_loses_to_a_chaser_and_the_worst_case_is_the_lowest_row():
    report = robustness_report(Always(), opponents="chase,still", games=2, agents=[], builtin=False)
    rows = {row["opponent"]: row for row in report["rows"]}
    assert set(rows) == {"chase", "still"}
    chase = rows["chase"]
    assert chase["games"] == 2 and chase["losses"] == 2 and chase["points_lost"] == 21
    assert chase["point_difference"] == chase["points_won"] - chase["points_lost"] < 0
    assert report["worst"]["opponent"] == min(rows.values(), key=lambda row: row["point_difference"])["opponent"]
    assert report["mean_point_difference"] == np.mean([row["point_difference"] for row in rows.values()])
    assert any(line.startswith("worst case: ") for line in format_report(report))


def test_an_agent_against_itself_without_sticky_actions_scores_exactly_zero():
    report = robustness_report(Always(2), opponents="", games=2, agents=[Always(2)], builtin=False, sticky_actions=0.0)
    (row,) = report["rows"]
    assert row["kind"] == "agent" and row["point_difference"] == 0


def test_the_zoo_opponents_leave_out_the_agent_itself_and_study_series():
    others = {agent.name for agent in other_zoo_agents(load_agent("zoo:dqn"))}
    players = {f"zoo:{name}" for name in names() if not card(name).get("series")}
    assert others == players - {"zoo:dqn"}


def test_the_command_prints_writes_and_refuses_in_one_line(tmp_path, capsys):
    out = tmp_path / "report.json"
    flags = ["--no-builtin", "--agents", "none", "--opponents", "hold-down", "--games", "2", "--torch-threads", "1"]
    code, printed, _ = run(["robustness", "zoo:dqn", *flags, "--out", str(out)], capsys)
    assert code == 0 and "worst case: hold-down" in printed
    report = json.loads(out.read_text())
    assert report["rows"][0]["opponent"] == "hold-down" and report["rows"][0]["games"] == 2
    code, _, err = run(["robustness", "zoo:dqn", *flags, "--out", str(out)], capsys)
    assert code == 1 and "exists" in err and json.loads(out.read_text()) == report
    code, _, err = run(["robustness", "zoo:dqn", "--opponents", "chase,nobody"], capsys)
    assert code == 1 and "unknown scripted opponent 'nobody' (choose from still, hold-up" in err
    assert len(err.strip().splitlines()) == 1
