"""Add an agent to pongrl's zoo (or refresh one): its weights as safetensors and its JSON card, scored.

    python benchmarks/zoo_entry.py CHECKPOINT --name dqn --trained-with "pongrl train dqn --seed 1 ..."

    python benchmarks/zoo_entry.py RUN/checkpoints/step_000000250112.pt --name selfplay-small-0250k \
        --series selfplay-small --float16 --trained-with "pongrl train selfplay ..."

    python benchmarks/zoo_entry.py --rescore NAME     # score a shipped agent's file again, weights unchanged

    python benchmarks/zoo_entry.py --card-chain NAME  # only its score through the self-play card's chain
    python benchmarks/zoo_entry.py --chain-note NAME  # only the note on how that chain's games differ

Writes src/pongrl/zoo_agents/NAME.safetensors (the playing network, float32, or float16 with --float16)
and NAME.json: algorithm,
network, observation profile, env steps, the training command, the weights' SHA-256 and the pongrl version
that wrote them, and two scores against the built-in AI
measured on the shipped file itself (pongrl.evaluation.evaluate_protocols), with the command that replays them:
- greedy from each of the protocol's 31 no-op starts (exact: the emulator is deterministic; a test
  replays seven of the starts and checks their scores), with how many distinct games they were;
- 100 greedy games under sticky actions 0.25, seed 0 (the ALE v5 protocol), with the 95% interval;
- for agents with the self-play card's view, also 30 greedy games under sticky actions 0.25, seed 0, through the
  card's own chain (Gymnasium's PongNoFrameskip-v4 with SuperSuit's wrappers, games started without no-op frames:
  what a user of the card's `Agent` sees), with the 95% interval.
"""

import argparse
import hashlib
import json
import os
import sys

import torch

from pongrl import __version__, zoo
from pongrl.agent import load_agent, playing_weights, save_safetensors_agent
from pongrl.checkpoint import atomic_write_bytes, load_checkpoint, resolve
from pongrl.errors import PongrlError
from pongrl.evaluation import STICKY_GAMES, STICKY_PROTOCOL, evaluate_card_chain, evaluate_protocols, summarize
from pongrl.nets import is_shared_torso, torso_kind
from pongrl.robustness import row_from_builtin

STICKY_SEED = 0
CARD_CHAIN_GAMES = 30  # the card's chain plays one game per network call and emulator step in Python: slower


def scores(spec: str) -> dict:
    """Both protocols' scores of a shipped agent, each with the command that replays it, and for agents with the
    self-play card's view their score through the card's own chain."""
    agent = load_agent(spec)  # the shipped file, as a user loads it
    result = evaluate_protocols(agent, STICKY_GAMES, STICKY_SEED)
    measured = {
        "every_start": {**result["exact"], "command": f"pongrl eval {spec} --every-start"},  # scores by start
        "sticky_actions": {
            **result["sticky"],
            "command": f"pongrl eval {spec} --sticky-actions {result['sticky']['probability']} "
            f"--episodes {STICKY_GAMES} --seed {STICKY_SEED}",
        },
    }
    if agent.obs_profile == "seed":
        measured["card_chain"] = card_chain_score(spec)
    return measured


# On every card of an agent with the self-play card's view: how its games differ from those of the card's own chain.
SEED_CHAIN_NOTE = (
    "This agent sees the self-play card's view, pixel for pixel what the card's own chain shows from the same "
    "emulator frames (SuperSuit max_observation_v0(2), frame_skip_v0(4), color_reduction_v0('B'), resize_v1(84, 84), "
    "frame_stack_v1(4), score rows blanked). The protocols differ in their starts: pongrl's games against the "
    "built-in AI start after 0..30 no-op frames, the card's chain on Gymnasium's PongNoFrameskip-v4 starts every game "
    "without any, so each agent step there begins a multiple of 4 frames after the reset, the phase of a quarter of "
    "pongrl's starts; an agent may score differently there (scores.card_chain where measured; replay it with "
    "`pongrl eval AGENT --chain card --sticky-actions 0.25`)."
)


def card_chain_score(spec: str) -> dict:
    """The agent's score under sticky actions 0.25 through the self-play card's own chain, with the command."""
    games = evaluate_card_chain(load_agent(spec), CARD_CHAIN_GAMES, STICKY_SEED, sticky_actions=STICKY_PROTOCOL)
    return {
        **summarize(games),
        "probability": STICKY_PROTOCOL,
        "seed": STICKY_SEED,
        "chain": "Gymnasium PongNoFrameskip-v4 + SuperSuit max_observation_v0(2), frame_skip_v0(4), "
        "color_reduction_v0('B'), resize_v1(84, 84), frame_stack_v1(4), score rows blanked",
        "note": "Every game starts without no-op frames, so every agent step begins on the same frame phase "
        "(a multiple of 4 frames from the reset); pongrl's own games start after 0..30 no-op frames, a quarter of "
        "them on this phase. The observations are the same pixel for pixel from the same frames.",
        "command": f"pongrl eval {spec} --chain card --sticky-actions {STICKY_PROTOCOL} "
        f"--episodes {CARD_CHAIN_GAMES} --seed {STICKY_SEED}",
    }


def add_card_chain(name: str) -> None:
    """Measure a shipped seed-view agent through the card's chain and add it to its card, the rest unchanged."""
    score = card_chain_score(zoo.PREFIX + name)
    card = zoo.card(name)  # read after the games, so that what others wrote to the card meanwhile is kept
    card["scores"]["card_chain"] = score
    card["observation_chain"] = SEED_CHAIN_NOTE
    atomic_write_bytes(os.path.join(zoo.FOLDER, name + ".json"), (json.dumps(card, indent=1) + "\n").encode())
    print(f"{zoo.PREFIX}{name}: card chain {score['mean']:+.2f} {score['ci95']} over {score['games']} games")


