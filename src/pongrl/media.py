"""What a person looks at: learning curves and videos of an agent playing."""

from __future__ import annotations

import math
import os

import numpy as np

from pongrl.errors import PongrlError
from pongrl.game import CLASSIC_MODE, MAX_START_NOOP_FRAMES


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value


def _column(rows, name) -> np.ndarray:
    return np.array([_number(r.get(name)) for r in rows])


def curve_series(rows: list[dict], self_play: bool) -> dict:
    """What plot_runs draws for one run, by the columns its algorithm logs: DQN logs a TD loss, PPO a value
    loss; a self-play run's own games are even by construction (return_first_0 = -return_second_0), so its
    training return says nothing and only its evaluation against the built-in AI is drawn."""
    loss_name, column = ("value loss", "value_loss") if "value_loss" in rows[0] else ("TD loss", "loss")
    games = np.diff(_column(rows, "episodes"), prepend=0.0)  # games finished in each logged window
    with np.errstate(divide="ignore", invalid="ignore"):
        won_per_game = np.where(games > 0, _column(rows, "points_won") / games, np.nan)
    return {
        "steps": _column(rows, "env_step"),
        "train_return": None if self_play else _column(rows, "average_return"),
        "eval_return": _column(rows, "eval_mean_return"),
        "eval_sampled_return": _column(rows, "eval_sampled_mean_return"),  # PPO: actions drawn from the policy
        # self-play: the learner's mean score over its last games against each kind of opponent of its mix
        "vs": {kind: _column(rows, f"return_vs_{kind}") for kind in OPPONENT_KINDS},
        # the points a self-play learner won per game in each window (an exploiter's: all against its target)
        "points_won_per_game": won_per_game if self_play else None,
        "loss_name": loss_name,
        "loss": _column(rows, column),
        "length": _column(rows, "average_length"),
    }


# The kinds of opponent a self-play run's games may meet (pongrl.opponents), as the curve's columns name them.
OPPONENT_KINDS = {
    "agents": "frozen agents",
    "scripted": "scripted paddles",
    "pool": "past snapshots",
    "builtin": "the built-in AI, in training",
}


