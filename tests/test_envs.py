"""The single-player env: the Python emulator loop sees exactly what the C++ vector env sees."""

import numpy as np
import pytest

from ale_py.vector_env import AtariVectorEnv

from pongrl.envs import PongGame
from pongrl.errors import PongrlError


def test_python_game_matches_the_vector_env_frame_for_frame():
    # Without no-op starts both emulators follow the same actions from the same power-on state.
    vector = AtariVectorEnv(
        "pong",
        1,
        noop_max=0,
        reward_clipping=False,
        use_fire_reset=False,
        repeat_action_probability=0.0,
        autoreset_mode="SameStep",
    )
    vector_obs, _ = vector.reset(seed=3)
    game = PongGame(seed=3, noop_max=0)
    game_obs = game.reset()
    np.testing.assert_array_equal(vector_obs[0], game_obs)
    rng = np.random.default_rng(0)
    points = 0
    for _ in range(400):
        action = int(rng.integers(0, 6))
        vector_obs, vector_reward, *_ = vector.step(np.array([action]))
        game_obs, game_reward, terminated, truncated = game.step(action)
        np.testing.assert_array_equal(vector_obs[0], game_obs)
        assert vector_reward[0] == game_reward
        points += game_reward != 0
    assert points > 0, "the comparison covered scored points"
    vector.close()


def test_rewards_are_true_scores_and_colour_frames_are_native():
    game = PongGame(seed=1)
    game.reset()
    assert game.rgb().shape == (210, 160, 3)
    total = 0.0
    for _ in range(300):
        _, reward, terminated, truncated = game.step(0, record_colour=True)
        assert reward in (-1.0, 0.0, 1.0)
        total += reward
    assert total < 0, "a paddle that never moves loses points to the built-in AI"
    assert len(game.colour_frames) == 1200


def test_a_start_fixes_the_game_whatever_the_emulator_seed():
    # The claim behind `pongrl eval --every-start`: with no sticky actions the emulator draws nothing
    # itself, so the same no-op count and actions give the same game under any seed, and another
    # count gives another game.
    actions = np.random.default_rng(1).integers(0, 6, 300)

    def trajectory(seed, noop_frames, profile):
        game = PongGame(seed=seed, profile=profile)
        frames, rewards = [game.reset(noop_frames)], []
        for action in actions:
            obs, reward, *_ = game.step(int(action))
            frames.append(obs)
            rewards.append(reward)
        return np.stack(frames), rewards

    for profile in ("standard", "seed"):
        frames, rewards = trajectory(0, 7, profile)
        same_frames, same_rewards = trajectory(12345, 7, profile)
        np.testing.assert_array_equal(frames, same_frames)
        assert rewards == same_rewards and any(rewards), "the comparison covered scored points"
        other_frames, _ = trajectory(0, 8, profile)
        assert not np.array_equal(frames, other_frames)


def test_sticky_actions_make_the_emulator_draw_and_the_seed_fixes_the_draws():
    # `--sticky-actions P`: each frame repeats the previous action with probability P, drawn by the
    # emulator from its own seed. The same start then gives other games under other seeds (what
    # makes it a held-out test of a policy tuned to the deterministic protocol), and the same seed
    # the same game again. P = 0 keeps the protocol exact.
    from pongrl.evaluation import play_games

    def act(obs):  # a policy that reacts to what it sees, so that a repeated action changes the game
        return obs.reshape(len(obs), -1).sum(axis=1, dtype=np.int64) % 6

    def games(seed, sticky, profile):
        played = play_games(act, 2, seed, profile, starts=[5, 5], sticky_actions=sticky)
        return [(game["points_won"], game["points_lost"], game["length"]) for game in played]

    for profile in ("standard", "seed"):  # two emulators, seeded 0 and 1 (and 1 and 2)
        exact = games(0, 0.0, profile)
        assert exact[0] == exact[1], "no sticky actions: the start fixes the game"
        sticky = games(0, 0.25, profile)
        assert sticky == games(0, 0.25, profile), "the same seed draws the same repeats"
        assert sticky[0] != sticky[1] and exact[0] not in sticky, "the repeats change the games"
        assert games(1, 0.25, profile)[0] == sticky[1]
    # The C++ vector env (random starts drawn from the seed) takes the same probability.
    vector = [play_games(act, 1, 3, "standard", sticky_actions=p)[0]["length"] for p in (0.0, 0.25, 0.25)]
    assert vector[1] == vector[2] != vector[0]
    with pytest.raises(PongrlError, match="sticky-action probability"):
        play_games(act, 1, 0, sticky_actions=1.0)


