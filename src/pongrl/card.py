"""A Hugging Face model card folder for a run's checkpoint, ready to upload (nothing is uploaded).

The folder holds README.md (YAML metadata with a model-index of the evaluation against the built-in
AI, and the command that produced it), the network as a bare state_dict (`model.pt`, for PPO agents
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


def card_metadata(algo: str, summary: dict, games: int, sample: bool = False) -> dict:
    play = f", {how_it_plays(algo, sample)}" if sample else ""
    value = f"{summary['mean_point_difference']:.2f} +/- {summary['point_difference_std']:.2f}"
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
        "model-index": [
            {
                "name": f"{algo}-PongNoFrameskip-v4",
                "results": [
                    {
                        "task": {"type": "reinforcement-learning", "name": "reinforcement-learning"},
                        "dataset": {"type": "PongNoFrameskip-v4", "name": "PongNoFrameskip-v4"},
                        "metrics": [
                            {
                                "type": "mean_reward",
                                "value": value,
                                "name": f"mean score over {games} games vs the built-in AI{play}",
                                "verified": False,
                            }
                        ],
                    }
                ],
            }
        ],
    }


def write_card(
    run_or_checkpoint: str, out_dir: str, games: int, seed: int, video_frames: int, force: bool, sample: bool = False
) -> dict:
    """`sample` scores (and films) the agent with actions drawn from its policy, as a PPO agent plays in
    training, instead of greedily; a DQN agent then plays epsilon-greedy (pongrl.agent.SAMPLE_EPSILON_Q)."""
    from pongrl.media import record_video

    if os.path.exists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)) and not force:
        raise PongrlError(f"{out_dir}: exists and is not empty (use --force to replace it)")
    player = load_player(run_or_checkpoint)
    agent = player.agent
    if agent is None:
        raise PongrlError("the built-in AI has no weights to put on a card: give an agent")
    algo, config, step, obs_profile = agent.algo, agent.config, agent.env_step, agent.obs_profile
    state_dict = agent.state_dict()
    results = play_match(player, load_player("builtin"), games, seed, sample=(sample, False))
    summary = summarize_match(results)
    scores = [g["score"] for g in results]
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
        video = record_video(
            player,
            load_player("builtin"),
            os.path.join(temp, "replay.mp4"),
            games=1,
            max_frames=video_frames,
            seed=seed,
            sample=sample,
        )
        metadata = card_metadata(algo, summary, games, sample)
        readme = _readme(
            metadata,
            algo,
            config,
            trained_with,
            torso_kind(state_dict),
            step,
            obs_profile,
            summary,
            scores,
            games,
            seed,
            run_or_checkpoint,
            video,
            sample,
        )
        with open(os.path.join(temp, "README.md"), "w") as handle:
            handle.write(readme)
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.replace(temp, out_dir)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return {"out": out_dir, "env_step": step, **summary}


def _readme(
    metadata,
    algo,
    config,
    trained_with,
    network,
    step,
    obs_profile,
    summary,
    scores,
    games,
    seed,
    source,
    video,
    sample,
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
    score_list = ", ".join(f"{s:+d}" for s in scores)
    plays = how_it_plays(algo, sample)
    config_file = "- `config.yaml`: every training setting.\n" if config is not None else ""
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

Mean score {summary["mean_point_difference"]:+.2f} +/- {summary["point_difference_std"]:.2f} over {games} whole games
(scores {score_list}); won {summary["wins"]}, lost {summary["losses"]}, drawn {summary["draws"]}
(cut by the frame cap). The agent plays the right paddle, {plays}, on the single-player emulator (no sticky actions,
up to 30 no-ops at the start). Reproduce with:

```
pongrl eval {source} --episodes {games} --seed {seed}{" --sample" if sample else ""}
```

## Files

- `model.pt`: the network's state_dict (`torch.save(state_dict)`); `model.safetensors`: the same tensors.
{config_file}{replay}

{load}

## Training settings

{settings}
"""
