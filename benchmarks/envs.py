"""Speed of the two-player Pong envs (self-play seed profile) with random actions.

    python benchmarks/envs.py --env fast|parallel|reference --steps N [--games G] [--threads T]

- fast: `pong_selfplay_v0.vector_env(G)`, the public Gymnasium VectorEnv pongrl's trainer steps;
- parallel: G of the public PettingZoo ParallelEnvs (`pong_selfplay_v0.parallel_env()`), stepped one
  after the other with per-agent dicts, each reset when its game ends: what the dict API costs;
- reference: the self-play card's PettingZoo + SuperSuit chain, vectorised as the card does.

A step moves every game one agent step, so it is 2 * G agent steps (both paddles); the last line
printed is `agent steps/s: X`. Creating the envs and a short warm-up are not timed.
"""

import argparse
import time

import numpy as np

from pongrl.envs import pong_selfplay_v0
from pongrl.envs.selfplay import ReferenceSelfPlayEnv
from pongrl.game import NUM_ACTIONS, PLAYERS

WARMUP_STEPS = 20


class ParallelEnvs:
    """G ParallelEnvs behind the vector envs' step(actions) -> (..., infos) shape, for the timing loop."""

    def __init__(self, games: int, seed: int):
        self.envs = [pong_selfplay_v0.parallel_env() for _ in range(games)]
        self.num_agents = 2 * games
        self.seed = seed

    def reset(self):
        return [env.reset(seed=self.seed + g) for g, env in enumerate(self.envs)]

    def step(self, actions):
        ended = np.zeros(self.num_agents, bool)
        for g, env in enumerate(self.envs):
            env.step({agent: actions[2 * g + i] for i, agent in enumerate(PLAYERS)})
            if not env.agents:
                ended[2 * g : 2 * g + 2] = True
                env.reset()
        return None, None, None, None, ({"_episode": ended} if ended.any() else {})

    def close(self):
        for env in self.envs:
            env.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=("fast", "parallel", "reference"), required=True)
    parser.add_argument("--steps", type=int, default=1000, help="vector steps (each moves every game once)")
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="emulator threads (fast env only)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    if args.env == "fast":
        env = pong_selfplay_v0.vector_env(args.games, seed=args.seed, num_threads=args.threads)
    elif args.env == "parallel":
        env = ParallelEnvs(args.games, seed=args.seed)
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
        episodes += int(infos["_episode"][::2].sum()) if "_episode" in infos else 0
    elapsed = time.perf_counter() - started
    env.close()
    agent_steps = args.steps * env.num_agents
    print(
        f"env: {args.env}, games: {args.games}, threads: {args.threads}, steps: {args.steps}, "
        f"games finished: {episodes}, seconds: {elapsed:.2f}"
    )
    print(f"game steps/s: {args.steps * args.games / elapsed:,.0f}")
    print(f"agent steps/s: {agent_steps / elapsed:,.0f}")


if __name__ == "__main__":
    main()
