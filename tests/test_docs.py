"""The documentation says what the code and the data say: generated pages cover every flag, setting and zoo
agent, the README's copies of generated figures match their source, and no page speaks of how pongrl was made."""

import argparse
import importlib.util
import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _generated():
    spec = importlib.util.spec_from_file_location("generated", ROOT / "docs" / "hooks" / "generated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _leaf_parsers(parser):
    children = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not children:
        yield parser
    for action in children:
        for sub in action.choices.values():
            yield from _leaf_parsers(sub)


def test_the_cli_reference_lists_every_command_and_flag_of_the_parser():
    from pongrl.cli import build_parser

    page = _generated().cli_reference()
    leaves = list(_leaf_parsers(build_parser()))
    assert len(leaves) >= 15
    for parser in leaves:
        assert f"## `{parser.prog}`" in page
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert f"`{option}" in page or f", {option}" in page, (parser.prog, option)


def test_the_hyperparameter_tables_hold_every_setting_with_its_default():
    from pongrl import config

    generated = _generated()
    for algo, (cls, presets) in config.CONFIG_CLASSES.items():
        table = generated.hyperparameters(algo)
        for field in fields(cls):
            if field.name == "algo":
                continue
            default = presets["default"].get(field.name, field.default)
            row = next(line for line in table.splitlines() if line.startswith(f"| `--{field.name.replace('_', '-')}`"))
            assert f"`{generated._default_text(default)}`" in row, row


def test_the_readme_zoo_table_is_the_one_generated_from_the_cards():
    generated = _generated()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert generated.readme_with_zoo_table(readme) == readme, "run: python docs/hooks/generated.py --write-readme"
    assert "`zoo:dqn`" in generated.zoo_table()


def test_the_readme_quotes_the_figures_as_their_one_source_gives_them():
    figures = yaml.safe_load((ROOT / "docs" / "data" / "figures.yaml").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quoted = {
        "sb3_speedup",
        "dqn_idle_speed",
        "dqn_default_hours",
        "dqn_first_above_zero",
        "dqn_median_to_18",
        "dqn_median_minutes_to_18",
    }
    for name in quoted:
        assert figures[name]["text"] in readme, name
    # The two-player env's speed-up over PettingZoo + SuperSuit: one figure wherever a page gives it.
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(
            r"(\d+(?:\.\d+)?)x (?:the reference|SuperSuit|faster than (?:PettingZoo|SuperSuit))", text
        ):
            assert match.group(1) + "x" == figures["two_player_speedup"]["text"], (page, match.group(0))


def test_a_card_figure_is_the_shipped_agents_own_score_and_a_wrong_one_stops_the_build():
    generated = _generated()
    card = json.loads((ROOT / "src" / "pongrl" / "zoo_agents" / "dqn.json").read_text(encoding="utf-8"))
    sticky = card["scores"]["sticky_actions"]
    assert generated.figure("zoo:dqn:sticky") == f"{sticky['mean']:+.2f}"
    low, high = sticky["ci95"]
    assert generated.figure("zoo:dqn:sticky-interval") == f"{low:+.2f}..{high:+.2f}"
    assert generated.figure("zoo:dqn:env-steps") == f"{card['env_step']:,}"
    page = "exact {{ figure zoo:dqn:exact }} over {{ figure zoo:dqn:distinct-games }} distinct games"
    exact = card["scores"]["every_start"]
    assert generated.expand_figures(page) == f"exact {exact['mean']:+.2f} over {exact['distinct_games']} distinct games"
    for wrong in ("zoo:nobody:sticky", "zoo:dqn:median"):
        with pytest.raises(KeyError, match=wrong):
            generated.figure(wrong)


# Markdown links and images: [text](target) or ![alt](target), the target up to a space, ")" or "#".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s#]+)")


def test_the_pages_outside_the_site_link_to_files_that_exist():
    # mkdocs --strict checks the links of docs/; the README and the changelog are read on the repository's page.
    broken = []
    for name in ("README.md", "CHANGELOG.md"):
        for target in LINK.findall((ROOT / name).read_text(encoding="utf-8")):
            if not re.match(r"[a-z]+:", target) and not (ROOT / target).exists():
                broken.append((name, target))
    assert not broken, broken
    assert LINK.findall("see [the DQN](docs/algorithms/dqn.md#usage) and ![a game](docs/a.gif)") == [
        "docs/algorithms/dqn.md",
        "docs/a.gif",
    ]


# Words of how pongrl was developed: numbered work sessions, review rounds and issues. Users meet dates and versions
# (and a league's rounds, which are its own: `pongrl train league`).
PROCESS_WORDS = re.compile(r"(?:\b|_)(?:sessions?|issues?|review rounds?)[ _-]?#?\d+|\bthe issue's\b", re.IGNORECASE)


def _user_facing_texts():
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for path in tracked:
        yield "file name", path
        if path in ("README.md", "CHANGELOG.md", "CITATION.cff") or (
            path.startswith("docs/") and path.endswith((".md", ".ipynb", ".yaml"))
        ):
            yield path, (ROOT / path).read_text(encoding="utf-8")
        elif path.startswith("src/pongrl/zoo_agents/") and path.endswith(".json"):
            yield path, (ROOT / path).read_text(encoding="utf-8")


def test_nothing_a_user_reads_speaks_of_how_pongrl_was_developed():
    from pongrl.cli import build_parser

    found = []
    for where, text in _user_facing_texts():
        found += [(where, match.group(0)) for match in PROCESS_WORDS.finditer(text)]
    for parser in _leaf_parsers(build_parser()):
        found += [(parser.prog, match.group(0)) for match in PROCESS_WORDS.finditer(parser.format_help())]
    assert not found, found[:20]


def test_the_process_words_check_catches_them():
    assert PROCESS_WORDS.search("resumed over sessions 27-31") and PROCESS_WORDS.search("(session 25)")
    assert PROCESS_WORDS.search("the target of issue 39") and PROCESS_WORDS.search("learning_ppo_seed1_session25.png")
    assert PROCESS_WORDS.search("mended in review round 2")
    assert not PROCESS_WORDS.search("three interleaved rounds of 10 s, 2026-12-03, version 0.2.0")
    assert not PROCESS_WORDS.search("the league's round 3: its main exploiter")


# The dated logs of how the results came about (the "History" section of the site). Every other page states where
# things stand: what was measured, against what reference, with its command, hardware and date.
HISTORY_PAGES = {"docs/results.md", "docs/zoo.md", "docs/arena.md", "docs/probes.md", "CHANGELOG.md"}

# A lab notebook's phrases: a team's goals ("the +18 target"), its schedule and its to-do list.
LOGBOOK_PHRASES = re.compile(
    r"\+18 (?:sticky )?target|\b\d+(?:\.\d+)?x target|\(target\)|\btargets? of \d|\bneither is met\b"
    r"|\b(?:is|are|was|not) met\b|\btime ran out\b|\bthe day ended\b|\blesson is taken\b|\bleft for later\b"
    r"|\bunder way\b|\bnot done yet\b|\bstill to run\b|\bnext step\b|\bto-?dos?\b|\b(?:runs?|seeds?) so far\b"
    r"|\bso far, to\b",
    re.IGNORECASE,
)
# The two documents pongrl implements are named plainly: "the DQN blog post", "the self-play model card".
UNNAMED_SOURCES = re.compile(
    r"\bthe seed(?:'s| blog| card| post)\b|\bthe blog\b(?! post)|\bthe blog's\b", re.IGNORECASE
)


def test_pages_outside_the_history_state_results_not_a_lab_notebook():
    found = []
    for where, text in _user_facing_texts():
        if where == "file name" or where in HISTORY_PAGES or where.startswith(("docs/data/", "src/")):
            continue
        found += [(where, match.group(0)) for match in LOGBOOK_PHRASES.finditer(text)]
        found += [(where, match.group(0)) for match in UNNAMED_SOURCES.finditer(text)]
    assert not found, found[:20]


def test_the_lab_notebook_checks_catch_their_phrases():
    for phrase in (
        "still below the +18 target",
        "short of the 2.0x target",
        "| ratio (target) |",
        "targets of 45 and",
        "where the day's time ran out",
        "The lesson is taken",
        "left for later",
        "two runs under way",
        "(to 600,000 env steps so far; ...)" and "runs so far",
    ):
        assert LOGBOOK_PHRASES.search(phrase), phrase
    for phrase in ("an exploiter's target", "the target network", "--target-kl", "the exploiter's games so far"):
        assert not LOGBOOK_PHRASES.search(phrase), phrase
    assert UNNAMED_SOURCES.search("as the blog's run did") and UNNAMED_SOURCES.search("the seed's separate torsos")
    assert not UNNAMED_SOURCES.search("the DQN blog post's run") and not UNNAMED_SOURCES.search("the seed is passed")


def test_time_to_18_is_one_figure_from_the_measured_runs():
    # figures.yaml quotes the five-seed study; results.yaml holds its rows: the two must agree.
    import statistics

    figures = yaml.safe_load((ROOT / "docs" / "data" / "figures.yaml").read_text(encoding="utf-8"))
    runs = yaml.safe_load((ROOT / "docs" / "data" / "results.yaml").read_text(encoding="utf-8"))["dqn"]["runs"]
    steps = [row[runs["columns"].index("env steps to +18")] for row in runs["rows"]]
    minutes = [row[runs["columns"].index("training minutes to +18")] for row in runs["rows"]]
    assert figures["dqn_median_to_18"]["text"] == f"{statistics.median(steps):,.0f} env steps"
    assert figures["dqn_worst_to_18"]["text"] == f"{max(steps):,}"
    assert figures["dqn_median_minutes_to_18"]["text"] == f"{statistics.median(minutes):.0f} minutes"


def test_every_results_block_draws_its_tables():
    generated = _generated()
    table = yaml.safe_load((ROOT / "docs" / "data" / "results.yaml").read_text(encoding="utf-8"))
    for name, entry in table.items():
        text = generated.results(name)
        for agent in entry["shipped"]:
            assert f"`zoo:{agent}`" in text
        for row in entry.get("published", []):
            assert row["source"] in text
    assert "| **median** | 400,000 | 97 |" in generated.results("dqn")
    with pytest.raises(KeyError, match="no results"):
        generated.results("nobody")


def test_no_image_or_video_lies_at_the_top_of_the_docs():
    loose = [path.name for path in (ROOT / "docs").iterdir() if path.suffix in (".png", ".gif", ".mp4", ".jpg", ".svg")]
    assert not loose, loose


# ---- the built site -------------------------------------------------------------------------------------------
EMPTY_CODE = re.compile(r"<code[^>]*>\s*</code>")
LINK_TEXT = re.compile(r"<a\b[^>]*>([^<]*)</a>")
BARE_FILE_NAME = re.compile(r"[\w./-]+\.md(?:#\S*)?")
# A Markdown list item that was not parsed as one: a paragraph that starts with "- ".
UNPARSED_ITEM = re.compile(r"<p>\s*[-*] ")
# An empty inline code span written as two backticks, which Markdown prints as they are.
TWO_BACKTICKS = re.compile(r">\s*``\s*<")
# A list item that introduces a list ("... would try:") followed by that list at its own level, not inside it.
LIST_AT_WRONG_LEVEL = re.compile(r":(?:</p>)?\s*</li>\s*(?:</ul>\s*<ul>|<li>)")


def rendering_faults(html: str) -> list[str]:
    """What a page of the built site shows wrong: empty code elements, links that read as a bare file name,
    list items printed as text."""
    faults = [f"empty code element {match.group(0)!r}" for match in EMPTY_CODE.finditer(html)]
    faults += [
        f"link text is a file name: {text!r}"
        for text in LINK_TEXT.findall(html)
        if BARE_FILE_NAME.fullmatch(text.strip())
    ]
    faults += [f"list item as text: {match.group(0)!r}" for match in UNPARSED_ITEM.finditer(html)]
    faults += [f"two backticks as text: {match.group(0)!r}" for match in TWO_BACKTICKS.finditer(html)]
    faults += [f"a list at its parent item's level: {match.group(0)!r}" for match in LIST_AT_WRONG_LEVEL.finditer(html)]
    return faults


def test_the_rendering_checks_catch_the_faults():
    assert rendering_faults("<td><code></code></td>") and rendering_faults('<a href="../r/">results.md</a>')
    assert rendering_faults("<p>- `still`: stands still</p>") and rendering_faults("<td>``</td>")
    assert rendering_faults("<li><p>paddles a program would try:</p>\n</li>\n</ul>\n<ul>\n<li><code>still</code></li>")
    assert rendering_faults("<li><p>paddles a program would try:</p>\n</li>\n<li>\n<p><code>still</code></p></li>")
    assert not rendering_faults('<td><code>""</code></td><a href="../r/">the results log</a><ul><li>x</li></ul>')


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    pytest.importorskip("mkdocs")
    import subprocess
    import sys

    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    return site


def test_the_built_site_renders_right(built_site):
    faults = []
    for page in sorted(built_site.rglob("*.html")):
        faults += [(str(page.relative_to(built_site)), fault) for fault in rendering_faults(page.read_text("utf-8"))]
    assert not faults, faults[:20]
    # The scripted opponents are a list inside the robustness guide's list item, not a list of their own.
    robustness = (built_site / "howto" / "robustness" / "index.html").read_text("utf-8")
    item = robustness[robustness.index("The scripted battery") : robustness.index("Other agents")]
    assert "<code>hold-down</code>" in item and item.index("<ul>") < item.index("</li>"), item[:300]
    # Wide tables scroll and long code lines wrap (docs/assets/extra.css).
    assert (built_site / "assets" / "extra.css").is_file()


# What a reader cannot see whole: an element of the page's text that reaches past the window's right edge with no
# scrolling box around it, or a box that hides what it holds.
HIDDEN_IN_THE_BROWSER = """
const article = document.querySelector('article.md-content__inner');
if (!article) return ['no article on the page'];
const right = document.documentElement.clientWidth;
const scrolls = element => ['auto', 'scroll'].includes(getComputedStyle(element).overflowX);
const hidden = [];
for (const element of article.querySelectorAll('*')) {
  const box = element.getBoundingClientRect();
  if (!box.width || getComputedStyle(element).visibility === 'hidden') continue;
  const what = element.tagName.toLowerCase() + ' ' + JSON.stringify((element.textContent || '').trim().slice(0, 50));
  let scrolled = false;
  for (let up = element.parentElement; up && up !== article && !scrolled; up = up.parentElement) scrolled = scrolls(up);
  const reach = scrolls(element) ? box.right : Math.max(box.right, box.left + element.scrollWidth);
  if (!scrolled && reach > right + 1) hidden.push('past the window: ' + what);
  const clips = ['hidden', 'clip'].includes(getComputedStyle(element).overflowX);
  if (clips && element.scrollWidth > element.clientWidth + 1) hidden.push('cut off: ' + what);
}
return hidden;
"""


def hidden_on(browser, page, tries=5):
    """What HIDDEN_IN_THE_BROWSER finds on `page` once it has loaded (a load can return before the page is there)."""
    import time

    browser.get(page.as_uri())
    for _ in range(tries):
        found = browser.execute_script(HIDDEN_IN_THE_BROWSER)
        if found != ["no article on the page"]:
            return found
        time.sleep(0.5)
    return found


def test_a_browser_shows_every_page_whole_on_a_desktop_and_a_phone(built_site, browser, tmp_path):
    wide = "pongrl train selfplay " + "--flag value " * 40
    faulty = tmp_path / "faulty.html"
    faulty.write_text(
        f'<article class="md-content__inner"><pre style="white-space: pre">{wide}</pre>'
        f'<div style="overflow: hidden; width: 200px"><code style="white-space: pre">{wide}</code></div></article>'
    )
    pages = [page for page in sorted(built_site.rglob("*.html")) if page.name == "index.html"]
    assert len(pages) > 30
    for width in (1280, 400):
        browser.set_window_size(width, 900)
        found = hidden_on(browser, faulty)
        assert any(f.startswith("past the window: pre") for f in found) and any(f.startswith("cut off") for f in found)
        hidden = [
            (width, str(page.relative_to(built_site)), what) for page in pages for what in hidden_on(browser, page)
        ]
        assert not hidden, hidden[:10]
