"""Leagues: matches between many checkpoints (and the built-in AI), and ratings fitted to them.

Ratings are Elo-scaled Bradley-Terry strengths fitted by maximum likelihood with `choix` (a
maintained library for pairwise-comparison models). A league is a fixed batch of results, and the
maximum-likelihood fit gives the same ratings whatever order the matches were played in, unlike the
online updates of Elo, TrueSkill or OpenSkill; the curvature of the likelihood gives each rating's
95% interval. A draw (a game cut by the frame cap) counts as half a win for each side. A weak
Gaussian prior (choix's `alpha`) keeps ratings finite when one player won every game.

The built-in AI, when included, is the anchor at rating 0; otherwise the ratings average 0.

`run_league` is the whole course (`pongrl.run_league`, the CLI's `pongrl league`): the players, the schedule, the
matches, the ratings, the tables and the chart, each step a function of its own here.

Matches are cached in `OUT/matches.jsonl` by (the two checkpoints' SHA-256, seed, games, sampling,
frame cap, serve assist, two-player game variation): adding checkpoints plays only the new pairs,
and an interrupted league keeps every finished match (each is appended and flushed as it finishes).

About 500 lines on purpose: the schedule, the cache that lets a league grow, the parallel matches and the rating
fit are one contract on one file of matches.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context

import numpy as np

from pongrl import hub, zoo
from pongrl.arena import BUILTIN, Player, load_player, play_match, summarize_match
from pongrl.checkpoint import checkpoints_folder, list_checkpoints, run_name
from pongrl.errors import PongrlError
from pongrl.game import CLASSIC_MODE, GAME_MODES, MAX_CYCLES

ELO_PER_NAT = 400 / math.log(10)
PRIOR_ALPHA = 1e-3  # prior variance 1000 nat^2: only keeps an unbeaten player's rating finite
ROUND_ROBIN_LIMIT = 12  # above this many players, play a scheduled subset of the pairs
NEIGHBOURS = 2  # in a scheduled league, each checkpoint meets the next NEIGHBOURS of its run
SCHEDULES = ("auto", "all", "neighbours")


@dataclass
class Entrant:
    key: str  # the file's SHA-256, or "builtin"
    name: str
    path: str
    run: str
    env_step: int


def collect_entrants(inputs: list[str], include_builtin: bool) -> list[Entrant]:
    """Every checkpoint of each run directory (oldest first), single files, zoo agents (`zoo:*` for
    all) and Hub files; duplicates (same SHA-256) once. Each file is loaded once here so that a bad one is
    refused before any match."""
    entrants: dict[str, Entrant] = {}
    for spec in inputs:
        if zoo.is_zoo_spec(spec):
            paths = zoo.expand(spec)  # zoo:* names every shipped agent
        elif hub.is_hub_spec(spec):
            paths = [spec]
        elif os.path.isdir(spec):
            checkpoint_dir = checkpoints_folder(spec)
            names = list_checkpoints(checkpoint_dir)
            if not names:
                raise PongrlError(f"{spec}: not a run directory with checkpoints")
            paths = [os.path.join(checkpoint_dir, name + ".pt") for name in names]
        elif os.path.exists(spec):
            paths = [spec]
        else:
            raise PongrlError(f"{spec}: no such file or directory")
        for path in paths:
            player = load_player(path)
            entrant = Entrant(player.sha256, player.name, path, run_name(path), player.env_step)
            entrants.setdefault(player.sha256, entrant)
    result = list(entrants.values())
    if include_builtin:
        result.append(Entrant(BUILTIN, "built-in AI", BUILTIN, "", 0))
    if len(result) < 2:
        raise PongrlError("a league needs at least two players (add checkpoints or --include-builtin)")
    return result


def scheduled_pairs(entrants: list[Entrant], mode: str) -> list[tuple[int, int]]:
    """Pairs to play. `all`: round robin. `neighbours`: each checkpoint against the next NEIGHBOURS
    checkpoints of its run, the first and last of every run against each other and across runs,
    and everyone against the built-in AI when it is in. `auto`: round robin up to ROUND_ROBIN_LIMIT
    players."""
    n = len(entrants)
    if mode == "auto":
        mode = "all" if n <= ROUND_ROBIN_LIMIT else "neighbours"
    if mode == "all":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    pairs: set[tuple[int, int]] = set()
    runs: dict[str, list[int]] = {}
    for index, entrant in enumerate(entrants):
        if entrant.key == BUILTIN:
            pairs.update((min(index, j), max(index, j)) for j in range(n) if j != index)
        else:
            runs.setdefault(entrant.run or entrant.path, []).append(index)
    ends = []
    for members in runs.values():
        for position, i in enumerate(members):
            pairs.update((i, j) for j in members[position + 1 : position + 1 + NEIGHBOURS])
        ends.extend({members[0], members[-1]})
    pairs.update((min(i, j), max(i, j)) for i in ends for j in ends if i != j)
    return sorted(pairs)


def match_key(
    first: str,
    second: str,
    seed: int,
    games: int,
    sample: bool,
    max_frames: int,
    serve_assist: bool = False,
    game_mode: int = CLASSIC_MODE,
    sticky_actions: float = 0.0,
) -> str:
    # Settings at their old defaults add nothing, so keys cached before those settings existed stay valid.
    key = f"{first}|{second}|seed={seed}|games={games}|sample={int(sample)}|max_frames={max_frames}"
    key += "|serve_assist=1" if serve_assist else ""
    key += f"|sticky_actions={sticky_actions:g}" if _sticky_for(first, second, sticky_actions) else ""
    return key + (f"|game_mode={game_mode}" if _mode_for(first, second, game_mode) != CLASSIC_MODE else "")


def _mode_for(first: str, second: str, game_mode: int) -> int:
    """The two-player variation a pair plays: a game against the built-in AI is the single-player one."""
    return CLASSIC_MODE if BUILTIN in (first, second) else game_mode


def _sticky_for(first: str, second: str, sticky_actions: float) -> float:
    """The sticky-action probability a pair plays with: the protocol of the games against the built-in AI."""
    return sticky_actions if BUILTIN in (first, second) else 0.0


def read_cache(path: str) -> dict[str, dict]:
    """Finished matches by key; a line cut short by a crash is skipped."""
    cache = {}
    if os.path.exists(path):
        with open(path) as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                    cache[record["key"]] = record
                except (ValueError, KeyError, TypeError):
                    continue
    return cache


_WORKER_PLAYERS: dict[str, Player] = {}


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)  # one core per match process


def _play_pair(
    first_path: str,
    second_path: str,
    games: int,
    seed: int,
    sample: bool,
    max_frames: int,
    serve_assist: bool,
    game_mode: int,
    sticky_actions: float,
) -> list[dict]:
    players = []
    for path in (first_path, second_path):
        if path not in _WORKER_PLAYERS:
            _WORKER_PLAYERS[path] = load_player(path)
        players.append(_WORKER_PLAYERS[path])
    mode = _mode_for(players[0].sha256, players[1].sha256, game_mode)
    sticky = _sticky_for(players[0].sha256, players[1].sha256, sticky_actions)
    return play_match(players[0], players[1], games, seed, sample, max_frames, serve_assist, sticky, mode)


def play_league(
    entrants: list[Entrant],
    pairs: list[tuple[int, int]],
    out_dir: str,
    games: int,
    seed: int,
    sample: bool,
    max_frames: int,
    workers: int,
    show_progress: bool = True,
    serve_assist: bool = False,
    game_mode: int = CLASSIC_MODE,
    sticky_actions: float = 0.0,
    verbose: bool = False,
) -> list[dict]:
    """Play the pairs not in the cache, appending each finished match; returns all the pairs' records.
    Pairs of two agents play the two-player variation `game_mode`; the built-in AI, the single-player game,
    under `sticky_actions` (0.25: the ALE v5 protocol). `verbose` says on stderr how many pairs are cached and
    how many are to play; `show_progress` draws a progress bar there (when `verbose` is set)."""
    os.makedirs(out_dir, exist_ok=True)
    cache_path = os.path.join(out_dir, "matches.jsonl")
    cache = read_cache(cache_path)
    keys = {
        (i, j): match_key(
            entrants[i].key, entrants[j].key, seed, games, sample, max_frames, serve_assist, game_mode, sticky_actions
        )
        for i, j in pairs
    }
    todo = [pair for pair in pairs if keys[pair] not in cache]
    if verbose:
        print(
            f"pongrl: league of {len(entrants)} players: {len(pairs)} pairs, {len(pairs) - len(todo)} cached, "
            f"{len(todo)} to play ({games} games each)",
            file=sys.stderr,
        )
    if todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), unit="match", disable=not (verbose and show_progress), file=sys.stderr)
        processes = max(1, min(workers, len(todo)))
        with (
            open(cache_path, "a") as handle,
            ProcessPoolExecutor(
                max_workers=processes, mp_context=get_context("spawn"), initializer=_init_worker
            ) as pool,
        ):
            futures = {
                pool.submit(
                    _play_pair,
                    entrants[i].path,
                    entrants[j].path,
                    games,
                    seed,
                    sample,
                    max_frames,
                    serve_assist,
                    game_mode,
                    sticky_actions,
                ): (i, j)
                for i, j in todo
            }
            try:
                for future in as_completed(futures):
                    i, j = futures[future]
                    record = {
                        "key": keys[(i, j)],
                        "first": entrants[i].key,
                        "second": entrants[j].key,
                        "first_name": entrants[i].name,
                        "second_name": entrants[j].name,
                        "games": future.result(),
                    }
                    record["summary"] = summarize_match(record["games"])
                    handle.write(json.dumps(record) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
                    cache[record["key"]] = record
                    bar.update(1)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
            finally:
                bar.close()
    return [cache[keys[pair]] for pair in pairs]


def fit_ratings(
    num_players: int, results: list[tuple[int, int, float]], anchor: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Bradley-Terry maximum likelihood on (i, j, score of i) game results (1 win, 0.5 draw, 0 loss).
    Returns Elo-scaled ratings and their standard errors."""
    import choix

    # choix takes (winner, loser) pairs; counting each win twice and each draw once each way
    # encodes the half points exactly (the prior strength is doubled to match).
    comparisons = []
    for i, j, score in results:
        wins_i = int(round(2 * score))
        comparisons += [(i, j)] * wins_i + [(j, i)] * (2 - wins_i)
    if comparisons:
        theta = choix.opt_pairwise(num_players, comparisons, alpha=2 * PRIOR_ALPHA)
    else:
        theta = np.zeros(num_players)
    # Fisher information of the (undoubled) likelihood plus the prior.
    information = PRIOR_ALPHA * np.eye(num_players)
    for i, j, _ in results:
        p = 1 / (1 + math.exp(theta[j] - theta[i]))
        w = p * (1 - p)
        information[i, i] += w
        information[j, j] += w
        information[i, j] -= w
        information[j, i] -= w
    if anchor is not None:
        theta = theta - theta[anchor]
        keep = [k for k in range(num_players) if k != anchor]
        covariance = np.zeros((num_players, num_players))
        covariance[np.ix_(keep, keep)] = np.linalg.inv(information[np.ix_(keep, keep)])
    else:
        theta = theta - theta.mean()
        centre = np.eye(num_players) - 1 / num_players
        covariance = centre @ np.linalg.inv(information) @ centre
    return theta * ELO_PER_NAT, np.sqrt(np.clip(np.diag(covariance), 0, None)) * ELO_PER_NAT


