"""A Hugging Face model card folder for a run's checkpoint, ready to upload (nothing is uploaded).

The folder holds README.md (YAML metadata with a model-index of the scores against the built-in AI under both
protocols, exact and sticky actions 0.25, with the command that reproduces each, and the robustness figures pongrl
has for the agent), the network as a bare state_dict (`model.pt`, for PPO agents
the format the self-play card's `Agent.load` reads) and as safetensors (`model.safetensors`), the
run's config, and a replay video. It is built in a temp folder and renamed into place.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import yaml

from pongrl import zoo
from pongrl._version import __version__
from pongrl.agent import SAMPLE_EPSILON_Q, save_safetensors_agent
from pongrl.arena import load_player, play_match, summarize_match
from pongrl.checkpoint import write_torch_file
from pongrl.errors import PongrlError
from pongrl.game import CLASSIC_MODE
from pongrl.nets import torso_kind

ALGO_TAGS = {"dqn": ["dqn", "deep-q-learning"], "ppo": ["ppo"], "selfplay": ["ppo", "self-play", "multi-agent"]}


def how_it_plays(algo: str, sample: bool) -> str:
    """The card's words for how the agent chose its actions in the games it reports."""
    if not sample:
        return "greedy"
    if algo == "dqn":  # a Q-network has no policy to sample from (pongrl.agent)
        return f"epsilon-greedy with epsilon {SAMPLE_EPSILON_Q}"
    return "with actions sampled from its policy, as in training"


def card_result(value: str, name: str, dataset: str, dataset_type: str = "PongNoFrameskip-v4") -> dict:
    """One entry of a model-index: a mean score (`value`, "mean +/- std"), how it was measured (`name`) and on
    which games (`dataset`: each protocol its own, so that the Hub keeps them apart)."""
    return {
        "task": {"type": "reinforcement-learning", "name": "reinforcement-learning"},
        "dataset": {"type": dataset_type, "name": dataset},
        "metrics": [{"type": "mean_reward", "value": value, "name": name, "verified": False}],
    }


def card_metadata(algo: str, results: list[dict]) -> dict:
    """The README's YAML header: tags and a model-index holding `results` (card_result entries)."""
    return {
        "library_name": "pongrl",
        "tags": [
            "reinforcement-learning",
            "deep-reinforcement-learning",
            "atari",
            "pong",
            "PongNoFrameskip-v4",
            "pytorch",
            *ALGO_TAGS.get(algo, []),
        ],
        "model-index": [{"name": f"{algo}-PongNoFrameskip-v4", "results": results}],
    }


def _interval(score: dict) -> str:
    return (
        "no interval from one game"
        if score.get("ci95") is None
        else "95% interval {:+.2f}..{:+.2f}".format(*score["ci95"])
    )


def protocol_scores(spec: str, agent, games: int, seed: int) -> dict:
    """The agent's greedy scores against the built-in AI, each with the command that reproduces it: "exact" (from
    each of the 31 no-op starts), "sticky" (sticky actions 0.25) and, where pongrl has them, "card_chain" (through
    the self-play card's own chain), "robustness" and "exploitability" (the zoo card's sections, as they are). A
    zoo agent's are those measured on its shipped file (its card); any other agent is played now, `games` sticky
    games from `seed`."""
    from pongrl.evaluation import STICKY_PROTOCOL, evaluate_protocols, summarize

    if zoo.is_zoo_spec(spec):
        recorded = zoo.card(spec[len(zoo.PREFIX) :])
        scores = recorded.get("scores", {})
        found = {"exact": scores["every_start"], "sticky": scores["sticky_actions"]}
        for key, score in found.items():  # cards scored before the interval was recorded: from their games
            if score.get("ci95") is None and len(score.get("scores", [])) > 1:
                found[key] = {**score, "ci95": summarize([{"score": s} for s in score["scores"]])["ci95"]}
        if "card_chain" in scores:
            found["card_chain"] = scores["card_chain"]
        for section in ("robustness", "exploitability"):
            if recorded.get(section):
                found[section] = recorded[section]
        return found
    measured = evaluate_protocols(agent, games, seed)
    return {
        "exact": {**measured["exact"], "command": f"pongrl eval {spec} --every-start"},
        "sticky": {
            **measured["sticky"],
            "command": f"pongrl eval {spec} --sticky-actions {STICKY_PROTOCOL:g} --episodes {games} --seed {seed}",
        },
    }


