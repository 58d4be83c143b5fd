"""pongrl as a library: training, runs, agents and matches from Python, quiet and without signal handlers."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import pongrl

SMALL = dict(
    num_envs=2,
    buffer_size=2000,
    learning_starts=100,
    batch_size=8,
    log_every=100,
    checkpoint_every=200,
    eval_every=0,
    epsilon_decay_steps=500,
    torch_threads=1,
)


@pytest.mark.parametrize("module", ["pongrl", "pongrl.cli"])
def test_importing_pongrl_or_its_cli_loads_neither_torch_nor_the_emulator(module):
    code = f"import sys, {module}; print('torch' in sys.modules, 'ale_py' in sys.modules)"
    assert subprocess.check_output([sys.executable, "-c", code], text=True).split() == ["False", "False"]


def test_train_resume_and_branch_from_python_print_nothing_and_leave_signal_handlers(tmp_path, capfd):
    handler_before = signal.getsignal(signal.SIGINT)
    run = pongrl.train("dqn", str(tmp_path / "a"), total_steps=400, **SMALL)
    assert run.outcome.finished and run.outcome.step == 400
    assert [path.rsplit("/", 1)[1] for path in run.checkpoints()] == ["step_000000000200.pt", "step_000000000400.pt"]
    assert run.latest_checkpoint == run.checkpoints()[-1] and run.step == 400
    curve = run.metrics()
    assert list(curve["env_step"]) == [100.0, 200.0, 300.0, 400.0]
    assert np.isnan(curve["eval_mean_return"]).all()  # no evaluation asked for: NaN, not a made-up number

    run = run.resume(extra_steps=200)
    assert run.outcome.step == 600 and run.step == 600 and list(run.metrics()["env_step"])[-2:] == [500.0, 600.0]
    branch = run.branch(str(tmp_path / "b"), checkpoint="step_000000000400", extra_steps=200, learning_rate=1e-4)
    assert branch.config.learning_rate == 1e-4 and run.config.learning_rate == SMALL.get("learning_rate", 0.00025)
    assert list(branch.metrics()["env_step"]) == [100.0, 200.0, 300.0, 400.0, 500.0, 600.0]
    # a second fresh run in the same process
    again = pongrl.train(config=pongrl.make_config("dqn", total_steps=200, **SMALL), run_dir=str(tmp_path / "c"))
    assert again.outcome.finished

    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert signal.getsignal(signal.SIGINT) is handler_before
    agent = branch.agent()
    assert agent.env_step == 600 and agent.preferences(np.zeros((1, 4, 84, 84), np.uint8)).shape == (1, 6)


def test_api_refuses_bad_input_with_pongrl_errors(tmp_path):
    with pytest.raises(pongrl.PongrlError, match="not a setting of dqn"):
        pongrl.train("dqn", str(tmp_path / "x"), clip_coef=0.2)
    with pytest.raises(pongrl.PongrlError, match="unknown algorithm"):
        pongrl.train("a2c", str(tmp_path / "x"))
    with pytest.raises(pongrl.PongrlError, match="must be positive"):
        pongrl.train("dqn", str(tmp_path / "x"), total_steps=0)
    with pytest.raises(pongrl.PongrlError, match="not a pongrl run"):
        pongrl.Run(str(tmp_path))
    run = pongrl.train("dqn", str(tmp_path / "r"), total_steps=200, **SMALL)
    with pytest.raises(pongrl.PongrlError, match="cannot change on resume"):
        run.resume(extra_steps=100, learning_rate=1e-3)
    with pytest.raises(pongrl.PongrlError, match="already holds a run"):
        pongrl.train("dqn", str(tmp_path / "r"), total_steps=200, **SMALL)
    with pytest.raises(pongrl.PongrlError, match="epsilon"):
        pongrl.evaluate(run.agent(), episodes=1, epsilon=2.0)
    with pytest.raises(pongrl.PongrlError, match="expected an agent"):
        pongrl.evaluate(42)


def test_an_agent_predicts_like_it_acts_and_plays_matches_given_as_object_or_spec():
    agent = pongrl.load_agent("zoo:dqn")
    batch = np.random.default_rng(0).integers(0, 256, (3, 4, 84, 84), dtype=np.uint8)
    assert list(agent.predict(batch)) == list(agent.act(batch))
    assert agent.predict(batch[0]) == int(agent.act(batch[:1])[0])
    as_object = pongrl.duel(agent, "builtin", games=1)
    as_spec = pongrl.duel("zoo:dqn", "builtin", games=1)
    assert as_object["per_game"] == as_spec["per_game"] and as_object["games"] == 1
    assert pongrl.evaluate(agent, episodes=1)["scores"] == [as_spec["per_game"][0]["score"]]


def test_the_readme_python_example_runs_as_written(tmp_path):
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    example = readme.split("## From Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    loss, sticky_mean, win_rate = (float(line) for line in done.stdout.split())
    assert loss >= 0 and -21 <= sticky_mean <= 21 and 0.0 <= win_rate <= 1.0
    assert done.stderr == ""  # the library prints nothing of its own
    assert len(pongrl.Run(str(tmp_path / "runs" / "from-python")).checkpoints()) >= 2


def test_the_documented_layout_lists_every_module_as_it_is():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    contributing = (root / "docs" / "project" / "contributing.md").read_text()
    layout = contributing.split("## Layout", 1)[1].split("```", 2)[1]
    package = layout.split("\ntests/", 1)[0]  # the src/pongrl/ part of the block
    listed = set(re.findall(r"[\w/]+\.py", package))
    modules = {str(path.relative_to(root / "src" / "pongrl")) for path in (root / "src" / "pongrl").rglob("*.py")}
    assert listed == modules, (sorted(modules - listed), sorted(listed - modules))