def game_results(entrants: list[Entrant], records: list[dict]) -> list[tuple[int, int, float]]:
    index = {entrant.key: k for k, entrant in enumerate(entrants)}
    points = {"win": 1.0, "draw": 0.5, "loss": 0.0}
    return [(index[r["first"]], index[r["second"]], points[g["outcome"]]) for r in records for g in r["games"]]


def _flipped(game: dict) -> dict:
    """A game scored for the second player instead of the first."""
    return {
        **game,
        "first_points": game["second_points"],
        "second_points": game["first_points"],
        "score": -game["score"],
        "outcome": {"win": "loss", "loss": "win"}.get(game["outcome"], "draw"),
        "first_serve_penalties": game["second_serve_penalties"],
        "second_serve_penalties": game["first_serve_penalties"],
    }


def games_of(key: str, records: list[dict]) -> list[tuple[str, dict]]:
    """(opponent key, game scored for `key`) for every game the player `key` took part in."""
    found = []
    for record in records:
        if record["first"] == key:
            found += [(record["second"], game) for game in record["games"]]
        elif record["second"] == key:
            found += [(record["first"], _flipped(game)) for game in record["games"]]
    return found


def ratings_table(entrants: list[Entrant], records: list[dict]) -> list[dict]:
    anchor = next((k for k, e in enumerate(entrants) if e.key == BUILTIN), None)
    ratings, errors = fit_ratings(len(entrants), game_results(entrants, records), anchor)
    rows = []
    for k, entrant in enumerate(entrants):
        played = games_of(entrant.key, records)
        versus_builtin = [game for opponent, game in played if opponent == BUILTIN]
        summary = summarize_match(versus_builtin) if versus_builtin else None
        rows.append(
            {
                "player": entrant.name,
                "run": entrant.run,
                "env_step": entrant.env_step if entrant.key != BUILTIN else "",
                "rating": round(float(ratings[k]), 1),
                "rating_low": round(float(ratings[k] - 1.96 * errors[k]), 1),
                "rating_high": round(float(ratings[k] + 1.96 * errors[k]), 1),
                "games": len(played),
                "win_rate_vs_builtin": round(summary["win_rate"], 3) if summary else "",
                "score_vs_builtin": round(summary["mean_point_difference"], 2) if summary else "",
                "sha256": entrant.key,
            }
        )
    return sorted(rows, key=lambda row: -row["rating"])


