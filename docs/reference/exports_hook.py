"""MkDocs hook: the reference documents exactly pongrl's public names, so that it cannot drift from the code.

The public names are what `import pongrl` exports (`__all__`, each loaded lazily through `_EXPORTS`) and the
environments it offers to other libraries (the Gymnasium id it registers, and `pongrl.envs.pong_selfplay_v0`).
mkdocstrings reads the source without importing it, so it cannot see the lazy names; this hook imports
`pongrl` alone (which loads neither torch nor the emulator) and compares them with the `::: identifier` lines
of docs/reference/*.md. A name missing from the pages, or a page documenting what is no longer exported,
stops the build; a documented object that no longer exists is mkdocstrings' own error.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

# Documented in the README beside the gymnasium id, reached by its module path (not through `pongrl`).
PETTINGZOO_MODULE = "pongrl.envs.pong_selfplay_v0"
GYMNASIUM_ID = "pongrl/Pong-v0"


def public_objects(src: Path) -> set[str]:
    """The full dotted path of every public object of the pongrl in `src`."""
    # The checkout being built, not whichever pongrl is installed (mkdocstrings reads the same folder).
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))
    import gymnasium

    import pongrl

    objects = set()
    for name in pongrl.__all__:
        if name in pongrl._EXPORTS:
            module, attribute = pongrl._EXPORTS[name]
            objects.add(f"{module}.{attribute}")
        else:  # imported eagerly by pongrl/__init__.py (the errors)
            value = getattr(pongrl, name)
            objects.add(f"{value.__module__}.{value.__qualname__}")
    spec = gymnasium.spec(GYMNASIUM_ID)
    for entry_point in (spec.entry_point, spec.vector_entry_point):
        objects.add(entry_point.replace(":", "."))
    objects.add(PETTINGZOO_MODULE)
    return objects


def on_files(files, config, **kwargs):
    reference = Path(config["docs_dir"]) / "reference"
    documented = set()
    for page in sorted(reference.glob("*.md")):
        documented.update(re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), flags=re.MULTILINE))
    expected = public_objects(Path(config["config_file_path"]).parent / "src")
    missing, stale = sorted(expected - documented), sorted(documented - expected)
    if missing or stale:
        raise PluginError(
            f"docs/reference/*.md must document exactly pongrl's public names; "
            f"missing: {missing or 'none'}; not public: {stale or 'none'}"
        )
    return files
