"""`pongrl probe gallery`: what a dictionary's features look like. The agent plays the built-in AI (sampling its
actions, so that no two games repeat) through the game runner; every frame's layer is encoded by the dictionary,
and each chosen feature keeps the TOP frames on which it fires most. A picture per feature shows them, the screen
with the ball and both paddles marked where the RAM says they are (the labels' ground truth), its activation on
each, how often it fires on the collect's test frames, and the label it matches best.

The features drawn by default: the live features that match no label, most often firing first, then those that
match one; or the indices asked for.
"""

from __future__ import annotations

import os

import numpy as np

from pongrl.errors import PongrlError
from pongrl.probes.dictionary import Dictionary, check_agent, check_features, load_dictionary

# Where the RAM's positions are drawn on the 210 x 160 screen (measured on the emulator: a paddle's lowest row is
# its byte, the ball's top row its byte minus 14 and its column its x byte minus 49).
BALL_ROW, BALL_COLUMN = -14, -49
PADDLE_ROWS = 15
RIGHT_PADDLE_COLUMNS, LEFT_PADDLE_COLUMNS = (140, 143), (16, 19)
PLAYFIELD = slice(34, 194)  # between the walls
CHUNK = 256  # frames encoded at a time
PARALLEL_GAMES = 4
DEFAULT_COUNT = 16


def chosen_features(dictionary: Dictionary, features: list[int] | None, count: int = DEFAULT_COUNT) -> list[int]:
    """The features to draw: those asked for (each checked to exist), else the default (module docstring)."""
    if features:
        check_features(dictionary, features)
        return list(dict.fromkeys(features))
    frequency = np.asarray(dictionary.features["frequency"])
    matched = np.array([bool(text) for text in dictionary.features["matched"]])
    live = np.nonzero(frequency > 0)[0]
    order = sorted(live, key=lambda feature: (matched[feature], -frequency[feature]))
    return [int(feature) for feature in order[:count]]


