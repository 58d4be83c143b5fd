"""Documentation generated from pongrl's own sources, so that a page cannot drift from the code.

A page asks for a generated block with a marker on a line of its own, `<!-- generated: NAME [ARGUMENT] -->`, and
this MkDocs hook (`hooks:` in mkdocs.yml) replaces the marker when the site is built:

- `zoo-table`: the shipped agents and their scores, from the cards in src/pongrl/zoo_agents/*.json;
- `zoo-cards`: every card in full (how it was trained, its note, the commands that scored it);
- `hyperparameters ALGO`: every setting of `pongrl train ALGO` with its default and meaning, from the config
  dataclasses and `FIELD_HELP` in src/pongrl/config.py, and each preset's changes;
- `metrics ALGO`: the columns of a run's metrics.csv, from the learner's own list, each with its meaning;
- `cli`: every command and flag of `pongrl`, from its own argparse parser;
- `include FILE`: a file at the repository's root (the changelog, the citation);
- `results NAME`: an algorithm page's results: the shipped agents' scores from their cards, the runs of
  docs/data/results.yaml with mean, standard deviation and median where several ran, and published figures with
  their sources;
- `figure NAME`: one number from docs/data/figures.yaml, the one source of figures quoted on several pages;
  `figure zoo:AGENT:SCORE` one score of a zoo agent from its card (SCORE: `exact`, `distinct-games`, `sticky`,
  `sticky-interval` or `env-steps`), so that prose about a shipped agent changes with the agent.

A marker with an unknown name, or a figure that is not in the data file, stops the build. The README is read on
GitHub and PyPI, not built: it holds a copy of the zoo table between two markers, which
`python docs/hooks/generated.py --write-readme` rewrites and tests/test_docs.py compares with the cards.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import MISSING, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ZOO_FOLDER = ROOT / "src" / "pongrl" / "zoo_agents"
FIGURES = ROOT / "docs" / "data" / "figures.yaml"
RESULTS = ROOT / "docs" / "data" / "results.yaml"
MARKER = re.compile(r"^<!-- generated: ([\w-]+)(?: ([\w.-]+))? -->$", flags=re.MULTILINE)
README_BEGIN = "<!-- zoo table: generated from src/pongrl/zoo_agents/*.json, do not edit by hand -->"
README_END = "<!-- end of the zoo table -->"


def _import_pongrl():
    # The checkout being built, not whichever pongrl is installed.
    if str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))
    import pongrl

    return pongrl


def _cards() -> list[dict]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(ZOO_FOLDER.glob("*.json"))]


def _score(value) -> str:
    return "-" if value is None else f"{value:+.2f}"


def _steps(card: dict) -> str:
    unit = "agent steps" if card.get("algo") == "selfplay" else "env steps"
    return f"{card['env_step']:,} {unit}"


def _sticky(card: dict) -> str:
    sticky = card.get("scores", {}).get("sticky_actions")
    if not sticky:
        return "-"
    interval = sticky.get("ci95")
    games = f"{sticky['games']} games"
    if interval:
        return f"{sticky['mean']:+.2f} [{interval[0]:+.1f}, {interval[1]:+.1f}], {games}"
    return f"{sticky['mean']:+.2f}, {games}"


def zoo_table() -> str:
    """The zoo as a Markdown table: one row per agent, a checkpoint series in one row with its range."""
    rows = [
        "| agent | algorithm | trained for | exact: 31 starts (distinct games) | sticky actions 0.25 [95% interval] "
        "| worst case (opponent) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    series: dict[str, list[dict]] = {}
    for card in _cards():
        if card.get("series"):
            series.setdefault(card["series"], []).append(card)
            continue
        exact = card.get("scores", {}).get("every_start", {})
        distinct = f" ({exact['distinct_games']})" if exact.get("distinct_games") else ""
        rows.append(
            f"| `zoo:{card['name']}` | {card['algo']} | {_steps(card)} | {_score(exact.get('mean'))}{distinct} | "
            f"{_sticky(card)} | {_worst(card)} |"
        )
    for name, members in sorted(series.items()):
        members.sort(key=lambda card: card["env_step"])
        exact = [card["scores"]["every_start"]["mean"] for card in members]
        sticky = [card["scores"]["sticky_actions"]["mean"] for card in members if "sticky_actions" in card["scores"]]
        sticky_text = f"{min(sticky):+.2f} to {max(sticky):+.2f}" if sticky else "-"
        rows.append(
            f"| `zoo:{name}-*` ({len(members)} checkpoints of one run) | {members[0]['algo']} | "
            f"{members[0]['env_step']:,} to {members[-1]['env_step']:,} agent steps | "
            f"{min(exact):+.2f} to {max(exact):+.2f} | {sticky_text} | - |"
        )
    return "\n".join(rows)


def _worst(card: dict) -> str:
    worst = card.get("robustness", {}).get("worst")
    return "-" if not worst else f"{worst['point_difference']:+.2f} ({worst['opponent']})"


def scripted_battery(argument: str = "") -> str:
    """The scripted opponents, a line each, from pongrl.scripted.BATTERY; `nested`: as the items of a list nested
    in the list item above the marker (indented by four spaces, as Python-Markdown wants)."""
    from pongrl.scripted import BATTERY

    if argument not in (None, "", "nested"):
        raise ValueError(f"scripted-battery takes no argument or 'nested', got {argument!r}")
    indent = "    " if argument == "nested" else ""
    return "\n".join(f"{indent}- `{name}`: {description}" for name, (_, description) in BATTERY.items())


def robustness_table(argument: str = "") -> str:
    """Every robustness report the zoo's cards hold, as one table: a row per opponent, a column per agent, each
    cell the agent's mean point difference a game (wins-losses), the worst case and the mean at the bottom."""
    cards = [card for card in _cards() if card.get("robustness")]
    if not cards:
        raise ValueError("no zoo card holds a robustness report")
    opponents = list(dict.fromkeys(row["opponent"] for card in cards for row in card["robustness"]["rows"]))
    lines = [
        "| opponent | " + " | ".join(f"`zoo:{card['name']}`" for card in cards) + " |",
        "|---|" + "---:|" * len(cards),
    ]
    for opponent in opponents:
        cells = []
        for card in cards:
            row = next((r for r in card["robustness"]["rows"] if r["opponent"] == opponent), None)
            if row is None or f"zoo:{card['name']}" == opponent:
                cells.append("")
            else:
                cells.append(f"{row['point_difference']:+.1f} ({row['wins']}-{row['losses']})")
        lines.append(f"| {opponent} | " + " | ".join(cells) + " |")
    lines.append("| **worst case** | " + " | ".join(f"**{_worst(card)}**" for card in cards) + " |")
    means = (f"{card['robustness']['mean_point_difference']:+.2f}" for card in cards)
    lines.append("| mean over opponents | " + " | ".join(means) + " |")
    return "\n".join(lines)


