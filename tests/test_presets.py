"""Every named preset builds a valid configuration, and the Zoo presets hold the Zoo's Atari settings."""

import pytest

from pongrl.config import CONFIG_CLASSES, make_config


@pytest.mark.parametrize("algo, preset", [(a, p) for a, (_, presets) in CONFIG_CLASSES.items() for p in presets])
def test_every_preset_is_valid(algo, preset):
    config = make_config(algo, preset, {})
    assert config.algo == algo and config.preset == preset


def test_zoo_presets_match_the_zoo_atari_settings():
    ppo = make_config("ppo", "zoo", {})
    assert (ppo.num_envs, ppo.num_steps, ppo.update_epochs) == (8, 128, 4)
    assert ppo.num_envs * ppo.num_steps // ppo.num_minibatches == 256  # minibatch size
    assert (ppo.clip_coef, ppo.ent_coef, ppo.vf_coef, ppo.clip_vloss, ppo.share_network) == (
        0.1,
        0.01,
        0.5,
        False,
        True,
    )
    dqn = make_config("dqn", "zoo", {})
    assert (dqn.num_envs, dqn.train_frequency, dqn.batch_size, dqn.n_step, dqn.double_dqn) == (1, 4, 32, 1, False)
    assert (dqn.target_update_every, dqn.learning_starts, dqn.epsilon_decay_steps) == (1_000, 100_000, 1_000_000)


def test_the_rainbow_preset_is_how_zoo_dqn_was_trained():
    # zoo:dqn's card holds the command that trained it; the preset must give the same learning settings, so that
    # `pongrl train dqn --preset rainbow` trains that agent again (the run's bookkeeping aside).
    import dataclasses
    import shlex

    from pongrl import zoo
    from pongrl.cli import build_parser

    command = shlex.split(zoo.card("dqn")["trained_with"])
    assert command[:3] == ["pongrl", "train", "dqn"]
    args = build_parser().parse_args(command[1:])
    given = {
        name: value
        for name, value in vars(args).items()
        if value is not None and name in {f.name for f in dataclasses.fields(make_config("dqn", "default", {}))}
    }
    trained = dataclasses.asdict(make_config("dqn", "default", {k: v for k, v in given.items() if k != "preset"}))
    preset = dataclasses.asdict(make_config("dqn", "rainbow", {}))
    bookkeeping = {"preset", "seed", "torch_threads", "eval_every", "eval_episodes"}
    bookkeeping |= {"checkpoint_every", "keep_checkpoints"}
    differing = {name for name in preset if preset[name] != trained[name]}
    assert differing <= bookkeeping, {name: (preset[name], trained[name]) for name in differing - bookkeeping}
    assert preset["dueling"] and preset["distributional"] == "c51" and preset["prioritized_replay"]
