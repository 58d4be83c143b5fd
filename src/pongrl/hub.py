"""Agents from the Hugging Face Hub: `hf://OWNER/REPO/FILE` names a file in a model repository.

The file is fetched with huggingface_hub into its usual cache (HF_HUB_CACHE, HF_HOME, HF_ENDPOINT and
HF_HUB_OFFLINE work as they do for any Hub user) and then loaded like any local file, with the same
validation: safetensors, pongrl checkpoints, or the self-play card's bare state_dicts, all without
running code. Offline, or where the Hub cannot be reached, a cached copy is used; a file that is not
in the cache is refused in one line.
"""

from __future__ import annotations

from pongrl.errors import PongrlError

PREFIX = "hf://"


def is_hub_spec(spec: str) -> bool:
    return spec.startswith(PREFIX)


def split_spec(spec: str) -> tuple[str, str]:
    """`hf://OWNER/REPO/FILE` -> ("OWNER/REPO", "FILE"); FILE may lie in folders."""
    parts = spec[len(PREFIX) :].split("/", 2)
    if len(parts) < 3 or not all(parts):
        raise PongrlError(f"{spec}: a Hub agent is named hf://OWNER/REPO/FILE")
    return f"{parts[0]}/{parts[1]}", parts[2]


def download(spec: str) -> str:
    """The local path of the Hub file `spec`, downloaded into the cache if need be."""
    repo_id, filename = split_spec(spec)
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.utils import logging as hub_logging
        from huggingface_hub.errors import (
            EntryNotFoundError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
        )
    except ImportError:
        raise PongrlError(f"{spec}: loading from the Hub needs huggingface_hub (pip install huggingface_hub)") from None
    hub_logging.set_verbosity_error()  # its retry warnings would bury the one-line reason given below
    from huggingface_hub import constants

    offline = constants.HF_HUB_OFFLINE
    try:
        return hf_hub_download(repo_id, filename)
    except LocalEntryNotFoundError:
        why = "HF_HUB_OFFLINE is set" if offline else "the Hub cannot be reached"
        raise PongrlError(f"{spec}: not in the local Hugging Face cache, and {why}") from None
    except RepositoryNotFoundError:
        raise PongrlError(f"{spec}: no such model repository on the Hub (or it is private)") from None
    except EntryNotFoundError:
        raise PongrlError(f"{spec}: the repository has no file {filename}") from None
    except (HfHubHTTPError, OSError, ValueError) as error:
        reason = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise PongrlError(f"{spec}: cannot fetch it from the Hub ({reason})") from None
