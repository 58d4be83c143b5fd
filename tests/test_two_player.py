"""Two-player Pong: the fast env reproduces the seed's PettingZoo + SuperSuit chain exactly.

The fast env resizes with tinyscaler, the library SuperSuit's resize_v1 calls, with the same
conversions, so observations are compared for exact equality (no grey-level tolerance).
"""

import numpy as np
import pytest

from pongrl.envs.selfplay import FastSelfPlayEnv, ReferenceSelfPlayEnv
from pongrl.envs.views import SeedFrameStack, SeedResizer, seed_frame
from pongrl.game import FRAME_SIZE, FRAME_STACK, SCORE_ROWS

GAMES = 2
pytestmark = pytest.mark.filterwarnings("ignore:The old environment creation API:DeprecationWarning")


def random_actions(rng, step):
    """Random actions for both players of every game, seeded, shaped to produce every event:
    `second_0` mostly stands still, so `first_0` wins a whole game within ~1,000 steps; and for a
    while nobody presses FIRE, so whoever has to serve collects serve penalties."""
    actions = rng.integers(0, 6, 2 * GAMES)
    lazy = rng.random(GAMES) < 0.85
    actions[1::2][lazy] = 0
    if 150 <= step < 330:
        actions = np.array([0, 2, 3])[actions % 3]  # NOOP, RIGHT, LEFT: the fire-free actions
    return actions


def assert_same_step(ref, fast, step):
    for name, a, b in zip(("obs", "rewards", "terminated", "truncated"), ref[:4], fast[:4]):
        np.testing.assert_array_equal(a, b, err_msg=f"{name} differ at step {step}")
    ref_info, fast_info = ref[4], fast[4]
    assert ref_info.keys() == fast_info.keys(), step
    if "final_obs" in ref_info:
        np.testing.assert_array_equal(
            ref_info["final_obs"], fast_info["final_obs"], err_msg=f"final observations differ at step {step}"
        )
    for mask in ("_final_obs", "_episode"):
        if mask in ref_info:
            np.testing.assert_array_equal(ref_info[mask], fast_info[mask], err_msg=f"{mask}, step {step}")
    if "episode" in ref_info:
        for key, value in ref_info["episode"].items():
            np.testing.assert_array_equal(value, fast_info["episode"][key], err_msg=f"episode {key}, step {step}")


def drive(envs, steps, actions_for, seed=0):
    """Step all envs with the same actions, asserting identical results; returns event counts."""
    first = [env.reset()[0] for env in envs]
    for other in first[1:]:
        np.testing.assert_array_equal(first[0], other, err_msg="reset observations differ")
    rng = np.random.default_rng(seed)
    events = {"points": 0, "serve_penalties": 0, "terminated": 0, "truncated": 0, "episodes": []}
    for step in range(steps):
        actions = actions_for(rng, step)
        results = [env.step(actions) for env in envs]
        for other in results[1:]:
            assert_same_step(results[0], other, step)
        obs, rewards, terminated, truncated, infos = results[0]
        pairs = rewards.reshape(-1, 2)
        events["points"] += int(((pairs[:, 0] * pairs[:, 1]) < 0).sum())
        events["serve_penalties"] += int(((pairs < 0) & (pairs[:, ::-1] == 0)).sum())
        events["terminated"] += int(terminated[::2].sum())
        events["truncated"] += int(truncated[::2].sum())
        if "episode" in infos:
            events["episodes"].append({**infos["episode"], "_episode": infos["_episode"]})
    for env in envs:
        env.close()
    return events


