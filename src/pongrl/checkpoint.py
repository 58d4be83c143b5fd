"""Checkpoints: atomic writes, rotation with a `latest` pointer, and validated loading.

A checkpoint is `checkpoints/step_<env step>.pt` (a dict of tensors and plain values, loaded with
`torch.load(weights_only=True)` so loading never runs code) plus `step_<env step>.json`, a small
manifest with the file's SHA-256, its step, format version and the pongrl version that wrote it.
`checkpoints/latest` names the newest complete checkpoint; it is replaced only after the checkpoint and its
manifest are on disk.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import warnings
from typing import Any, Callable

import torch

from pongrl import hub, zoo
from pongrl._version import __version__
from pongrl.errors import PongrlError

FORMAT = "pongrl-checkpoint"
FORMAT_VERSION = 1
LATEST = "latest"
TEMP_PREFIX = ".tmp-"  # an atomic write's temp file, beside its target
_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write_file(path: str, fill: Callable[[str], None]) -> None:
    """Have `fill` write a temp file (it gets the temp file's path) in the same directory, fsync it, then
    rename it over `path`: `path` is the whole file or what it was before, never a part. The temp name
    starts with TEMP_PREFIX; the temp file is removed if `fill` raises or is interrupted."""
    if os.path.lexists(path) and not os.path.isfile(path):  # the rename would replace a device, pipe or folder
        raise PongrlError(f"{path}: exists and is not a regular file (a folder, device or pipe); nothing written")
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temp_path = tempfile.mkstemp(dir=directory, prefix=TEMP_PREFIX + os.path.basename(path))
    os.close(handle)
    try:
        fill(temp_path)
        with open(temp_path, "rb+") as stream:
            os.fsync(stream.fileno())
        os.chmod(temp_path, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the usual file mode
        os.replace(temp_path, path)
    except BaseException:
        if os.path.exists(temp_path):
            os.unlink(temp_path)
        raise
    directory_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(directory_fd)
    finally:
        os.close(directory_fd)


def write_csv(path: str, rows: list[dict], columns: list[str], number_format: str = ".6g") -> str:
    """The rows as a CSV with these columns (floats written with `number_format`), whole or not at all."""
    import csv

    def fill(temp_path: str) -> None:
        with open(temp_path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            for row in rows:
                writer.writerow({key: _cell(value, number_format) for key, value in row.items()})

    atomic_write_file(path, fill)
    return path


def _cell(value, number_format: str):
    return format(value, number_format) if isinstance(value, float) else value


def atomic_write(path: str, write: Callable[[Any], None]) -> None:
    """Write through a temp file in the same directory, fsync it, then rename over `path`."""

    def fill(temp_path: str) -> None:
        with open(temp_path, "wb") as stream:
            write(stream)

    atomic_write_file(path, fill)


def atomic_write_bytes(path: str, data: bytes) -> None:
    atomic_write(path, lambda stream: stream.write(data))


def write_torch_file(path: str, obj) -> None:
    """torch.save through atomic_write: a bare state_dict for other code to load."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def checkpoint_name(env_step: int) -> str:
    return f"step_{env_step:012d}"


def save_checkpoint(checkpoint_dir: str, payload: dict, keep: int, permanent: bool = False) -> str:
    """Write payload as the newest checkpoint, point `latest` at it, and drop periodic checkpoints
    beyond the newest `keep`. A `permanent` checkpoint (one collected for later study) is never
    dropped. Returns the .pt path."""
    payload = {"format": FORMAT, "format_version": FORMAT_VERSION, **payload}
    name = checkpoint_name(int(payload["env_step"]))
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    path = os.path.join(checkpoint_dir, name + ".pt")
    atomic_write_bytes(path, data)
    manifest = {
        "file": name + ".pt",
        "sha256": hashlib.sha256(data).hexdigest(),
        "env_step": int(payload["env_step"]),
        "algo": payload.get("algo"),
        "format_version": FORMAT_VERSION,
        "pongrl_version": __version__,  # the release that wrote this checkpoint (a run may be resumed by a later one)
        "replay_buffer": payload.get("replay_buffer"),
        "permanent": permanent,
    }
    atomic_write_bytes(os.path.join(checkpoint_dir, name + ".json"), json.dumps(manifest, indent=1).encode())
    atomic_write_bytes(os.path.join(checkpoint_dir, LATEST), (name + "\n").encode())
    _rotate(checkpoint_dir, keep, newest=name)
    return path


def remove_partial_writes(checkpoint_dir: str) -> int:
    """Delete temp files that a killed process left mid-write (never read, but a replay buffer's can
    be gigabytes). Only called by the one process that trains in the run."""
    if not os.path.isdir(checkpoint_dir):
        return 0
    partial = [f for f in os.listdir(checkpoint_dir) if f.startswith(TEMP_PREFIX)]
    for name in partial:
        os.unlink(os.path.join(checkpoint_dir, name))
    return len(partial)


def list_checkpoints(checkpoint_dir: str) -> list[str]:
    """Names (without extension) of complete checkpoints, oldest first."""
    if not os.path.isdir(checkpoint_dir):
        return []
    names = [f[:-5] for f in os.listdir(checkpoint_dir) if f.startswith("step_") and f.endswith(".json")]
    return sorted(n for n in names if os.path.exists(os.path.join(checkpoint_dir, n + ".pt")))


def _is_permanent(checkpoint_dir: str, name: str) -> bool:
    try:
        with open(os.path.join(checkpoint_dir, name + ".json")) as handle:
            return bool(json.load(handle).get("permanent"))
    except (OSError, ValueError, AttributeError):
        return False


def _rotate(checkpoint_dir: str, keep: int, newest: str) -> None:
    periodic = [n for n in list_checkpoints(checkpoint_dir) if n != newest and not _is_permanent(checkpoint_dir, n)]
    for name in periodic[: max(0, len(periodic) - (keep - 1))]:
        for suffix in (".pt", ".json"):
            path = os.path.join(checkpoint_dir, name + suffix)
            if os.path.exists(path):
                os.unlink(path)
    # Only the latest checkpoint keeps a replay buffer beside it.
    for file in os.listdir(checkpoint_dir):
        if file.startswith("replay_") and file != f"replay_{newest}.npz":
            os.unlink(os.path.join(checkpoint_dir, file))


def read_latest(checkpoint_dir: str) -> str | None:
    pointer = os.path.join(checkpoint_dir, LATEST)
    if not os.path.exists(pointer):
        return None
    with open(pointer) as handle:
        return handle.read().strip() or None


CHECKPOINTS = "checkpoints"  # the folder of a run that holds its checkpoints


def checkpoints_folder(run_or_folder: str) -> str:
    """A run directory's checkpoints folder (given the run, or the folder itself)."""
    if os.path.basename(os.path.normpath(run_or_folder)) == CHECKPOINTS:
        return run_or_folder
    return os.path.join(run_or_folder, CHECKPOINTS)


def run_name(checkpoint_file: str) -> str:
    """The name of the run a checkpoint file belongs to, or "" for a file outside a run."""
    folder = os.path.dirname(os.path.abspath(checkpoint_file))
    return os.path.basename(os.path.dirname(folder)) if os.path.basename(folder) == CHECKPOINTS else ""


def run_label(spec: str) -> str:
    """The run a recorded agent belongs to: its run directory's name, or a shipped agent's series."""
    if zoo.is_zoo_spec(spec):
        name = spec[len(zoo.PREFIX) :]
        return zoo.card(name).get("series") or name
    return run_name(spec) or os.path.basename(spec)


def resolve(path: str) -> str:
    """Accept a run directory, its checkpoints directory, a checkpoint file, an agent of pongrl's zoo
    (`zoo:NAME`) or a Hub file (`hf://OWNER/REPO/FILE`, fetched into the Hub's cache); return the file."""
    if zoo.is_zoo_spec(path):
        return zoo.weights_path(path)
    if hub.is_hub_spec(path):
        return hub.download(path)
    if os.path.isdir(path):
        checkpoint_dir = checkpoints_folder(path)
        name = read_latest(checkpoint_dir)
        if name is None:
            raise PongrlError(f"{path}: no checkpoint found (no {os.path.join(checkpoint_dir, LATEST)})")
        return os.path.join(checkpoint_dir, name + ".pt")
    if not os.path.exists(path):
        raise PongrlError(f"{path}: no such file or directory")
    return path


def read_weights_file(path: str):
    """torch.load a file safely (weights_only: no code runs), after checking the SHA-256 in its
    manifest when there is one. Returns (resolved path, loaded object)."""
    path = resolve(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise PongrlError(f"{path}: cannot read ({error.strerror})") from None
    manifest_path = path[:-3] + ".json" if path.endswith(".pt") else None
    if manifest_path and os.path.exists(manifest_path):
        try:
            with open(manifest_path) as handle:
                expected = json.load(handle)["sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            raise PongrlError(f"{manifest_path}: unreadable checkpoint manifest") from None
        if hashlib.sha256(data).hexdigest() != expected:
            raise PongrlError(f"{path}: checksum mismatch, the checkpoint is corrupt or truncated")
    try:
        with warnings.catch_warnings():
            # torch notes a pickle protocol it did not write (any foreign or damaged file); the
            # error below, or a clean load, says all a user needs, on one line.
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            return path, torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for damaged or foreign files
        raise PongrlError(
            f"{path}: not a readable pongrl checkpoint ({_why_unreadable(data, error)}); expected a "
            f"pongrl checkpoint, a seed-format state_dict or a .safetensors agent"
        ) from None


SAFETENSORS_HEADER = b'{"'  # after its 8-byte header length


def _why_unreadable(data: bytes, error: Exception) -> str:
    """What a file that torch.load refused is, in pongrl's words (torch's own text is long and cut mid-word)."""
    if len(data) > 9 and data[8:10] == SAFETENSORS_HEADER:
        return "it is a safetensors file: give it a .safetensors name"
    if data[:2] != b"PK":  # every file torch.save writes is a zip archive
        return "it is not a file written by torch.save"
    if "weights_only" in str(error) or "Unsupported global" in str(error):
        return "it holds Python objects that pongrl does not unpickle, since loading them could run code"
    return "it is damaged or truncated"


def is_checkpoint(payload) -> bool:
    return isinstance(payload, dict) and payload.get("format") == FORMAT


def validate_checkpoint(path: str, payload) -> dict:
    if not is_checkpoint(payload):
        raise PongrlError(f"{path}: not a pongrl checkpoint")
    version = payload.get("format_version")
    if version != FORMAT_VERSION:
        raise PongrlError(
            f"{path}: checkpoint format version {version} is not supported (this pongrl reads {FORMAT_VERSION})"
        )
    payload["path"] = path
    return payload


def load_checkpoint(path: str) -> dict:
    """Load and validate a pongrl checkpoint; refuse anything else with a one-line reason."""
    return validate_checkpoint(*read_weights_file(path))
