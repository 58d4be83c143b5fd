"""What a league shows of itself, made from its files: the payoff table (every member against every member, the
built-in AI and the battery), a summary per round, the charts, and the status of a running league."""

from __future__ import annotations

import os
import socket
import time

import numpy as np

from pongrl.checkpoint import write_csv
from pongrl.errors import PongrlError
from pongrl.league import schedule
from pongrl.league.settings import load, read_json, write_json


def round_summary(league_dir: str, number: int, table: dict) -> dict:
    """How the main stood after round `number`: against the built-in AI (both protocols), its worst case over the
    battery and over the league, and what the round's exploiters won from the main they attacked."""
    main = schedule.member_name("main", number)
    rows = table.get(main, {})
    plan = schedule.read_round(league_dir, number)
    kinds = {member["name"]: member["role"] for member in schedule.members(league_dir, number)}
    battery = [cell["point_difference"] for opponent, cell in rows.items() if opponent in _battery(plan)]
    league = [cell["point_difference"] for opponent, cell in rows.items() if opponent in kinds]
    summary = {
        "round": number,
        "main": main,
        "builtin_exact": rows.get("built-in AI, exact", {}).get("point_difference"),
        "builtin_sticky": rows.get("built-in AI, sticky", {}).get("point_difference"),
        "battery_worst": min(battery) if battery else None,
        "league_worst": min(league) if league else None,
        "main_exploiter_points": None,
        "league_exploiter_points": None,
        "agent_steps": 0,
        "core_hours": 0.0,
    }
    if number > 0:
        attacked = schedule.member_name("main", number - 1)
        for role, column in (
            ("main-exploiter", "main_exploiter_points"),
            ("league-exploiter", "league_exploiter_points"),
        ):
            cell = table.get(schedule.member_name(role, number), {}).get(attacked)
            summary[column] = cell["point_difference"] if cell else None
    for job_id in plan["jobs"]:
        path = schedule.result_file(league_dir, job_id)
        if os.path.exists(path):
            result = read_json(path)
            summary["agent_steps"] += result.get("steps", 0)
            summary["core_hours"] += result.get("seconds", 0.0) / 3600
    return summary


def _battery(plan: dict) -> set[str]:
    return {name for job in plan["jobs"].values() if job["kind"] == "matches" for name in job["battery"]}


ROUND_COLUMNS = [
    "round",
    "main",
    "builtin_exact",
    "builtin_sticky",
    "battery_worst",
    "league_worst",
    "main_exploiter_points",
    "league_exploiter_points",
    "agent_steps",
    "core_hours",
]


def complete_rounds(league_dir: str) -> int:
    """How many rounds are done, from round 0."""
    number = 0
    while number < schedule.rounds_started(league_dir) and schedule.round_done(league_dir, number):
        number += 1
    return number


def write_tables(league_dir: str) -> dict:
    """payoff.json and payoff.csv, rounds.csv and the charts, made again from the finished jobs."""
    rounds = complete_rounds(league_dir)
    if rounds == 0:
        return {}
    results = schedule.match_results(league_dir, rounds - 1)
    table = schedule.payoff(results)
    write_json(os.path.join(league_dir, "payoff.json"), table)
    names = [member["name"] for member in schedule.members(league_dir, rounds - 1)]
    columns = names + sorted({opponent for cells in table.values() for opponent in cells} - set(names))
    write_csv(
        os.path.join(league_dir, "payoff.csv"),
        [
            {"member": name, **{c: table.get(name, {}).get(c, {}).get("point_difference") for c in columns}}
            for name in names
        ],
        ["member", *columns],
        ".3g",
    )
    summaries = [round_summary(league_dir, number, table) for number in range(rounds)]
    write_csv(os.path.join(league_dir, "rounds.csv"), summaries, ROUND_COLUMNS, ".4g")
    write_scalars(league_dir, summaries)
    charts = draw(league_dir, table, names, columns, summaries)
    return {"rounds": summaries, "payoff": table, "charts": charts}


def write_scalars(league_dir: str, summaries: list[dict]) -> None:
    """The round curves as TensorBoard scalars (league/...), written anew so that a resume adds no duplicates."""
    import shutil

    from torch.utils.tensorboard import SummaryWriter

    folder = os.path.join(league_dir, "tensorboard")
    shutil.rmtree(folder, ignore_errors=True)
    writer = SummaryWriter(folder)
    for summary in summaries:
        for column in ROUND_COLUMNS[2:8]:
            if summary[column] is not None:
                writer.add_scalar(f"league/{column}", summary[column], summary["round"])
    writer.close()


