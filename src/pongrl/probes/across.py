"""`pongrl probe across`: the whole study over runs' checkpoints in one command.

Every K-th checkpoint of each run (and always its last) records its layers on one shared set of frames,
played by the first run's last checkpoint against the built-in AI, sampling its actions unless --greedy
(greedy play from the game's start repeats games frame for frame, and a test game that repeats a train
game leaks) (`collect`); the probes are fitted (`fit`); `probes.png` (`charts.plot_across`) draws each
label's probe score per layer against the checkpoint's env step, one panel per label, the runs overlaid
(R^2 for positions and velocities, AtariARI's weighted F1 for the rest: the classifiers of the positions
and velocities, most of the fitting time, are left to `probe fit`), with the untrained network's score per
layer as a dashed line (one untrained network per architecture, drawn over the steps of the runs that share
it). Runs of different algorithms mix: each checkpoint sees the shared frames in its own observation
profile; the steps axis is logarithmic, as runs of different algorithms learn at different scales (a DQN in
hundreds of thousands of steps, self-play in millions).

Decodable is not used: `intervene_across` then plays `probe intervene` on every recorded checkpoint (its
probe's directions fitted on the study's own frames), `steering_response` sums each direction up as one
slope, and `used.png` (`charts.plot_used`) draws it against the env step beside the probe's R^2: when does a
layer come to hold the landing point, and when does the policy start to act on it?
"""

from __future__ import annotations

import json
import os

import numpy as np

from pongrl import zoo
from pongrl.checkpoint import checkpoints_folder, list_checkpoints, run_label
from pongrl.errors import PongrlError

INTERVENE_CSV = "intervene.csv"
INTERVENE_SETTINGS = "intervene.json"


def run_checkpoints(run: str, every: int) -> list[str]:
    """Every `every`-th checkpoint of a run, oldest first, and its last. A run is a run directory,
    shipped agents, `zoo:PATTERN` (a series such as zoo:selfplay-small-*, ordered by env step), or one
    checkpoint file (drawn with the others of its run directory, to pick a run's checkpoints by hand)."""
    if os.path.isfile(run):
        return [run]
    if zoo.is_zoo_spec(run):
        names = sorted(zoo.expand(run), key=lambda spec: zoo.card(spec[len(zoo.PREFIX) :]).get("env_step", 0))
        chosen = names[::every]
        return chosen if chosen[-1] == names[-1] else chosen + [names[-1]]
    folder = checkpoints_folder(run)
    names = list_checkpoints(folder) if os.path.isdir(folder) else []
    if not names:
        raise PongrlError(f"{run}: not a run directory with checkpoints")
    chosen = names[::every]
    if chosen[-1] != names[-1]:
        chosen.append(names[-1])
    return [os.path.join(folder, name + ".pt") for name in chosen]


def study_agents(runs: list[str], every: int) -> list[str]:
    """The checkpoints to record, the first run's last one first (it plays)."""
    if every < 1:
        raise PongrlError(f"--every must be at least 1, got {every}")
    per_run = [run_checkpoints(run, every) for run in runs]
    player = per_run[0][-1]
    return [player] + [path for paths in per_run for path in paths if path != player]


def check_steering(out_dir: str, agent_spec: str, plan) -> None:
    """Refuse, with one line and before anything is played, steering (`intervene.Intervention`) that
    `intervene_across` could not do on the study's checkpoints (checked on `agent_spec`, one of them), or that
    would mix its rows with those of other settings already in `out_dir`."""
    from pongrl.agent import as_agent
    from pongrl.probes.intervene import STEERING_KINDS

    if len(set(plan.alphas)) < 2:
        raise PongrlError("a steering response needs at least two different --alpha values")
    for kind in plan.kinds:
        if kind not in STEERING_KINDS:
            raise PongrlError(f"--intervene-kind must be one of {', '.join(STEERING_KINDS)}, got {kind!r}")
    plan.check(as_agent(agent_spec))
    settings_path = os.path.join(out_dir, INTERVENE_SETTINGS)
    if os.path.exists(settings_path):
        try:
            with open(settings_path) as handle:
                earlier = json.load(handle)
        except (OSError, ValueError):
            raise PongrlError(f"{settings_path}: unreadable; remove it (and {INTERVENE_CSV}) to start over") from None
        if earlier != plan.settings():
            raise PongrlError(
                f"{out_dir} holds interventions with other settings ({earlier}); "
                "give the same ones, or use another --out"
            )