def zoo_cards() -> str:
    """Every card: how the agent was trained, what it is, and the commands that scored it."""
    parts = []
    for card in _cards():
        scores = card.get("scores", {})
        lines = [f"### `zoo:{card['name']}`", ""]
        lines.append(
            f"{card['algo']}, {card.get('network', 'nature')} network, observation profile "
            f"`{card.get('obs_profile', 'standard')}`, {_steps(card)}, weights in {card.get('dtype', 'float32')}."
        )
        if card.get("note"):
            lines += ["", card["note"][0].upper() + card["note"][1:].rstrip(".") + "."]
        lines += ["", "Trained with:", "", "```bash", card["trained_with"], "```", ""]
        for key, title in (("every_start", "exact protocol"), ("sticky_actions", "sticky actions 0.25")):
            if key in scores:
                score = scores[key]
                interval = score.get("ci95")
                interval_text = f", 95% interval [{interval[0]:+.2f}, {interval[1]:+.2f}]" if interval else ""
                lines.append(
                    f"- {title}: {score['mean']:+.2f} over {score['games']} games{interval_text}: `{score['command']}`"
                )
        if card.get("robustness"):
            report = card["robustness"]
            worst = report["worst"]
            lines.append(
                f"- robustness: worst case {worst['point_difference']:+.2f} a game ({worst['opponent']}), mean "
                f"{report['mean_point_difference']:+.2f} over its opponents: `{report['command']}`"
            )
        for run in card.get("exploitability", {}).get("runs", []):
            budgets = ", ".join(
                f"{row['mean_point_difference']:+.1f} at {row['budget_agent_steps']:,}" for row in run["rows"]
            )
            lines.append(
                f"- an exploiter {run['recipe']} (seed {run['seed']}), its point difference a game against this "
                f"agent by budget of agent steps: {budgets}: `{run['command']}`"
            )
        if card.get("sha256"):
            lines += ["", f"SHA-256 of the weights: `{card['sha256']}`"]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _default_text(value) -> str:
    if value == "":
        return '""'  # an empty setting shows as what one types for it, not as an empty code cell
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:,}"
    return f"{value}"