def test_a_reseeded_emulator_keeps_its_sticky_actions_and_replays_its_stream():
    # What an intervention's common random numbers rest on: reseeding reloads the cartridge, sticky actions stay on.
    game = PongGame(0, sticky_actions=0.25)

    def rams(emulator_seed):
        game.seed_emulator(emulator_seed)
        game.reset(0)
        seen = []
        for step in range(400):
            game.step((2, 3)[(step // 7) % 2])  # up and down in turns: a sticky repeat shows on the paddle
            seen.append(game.ale.getRAM().copy())
        return np.array(seen)

    first = rams(1)
    assert (rams(2) != first).any()
    np.testing.assert_array_equal(rams(1), first)


@pytest.mark.parametrize("sticky_actions", [0.0, 0.25])
def test_the_seed_view_sees_what_the_cards_supersuit_chain_sees(sticky_actions):
    # The same emulator frames through pongrl's seed view of the single-player game and through SuperSuit's own
    # wrappers on Gymnasium's PongNoFrameskip-v4 (the self-play card's chain): the same pixels, max-pool, stack
    # and blanked score, and with sticky actions the same repeats when the emulator gets the same seed. The
    # chains differ only in their starts: the card's plays no no-op frames, so the seed view starts from 0 here.
    from pongrl.envs.card_chain import make_card_chain_env

    chain = make_card_chain_env(sticky_actions)
    chain_obs, info = chain.reset(seed=11)
    emulator_seed = int(info["seeds"][1])  # what Gymnasium's env gave the emulator
    assert emulator_seed < 2**31, "PongGame takes seeds below 2**31"
    game = PongGame(0, profile="seed", sticky_actions=sticky_actions)
    game.seed_emulator(emulator_seed)
    np.testing.assert_array_equal(game.reset(0), chain_obs)
    assert chain_obs.shape == (84, 84, 4) and chain_obs[:, :, :3].max() == 0, "a reset stack holds one frame"
    rng = np.random.default_rng(0)
    points = 0
    for step in range(500):
        action = int(rng.integers(0, 6))
        chain_obs, chain_reward, *_ = chain.step(action)
        game_obs, game_reward, *_ = game.step(action)
        np.testing.assert_array_equal(game_obs, chain_obs, err_msg=f"step {step}")
        assert game_reward == chain_reward, step
        points += game_reward != 0
    assert points >= 5, "the comparison covered scored points"
    assert chain_obs[:9].max() == 0 and chain_obs[9:].max() > 0, "score rows blank, the court seen"
    chain.close()


def test_the_card_chain_plays_pongrls_game_from_no_no_op_frames(capsys):
    # Without sticky actions a greedy agent's game through the card's chain is pongrl's game from start 0.
    from pongrl.agent import load_agent
    from pongrl import evaluate
    from pongrl.evaluation import evaluate_card_chain, play_games

    agent = load_agent("zoo:selfplay-small-0252k")  # a short game: the early self-play agent loses it quickly
    [through_card] = evaluate(agent, 1, seed=5, chain="card")["per_game"]
    [through_pongrl] = play_games(lambda obs: agent.act(obs), 1, 5, "seed", starts=[0])
    assert through_card["points_won"] + through_card["points_lost"] >= 21
    for key in ("score", "points_won", "points_lost", "length"):
        assert through_card[key] == through_pongrl[key], key
    with pytest.raises(PongrlError, match="standard view"):
        evaluate_card_chain(load_agent("zoo:dqn"), 1, seed=0)
    from cli_helpers import run

    for args, message in (
        (["zoo:dqn"], "zoo:dqn sees pongrl's standard view"),
        (["zoo:selfplay", "--every-start"], "--chain card plays games against the built-in AI through the self-play"),
    ):
        code, _, err = run(["eval", *args, "--chain", "card"], capsys)
        assert code == 1 and message in err and len(err.splitlines()) == 1