def refresh_builtin_rows(card: dict) -> None:
    """A robustness report takes its built-in AI rows from the agent's card (pongrl.robustness.builtin_scores):
    after a rescore, those two rows, the worst case and the mean follow the new scores; the games against the
    other opponents stay as they were played."""
    report = card.get("robustness")
    if not report:
        return
    rows = report["rows"]
    new = {
        "built-in AI, exact": row_from_builtin("exact", card["scores"]["every_start"]),
        f"built-in AI, sticky {STICKY_PROTOCOL:g}": row_from_builtin(
            f"sticky {STICKY_PROTOCOL:g}", card["scores"]["sticky_actions"]
        ),
    }
    report["rows"] = [new.get(row["opponent"], row) for row in rows]
    worst = min(report["rows"], key=lambda row: row["point_difference"])
    report["worst"] = {"opponent": worst["opponent"], "point_difference": worst["point_difference"]}
    report["mean_point_difference"] = sum(row["point_difference"] for row in report["rows"]) / len(report["rows"])


def rescore(name: str) -> None:
    card = zoo.card(name)
    card["scores"] = scores(zoo.PREFIX + name)
    refresh_builtin_rows(card)
    atomic_write_bytes(os.path.join(zoo.FOLDER, name + ".json"), (json.dumps(card, indent=1) + "\n").encode())
    print(
        f"{zoo.PREFIX}{name}: exact {card['scores']['every_start']['mean']:+.2f} "
        f"({card['scores']['every_start']['distinct_games']} distinct games), sticky "
        f"{card['scores']['sticky_actions']['mean']:+.2f} {card['scores']['sticky_actions']['ci95']}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", nargs="?", help="a pongrl checkpoint (or run directory: its latest)")
    parser.add_argument("--rescore", metavar="NAME", nargs="+", help="score these shipped agents again (no checkpoint)")
    parser.add_argument(
        "--card-chain",
        metavar="NAME",
        nargs="+",
        help="score these shipped agents (self-play card's view) through the card's own chain only",
    )
    parser.add_argument(
        "--chain-note",
        metavar="NAME",
        nargs="+",
        help="write the note on how the card's chain differs onto these shipped agents' cards (no games)",
    )
    parser.add_argument("--name", help="zoo name: letters, digits, '-' and '_'")
    parser.add_argument("--trained-with", help="the command that trained the run")
    parser.add_argument("--note", default="", help="anything a user should know (a spliced run, the seed, ...)")
    parser.add_argument(
        "--series",
        default=None,
        help="the checkpoints of one run across training, for `pongrl probe across zoo:SERIES-*`",
    )
    parser.add_argument("--float16", action="store_true", help="store the weights as float16 (half the size)")
    args = parser.parse_args()
    if args.rescore or args.card_chain or args.chain_note:
        for name in args.rescore or []:
            rescore(name)
        for name in args.card_chain or []:
            add_card_chain(name)
        for name in args.chain_note or []:
            card = zoo.card(name)
            if card.get("obs_profile") != "seed":
                sys.exit(f"zoo_entry.py: {name} does not see the self-play card's view")
            card["observation_chain"] = SEED_CHAIN_NOTE
            atomic_write_bytes(os.path.join(zoo.FOLDER, name + ".json"), (json.dumps(card, indent=1) + "\n").encode())
        return
    if not (args.checkpoint and args.name and args.trained_with):
        sys.exit("zoo_entry.py: give CHECKPOINT --name NAME --trained-with '...' (or --rescore NAME...)")
    if not args.name.replace("-", "").replace("_", "").isalnum():
        sys.exit(f"zoo_entry.py: bad name {args.name!r}")
    try:
        source = resolve(args.checkpoint)
        payload = load_checkpoint(source)
    except PongrlError as error:
        sys.exit(f"zoo_entry.py: {error}")
    weights = playing_weights(payload)
    algo, step, profile = payload["algo"], int(payload["env_step"]), payload.get("obs_profile", "standard")
    os.makedirs(zoo.FOLDER, exist_ok=True)
    weights_file = os.path.join(zoo.FOLDER, args.name + ".safetensors")
    save_safetensors_agent(weights_file, weights, algo, step, profile, torch.float16 if args.float16 else None)

    spec = zoo.PREFIX + args.name
    with open(weights_file, "rb") as handle:
        sha256 = hashlib.sha256(handle.read()).hexdigest()
    card = {
        "name": args.name,
        "algo": algo,
        "network": torso_kind(weights),
        "share_network": is_shared_torso(weights) if algo != "dqn" else None,
        "obs_profile": profile,
        "env_step": step,
        "dtype": "float16" if args.float16 else "float32",
        **({"series": args.series} if args.series else {}),
        "trained_with": args.trained_with,
        "source_checkpoint": os.path.basename(source),
        "note": args.note,
        "sha256": sha256,
        "pongrl_version": __version__,  # the release that added these weights; --rescore keeps it
        "scores": scores(spec),
        **({"observation_chain": SEED_CHAIN_NOTE} if profile == "seed" else {}),
    }
    atomic_write_bytes(os.path.join(zoo.FOLDER, args.name + ".json"), (json.dumps(card, indent=1) + "\n").encode())
    print(
        f"{spec}: {algo} at {step:,} env steps, exact {card['scores']['every_start']['mean']:+.2f}, "
        f"sticky {card['scores']['sticky_actions']['mean']:+.2f}; {os.path.getsize(weights_file) / 2**20:.1f} MiB"
    )


if __name__ == "__main__":
    main()