def plot_runs(run_dirs: list[str], out: str) -> None:
    """The seed's two plots, several runs overlaid, and the game length: average return (training mean of
    the last 10 games, and evaluation means where present, greedy and sampled; for self-play, the mean score
    against each kind of opponent of its mix, and for an exploit run the points won per game against its target),
    the loss (TD loss for DQN, value loss for PPO),
    and the average game length in env steps (longer rallies as an agent learns to return the ball; the
    only training curve of a self-play run that moves), all against env steps (agent steps for self-play)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pongrl.config import load_yaml
    from pongrl.run import CONFIG_FILE, read_metrics

    runs = {run_dir: read_metrics(run_dir) for run_dir in run_dirs}  # refuse a bad run before drawing
    self_play = {}
    for run_dir, rows in runs.items():
        if not rows:
            raise PongrlError(f"{run_dir}: metrics.csv has no rows yet")
        config_path = os.path.join(run_dir, CONFIG_FILE)
        self_play[run_dir] = os.path.exists(config_path) and load_yaml(config_path).algo == "selfplay"
    figure, (ax_return, ax_loss, ax_length) = plt.subplots(1, 3, figsize=(18, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (run_dir, rows) in enumerate(runs.items()):
        label = os.path.basename(os.path.normpath(run_dir))
        series = curve_series(rows, self_play[run_dir])
        steps = series["steps"]
        color = colors[index % len(colors)]
        if series["train_return"] is not None:
            ax_return.plot(steps, series["train_return"], color=color, label=f"{label} (training, last 10 games)")
        has_eval = ~np.isnan(series["eval_return"])
        if has_eval.any():
            ax_return.plot(
                steps[has_eval],
                series["eval_return"][has_eval],
                "o--",
                color=color,
                label=f"{label} (evaluation against the built-in AI)",
            )
        has_sampled = ~np.isnan(series["eval_sampled_return"])
        if has_sampled.any():
            ax_return.plot(
                steps[has_sampled],
                series["eval_sampled_return"][has_sampled],
                "^:",
                color=color,
                label=f"{label} (evaluation, actions sampled from the policy)",
            )
        for (kind, name), style in zip(OPPONENT_KINDS.items(), ("s-", "d-", "v-", "x-")):
            vs = series["vs"][kind]
            if (~np.isnan(vs)).any():
                ax_return.plot(
                    steps, vs, style, color=color, markersize=3, label=f"{label} (against {name}, last 20 games)"
                )
                if kind == "agents" and not any(
                    (~np.isnan(series["vs"][k])).any() for k in OPPONENT_KINDS if k != kind
                ):
                    # an exploit run (every game against its target): the points it wins, the target's weakness
                    won = series["points_won_per_game"]
                    has_won = ~np.isnan(won)
                    ax_return.plot(
                        steps[has_won], won[has_won], ":", color=color, label=f"{label} (points won per game)"
                    )
        ax_loss.plot(steps, series["loss"], color=color, label=f"{label} ({series['loss_name']})")
        ax_length.plot(steps, series["length"], color=color, label=label)
    steps_label = "environment steps (agent steps for self-play)" if any(self_play.values()) else "environment steps"
    ax_return.set(xlabel=steps_label, ylabel="average return (game score)", ylim=(-21.5, 21.5), title="Average return")
    ax_loss.set(xlabel=steps_label, ylabel="loss", title="Loss")
    ax_loss.set_yscale("log")
    ax_length.set(xlabel=steps_label, ylabel="steps per game (last 10 games)", title="Game length")
    for axis in (ax_return, ax_loss, ax_length):
        axis.grid(alpha=0.3)
        if axis.get_legend_handles_labels()[0]:  # a self-play run with no evaluation yet has no return line
            axis.legend(fontsize=7)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)


class VideoWriter:
    """Frames to an MP4 (60 fps, every emulator frame) or a GIF (30 fps, every second frame),
    written to a temp file and renamed at the end so that a stopped recording leaves nothing half
    written. Frames are streamed, not held: a whole game is tens of thousands of frames."""

    def __init__(self, out: str, limit: float = float("inf")):
        import imageio.v2 as imageio

        self.extension = os.path.splitext(out)[1].lower()
        if self.extension not in (".mp4", ".gif"):
            raise PongrlError(f"{out}: the video file must end in .mp4 or .gif")
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        self.out, self.temp = out, out + ".partial" + self.extension
        if self.extension == ".mp4":
            self.writer = imageio.get_writer(self.temp, fps=60, macro_block_size=1, codec="libx264", quality=7)
        else:
            self.writer = imageio.get_writer(self.temp, mode="I", duration=1000 / 30, loop=0)
        self.frames = 0
        self.limit = limit

    @property
    def full(self) -> bool:
        return self.frames >= self.limit

    def add(self, frame: np.ndarray) -> None:
        if self.full:
            return
        if self.extension == ".mp4" or self.frames % 2 == 0:
            self.writer.append_data(frame)
        self.frames += 1

    def finish(self) -> None:
        self.writer.close()
        os.replace(self.temp, self.out)

    def abandon(self) -> None:
        self.writer.close()
        if os.path.exists(self.temp):
            os.unlink(self.temp)


def caption_frame(frame: np.ndarray, left: str, right: str, scale: int) -> np.ndarray:
    """Scale the screen up by `scale` (nearest neighbour, crisp pixels) and put the players' names
    under it, each below its paddle, so that the game itself (score included) stays uncovered."""
    import cv2

    screen = np.repeat(np.repeat(frame, scale, axis=0), scale, axis=1) if scale > 1 else frame
    height = 12 * scale + 4 - (12 * scale) % 2  # even, as H.264 wants
    strip = np.zeros((height, screen.shape[1], 3), np.uint8)
    width = screen.shape[1]
    for text, x_align in ((left, 0), (right, 1)):
        text = text if len(text) <= 40 else text[:19] + "~" + text[-20:]
        # As large as the scale allows, but each name within its half of the width.
        (unit_width, _), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 1.0, 1)
        font_scale = min(0.3 * scale, (width / 2 - 6) / max(unit_width, 1))
        (text_width, _), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, font_scale, 1)
        x = 3 if x_align == 0 else max(3, width - text_width - 3)
        cv2.putText(
            strip, text, (x, height - 3 * scale), cv2.FONT_HERSHEY_SIMPLEX, font_scale, (236, 236, 236), 1, cv2.LINE_AA
        )
    return np.concatenate([screen, strip], axis=0)


def record_video(
    first,
    second,
    out: str,
    games: int = 1,
    max_frames: int | None = None,
    seed: int = 0,
    sample: bool = False,
    epsilon: float = 0.0,
    scale: int = 2,
    serve_assist: bool = False,
    game_mode: int | None = None,
) -> dict:
    """Record `games` whole games (or stop at `max_frames` emulator frames) between two arena
    players (pongrl.arena.Player; `second` may be the built-in AI), in full colour with the score and
    both names shown. Against the built-in AI the agent plays the right paddle; between two agents
    the first takes the right paddle in odd-numbered games and the left in even ones, on the
    two-player variation `game_mode` (default pong_v3's classic). A player may also be an Agent,
    "builtin" or an agent spec."""
    from pongrl.arena import as_player, refuse_game_mode_against_builtin
    from pongrl.runner import BUILTIN, AgentPlayer, GamePlan, play_games

    first, second = as_player(first), as_player(second)
    if first.is_builtin and second.is_builtin:
        raise PongrlError("the built-in AI cannot play against itself: name at least one agent")
    game_mode = CLASSIC_MODE if game_mode is None else game_mode
    against_builtin = first.is_builtin or second.is_builtin
    if against_builtin:
        refuse_game_mode_against_builtin(game_mode)
    rng = np.random.default_rng(seed)
    writer = VideoWriter(out, max_frames or float("inf"))

    def seat(player):
        return BUILTIN if player.is_builtin else AgentPlayer(player.agent, rng, epsilon, sample)

    results = []
    try:
        for game_index in range(games):
            if writer.full:
                break
            if against_builtin:  # the agent on the right, its game seeded for this game
                agent_first = not first.is_builtin
                plan = GamePlan(seat(first), seat(second), first_right=agent_first)
                right, left = (first, second) if agent_first else (second, first)
                game_seed = seed + game_index
            else:
                plan = GamePlan(
                    seat(first),
                    seat(second),
                    first_right=game_index % 2 == 0,
                    start=int(rng.integers(0, MAX_START_NOOP_FRAMES)),
                )
                right, left = (first, second) if plan.first_right else (second, first)
                game_seed = seed
            names = ("built-in AI" if left.is_builtin else left.name, right.name)  # (left paddle, right paddle)

            def show(driver, games_playing) -> None:
                for frame in driver.colour_frames[0]:
                    writer.add(caption_frame(frame, *names, scale))
                driver.colour_frames[0].clear()

            record = play_games(
                [[plan]],
                before_step=show,
                after_step=show,
                stop=lambda: writer.full,
                seed=game_seed,
                record_colour=True,
                serve_assist=serve_assist,
                game_mode=game_mode,
            )[0]
            results.append(
                {
                    "right": right.name if not right.is_builtin else "builtin",
                    "left": left.name if not left.is_builtin else "builtin",
                    "first_points": record["first_points"],
                    "second_points": record["second_points"],
                }
            )
    except BaseException:
        writer.abandon()
        raise
    writer.finish()
    return {"frames": writer.frames, "games": results}


def plot_exploit_curves(curves: list[dict], out: str, title: str = "Exploiters against frozen agents") -> None:
    """Exploit runs side by side: the exploiter's points won minus lost a game against its frozen target (its last
    20 games at each logged step) against its agent steps. Each curve is {"label", "steps", "values"} and may
    name a "color" and a "linestyle" (a recipe drawn against two targets: one color, two line styles)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for curve in curves:
        axis.plot(
            [step / 1e6 for step in curve["steps"]],
            curve["values"],
            label=curve["label"],
            color=curve.get("color"),
            linestyle=curve.get("linestyle", "-"),
        )
    axis.axhline(0, color="gray", linestyle=":", label="even")
    axis.set(
        xlabel="exploiter's agent steps (millions)",
        ylabel="exploiter's points won - lost a game",
        ylim=(-21.5, 21.5),
        title=f"{title} (last 20 games)",
    )
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def plot_league(ratings_csv: str, out: str) -> None:
    """A league's ratings against training step, one line per run (95% intervals as bars), and
    each checkpoint's win rate against the built-in AI where the league played it."""
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        with open(ratings_csv, newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as error:
        raise PongrlError(f"{ratings_csv}: cannot read ({error.strerror})") from None
    rows = [r for r in rows if r.get("env_step") not in ("", None)]
    if not rows:
        raise PongrlError(f"{ratings_csv}: no checkpoints with a training step to plot")
    figure, (ax_rating, ax_rate) = plt.subplots(1, 2, figsize=(13, 4.5))
    for run in sorted({r["run"] for r in rows}):
        members = sorted((r for r in rows if r["run"] == run), key=lambda r: int(r["env_step"]))
        steps = np.array([int(r["env_step"]) for r in members])
        rating = np.array([float(r["rating"]) for r in members])
        low = np.array([float(r["rating_low"]) for r in members])
        high = np.array([float(r["rating_high"]) for r in members])
        label = run or "checkpoints"
        ax_rating.errorbar(steps, rating, yerr=[rating - low, high - rating], fmt="o-", capsize=3, label=label)
        rate = np.array([_number(r.get("win_rate_vs_builtin")) for r in members])
        if not np.isnan(rate).all():
            ax_rate.plot(steps, rate, "o-", label=label)
    ax_rating.set(xlabel="environment steps", ylabel="rating (Elo scale)", title="League rating")
    ax_rate.set(
        xlabel="environment steps",
        ylabel="win rate (draws count half)",
        ylim=(-0.05, 1.05),
        title="Win rate against the built-in AI",
    )
    for axis in (ax_rating, ax_rate):
        axis.grid(alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)


def plot(inputs: list[str], out: str | None = None) -> list[str]:
    """Charts of runs and leagues (`pongrl plot`): a folder with a `ratings.csv` is a league, anything else a
    run. The runs share one chart (`plot_runs`), in `out` when there are no leagues, else in the first run's
    `plots/curves.png`; each league gets its own (`plot_league`), in `out` when it is the only input kind and
    the only league, else in its `ratings.png`. Returns the charts' paths, the runs' first."""
    if not inputs:
        raise PongrlError("nothing to plot: give run directories or league folders")
    leagues = [folder for folder in inputs if os.path.exists(os.path.join(folder, "ratings.csv"))]
    runs = [folder for folder in inputs if folder not in leagues]
    outputs = []
    if runs:
        runs_out = out if out and not leagues else os.path.join(runs[0], "plots", "curves.png")
        plot_runs(runs, runs_out)
        outputs.append(runs_out)
    for league_dir in leagues:
        league_out = out if out and not runs and len(leagues) == 1 else os.path.join(league_dir, "ratings.png")
        plot_league(os.path.join(league_dir, "ratings.csv"), league_out)
        outputs.append(league_out)
    return outputs
