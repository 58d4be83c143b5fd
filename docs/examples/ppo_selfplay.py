"""PPO self-play on pongrl's two-player Pong through its public Gymnasium vector API alone, in the style
of a CleanRL script: one file, read top to bottom. (pongrl's own trainer is `pongrl train selfplay`; this
shows what any other PPO loop needs to do to use the env.)

    python docs/examples/ppo_selfplay.py --num-games 8 --total-steps 2000000

`pong_selfplay_v0.vector_env(G)` is a Gymnasium VectorEnv of 2G players: entry 2g is game g's right
paddle (`first_0`), 2g + 1 its left one (`second_0`, whose image is mirrored so that it looks like
the right one). One policy plays every entry, so each game gives two samples per step. Autoreset is
same-step: when a game ends, `obs` already starts the next game, `infos["final_obs"]` holds the last
observations and `infos["_episode"]` marks the players whose game ended, with their results in
`infos["episode"]`.
"""

import argparse
import time

import numpy as np
import torch
import torch.nn as nn

from pongrl.envs import pong_selfplay_v0


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """The Nature CNN with a policy and a value head on one torso; observations (N, 84, 84, 4) uint8."""

    def __init__(self, num_actions):
        super().__init__()
        self.torso = nn.Sequential(
            layer_init(nn.Conv2d(4, 32, 8, stride=4)),
            nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)),
            nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
            layer_init(nn.Linear(64 * 7 * 7, 512)),
            nn.ReLU(),
        )
        self.actor = layer_init(nn.Linear(512, num_actions), std=0.01)
        self.critic = layer_init(nn.Linear(512, 1), std=1.0)

    def forward(self, obs):
        hidden = self.torso(obs.permute(0, 3, 1, 2).float() / 255.0)
        return self.actor(hidden), self.critic(hidden).squeeze(-1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-games", type=int, default=8)
    parser.add_argument("--num-steps", type=int, default=128, help="steps per rollout")
    parser.add_argument("--total-steps", type=int, default=2_000_000, help="agent steps (two per game step)")
    parser.add_argument("--max-cycles", type=int, default=100_000, help="raw frames before a game is cut")
    parser.add_argument("--learning-rate", type=float, default=2.5e-4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    gamma, gae_lambda, clip, epochs, minibatches = 0.99, 0.95, 0.1, 4, 4

    torch.manual_seed(args.seed)
    envs = pong_selfplay_v0.vector_env(args.num_games, seed=args.seed, max_cycles=args.max_cycles)
    n, horizon = envs.num_envs, args.num_steps
    agent = Agent(envs.single_action_space.n)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs_buffer = torch.zeros((horizon, n) + envs.single_observation_space.shape, dtype=torch.uint8)
    actions, logprobs, rewards, dones, values = (torch.zeros((horizon, n)) for _ in range(5))
    next_obs = torch.from_numpy(envs.reset(seed=args.seed)[0])
    step, started = 0, time.time()
    while step < args.total_steps:
        for t in range(horizon):
            obs_buffer[t] = next_obs
            with torch.no_grad():
                logits, values[t] = agent(next_obs)
                distribution = torch.distributions.Categorical(logits=logits)
                actions[t] = distribution.sample()
                logprobs[t] = distribution.log_prob(actions[t])
            obs, reward, terminated, truncated, infos = envs.step(actions[t].long().numpy())
            rewards[t] = torch.from_numpy(reward)
            dones[t] = torch.from_numpy(terminated | truncated)
            next_obs = torch.from_numpy(obs)
            if "_episode" in infos:
                for i in np.flatnonzero(infos["_episode"])[::2]:  # one line per game, from first_0's side
                    print(
                        f"agent step {step + (t + 1) * n}: a game ended {infos['episode']['points_won'][i]}-"
                        f"{infos['episode']['points_lost'][i]} after {infos['episode']['l'][i]} steps",
                        flush=True,
                    )
        step += horizon * n

        # Generalized advantage estimation; an ended game's next value is not bootstrapped (a game
        # cut by max_cycles is treated as ended too, for brevity).
        with torch.no_grad():
            next_value = agent(next_obs)[1]
        advantages = torch.zeros_like(rewards)
        last = torch.zeros(n)
        for t in reversed(range(horizon)):
            following = next_value if t == horizon - 1 else values[t + 1]
            delta = rewards[t] + gamma * following * (1 - dones[t]) - values[t]
            last = delta + gamma * gae_lambda * (1 - dones[t]) * last
            advantages[t] = last
        returns = advantages + values

        flat = {
            "obs": obs_buffer.reshape((-1,) + obs_buffer.shape[2:]),
            "actions": actions.reshape(-1).long(),
            "logprobs": logprobs.reshape(-1),
            "advantages": advantages.reshape(-1),
            "returns": returns.reshape(-1),
        }
        batch_size = horizon * n
        for _ in range(epochs):
            order = torch.randperm(batch_size)
            for index in order.split(batch_size // minibatches):
                logits, value = agent(flat["obs"][index])
                distribution = torch.distributions.Categorical(logits=logits)
                ratio = (distribution.log_prob(flat["actions"][index]) - flat["logprobs"][index]).exp()
                advantage = flat["advantages"][index]
                advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
                policy_loss = torch.max(-advantage * ratio, -advantage * ratio.clamp(1 - clip, 1 + clip)).mean()
                value_loss = 0.5 * (value - flat["returns"][index]).pow(2).mean()
                entropy = distribution.entropy().mean()
                loss = policy_loss + 0.5 * value_loss - 0.01 * entropy
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
        print(
            f"agent step {step}: value loss {value_loss.item():.4f}, entropy {entropy.item():.3f}, "
            f"{step / (time.time() - started):.0f} agent steps/s",
            flush=True,
        )
    envs.close()


if __name__ == "__main__":
    main()
