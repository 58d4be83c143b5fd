"""Agents that ship with pongrl: `zoo:NAME` wherever a command takes an agent.

Each agent is two files in `pongrl/zoo_agents/`: NAME.safetensors (the playing network's weights; no
code runs on load) and NAME.json, its card: algorithm, observation profile, env steps, the command
that trained it, its scores against the built-in AI with the commands that measured them, the SHA-256 of
its weights and `pongrl_version`, the pongrl release that added these weights to the zoo.
`benchmarks/zoo_entry.py` writes both from a checkpoint.

A name may be given to better weights in a later release: the version and the SHA-256 that `pongrl zoo`
shows say which agent was evaluated (CHANGELOG.md lists every replacement).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os

from pongrl.errors import PongrlError

PREFIX = "zoo:"
SHORT_SHA = 12  # hex digits of a weights file's SHA-256 in the table: enough to tell any two files apart
FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zoo_agents")


def is_zoo_spec(spec: str) -> bool:
    return spec.startswith(PREFIX)


def names() -> list[str]:
    """Every shipped agent, sorted."""
    if not os.path.isdir(FOLDER):
        return []
    return sorted(name[: -len(".safetensors")] for name in os.listdir(FOLDER) if name.endswith(".safetensors"))


def expand(spec: str) -> list[str]:
    """`zoo:PATTERN` (shell wildcards, `zoo:*` for all) -> the matching `zoo:NAME`s, in name order."""
    pattern = spec[len(PREFIX) :]
    matched = [PREFIX + name for name in names() if fnmatch.fnmatchcase(name, pattern)]
    if not matched:
        raise PongrlError(f"{spec}: no agent in the zoo matches (it has: {', '.join(names()) or 'none'})")
    return matched


def weights_path(spec: str) -> str:
    """`zoo:NAME` -> the path of its safetensors file."""
    name = spec[len(PREFIX) :]
    if name not in names():
        raise PongrlError(f"{spec}: no such agent in the zoo (it has: {', '.join(names()) or 'none'})")
    return os.path.join(FOLDER, name + ".safetensors")


def card(name: str) -> dict:
    """The JSON card beside a shipped agent."""
    path = os.path.join(FOLDER, name + ".json")
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError) as error:
        raise PongrlError(f"{path}: unreadable zoo card ({error})") from None


def file_sha256(path: str) -> str:
    """The SHA-256 of a file's bytes (a weights file's identity: the zoo's listing, the arena's match cache)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def listing() -> list[dict]:
    """One row per shipped agent: its card's main facts, and the SHA-256 of the weights file itself."""
    rows = []
    for name in names():
        entry = card(name)
        scores = entry.get("scores", {})
        rows.append(
            {
                "name": PREFIX + name,
                "version": entry.get("pongrl_version"),
                "sha256": file_sha256(os.path.join(FOLDER, name + ".safetensors")),
                "series": entry.get("series"),
                "algo": entry.get("algo"),
                "network": entry.get("network"),
                "share_network": entry.get("share_network"),
                "env_step": entry.get("env_step"),
                "exact": scores.get("every_start", {}).get("mean"),
                "exact_distinct_games": scores.get("every_start", {}).get("distinct_games"),
                "sticky": scores.get("sticky_actions", {}).get("mean"),
                "sticky_ci95": scores.get("sticky_actions", {}).get("ci95"),
                "sticky_games": scores.get("sticky_actions", {}).get("games"),
                # the lowest mean point difference over the robustness report's opponents, and whose
                "worst_case": entry.get("robustness", {}).get("worst", {}).get("point_difference"),
                "worst_opponent": entry.get("robustness", {}).get("worst", {}).get("opponent"),
                "megabytes": round(os.path.getsize(os.path.join(FOLDER, name + ".safetensors")) / 2**20, 1),
            }
        )
    return rows


def format_listing(rows: list[dict]) -> str:
    """The listing as a table for the terminal."""
    if not rows:
        return "the zoo is empty"

    def score(value):
        return "-" if value is None else f"{value:+.2f}"

    lines = [
        f"{'agent':<24} {'version':<8} {'sha256':<{SHORT_SHA}} {'algorithm':<10} {'env steps':>10} "
        f"{'exact (31 starts)':>17} {'distinct':>8} {'sticky 0.25':>11} {'95% interval':>15} {'worst case':>10} "
        f"{'MiB':>5}"
    ]
    for row in rows:
        interval = "-" if not row["sticky_ci95"] else f"{row['sticky_ci95'][0]:+.1f}..{row['sticky_ci95'][1]:+.1f}"
        distinct = "-" if row["exact_distinct_games"] is None else str(row["exact_distinct_games"])
        lines.append(
            f"{row['name']:<24} {row['version'] or '-':<8} {row['sha256'][:SHORT_SHA]} {row['algo']:<10} "
            f"{row['env_step']:>10,} {score(row['exact']):>17} {distinct:>8} {score(row['sticky']):>11} "
            f"{interval:>15} {score(row['worst_case']):>10} {row['megabytes']:>5}"
        )
    lines.append(
        "scores: mean against the built-in AI, greedy; exact = from each of the 31 no-op starts on the "
        "deterministic emulator (pongrl eval zoo:NAME --every-start), distinct = how many different games "
        "those were; sticky = games under sticky actions 0.25 (the ALE v5 protocol), seed 0, with the 95% "
        "interval of the mean (pongrl eval zoo:NAME --protocols plays both); worst case = the lowest mean point "
        "difference a game over every opponent of the robustness report (pongrl robustness zoo:NAME: the built-in "
        "AI, scripted paddles, the other zoo agents); version = the pongrl release that "
        f"added the weights, sha256 = the first {SHORT_SHA} hex digits of the weights file's SHA-256 "
        "(pongrl zoo --json gives all 64)"
    )
    return "\n".join(lines)


def best() -> str:
    """The shipped agent with the best worst case over the robustness report's opponents (an agent that some
    opponent beats is no good default to play against), the score against the built-in AI under sticky actions
    (the protocol on which a memorized game does not help) breaking ties and ranking agents without a report."""
    rows = [row for row in listing() if row["sticky"] is not None]
    if not rows:
        raise PongrlError("the zoo is empty: name an agent to play against")
    unknown = float("-inf")
    return max(
        rows,
        key=lambda row: (
            unknown if row["worst_case"] is None else row["worst_case"],
            row["sticky"],
            row["exact"] or 0.0,
        ),
    )["name"]