def write_tables(rows: list[dict], out_dir: str) -> tuple[str, str]:
    """ratings.csv and ratings.md in `out_dir` from the rows of `ratings_table`; returns their paths."""
    import io

    from pongrl.checkpoint import atomic_write_bytes

    csv_path, md_path = os.path.join(out_dir, "ratings.csv"), os.path.join(out_dir, "ratings.md")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_bytes(csv_path, buffer.getvalue().encode())
    atomic_write_bytes(md_path, ratings_markdown(rows).encode())
    return csv_path, md_path


def ratings_markdown(rows: list[dict]) -> str:
    """The rows of `ratings_table` as ratings.md's Markdown table, best first."""
    lines = [
        "| rank | player | env step | rating (95% interval) | games | win rate vs built-in AI | score vs built-in AI |",
        "|---:|---|---:|---|---:|---:|---:|",
    ]
    for rank, row in enumerate(rows, 1):
        rating = f"{row['rating']:+.0f} ({row['rating_low']:+.0f} .. {row['rating_high']:+.0f})"
        lines.append(
            f"| {rank} | {row['player']} | {row['env_step']} | {rating} | {row['games']} "
            f"| {row['win_rate_vs_builtin']} | {row['score_vs_builtin']} |"
        )
    return "\n".join(lines) + "\n"


