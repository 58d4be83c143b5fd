"""Scripted opponents on the real two-player emulator: what each reads of the screen agrees with the emulator's RAM,
a parked paddle stays parked, a follower follows, and seeded games replay exactly."""

import numpy as np
import pytest

from pongrl.errors import PongrlError
from pongrl.game import LEFT, RAM_BALL_Y, RAM_LEFT_PADDLE_Y, RAM_RIGHT_PADDLE_Y, RIGHT
from pongrl.runner import GamePlan, choose_actions, open_driver, play_games
from pongrl.scripted import BATTERY, ball_position, frames_of, paddle_height, scripted_names, scripted_player

PADDLE_BYTE = {RIGHT: RAM_RIGHT_PADDLE_Y, LEFT: RAM_LEFT_PADDLE_Y}


def trace(right, left, steps: int, start: int = 7) -> dict:
    """Play `steps` steps of one game; per step the RAM's ball and paddle heights and what each side reads."""
    driver = open_driver([[GamePlan(right, left, True, start=start)]], serve_assist=True)
    rows = {"ball": [], RIGHT: [], LEFT: [], "seen_paddle": {RIGHT: [], LEFT: []}, "seen_ball": []}
    try:
        for _ in range(steps):
            actions = choose_actions(driver, {0: (right, left)}, [right, left])
            driver.play_step(actions, [0])
            ram = driver.ram(0)
            rows["ball"].append(int(ram[RAM_BALL_Y]))
            for side, player in ((RIGHT, right), (LEFT, left)):
                rows[side].append(int(ram[PADDLE_BYTE[side]]))
                frame = frames_of(driver.observation(0, side, player.profile)[None], player.profile)[0][-1]
                rows["seen_paddle"][side].append(paddle_height(frame))
            frame = frames_of(driver.observation(0, RIGHT, right.profile)[None], right.profile)[0][-1]
            rows["seen_ball"].append(ball_position(frame))
    finally:
        driver.close()
    return rows


@pytest.mark.parametrize("profile", ["standard", "seed"])
def test_what_a_player_reads_agrees_with_the_ram(profile):
    rows = trace(scripted_player("chase", profile, 1), scripted_player("random", profile, 2), 300)
    for side in (RIGHT, LEFT):  # the left player reads a mirrored picture: its own paddle is the right one there
        seen = np.array([np.nan if h is None else h for h in rows["seen_paddle"][side]])
        assert np.isfinite(seen).mean() > 0.9
        ok = np.isfinite(seen)
        assert np.corrcoef(seen[ok], np.array(rows[side])[ok])[0, 1] > 0.98
    ball = np.array(rows["ball"])
    seen_ball = np.array([np.nan if b is None else b[0] for b in rows["seen_ball"]])
    both = (ball > 0) & np.isfinite(seen_ball)
    assert both.sum() > 100
    assert np.corrcoef(seen_ball[both], ball[both])[0, 1] > 0.99


def test_parked_paddles_stay_parked_and_held_ones_stay_at_the_walls():
    rows = trace(scripted_player("park-high", "seed"), scripted_player("hold-down", "seed"), 200)
    right, left = np.array(rows[RIGHT][60:]), np.array(rows[LEFT][60:])
    assert right.std() == 0 and left.std() == 0
    low = trace(scripted_player("park-low", "seed"), scripted_player("hold-up", "seed"), 200)
    # RAM heights grow downward: park-high sits above park-low, hold-up above hold-down
    assert right.mean() < np.mean(low[RIGHT][60:])
    assert np.mean(low[LEFT][60:]) < left.mean()


def test_a_follower_follows_the_ball_and_a_still_paddle_does_not_move():
    rows = trace(scripted_player("chase", "standard"), scripted_player("still", "standard"), 400)
    ball, right = np.array(rows["ball"]), np.array(rows[RIGHT])
    in_play = ball > 0
    assert np.corrcoef(ball[in_play], right[in_play])[0, 1] > 0.7
    assert np.ptp(rows[LEFT]) == 0


def test_seeded_games_replay_exactly_and_seeds_matter():
    def game(seed):
        right = scripted_player("chase-late", "standard", seed)
        left = scripted_player("random", "standard", seed + 1)
        plan = GamePlan(right, left, True, start=11)
        return play_games([[plan]], serve_assist=True, max_frames=4000)[0]

    first, again, other = game(3), game(3), game(4)
    assert first["course"] == again["course"] and first["steps"] == again["steps"]
    assert (first["course"], first["steps"]) != (other["course"], other["steps"])


def test_a_game_ended_early_by_its_watcher_gives_way_to_the_next_game_of_its_slot():
    def plan():
        return GamePlan(scripted_player("chase", "standard"), scripted_player("still", "standard"), start=3)

    seen = []

    def after_step(driver, running):  # end the slot's first game after 25 steps, then let the second play 10
        seen.append(driver.result(0)["steps"])
        return [0] if seen[-1] == (25 if len(seen) <= 25 else 10) else []

    first, second = play_games([[plan(), plan()]], after_step=after_step, stop=lambda: len(seen) >= 35)
    assert (first["steps"], first["finished"]) == (25, False)
    assert (second["steps"], second["finished"]) == (10, False) and second["start"] == 3


def test_battery_names():
    assert scripted_names("all") == list(BATTERY)
    assert scripted_names("chase, still") == ["chase", "still"]
    with pytest.raises(PongrlError, match="choose from still, hold-up"):
        scripted_names("chase,nobody")
