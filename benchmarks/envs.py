"""Speed of the two-player Pong envs (self-play seed profile) with random actions.

    python benchmarks/envs.py --env fast|reference --steps N [--games G] [--threads T]

A step moves every game one agent step, so it is 2 * G agent steps (both paddles); the last line
printed is `agent steps/s: X`. Creating the envs and a short warm-up are not timed.
"""
import argparse
import time

import numpy as np

from pongrl.envs.two_player import NUM_ACTIONS, FastSelfPlayEnv, ReferenceSelfPlayEnv

WARMUP_STEPS = 20


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=("fast", "reference"), required=True)
    parser.add_argument("--steps", type=int, default=1000, help="vector steps (each moves every game once)")
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="emulator threads (fast env only)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    if args.env == "fast":
        env = FastSelfPlayEnv(args.games, seed=args.seed, num_threads=args.threads)
    else:
        env = ReferenceSelfPlayEnv(args.games, seed=args.seed)
    rng = np.random.default_rng(args.seed)
    actions = rng.integers(0, NUM_ACTIONS, (WARMUP_STEPS + args.steps, env.num_agents))
    env.reset()
    for step in range(WARMUP_STEPS):
        env.step(actions[step])
    started = time.perf_counter()
    episodes = 0
    for step in range(WARMUP_STEPS, WARMUP_STEPS + args.steps):
        infos = env.step(actions[step])[4]
        episodes += int(infos["episode"]["done"][::2].sum()) if "episode" in infos else 0
    elapsed = time.perf_counter() - started
    env.close()
    agent_steps = args.steps * env.num_agents
    print(f"env: {args.env}, games: {args.games}, threads: {args.threads}, steps: {args.steps}, "
          f"games finished: {episodes}, seconds: {elapsed:.2f}")
    print(f"game steps/s: {args.steps * args.games / elapsed:,.0f}")
    print(f"agent steps/s: {agent_steps / elapsed:,.0f}")


if __name__ == "__main__":
    main()