def protocol_results(scores: dict) -> list[dict]:
    """The model-index entries of `protocol_scores`: exact, sticky, the card's chain, the robustness worst case."""
    exact, sticky = scores["exact"], scores["sticky"]
    results = [
        card_result(
            f"{exact['mean']:.2f} +/- {exact['std']:.2f}",
            f"exact protocol (no sticky actions): mean score over all {exact['games']} no-op starts vs the built-in "
            f"AI, greedy{_distinct(exact, ' ({} distinct games)')}",
            "PongNoFrameskip-v4, exact protocol",
        ),
        card_result(
            f"{sticky['mean']:.2f} +/- {sticky['std']:.2f}",
            f"sticky actions {sticky.get('probability', 0.25):g}: mean score over {sticky['games']} games vs the "
            f"built-in AI, greedy ({_interval(sticky)})",
            f"PongNoFrameskip-v4, sticky actions {sticky.get('probability', 0.25):g}",
        ),
    ]
    chain = scores.get("card_chain")
    if chain:
        results.append(
            card_result(
                f"{chain['mean']:.2f} +/- {chain['std']:.2f}",
                f"sticky actions {chain.get('probability', 0.25):g}, through the self-play card's own chain "
                f"(SuperSuit wrappers, no no-op starts): mean score over {chain['games']} games vs the built-in AI, "
                f"greedy ({_interval(chain)})",
                f"PongNoFrameskip-v4, sticky actions {chain.get('probability', 0.25):g}, the self-play card's chain",
            )
        )
    worst = _worst_case(scores.get("robustness"))
    if worst is not None:
        value, opponent = worst
        against = f" (against {opponent})" if opponent else ""
        results.append(
            card_result(
                f"{value:.2f}",
                f"robustness: worst mean point difference over pongrl's opponents{against}",
                "Pong against the built-in AI, scripted paddles and other agents",
                "pong",
            )
        )
    return results


def _distinct(exact: dict, words: str) -> str:
    """`words` with the exact protocol's count of distinct games, or nothing for a card scored before it was kept."""
    return words.format(exact["distinct_games"]) if "distinct_games" in exact else ""


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _worst_case(robustness) -> tuple[float, str | None] | None:
    """The worst case of a card's robustness section, (its mean point difference, the opponent), if it names one."""
    if not isinstance(robustness, dict):
        return None
    worst = next((robustness[key] for key in ("worst_case", "worst") if key in robustness), None)
    if _number(worst) is not None:
        return _number(worst), None
    if isinstance(worst, dict):
        value = next(
            (
                _number(worst[key])
                for key in ("point_difference", "mean_point_difference", "mean", "score")
                if _number(worst.get(key)) is not None
            ),
            None,
        )
        if value is not None:
            return value, worst.get("opponent") or worst.get("name")
    return None


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(_number(v) is not None for v in value):
        return "{:.2f}..{:.2f}".format(*value)
    return str(value)