def run_league(
    inputs: list[str],
    out_dir: str | None = None,
    games_per_pair: int = 4,
    include_builtin: bool = False,
    sticky_actions: float = 0.0,
    schedule: str = "auto",
    seed: int = 0,
    sample: bool = False,
    max_frames: int = MAX_CYCLES,
    serve_assist: bool = False,
    game_mode: int = CLASSIC_MODE,
    workers: int | None = None,
    verbose: bool = False,
) -> dict:
    """Rate many agents by playing them against each other: the whole course of `pongrl league`.

    `inputs` are run directories (all their checkpoints, oldest first), checkpoint, state_dict or safetensors
    files, `zoo:NAME` (`zoo:*` for every shipped agent) and `hf://OWNER/REPO/FILE`; `include_builtin` adds the
    built-in AI as the rating anchor (0), and its games are played with sticky actions `sticky_actions` (0.25:
    the ALE v5 protocol; games between agents are not affected). `schedule` picks the pairs: `"all"`, each
    checkpoint against its run's `"neighbours"`, or `"auto"` (all up to 12 players). Each pair plays
    `games_per_pair` games, sides alternating, on the two-player variation `game_mode` (3 or 4, pong_v3's
    classic), cut and drawn at `max_frames` raw frames; `sample` draws actions from the policies, `serve_assist`
    serves for agents that never learned to. `workers` matches are played at once, one process each (default:
    the number of cores); the processes are spawned, so a script that calls this must do so under
    `if __name__ == "__main__":`, as with any `multiprocessing` pool.

    Everything goes into `out_dir` (default: `league` in the first run directory among the inputs):
    `matches.jsonl`, the cache of finished matches (a match already there is not played again), `ratings.csv`,
    `ratings.md` and `ratings.png` (rating against training step per run). Prints nothing unless `verbose`,
    which says on stderr how many pairs are cached and to play, with a progress bar on a terminal.

    Returns `{"ratings": [...], "markdown", "out_dir", "matches", "ratings_csv", "ratings_md", "ratings_png"}`:
    one dict per player, best first (ratings.csv's rows: "player", "run", "env_step", "rating", "rating_low",
    "rating_high", "games", "win_rate_vs_builtin", "score_vs_builtin", "sha256"; "" where a value does not
    apply), ratings.md's table as text, and the paths written ("ratings_png" is None when no chart was drawn).

    Raises:
        PongrlError: an input that is no agent, fewer than two players, no `out_dir` and no run directory among
            the inputs, or a setting out of range.
    """
    if not 0.0 <= sticky_actions < 1.0:
        raise PongrlError(f"--sticky-actions must be in [0, 1), got {sticky_actions}")
    if sticky_actions and not include_builtin:
        raise PongrlError(
            "--sticky-actions is the protocol of the games against the built-in AI: it needs --include-builtin"
        )
    if schedule not in SCHEDULES:
        raise PongrlError(f"the schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    if game_mode not in GAME_MODES:
        raise PongrlError(f"the game variation must be one of {', '.join(map(str, GAME_MODES))}, got {game_mode!r}")
    workers = (os.cpu_count() or 1) if workers is None else workers
    for name, value in (("games_per_pair", games_per_pair), ("max_frames", max_frames), ("workers", workers)):
        if value <= 0:
            raise PongrlError(f"{name} must be positive, got {value}")
    entrants = collect_entrants(inputs, include_builtin)
    if out_dir is None:
        runs = [spec for spec in inputs if os.path.isdir(spec)]
        if not runs:
            raise PongrlError("give --out DIR (no run directory among the inputs to put the league in)")
        out_dir = os.path.join(runs[0], "league")
    pairs = scheduled_pairs(entrants, schedule)
    records = play_league(
        entrants,
        pairs,
        out_dir,
        games_per_pair,
        seed,
        sample,
        max_frames,
        workers,
        show_progress=sys.stderr.isatty(),
        serve_assist=serve_assist,
        game_mode=game_mode,
        sticky_actions=sticky_actions,
        verbose=verbose,
    )
    rows = ratings_table(entrants, records)
    csv_path, md_path = write_tables(rows, out_dir)
    png: str | None = os.path.join(out_dir, "ratings.png")
    if any(row["env_step"] != "" for row in rows):  # the chart draws checkpoints against their training step
        from pongrl.media import plot_league

        plot_league(csv_path, png)
    else:
        png = None
    return {
        "ratings": rows,
        "markdown": ratings_markdown(rows),
        "out_dir": out_dir,
        "matches": os.path.join(out_dir, "matches.jsonl"),
        "ratings_csv": csv_path,
        "ratings_md": md_path,
        "ratings_png": png,
    }
