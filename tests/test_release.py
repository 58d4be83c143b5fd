"""What a release promises: one version everywhere it is written, and a repository that checks out alike on
every file system. (`.ci/wheel_smoke` builds the wheel and runs it outside the checkout.)"""

import glob
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess

import pytest
import yaml
from cli_helpers import run, small_dqn

import pongrl
from pongrl import zoo
from pongrl.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_no_two_tracked_paths_differ_only_in_case():
    # macOS and Windows file systems ignore case by default: a clone there checks out one of two such paths
    # and shows the other as modified.
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    paths = listed.stdout.decode().split("\0")[:-1]
    assert paths, "git ls-files listed nothing"
    seen: dict[str, str] = {}
    clashes = []
    for path in paths:
        # A folder named in two cases clashes as well: compare every prefix.
        parts = path.split("/")
        for end in range(1, len(parts) + 1):
            prefix = "/".join(parts[:end])
            other = seen.setdefault(prefix.casefold(), prefix)
            if other != prefix:
                clashes.append((other, prefix))
    assert not sorted(set(clashes)), f"paths that differ only in case: {sorted(set(clashes))}"


def test_the_version_is_the_installed_metadata_and_pongrl_version_prints_it(capsys):
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", pongrl.__version__), pongrl.__version__
    # A stale editable install (its metadata older than _version.py) shows here: `pip install -e .` again.
    assert importlib.metadata.version("pongrl") == pongrl.__version__
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"pongrl {pongrl.__version__}\n"


def test_the_citation_and_the_changelog_name_this_version():
    with open(os.path.join(ROOT, "CITATION.cff")) as handle:
        citation = yaml.safe_load(handle)
    assert citation["cff-version"] == "1.2.0" and citation["version"] == pongrl.__version__
    with open(os.path.join(ROOT, "CHANGELOG.md")) as handle:
        headings = re.findall(r"^## (\S+)", handle.read(), flags=re.MULTILINE)
    release = pongrl.__version__.split(".dev")[0]
    assert release in headings or "Unreleased" in headings, headings


def test_a_run_records_the_version_that_wrote_its_config_and_checkpoints(tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    assert main(["train", "dqn", "--run-dir", run_dir, "--total-steps", "200", *small_dqn()]) == 0
    with open(os.path.join(run_dir, "config.yaml")) as handle:
        saved = yaml.safe_load(handle)
    assert saved["pongrl_version"] == pongrl.__version__ and saved["algo"] == "dqn"
    manifests = glob.glob(os.path.join(run_dir, "checkpoints", "step_*.json"))
    assert manifests
    for manifest in manifests:
        with open(manifest) as handle:
            assert json.load(handle)["pongrl_version"] == pongrl.__version__
    assert pongrl.Run(run_dir).config.algo == "dqn", "the version is a record beside the settings, not one of them"
    # A config written before versions were recorded (no key) still loads and resumes; the resume writes it.
    del saved["pongrl_version"]
    with open(os.path.join(run_dir, "config.yaml"), "w") as handle:
        yaml.safe_dump(saved, handle, sort_keys=False)
    assert main(["resume", run_dir, "--extra-steps", "100"]) == 0
    with open(os.path.join(run_dir, "config.yaml")) as handle:
        assert yaml.safe_load(handle)["pongrl_version"] == pongrl.__version__


def test_a_written_card_names_the_version_that_wrote_it(tmp_path, capsys):
    out = str(tmp_path / "card")
    code, _, err = run(["card", "zoo:dqn", "--out", out, "--games", "1", "--video-frames", "60"], capsys)
    assert code == 0, err
    with open(os.path.join(out, "README.md")) as handle:
        assert f"written by pongrl {pongrl.__version__}." in handle.read()


def test_the_zoo_listing_gives_each_agents_version_and_the_sha256_of_its_weights(capsys):
    assert main(["zoo", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in rows] == [zoo.PREFIX + name for name in zoo.names()]
    for row in rows:
        with open(zoo.weights_path(row["name"]), "rb") as handle:
            assert row["sha256"] == hashlib.sha256(handle.read()).hexdigest(), row["name"]
        assert re.fullmatch(r"\d+\.\d+\.\d+", row["version"] or ""), f"{row['name']}: its card has no version"
    assert main(["zoo"]) == 0
    table = capsys.readouterr().out
    for row in rows:
        line = next(line for line in table.splitlines() if line.startswith(row["name"] + " "))
        assert row["version"] in line.split() and row["sha256"][: zoo.SHORT_SHA] in line.split()


def test_the_version_is_written_in_one_place():
    # pyproject reads it from src/pongrl/_version.py; a second literal would drift.
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        pyproject = tomllib.load(handle)
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pongrl._version.__version__"}
    sources = glob.glob(os.path.join(ROOT, "src", "pongrl", "**", "*.py"), recursive=True)
    literal = re.compile(r"__version__\s*=\s*[\"']")
    assert [os.path.relpath(p, ROOT) for p in sources if literal.search(open(p).read())] == [
        os.path.join("src", "pongrl", "_version.py")
    ]