def robustness_text(robustness) -> str:
    """A card's robustness section in Markdown: its per-opponent rows as a table, its other figures as a list."""
    if not robustness:
        return ""
    if not isinstance(robustness, dict):
        return f"Robustness: {robustness}\n"
    lines = []
    for key, value in robustness.items():
        if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            columns = list(dict.fromkeys(name for row in value for name, cell in row.items() if _plain(cell)))
            lines += ["", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            lines += ["| " + " | ".join(_cell(row.get(name, "")) for name in columns) + " |" for row in value]
            lines.append("")
        elif isinstance(value, dict):
            lines.append(f"- {key}: " + ", ".join(f"{k} {_cell(v)}" for k, v in value.items() if _plain(v)))
        elif key == "command":
            lines += ["", f"```\n{value}\n```", ""]
        else:
            lines.append(f"- {key}: {_cell(value)}")
    return "\n".join(lines).strip() + "\n"


EXPLOIT_CHART = "exploiters.png"


def _exploit_runs(exploitability) -> list[tuple[str, dict]]:
    """A card's exploit runs with the agent each one attacked: this agent's own, then, where the card compares
    itself with another zoo agent, that agent's runs of the same recipes (from random weights or warm-started, by
    seed) in the same order."""
    own = (exploitability or {}).get("runs", [])
    other = (exploitability or {}).get("compared_with")
    theirs = {}
    if own and other:
        theirs = {_recipe_key(run): run for run in zoo.card(other).get("exploitability", {}).get("runs", [])}
    matched = [theirs[_recipe_key(run)] for run in own if _recipe_key(run) in theirs]
    return [("this agent", run) for run in own] + [(f"zoo:{other}", run) for run in matched]


def _recipe_key(run: dict) -> tuple[bool, int]:
    return bool(run["init"]), run["seed"]


def exploit_chart_curves(exploitability) -> list[dict]:
    """The curves of the card's chart (pongrl.media.plot_exploit_curves): one color per recipe, solid against
    this agent and dashed against the agent it is compared with."""
    runs = _exploit_runs(exploitability)
    colors = {}
    curves = []
    for target, run in runs:
        if not run.get("curve"):
            continue
        color = colors.setdefault(_recipe_key(run), f"C{len(colors)}")
        curves.append(
            {
                "label": f"{run['recipe']}, seed {run['seed']}, against {target}",
                "steps": [step for step, _ in run["curve"]],
                "values": [value for _, value in run["curve"]],
                "color": color,
                "linestyle": "-" if target == "this agent" else "--",
            }
        )
    return curves


def exploitability_text(exploitability) -> str:
    """A card's exploitability section in Markdown: each exploit recipe's points per game by budget (beside the
    same recipes against the agent it is compared with), one table, the chart where the runs' curves are kept, and
    the commands that trained the exploiters."""
    runs = _exploit_runs(exploitability)
    if not runs:
        return ""
    lines = [
        f"{exploitability['meaning'][0].upper()}{exploitability['meaning'][1:]}.",
        "",
        "| exploiter | seed | against | agent steps | games | points won | points lost | difference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for target, run in runs:
        for row in run["rows"]:
            lines.append(
                f"| {run['recipe']} | {run['seed']} | {target} | {row['budget_agent_steps']:,} | {row['games']} | "
                f"{row['points_won_per_game']:.1f} | {row['points_lost_per_game']:.1f} | "
                f"{row['mean_point_difference']:+.1f} |"
            )
    lines.append("")
    if any(run.get("curve") for _, run in runs):
        lines += [f"![The exploiters' points a game against agent steps]({EXPLOIT_CHART})", ""]
    for target, run in runs:
        lines += [
            f"{run['recipe'][0].upper()}{run['recipe'][1:]}, seed {run['seed']}, against {target} ({run['date']}, "
            f"{run['hardware']}):",
            "",
            f"```\n{run['command']}\n```",
            "",
        ]
    return "\n".join(lines).strip() + "\n"


def _plain(value) -> bool:
    """A value shown in a cell: a number, a word or an interval, not a list of per-game scores."""
    return not isinstance(value, (list, tuple, dict)) or (
        isinstance(value, (list, tuple)) and len(value) == 2 and all(_number(v) is not None for v in value)
    )


def write_card(
    run_or_checkpoint: str, out_dir: str, games: int, seed: int, video_frames: int, force: bool, sample: bool = False
) -> dict:
    """`sample` scores (and films) the agent with actions drawn from its policy, as a PPO agent plays in
    training, instead of greedily; a DQN agent then plays epsilon-greedy (pongrl.agent.SAMPLE_EPSILON_Q)."""
    from pongrl.media import plot_exploit_curves, record_video

    if os.path.exists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)) and not force:
        raise PongrlError(f"{out_dir}: exists and is not empty (use --force to replace it)")
    player = load_player(run_or_checkpoint)
    agent = player.agent
    if agent is None:
        raise PongrlError("the built-in AI has no weights to put on a card: give an agent")
    algo, config, step, obs_profile = agent.algo, agent.config, agent.env_step, agent.obs_profile
    state_dict = agent.state_dict()
    if sample:  # the sampled games only: the protocols' scores are those of greedy play
        played = play_match(player, load_player("builtin"), games, seed, sample=(True, False))
        summary = summarize_match(played)
        scores = {"sampled": {**summary, "scores": [g["score"] for g in played]}}
        results = [
            card_result(
                f"{summary['mean_point_difference']:.2f} +/- {summary['point_difference_std']:.2f}",
                f"mean score over {games} games vs the built-in AI, {how_it_plays(algo, True)}",
                "PongNoFrameskip-v4, no sticky actions",
            )
        ]
        evaluation = _sampled_text(algo, scores["sampled"], games, seed, run_or_checkpoint)
    else:
        scores = protocol_scores(run_or_checkpoint, agent, games, seed)
        results = protocol_results(scores)
        evaluation = _protocols_text(scores)
    # A zoo agent's settings live in its card's training command, not in its weights file.
    trained_with = None
    if zoo.is_zoo_spec(run_or_checkpoint):
        trained_with = zoo.card(run_or_checkpoint[len(zoo.PREFIX) :])["trained_with"]

    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    temp = tempfile.mkdtemp(prefix=".card-", dir=parent)
    try:
        write_torch_file(os.path.join(temp, "model.pt"), state_dict)
        save_safetensors_agent(os.path.join(temp, "model.safetensors"), state_dict, algo, step, obs_profile)
        if config is not None:
            with open(os.path.join(temp, "config.yaml"), "w") as handle:
                yaml.safe_dump(config, handle, sort_keys=False)
        curves = exploit_chart_curves(scores.get("exploitability"))
        if curves:
            plot_exploit_curves(curves, os.path.join(temp, EXPLOIT_CHART), title=f"Exploiters of {run_or_checkpoint}")
        video = record_video(
            player,
            load_player("builtin"),
            os.path.join(temp, "replay.mp4"),
            games=1,
            max_frames=video_frames,
            seed=seed,
            sample=sample,
        )
        readme = _readme(
            card_metadata(algo, results),
            algo,
            config,
            trained_with,
            torso_kind(state_dict),
            step,
            obs_profile,
            evaluation,
            video,
            chart=bool(curves),
        )
        with open(os.path.join(temp, "README.md"), "w") as handle:
            handle.write(readme)
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.replace(temp, out_dir)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return {"out": out_dir, "env_step": step, **scores, "results": [r["metrics"][0] for r in results]}