def hyperparameters(algo: str) -> str:
    """Every setting of `pongrl train ALGO`: its flag, default (under the default preset) and meaning."""
    _import_pongrl()
    from pongrl import config

    cls, presets = config.CONFIG_CLASSES[algo]
    default_preset = presets.get("default", {})
    rows = ["| flag | default | meaning |", "|---|---|---|"]
    for field in fields(cls):
        if field.name == "algo":
            continue
        default = default_preset.get(field.name, field.default if field.default is not MISSING else None)
        meaning = config.FIELD_HELP.get(field.name)
        if meaning is None:
            raise ValueError(f"config.FIELD_HELP has no meaning for {cls.__name__}.{field.name}")
        flag = "--" + field.name.replace("_", "-")
        rows.append(f"| `{flag}` | `{_default_text(default)}` | {meaning} |")
    return "\n".join(rows)


def presets(algo: str) -> str:
    """What each preset of `pongrl train ALGO` changes from the dataclass defaults."""
    _import_pongrl()
    from pongrl import config

    cls, table = config.CONFIG_CLASSES[algo]
    defaults = {field.name: field.default for field in fields(cls)} | table.get("default", {})
    rows = ["| preset | changes from the defaults above |", "|---|---|"]
    for name, changes in table.items():
        changed = {key: value for key, value in changes.items() if key != "algo" and defaults.get(key) != value}
        text = ", ".join(f"`--{key.replace('_', '-')} {_default_text(value)}`" for key, value in changed.items())
        rows.append(f"| `{name}` | {text or 'none: the defaults above'} |")
    return "\n".join(rows)


# What each column of a run's metrics.csv means; a column the learners write without a meaning here stops the build.
METRIC_MEANINGS = {
    "env_step": "environment steps so far (agent steps in self-play: two per game step), all parallel envs together",
    "wall_seconds": "wall-clock seconds since the run started, across resumes",
    "episodes": "training games finished so far",
    "average_return": "mean true game score (-21..21) of the last 10 training games",
    "average_length": "mean length in agent steps of the last 10 training games",
    "loss": "mean TD loss over the interval's gradient steps (Huber or squared, per `--loss`)",
    "q_mean": "mean Q-value of the actions taken in the sampled batches: rises as the agent expects to win",
    "epsilon": "exploration epsilon at the row's step",
    "steps_per_second": "environment steps per second over the interval",
    "env_seconds": "seconds spent stepping the emulators",
    "inference_seconds": "seconds spent choosing actions (forward passes)",
    "update_seconds": "seconds spent in gradient steps",
    "eval_seconds": "seconds spent in evaluations against the built-in AI",
    "eval_mean_return": "mean true score of the evaluation's greedy games against the built-in AI",
    "eval_std_return": "their standard deviation",
    "points_won": "points the learner won in the interval's games",
    "points_lost": "points it lost",
    "serve_penalties": "two-player games: serve penalties (a player that did not serve within two seconds)",
    "policy_loss": "PPO's clipped surrogate loss",
    "value_loss": "the value function's loss (clipped as CleanRL does unless `--no-clip-vloss`)",
    "entropy": "mean entropy of the policy: falls as it grows sure of its actions",
    "approx_kl": "approximate KL divergence between the policy before and after the update",
    "clip_fraction": "fraction of samples whose probability ratio was clipped",
    "explained_variance": "how much of the returns' variance the value function explains (1 is perfect)",
    "learning_rate": "the learning rate at the row's step (annealed with `--anneal-lr`)",
    "return_first_0": "self-play: mean score of the right paddle's last games",
    "return_second_0": "self-play: mean score of the left paddle's last games",
    "eval_sampled_mean_return": "mean score of the evaluation's games with actions sampled from the policy",
    "eval_sampled_std_return": "their standard deviation",
    "return_vs_pool": "self-play: the learner's mean score in games against the opponent pool",
    "return_vs_scripted": "self-play: the learner's mean score in games against scripted paddles",
    "return_vs_agents": "self-play: the learner's mean score in games against the frozen opponent agents",
    "return_vs_builtin": "self-play: the learner's mean score in games against the built-in AI",
}