def draw(league_dir: str, table: dict, names: list[str], columns: list[str], summaries: list[dict]) -> list[str]:
    """plots/payoff.png (the payoff table as a heatmap of point differences) and plots/rounds.png (the main's
    score against the built-in AI, its worst cases and the exploiters' points against rounds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pongrl.checkpoint import atomic_write_file

    folder = os.path.join(league_dir, "plots")
    os.makedirs(folder, exist_ok=True)
    grid = np.array([[table.get(n, {}).get(c, {}).get("point_difference", np.nan) for c in columns] for n in names])
    figure, axes = plt.subplots(figsize=(max(6, 0.45 * len(columns) + 3), max(4, 0.35 * len(names) + 2)))
    # grey: pairs not played (the members with themselves; a member never meets the AI)
    colours = matplotlib.colormaps["RdBu"].with_extremes(bad="lightgrey")
    image = axes.imshow(np.ma.masked_invalid(grid), cmap=colours, vmin=-21, vmax=21, aspect="auto")
    axes.set_xticks(range(len(columns)), columns, rotation=90, fontsize=7)
    axes.set_yticks(range(len(names)), names, fontsize=7)
    axes.set_title("Payoff: row's points won minus lost per game (grey: not played)")
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    heatmap = os.path.join(folder, "payoff.png")
    atomic_write_file(heatmap, lambda temp: figure.savefig(temp, format="png", dpi=110))
    plt.close(figure)

    figure, axes = plt.subplots(figsize=(8, 4.5))
    x = [summary["round"] for summary in summaries]
    for column, label in (
        ("builtin_sticky", "main vs built-in AI, sticky 0.25"),
        ("builtin_exact", "main vs built-in AI, exact"),
        ("battery_worst", "main's worst case, battery"),
        ("league_worst", "main's worst case, league"),
        ("main_exploiter_points", "main exploiter vs the main it attacked"),
        ("league_exploiter_points", "league exploiter vs that main"),
    ):
        y = [np.nan if summary[column] is None else summary[column] for summary in summaries]
        axes.plot(x, y, marker="o", label=label)
    axes.axhline(0, color="grey", linewidth=0.8)
    axes.set_xlabel("round")
    axes.set_xticks(x)
    axes.set_ylabel("points per game")
    axes.set_ylim(-21.5, 21.5)
    axes.legend(fontsize=7)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    curves = os.path.join(folder, "rounds.png")
    atomic_write_file(curves, lambda temp: figure.savefig(temp, format="png", dpi=110))
    plt.close(figure)
    return [heatmap, curves]


def status(league_dir: str) -> list[str]:
    """The league in a few lines: its members, the round, the jobs running (with how far each got) and done."""
    settings, history = load(league_dir)
    started = schedule.rounds_started(league_dir)
    rounds = complete_rounds(league_dir)
    lines = [f"{league_dir}: {rounds} of {settings.rounds + 1} rounds complete (round 0 plays the starting members)"]
    if started:
        entered = schedule.members(league_dir, max(rounds - 1, 0)) if rounds else []
        lines.append(f"members ({len(entered)}): " + ", ".join(member["name"] for member in entered))
    for number in range(rounds, started):
        plan = schedule.read_round(league_dir, number)
        for job_id, job in plan["jobs"].items():
            lines.append(f"  {job_id}: {job_state(league_dir, job_id, job)}")
    path = os.path.join(league_dir, "rounds.csv")
    if os.path.exists(path):
        with open(path) as handle:
            last = handle.read().strip().splitlines()
        if len(last) > 1:
            header, values = last[0].split(","), last[-1].split(",")
            lines.append("last round: " + ", ".join(f"{k}={v}" for k, v in zip(header, values) if v))
    if len(history) > 1:
        lines.append(f"settings changed {len(history) - 1} time(s); see {os.path.join(league_dir, 'league.json')}")
    return lines


def job_state(league_dir: str, job_id: str, job: dict) -> str:
    folder = schedule.job_dir(league_dir, job_id)
    if schedule.done(league_dir, job_id):
        return f"done ({read_json(schedule.result_file(league_dir, job_id)).get('seconds', 0) / 60:.0f} min)"
    if os.path.exists(os.path.join(folder, "failed.json")):
        return "failed: " + read_json(os.path.join(folder, "failed.json"))["error"]
    running = os.path.join(folder, "running.json")
    if not os.path.exists(running):
        return "waiting"
    info = read_json(running)
    elapsed = time.time() - info["started"]
    if info["host"] == socket.gethostname() and not os.path.exists(f"/proc/{info['pid']}"):
        if job["kind"] != "train":
            return "stopped; plays the opponents it had not finished when its turn comes"
        saved = _last_checkpoint(os.path.join(folder, "run"))
        return (
            f"stopped; goes on from its checkpoint at step {saved:,} when its turn comes"
            if saved
            else "stopped before its first checkpoint; starts again when its turn comes"
        )
    if job["kind"] == "train":
        step, seconds = _progress(os.path.join(folder, "run"))
        if step:
            # The run's own training seconds, which carry over a resume: a job that went on from a checkpoint
            # is timed by its whole run, not by this attempt's minutes.
            left = seconds / step * (job["steps"] - step) if step < job["steps"] else 0
            return f"step {step:,} of {job['steps']:,} ({elapsed / 60:.0f} min, about {left / 60:.0f} min left)"
    else:
        rows = os.path.join(folder, "rows")
        played = len(os.listdir(rows)) if os.path.isdir(rows) else 0
        units = len(job["against"]) + len(job["battery"]) + (1 if job["builtin_games"] else 0)
        return f"{played} of {units} opponents played ({elapsed / 60:.0f} min)"
    return f"started {elapsed / 60:.0f} min ago on {info['host']} (pid {info['pid']})"


def _last_checkpoint(run_dir: str) -> int:
    from pongrl.training import Run

    try:
        return Run(run_dir).step
    except PongrlError:  # stopped before its run was set up
        return 0


def _progress(run_dir: str) -> tuple[int, float]:
    """A training job's last metrics row: its step and the run's training seconds to it ((0, 0) before one)."""
    from pongrl.run import read_metrics

    try:
        rows = read_metrics(run_dir)
    except (OSError, PongrlError):  # no metrics written yet
        return 0, 0.0
    return (int(float(rows[-1]["env_step"])), float(rows[-1]["wall_seconds"])) if rows else (0, 0.0)