def _protocols_text(scores: dict) -> str:
    """The README's evaluation section for greedy play: each score with the command that reproduces it."""
    from pongrl.evaluation import count_outcomes

    exact, sticky, chain = scores["exact"], scores["sticky"], scores.get("card_chain")
    won = count_outcomes(exact["scores"])["won"]
    by_start = ", ".join(f"{s:+d}" for s in exact["scores"])
    text = f"""Greedy play: the agent holds the right paddle against the built-in AI on the single-player emulator, each
game started after 0 to 30 no-op frames.

- Exact protocol (no sticky actions): mean score {exact["mean"]:+.2f} over all {exact["games"]} no-op starts
  ({won} won{_distinct(exact, "; {} distinct games")}). The emulator is deterministic, so this is the exact
  expected score of greedy play; by start: {by_start}.

  ```
  {exact["command"]}
  ```

- Sticky actions {sticky.get("probability", 0.25):g} (the ALE v5 protocol: every game differs): mean score
  {sticky["mean"]:+.2f} over {sticky["games"]} games ({_interval(sticky)}).

  ```
  {sticky["command"]}
  ```
"""
    if chain:
        text += f"""
- Through the self-play card's own chain ({chain.get("chain", "SuperSuit's wrappers")}), sticky actions
  {chain.get("probability", 0.25):g}: mean score {chain["mean"]:+.2f} over {chain["games"]} games ({_interval(chain)}).
  {chain.get("note", "")}

  ```
  {chain["command"]}
  ```
"""
    robustness = robustness_text(scores.get("robustness"))
    if robustness:
        text += f"\n## Robustness\n\n{robustness}"
    exploitability = exploitability_text(scores.get("exploitability"))
    if exploitability:
        text += f"\n## Exploitability\n\n{exploitability}"
    return text


