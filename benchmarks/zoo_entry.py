"""Add an agent to pongrl's zoo (or refresh one): its weights as safetensors and its JSON card, scored.

    python benchmarks/zoo_entry.py CHECKPOINT --name dqn --trained-with "pongrl train dqn --seed 1 ..."

    python benchmarks/zoo_entry.py RUN/checkpoints/step_000000250112.pt --name selfplay-small-0250k \
        --series selfplay-small --float16 --trained-with "pongrl train selfplay ..."

    python benchmarks/zoo_entry.py --rescore NAME     # score a shipped agent's file again, weights unchanged

Writes src/pongrl/zoo_agents/NAME.safetensors (the playing network, float32, or float16 with --float16)
and NAME.json: algorithm,
network, observation profile, env steps, the training command, the weights' SHA-256 and the pongrl version
that wrote them, and two scores against the built-in AI
measured on the shipped file itself (pongrl.evaluation.evaluate_protocols), with the command that replays them:
- greedy from each of the protocol's 31 no-op starts (exact: the emulator is deterministic; a test
  replays it and checks every start's score), with how many distinct games they were;
- 100 greedy games under sticky actions 0.25, seed 0 (the ALE v5 protocol), with the 95% interval.
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
from pongrl.evaluation import STICKY_GAMES, evaluate_protocols
from pongrl.nets import is_shared_torso, torso_kind

STICKY_SEED = 0


def scores(spec: str) -> dict:
    """Both protocols' scores of a shipped agent, each with the command that replays it."""
    result = evaluate_protocols(load_agent(spec), STICKY_GAMES, STICKY_SEED)  # the shipped file, as a user loads it
    return {
        "every_start": {**result["exact"], "command": f"pongrl eval {spec} --every-start"},  # scores by start
        "sticky_actions": {
            **result["sticky"],
            "command": f"pongrl eval {spec} --sticky-actions {result['sticky']['probability']} "
            f"--episodes {STICKY_GAMES} --seed {STICKY_SEED}",
        },
    }


def rescore(name: str) -> None:
    card = zoo.card(name)
    card["scores"] = scores(zoo.PREFIX + name)
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
    if args.rescore:
        for name in args.rescore:
            rescore(name)
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
    }
    atomic_write_bytes(os.path.join(zoo.FOLDER, args.name + ".json"), (json.dumps(card, indent=1) + "\n").encode())
    print(
        f"{spec}: {algo} at {step:,} env steps, exact {card['scores']['every_start']['mean']:+.2f}, "
        f"sticky {card['scores']['sticky_actions']['mean']:+.2f}; {os.path.getsize(weights_file) / 2**20:.1f} MiB"
    )


if __name__ == "__main__":
    main()