def test_fast_env_matches_the_seed_chain_through_a_whole_game():
    # 1,000 steps x 2 games: scored points, serve penalties, a game won 21-0 (terminated) and the
    # autoreset into the next game. The fast env runs with one thread and with two.
    envs = [
        ReferenceSelfPlayEnv(GAMES, seed=5),
        FastSelfPlayEnv(GAMES, seed=5),
        FastSelfPlayEnv(GAMES, seed=5, num_threads=2),
    ]
    events = drive(envs, 1000, random_actions)
    assert events["points"] >= 30 and events["serve_penalties"] >= 5, events
    assert events["terminated"] >= 1 and events["truncated"] == 0, events
    finished = events["episodes"][0]
    winner = int(np.flatnonzero(finished["_episode"])[0])
    assert finished["points_won"][winner] == 21 and finished["points_lost"][winner + 1] == 21


@pytest.mark.parametrize("max_cycles", [401, 402, 403])
def test_fast_env_matches_the_seed_chain_at_truncation(max_cycles):
    # max_cycles counts raw frames: 401 cuts the game on the first frame of agent step 101 (the
    # max-pool then spans the step boundary), 402 on its second, 403 on its third; every game is
    # cut twice.
    def uniform(rng, step):
        return rng.integers(0, 6, 2 * GAMES)

    envs = [
        ReferenceSelfPlayEnv(GAMES, seed=1, max_cycles=max_cycles),
        FastSelfPlayEnv(GAMES, seed=1, max_cycles=max_cycles),
    ]
    events = drive(envs, 205, uniform, seed=3)
    assert events["truncated"] == 2 * GAMES and events["terminated"] == 0, events
    assert all(episode["l"][episode["_episode"]].tolist() == [101] * 2 * GAMES for episode in events["episodes"])


def test_the_other_two_player_variation_matches_the_seed_chain_and_is_another_game():
    # --game-mode 3: pong_v3's wrappers on variation 3 and the fast env agree step for step, and
    # the game is not the classic one (the same actions give other frames).
    envs = [ReferenceSelfPlayEnv(GAMES, seed=5, mode=3), FastSelfPlayEnv(GAMES, seed=5, mode=3)]
    events = drive(envs, 300, random_actions)
    assert events["points"] >= 5, events
    variation_3, classic = FastSelfPlayEnv(GAMES, seed=5, mode=3), FastSelfPlayEnv(GAMES, seed=5)
    rng = np.random.default_rng(0)
    variation_3.reset(), classic.reset()
    differed = False
    for step in range(300):
        actions = random_actions(rng, step)
        differed |= not np.array_equal(variation_3.step(actions)[0], classic.step(actions)[0])
    variation_3.close(), classic.close()
    assert differed


def test_second_player_sees_the_first_players_image_mirrored():
    env = FastSelfPlayEnv(GAMES, seed=0)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(60):
        obs, *_ = env.step(rng.integers(0, 6, 2 * GAMES))
    for game in range(GAMES):
        first, second = obs[2 * game], obs[2 * game + 1]
        assert first.any(), "a real image"
        assert not np.array_equal(first, second), "the court is not symmetric"
        np.testing.assert_array_equal(second, first[:, ::-1, :])
    env.close()


def test_score_rows_are_blank_and_a_reset_stack_holds_one_frame():
    env = FastSelfPlayEnv(1, seed=0)
    obs, _ = env.reset()
    assert obs.shape == (2, FRAME_SIZE, FRAME_SIZE, FRAME_STACK) and obs.dtype == np.uint8
    # As SuperSuit's frame_stack_v1: zeros before the first frame, not copies of it.
    assert not obs[..., :-1].any() and obs[..., -1].any()
    for _ in range(30):
        obs, *_ = env.step(np.array([1, 1]))
    assert not obs[:, :SCORE_ROWS].any()
    assert obs[:, SCORE_ROWS:].any()
    # The score is drawn there when the rows are not blanked.
    frame = seed_frame(env.games._rgb[0, env.games._prev[0]])
    assert frame[:SCORE_ROWS].any()
    env.close()