def _sampled_text(algo: str, summary: dict, games: int, seed: int, source: str) -> str:
    """The README's evaluation section for games played with sampled actions."""
    score_list = ", ".join(f"{s:+d}" for s in summary["scores"])
    mean, spread = summary["mean_point_difference"], summary["point_difference_std"]
    return f"""Mean score {mean:+.2f} +/- {spread:.2f} over {games} whole games
(scores {score_list}); won {summary["wins"]}, lost {summary["losses"]}, drawn {summary["draws"]}
(cut by the frame cap). The agent plays the right paddle, {how_it_plays(algo, True)}, on the single-player emulator
(no sticky actions, up to 30 no-ops at the start). Reproduce with:

```
pongrl eval {source} --episodes {games} --seed {seed} --sample
```
"""


def _readme(
    metadata,
    algo,
    config,
    trained_with,
    network,
    step,
    obs_profile,
    evaluation,
    video,
    chart=False,
) -> str:
    game_mode = (config or {}).get("game_mode", CLASSIC_MODE)  # runs from before --game-mode played the classic game
    game = "PettingZoo pong_v3" + ("" if game_mode == CLASSIC_MODE else f", on the cartridge's variation {game_mode}")
    kind = {
        "dqn": "a DQN agent",
        "ppo": "a PPO agent trained against the built-in AI",
        "selfplay": f"a PPO agent trained in self-play on two-player Pong ({game})",
    }.get(algo, algo)
    profile = (
        "the self-play card's view: blue channel, 84x84, 4 frames channel-last, score rows blanked"
        if obs_profile == "seed"
        else "grayscale 84x84, 4 frames stacked channel-first (the DQN protocol)"
    )
    if config is not None:
        rows = "\n".join(
            f"| {key} | {value} |" for key, value in config.items() if key not in ("track", "wandb_project")
        )
        settings = f"| setting | value |\n|---|---|\n{rows}"
    elif trained_with:
        settings = f"Trained with:\n\n```\n{trained_with}\n```"
    else:
        settings = "The weights file this card was made from does not record its training settings."
    torso = "Nature-CNN" if network == "nature" else 'small-CNN (Mnih et al. 2013; pongrl.nets.conv_torso("small"))'
    load = (
        '```python\nimport torch\nstate_dict = torch.load("model.pt", weights_only=True)\n'
        "# the self-play card's Agent(...).load_state_dict(state_dict) reads it as is\n```"
        if algo in ("ppo", "selfplay") and network == "nature"
        else f'```python\nimport torch\nstate_dict = torch.load("model.pt", weights_only=True)  # a {torso} '
        f"{'Q-network' if algo == 'dqn' else 'actor-critic'}\n```"
    )
    first_video = video["games"][0] if video["games"] else {"first_points": 0, "second_points": 0}
    # Pieces of the text below, named here to keep its lines short.
    other_files = "- `config.yaml`: every training setting.\n" if config is not None else ""
    other_files += f"- `{EXPLOIT_CHART}`: the exploiters' curves (see Exploitability).\n" if chart else ""
    replay = (
        f"- `replay.mp4`: one game against the built-in AI ({video['frames']} frames at 60 fps; "
        f"agent {first_video['first_points']}, built-in AI {first_video['second_points']})."
    )
    return f"""---
{yaml.safe_dump(metadata, sort_keys=False).strip()}
---

# {algo} on Pong, step {step:,}

This is {kind}, trained with pongrl for {step:,} environment steps
({"agent steps, two per game step" if algo == "selfplay" else "agent steps of 4 frames"}). It sees {profile}.
This card was written by pongrl {__version__}.

## Evaluation against the built-in AI

{evaluation}
## Files

- `model.pt`: the network's state_dict (`torch.save(state_dict)`); `model.safetensors`: the same tensors.
{other_files}{replay}

{load}

## Training settings

{settings}
"""