def metrics(algo: str) -> str:
    """The columns of a run's metrics.csv for ALGO, each with its meaning."""
    _import_pongrl()
    module = __import__("pongrl.algos." + ("dqn" if algo == "dqn" else "ppo"), fromlist=["METRIC_COLUMNS"])
    rows = ["| column | meaning |", "|---|---|"]
    for column in module.METRIC_COLUMNS:
        if column not in METRIC_MEANINGS:
            raise ValueError(f"METRIC_MEANINGS in docs/hooks/generated.py has no meaning for the column {column!r}")
        rows.append(f"| `{column}` | {METRIC_MEANINGS[column]} |")
    return "\n".join(rows)


def _subcommands(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _command_section(path: str, summary: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    heading = "#" * level
    lines = [f"{heading} `{path}`", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ".", ""]
    children = list(_subcommands(parser))
    if children:
        for name, help_text, sub in children:
            lines += _command_section(f"{path} {name}", help_text, sub, level + 1)
        return lines
    usage = parser.format_usage().replace("usage: ", "", 1).strip()
    lines += ["```text", re.sub(r"\s+", " ", usage), "```", ""]
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = ", ".join(action.option_strings) or (action.metavar or action.dest)
        if action.option_strings and action.nargs != 0:
            name += " " + str(action.metavar or action.dest.upper())
        help_text = (action.help or "").replace("%(default)s", str(action.default)).replace("%%", "%")
        help_text = re.sub(r"\s+", " ", help_text).replace("|", "\\|")
        rows.append(f"| `{name}` | {help_text} |")
    if rows:
        lines += ["| argument | meaning |", "|---|---|", *rows, ""]
    return lines


def cli_reference() -> str:
    """Every command and flag of `pongrl`, from the parser `pongrl` itself runs."""
    _import_pongrl()
    from pongrl.cli import build_parser

    lines = []
    for name, help_text, sub in _subcommands(build_parser()):
        lines += _command_section(f"pongrl {name}", help_text, sub, 2)
    return "\n".join(lines).rstrip() + "\n"


CARD_FIGURES = {
    "exact": lambda card: f"{card['scores']['every_start']['mean']:+.2f}",
    "distinct-games": lambda card: str(card["scores"]["every_start"]["distinct_games"]),
    "sticky": lambda card: f"{card['scores']['sticky_actions']['mean']:+.2f}",
    "sticky-interval": lambda card: "{:+.2f}..{:+.2f}".format(*card["scores"]["sticky_actions"]["ci95"]),
    "env-steps": lambda card: f"{card['env_step']:,}",
}


def card_figure(name: str) -> str:
    """`zoo:AGENT:SCORE`: one score of a shipped agent, read from its card."""
    _, agent, score = name.split(":")
    path = ZOO_FOLDER / f"{agent}.json"
    if not path.is_file():
        raise KeyError(f"no zoo agent {agent!r} for figure {name!r}")
    if score not in CARD_FIGURES:
        raise KeyError(f"figure {name!r}: a card's figures are {', '.join(CARD_FIGURES)}")
    return CARD_FIGURES[score](json.loads(path.read_text(encoding="utf-8")))


def figure(name: str) -> str:
    """One figure of docs/data/figures.yaml, or of a zoo agent's card, as the pages quote it."""
    if name.startswith("zoo:") and name.count(":") == 2:
        return card_figure(name)
    import yaml

    table = yaml.safe_load(FIGURES.read_text(encoding="utf-8"))
    if name not in table:
        raise KeyError(f"docs/data/figures.yaml has no figure {name!r}")
    return str(table[name]["text"])


def include(name: str) -> str:
    """A file at the repository's root (CHANGELOG.md, CITATION.cff), so the site shows the one copy: Markdown as
    it is (its headings one level down), anything else as a code block."""
    path = ROOT / name
    if path.parent != ROOT or not path.is_file():
        raise ValueError(f"no file {name!r} at the repository's root")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return re.sub(r"^(#+) ", r"#\1 ", text, flags=re.MULTILINE)
    return f"```yaml\n{text.rstrip()}\n```"


def _cell(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _shipped_rows(names: list[str]) -> list[str]:
    rows = [
        "| agent | trained for | exact: 31 starts (distinct games) | sticky actions 0.25 [95% interval] |",
        "|---|---:|---:|---:|",
    ]
    for name in names:
        card = json.loads((ZOO_FOLDER / f"{name}.json").read_text(encoding="utf-8"))
        exact = card["scores"]["every_start"]
        distinct = f" ({exact['distinct_games']})" if exact.get("distinct_games") else ""
        rows.append(f"| `zoo:{name}` | {_steps(card)} | {exact['mean']:+.2f}{distinct} | {_sticky(card)} |")
    return rows


def run_summary(runs: dict) -> list[list[str]]:
    """Mean +- sample standard deviation and median of the columns `summarize` names, over the rows."""
    import statistics

    columns = runs["columns"]
    wanted = runs.get("summarize", [])
    if not wanted:
        return []
    mean_row, median_row = ["**mean ± std**"], ["**median**"]
    for index, column in enumerate(columns[1:], start=1):
        if column not in wanted:
            mean_row.append("")
            median_row.append("")
            continue
        values = [row[index] for row in runs["rows"]]
        mean, std = statistics.mean(values), statistics.stdev(values)
        median = statistics.median(values)
        mean_row.append(f"{mean:,.0f} ± {std:,.0f}")
        median_row.append(f"{median:,.0f}")
    return [mean_row, median_row]


def results(name: str) -> str:
    """An algorithm page's results from docs/data/results.yaml and the zoo's cards."""
    import yaml

    table = yaml.safe_load(RESULTS.read_text(encoding="utf-8"))
    if name not in table:
        raise KeyError(f"docs/data/results.yaml has no results {name!r}")
    entry = table[name]
    lines = ["**The shipped agents**, scored against the built-in AI under both protocols (from their cards):", ""]
    lines += _shipped_rows(entry["shipped"])
    runs = entry.get("runs")
    if runs:
        lines += ["", f"**{runs['title']}.** {runs['hardware']}:", ""]
        lines += ["| " + " | ".join(runs["columns"]) + " |", "|" + "---|" * len(runs["columns"])]
        for row in [*runs["rows"], *run_summary(runs)]:
            lines.append("| " + " | ".join(_cell(value) for value in row) + " |")
        lines += ["", "```bash", runs["command"], "```"]
    if entry.get("published"):
        lines += ["", "**Published figures**, for reference (their protocols differ from pongrl's):", ""]
        lines += ["| source | agent | protocol | score |", "|---|---|---|---|"]
        for row in entry["published"]:
            lines.append(f"| {row['source']} | {row['agent']} | {row['protocol']} | {row['score']} |")
    return "\n".join(lines)


GENERATORS = {
    "zoo-table": lambda argument: zoo_table(),
    "zoo-cards": lambda argument: zoo_cards(),
    "robustness-table": robustness_table,
    "scripted-battery": scripted_battery,
    "hyperparameters": hyperparameters,
    "presets": presets,
    "cli": lambda argument: cli_reference(),
    "metrics": metrics,
    "figure": figure,
    "include": include,
    "results": results,
}


def expand(markdown: str) -> str:
    """The page with every marker replaced by its generated block."""

    def replace(match: re.Match) -> str:
        name, argument = match.group(1), match.group(2)
        if name not in GENERATORS:
            raise KeyError(f"unknown generated block {name!r}")
        return GENERATORS[name](argument)

    return MARKER.sub(replace, markdown)


FIGURE = re.compile(r"\{\{ figure ([\w.:-]+) \}\}")


def expand_figures(markdown: str) -> str:
    """Inline figures: `{{ figure NAME }}` in running text becomes the figure's text."""
    return FIGURE.sub(lambda match: figure(match.group(1)), markdown)


def on_page_markdown(markdown, page, config, files, **kwargs):
    from mkdocs.exceptions import PluginError

    try:
        return expand_figures(expand(markdown))
    except (KeyError, ValueError) as error:
        raise PluginError(f"{page.file.src_path}: {error}") from error


def readme_with_zoo_table(readme: str) -> str:
    """The README with its copy of the zoo table regenerated."""
    head, rest = readme.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_BEGIN}\n{zoo_table()}\n{README_END}{tail}"


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--write-readme", action="store_true", help="rewrite README.md's copy of the zoo table")
    if arguments.parse_args().write_readme:
        path = ROOT / "README.md"
        path.write_text(readme_with_zoo_table(path.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(zoo_table())
