"""What a person looks at: learning curves and videos of an agent playing."""
from __future__ import annotations

import math
import os

import numpy as np

from pongrl.envs import PongGame
from pongrl.errors import PongrlError


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value


def plot_runs(run_dirs: list[str], out: str) -> None:
    """The seed's two plots, several runs overlaid: average return (training mean of the last 10
    games, and evaluation means where present) and TD loss, both against env steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pongrl.run import read_metrics

    figure, (ax_return, ax_loss) = plt.subplots(1, 2, figsize=(13, 4.5))
    for run_dir in run_dirs:
        rows = read_metrics(run_dir)
        if not rows:
            raise PongrlError(f"{run_dir}: metrics.csv has no rows yet")
        label = os.path.basename(os.path.normpath(run_dir))
        steps = np.array([_number(r.get("env_step")) for r in rows])
        train_return = np.array([_number(r.get("average_return")) for r in rows])
        eval_return = np.array([_number(r.get("eval_mean_return")) for r in rows])
        loss = np.array([_number(r.get("loss")) for r in rows])
        line, = ax_return.plot(steps, train_return, label=f"{label} (training, last 10 games)")
        has_eval = ~np.isnan(eval_return)
        if has_eval.any():
            ax_return.plot(steps[has_eval], eval_return[has_eval], "o--", color=line.get_color(), label=f"{label} (evaluation)")
        ax_loss.plot(steps, loss, color=line.get_color(), label=label)
    ax_return.set(xlabel="environment steps", ylabel="average return (game score)", ylim=(-21.5, 21.5), title="Average return")
    ax_loss.set(xlabel="environment steps", ylabel="TD loss", title="Loss")
    ax_loss.set_yscale("log")
    for axis in (ax_return, ax_loss):
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)


def record_video(agent, out: str, max_frames: int, seed: int, epsilon: float = 0.0) -> dict:
    """Play one game (or `max_frames` emulator frames) and write every emulator frame in full colour
    at native resolution (210x160): MP4 at 60 fps, or GIF at 30 fps (every second frame)."""
    import imageio.v2 as imageio

    extension = os.path.splitext(out)[1].lower()
    if extension not in (".mp4", ".gif"):
        raise PongrlError(f"{out}: the video file must end in .mp4 or .gif")
    game = PongGame(seed, profile=agent.obs_profile)
    rng = np.random.default_rng(seed)
    stack = game.reset()
    frames = [game.rgb()]
    won = lost = 0
    while len(frames) < max_frames:
        action = int(agent.act(stack[None], epsilon, rng)[0])
        stack, reward, terminated, truncated = game.step(action, record_colour=True)
        frames.extend(game.colour_frames)
        game.colour_frames.clear()
        won += reward > 0
        lost += reward < 0
        if terminated or truncated:
            break
    frames = frames[:max_frames]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    temp = out + ".partial" + extension
    if extension == ".mp4":
        with imageio.get_writer(temp, fps=60, macro_block_size=1, codec="libx264", quality=7) as writer:
            for frame in frames:
                writer.append_data(frame)
    else:
        imageio.mimsave(temp, frames[::2], duration=1000 / 30, loop=0)
    os.replace(temp, out)
    return {"frames": len(frames), "points_won": int(won), "points_lost": int(lost)}