def test_batched_resize_is_bit_identical_to_supersuits_resize():
    from supersuit.utils.basic_transforms import color_reduction, resize
    from gymnasium.spaces import Box

    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (6, 210, 160, 3), dtype=np.uint8)  # noise reaches every rounding case
    rgb_space = Box(0, 255, (210, 160, 3), np.uint8)
    blue_space = Box(0, 255, (210, 160), np.uint8)
    resizer = SeedResizer(len(frames))
    resizer.blue[: len(frames)] = frames[:, :, :, 2]
    batched = resizer.resize(len(frames))
    for frame, ours in zip(frames, batched):
        blue = color_reduction.change_observation(frame, rgb_space, "B")
        theirs = resize.change_observation(blue, blue_space, (FRAME_SIZE, FRAME_SIZE, True))
        np.testing.assert_array_equal(seed_frame(frame), theirs)
        np.testing.assert_array_equal(ours, theirs)


def test_frame_stack_shifts_oldest_out():
    stack = SeedFrameStack(2)
    frames = [np.full((FRAME_SIZE, FRAME_SIZE), value, np.uint8) for value in (10, 20, 30, 40, 50)]
    stack.reset(0, frames[0])
    stack.reset(1, frames[0])
    for frame in frames[1:]:
        stack.push_all(np.stack([frame, frame]))
    stack.push(1, frames[0])
    assert stack.stacks[0, 50, 7].tolist() == [20, 30, 40, 50]
    assert stack.stacks[1, 50, 7].tolist() == [30, 40, 50, 10]
    assert not stack.stacks[:, :SCORE_ROWS].any()


class _RecordingLibrary:
    """The two-player emulator's ctypes library, recording what each raw frame plays for both players
    (and each reset, after which the previous action is NOOP)."""

    def __init__(self, library):
        self.library, self.played = library, []

    def actMulti(self, obj, actions, rewards):
        self.played.append((actions[0], actions[1]))
        return self.library.actMulti(obj, actions, rewards)

    def reset_game(self, obj):
        self.played.append(None)
        return self.library.reset_game(obj)

    def __getattr__(self, name):
        return getattr(self.library, name)


def test_sticky_actions_repeat_each_players_previous_action_with_the_stated_probability():
    env = FastSelfPlayEnv(1, seed=5, sticky_actions=0.25)
    games = env.games
    games.lib = recorder = _RecordingLibrary(games.lib)
    env.reset()
    rng = np.random.default_rng(0)
    asked = [None] * len(recorder.played)  # per recorded entry: what the players asked for on that frame
    for _ in range(2000):
        actions = rng.integers(0, 6, 2)
        start = len(recorder.played)
        env.step(actions)
        asked += [games.action_map[actions]] * (len(recorder.played) - start)
    noop = games.action_map[0]
    repeated, changed = np.zeros(2), np.zeros(2)
    previous = np.array([noop, noop])
    for played, wanted in zip(recorder.played, asked):
        if played is None:  # a reset
            previous = np.array([noop, noop])
            continue
        played = np.array(played)
        differ = wanted != previous  # frames where repeating and obeying differ
        changed += differ
        repeated += differ & (played == previous)
        assert np.all(played[~differ] == wanted[~differ]) and np.all((played == wanted) | (played == previous))
        previous = played
    rates = repeated / changed
    assert changed.min() > 2000 and np.all(np.abs(rates - 0.25) < 0.03), rates
    env.close()


def test_sticky_two_player_games_replay_with_their_seed_and_differ_from_the_exact_protocol():
    def play(sticky, seed):
        env = FastSelfPlayEnv(1, seed=seed, sticky_actions=sticky)
        obs, _ = env.reset()
        rng = np.random.default_rng(1)
        frames = [obs]
        for _ in range(300):
            obs, *_ = env.step(rng.integers(0, 6, 2))
            frames.append(obs)
        env.close()
        return np.stack(frames)

    sticky = play(0.25, seed=3)
    assert np.array_equal(sticky, play(0.25, seed=3))
    assert not np.array_equal(sticky, play(0.25, seed=4))
    assert not np.array_equal(sticky, play(0.0, seed=3))
    assert np.array_equal(play(0.0, seed=3), play(0.0, seed=4)), "without sticky actions the game has no randomness"