def intervene_across(out_dir: str, plan, progress=None) -> list[dict]:
    """`probe intervene` (`intervene.Intervention` `plan`) on every checkpoint the study in `out_dir` recorded,
    oldest first, its directions fitted on the study's frames. Rows of `intervene.COLUMNS` with the checkpoint's
    run and env step, in out_dir/intervene.csv, rewritten whole after each checkpoint. An interrupted call
    continues where it stopped; one with other settings is refused (the rows would mix)."""
    from pongrl.checkpoint import atomic_write_bytes, write_csv
    from pongrl.probes.fit import ProbeData
    from pongrl.probes.intervene import COLUMNS, intervene

    checkpoints = [entry for entry in ProbeData(out_dir).settings["agents"] if entry["spec"] != "random-init"]
    checkpoints.sort(key=lambda entry: (run_label(entry["spec"]), entry["env_step"]))
    check_steering(out_dir, checkpoints[-1]["spec"], plan)
    settings_path, csv_path = os.path.join(out_dir, INTERVENE_SETTINGS), os.path.join(out_dir, INTERVENE_CSV)
    rows = _read_rows(csv_path) if os.path.exists(settings_path) and os.path.exists(csv_path) else []
    done = {row["agent"] for row in rows}
    atomic_write_bytes(settings_path, json.dumps(plan.settings(), indent=1).encode())
    for entry in checkpoints:
        if entry["name"] in done:
            continue
        found = intervene(entry["spec"], out_dir, plan, progress)
        run = run_label(entry["spec"])
        rows += [{"run": run, "env_step": entry["env_step"], **row, "agent": entry["name"]} for row in found]
        write_csv(csv_path, rows, ["run", "env_step", *COLUMNS])
    return rows


def _read_rows(path: str) -> list[dict]:
    """intervene.csv's rows, numbers as floats."""
    import csv

    text_columns = {"run", "agent", "layer", "label", "kind", "direction", "paddle_offset_games"}

    def value(key: str, text: str):
        return text if key in text_columns else float(text)

    try:
        with open(path, newline="") as handle:
            return [{key: value(key, text) for key, text in row.items()} for row in csv.DictReader(handle)]
    except (OSError, ValueError):
        raise PongrlError(f"{path}: unreadable; remove it (and {INTERVENE_SETTINGS}) to start over") from None


def steering_response(rows: list[dict]) -> list[dict]:
    """Per checkpoint, layer, label and direction: the slope of the paddle's offset from the ball over alpha
    (rows of paddle per unit of the label; 1 = the paddle goes wholly where the steered belief says the ball
    is, 0 = it ignores the edit), the least-squares slope through the conditions' offsets with its 95% interval,
    and the probe's R^2. Where the rows carry each game's offset (`paddle_offset_games`), the slope is taken game
    by game (game k of every condition shares its start and sticky actions) and the interval is over games;
    otherwise (rows written before) it comes from the conditions' own intervals, which ignores the pairing.
    Rows of one agent (`probe intervene`'s) have no run or step; conditions without an alpha (ablations), or
    steered at one alpha only, have no slope and are left out."""
    from pongrl.probes.effects import mean_interval
    from pongrl.probes.intervene import STEERING_KINDS

    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["kind"] in STEERING_KINDS:
            run, env_step = row.get("run", ""), row.get("env_step")  # absent from one agent's rows
            key = (run, env_step, row["agent"], row["layer"], row["label"], row["kind"], row["direction"])
            groups.setdefault(key, []).append(row)
    responses = []
    for (run, env_step, agent, layer, label, kind, direction), chosen in groups.items():
        alphas = np.array([row["alpha"] for row in chosen], np.float64)
        if len(set(alphas)) < 2:
            continue
        centred = alphas - alphas.mean()
        spread = float(np.sum(centred**2))
        per_game = _game_offsets(chosen)
        if per_game is not None:
            slope, low, high = mean_interval(centred @ per_game / spread)
        else:
            offsets = np.array([row["paddle_offset"] for row in chosen], np.float64)
            halves = np.array([(row["paddle_offset_high"] - row["paddle_offset_low"]) / 2 for row in chosen])
            slope = float(np.sum(centred * offsets) / spread)
            half = float(np.sqrt(np.sum(centred**2 * halves**2)) / spread)
            low, high = slope - half, slope + half
        responses.append(
            {
                "run": run,
                "env_step": env_step,
                "agent": agent,
                "layer": layer,
                "label": label,
                "kind": kind,
                "direction": direction,
                "probe_r2": chosen[0]["probe_r2"],
                "edit_size": max(row["edit_size"] for row in chosen),
                "response": slope,
                "response_low": low,
                "response_high": high,
            }
        )
    return sorted(responses, key=lambda r: (r["run"], r["layer"], r["label"], r["kind"], r["direction"], r["env_step"]))


def _game_offsets(rows: list[dict]) -> np.ndarray | None:
    """(conditions, games) of each game's mean paddle offset, or None where a row does not carry them."""
    texts = [row.get("paddle_offset_games") for row in rows]
    if not all(isinstance(text, str) and text for text in texts):
        return None
    games = [np.array(text.split(), np.float64) for text in texts]
    return np.stack(games) if len({len(values) for values in games}) == 1 else None
