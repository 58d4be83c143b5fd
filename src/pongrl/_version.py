"""pongrl's version, in this one place: pyproject.toml reads it when the package is built
(`[tool.setuptools.dynamic]`), and `pongrl --version`, run configs and cards read it at run time.

A file rather than `importlib.metadata.version("pongrl")`: an editable install keeps the metadata of the
day it was installed, so a version bumped since would be misreported until the next `pip install -e .`,
and a source tree on PYTHONPATH has no metadata at all. Between releases it carries a `.devN` suffix, so
nothing written by unreleased code passes for a release (CHANGELOG.md lists the releases).
"""

__version__ = "0.4.0"