def top_frames(agent, dictionary: Dictionary, features: list[int], frames: int, top: int, seed: int, progress=None):
    """Play `frames` agent steps against the built-in AI and keep, for each of `features`, its `top` most active
    frames: (values (F, top), screens (F, top, 210, 160, 3), positions (F, top, 4): ball x, ball y, the agent's
    paddle, the opponent's, as RAM bytes) and each feature's firing rate over the frames played."""
    from pongrl.game import RIGHT
    from pongrl.probes.labels import read_labels
    from pongrl.runner import BUILTIN, AgentPlayer, GamePlan, play_games

    count = len(features)
    values = np.full((count, top), -np.inf)
    screens = np.zeros((count, top, 210, 160, 3), np.uint8)
    positions = np.zeros((count, top, 4), np.int64)
    fired = np.zeros(dictionary.size)
    seen = 0
    pending: dict[str, list] = {"obs": [], "screen": [], "position": []}
    previous: dict[int, np.ndarray] = {}

    def encode_pending() -> None:
        nonlocal seen
        observations = np.stack(pending["obs"])
        codes = dictionary.encode(agent.layers(observations)[dictionary.layer]).numpy()
        fired[:] += (codes > 0).sum(0)
        seen += len(codes)
        chunk_screens, chunk_positions = np.stack(pending["screen"]), np.stack(pending["position"])
        for row, feature in enumerate(features):
            candidates = np.concatenate([values[row], codes[:, feature]])
            best = np.argsort(-candidates, kind="stable")[:top]
            old = best < top
            new_screens = screens[row][np.minimum(best, top - 1)]  # a copy (fancy indexing)
            new_screens[~old] = chunk_screens[best[~old] - top]
            new_positions = positions[row][np.minimum(best, top - 1)]
            new_positions[~old] = chunk_positions[best[~old] - top]
            values[row], screens[row], positions[row] = candidates[best], new_screens, new_positions
        for key in pending:
            pending[key] = []

    def watch(driver, running) -> None:
        for slot in running:
            ram = driver.ram(slot).copy()
            labels = read_labels(ram, previous.get(slot))
            previous[slot] = ram
            pending["obs"].append(driver.observation(slot, RIGHT, agent.obs_profile).copy())
            pending["screen"].append(driver.screen(slot).copy())
            pending["position"].append([labels[name] for name in ("ball_x", "ball_y", "player_y", "enemy_y")])
            if progress:
                progress(1)
        if len(pending["obs"]) >= CHUNK:
            encode_pending()

    rng = np.random.default_rng(seed)
    player = AgentPlayer(agent, rng, sample=True)
    games_each = -(-frames // 1000)  # more games than the frames can fill: the stop ends the play
    slots = [[GamePlan(player, BUILTIN) for _ in range(games_each)] for _ in range(PARALLEL_GAMES)]
    play_games(slots, before_step=watch, stop=lambda: seen + len(pending["obs"]) >= frames, seed=seed)
    if pending["obs"]:
        encode_pending()
    return values, screens, positions, fired / max(seen, 1)


def draw_feature(path: str, feature: int, dictionary: Dictionary, values, screens, positions, rate: float) -> str:
    """One feature's picture: its top frames, the RAM's positions marked, written whole or not at all."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, Rectangle

    from pongrl.checkpoint import atomic_write_file

    shown = [i for i in range(len(values)) if np.isfinite(values[i]) and values[i] > 0]
    columns = max(1, len(values))
    figure, axes = plt.subplots(1, columns, figsize=(1.9 * columns, 2.6), squeeze=False)
    top = PLAYFIELD.start
    for i, axis in enumerate(axes[0]):
        axis.axis("off")
        if i not in shown:
            continue
        axis.imshow(screens[i][PLAYFIELD])
        ball_x, ball_y, mine, theirs = positions[i]
        if ball_y:  # out of play the ball's bytes say nothing
            centre = (ball_x + BALL_COLUMN + 1, ball_y + BALL_ROW + 2 - top)
            axis.add_patch(Circle(centre, 5, fill=False, edgecolor="yellow", linewidth=1.2))
        for byte, (first, last), colour in (
            (mine, RIGHT_PADDLE_COLUMNS, "cyan"),
            (theirs, LEFT_PADDLE_COLUMNS, "magenta"),
        ):
            corner = (first - 2, byte - PADDLE_ROWS - top)
            axis.add_patch(Rectangle(corner, last - first + 4, PADDLE_ROWS + 1, fill=False, edgecolor=colour))
        axis.set_title(f"{values[i]:.2f}", fontsize=8)
    matched = dictionary.features["matched"][feature]
    best = dictionary.features["best_label"][feature]
    frequency = dictionary.features["frequency"][feature]
    what = f"matches {matched}" if matched else "matches no label"
    figure.suptitle(
        f"feature {feature}: fires on {frequency:.1%} of test frames ({rate:.1%} here); {what} "
        f"(best {best}, R² {dictionary.features['best_r2'][feature]:.2f})",
        fontsize=9,
    )
    figure.tight_layout()
    atomic_write_file(path, lambda temp_path: figure.savefig(temp_path, dpi=80, format="png"))
    plt.close(figure)
    return path


def gallery(
    agent,
    dictionary_path: str,
    out_dir: str,
    features: list[int] | None = None,
    count: int = DEFAULT_COUNT,
    top: int = 6,
    frames: int = 5_000,
    seed: int = 0,
    progress=None,
) -> list[str]:
    """Draw the chosen features of the dictionary at `dictionary_path` (module docstring) into `out_dir`: one
    feature_NNNNN.png each, and gallery.md listing them in order. Everything is checked before a game is played
    and nothing is written when a check fails. Returns the pictures' paths."""
    from pongrl.agent import as_agent
    from pongrl.checkpoint import atomic_write_bytes

    for name, value in (("--top", top), ("--frames", frames), ("--count", count)):
        if value < 1:
            raise PongrlError(f"{name} must be at least 1, got {value}")
    dictionary = load_dictionary(dictionary_path)
    agent = as_agent(agent)
    check_agent(dictionary, agent, dictionary_path)
    chosen = chosen_features(dictionary, features, count)
    if not chosen:
        raise PongrlError(f"{dictionary_path}: no live feature to draw")
    values, screens, positions, rates = top_frames(agent, dictionary, chosen, frames, top, seed, progress)
    os.makedirs(out_dir, exist_ok=True)
    paths, lines = [], [f"# Features of {dictionary.agent['name']} {dictionary.layer}", ""]
    for row, feature in enumerate(chosen):
        path = os.path.join(out_dir, f"feature_{feature:05d}.png")
        paths.append(draw_feature(path, feature, dictionary, values[row], screens[row], positions[row], rates[feature]))
        lines += [f"![feature {feature}]({os.path.basename(path)})", ""]
    atomic_write_bytes(os.path.join(out_dir, "gallery.md"), "\n".join(lines).encode())
    return paths
