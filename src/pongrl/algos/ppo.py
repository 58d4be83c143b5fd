"""PPO for Pong, read top to bottom: against the built-in AI (`ppo`) or in self-play (`selfplay`).

CleanRL semantics (ppo_atari / the self-play card's ppo_pettingzoo_ma_atari): GAE, clipped surrogate,
clipped value loss, per-minibatch advantage normalisation, entropy bonus, global grad-norm clip,
linear learning-rate anneal, minibatch epochs. In self-play one policy plays both paddles: each game
gives two batch entries (player 0 = `first_0`, the right paddle; player 1 = `second_0`, mirrored),
and steps count agent steps, two per game step, as the card does.

Differences from CleanRL, on purpose:
- a game cut by the frame cap is a truncation: its last reward is bootstrapped with the value of the
  observation it was cut at, rather than being treated as a loss;
- the learning-rate anneal is a function of steps done over `--total-steps`, so a resume that extends
  the run stretches it instead of restarting it from full;
- `ppo_update` is a function of one rollout batch, so a data-parallel wrapper can call it unchanged.

A little over 400 lines on purpose: like CleanRL's files, the whole algorithm (env choice, rollout, GAE, update,
evaluation, checkpoints) reads top to bottom in one file.
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np
import torch

from pongrl.checkpoint import save_checkpoint
from pongrl.config import opponent_weights, pool_game_count
from pongrl.distributed import World, init_world, split_envs
from pongrl.envs.builtin_mix import builtin_game_entries
from pongrl.errors import PongrlError
from pongrl.game import NUM_ACTIONS, PLAYERS
from pongrl.nets import ActorCritic
from pongrl.learner import LearnerState, make_adam, start_learner
from pongrl.opponents import AgentOpponents, OpponentPool, ScriptedOpponents
from pongrl.scripted import scripted_names
from pongrl.run import PhaseClock, StopSignal, TrainingOutcome, TrainingSession, checkpoint_dir
from pongrl.seeding import derived_seed

RECENT_EPISODES = 20
UPDATE_STATS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "explained_variance")
METRIC_COLUMNS = [
    "env_step",
    "wall_seconds",
    "episodes",
    "average_return",
    "average_length",
    "points_won",
    "points_lost",
    "serve_penalties",
    *UPDATE_STATS,
    "learning_rate",
    "steps_per_second",
    *PhaseClock.COLUMNS,
    "eval_mean_return",
    "eval_std_return",
    "return_first_0",
    "return_second_0",
    "eval_sampled_mean_return",
    "eval_sampled_std_return",
    "return_vs_pool",
    "return_vs_scripted",
    "return_vs_agents",
    "return_vs_builtin",
]


# ---- the math, as pure functions (tested on hand-made tensors) ----------------------------------
def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    ended: torch.Tensor,
    next_value: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over a rollout of shape (T, N).

    ended[t] is True when the episode ended with step t (terminal, truncated, or a point when the
    run ends GAE episodes at points): nothing after it is bootstrapped into step t. A truncated
    step's reward already holds gamma * V(cut observation). Returns (advantages, returns).
    """
    steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(next_value)
    for t in reversed(range(steps)):
        following_value = next_value if t == steps - 1 else values[t + 1]
        carry = 1.0 - ended[t].float()
        delta = rewards[t] + gamma * following_value * carry - values[t]
        running = delta + gamma * gae_lambda * carry * running
        advantages[t] = running
    return advantages, advantages + values


def ppo_losses(new_logprob, old_logprob, advantages, new_value, old_value, returns, entropy, config) -> dict:
    """The clipped surrogate, the (optionally clipped) value loss and the entropy bonus."""
    log_ratio = new_logprob - old_logprob
    ratio = log_ratio.exp()
    policy_loss = torch.max(
        -advantages * ratio, -advantages * ratio.clamp(1 - config.clip_coef, 1 + config.clip_coef)
    ).mean()
    if config.clip_vloss:
        clipped_value = old_value + (new_value - old_value).clamp(-config.clip_coef, config.clip_coef)
        value_loss = 0.5 * torch.max((new_value - returns) ** 2, (clipped_value - returns) ** 2).mean()
    else:
        value_loss = 0.5 * ((new_value - returns) ** 2).mean()
    entropy_loss = entropy.mean()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - log_ratio).mean()
        clip_fraction = ((ratio - 1.0).abs() > config.clip_coef).float().mean()
    return {
        "loss": policy_loss - config.ent_coef * entropy_loss + config.vf_coef * value_loss,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy_loss,
        "approx_kl": approx_kl,
        "clip_fraction": clip_fraction,
    }


def ppo_update(
    agent: ActorCritic,
    optimizer: torch.optim.Optimizer,
    batch: dict,
    config,
    generator: torch.Generator,
    world: World = World(),
) -> dict:
    """Several epochs of minibatch PPO on one flattened rollout batch; returns mean statistics.
    Under torchrun each rank passes its own batch, and `world` makes every minibatch's advantage
    normalisation and gradient cover all ranks' minibatches (see pongrl.distributed)."""
    size = batch["obs"].shape[0]
    minibatch = size // config.num_minibatches
    totals: dict[str, list[float]] = {}
    for _ in range(config.update_epochs):
        order = torch.randperm(size, generator=generator)
        for start in range(0, size, minibatch):
            index = order[start : start + minibatch]
            logits, new_value = agent(batch["obs"][index])
            distribution = torch.distributions.Categorical(logits=logits)
            advantages = batch["advantages"][index]
            if config.norm_adv:
                advantages = world.normalize(advantages)
            losses = ppo_losses(
                distribution.log_prob(batch["actions"][index]),
                batch["logprobs"][index],
                advantages,
                new_value,
                batch["values"][index],
                batch["returns"][index],
                distribution.entropy(),
                config,
            )
            optimizer.zero_grad(set_to_none=True)
            losses["loss"].backward()
            world.average_gradients(agent.parameters())
            torch.nn.utils.clip_grad_norm_(agent.parameters(), config.max_grad_norm)
            optimizer.step()
            for key, value in losses.items():
                totals.setdefault(key, []).append(value.item())
        if (
            config.target_kl
            and world.mean(float(np.mean(totals["approx_kl"][-config.num_minibatches :]))) > config.target_kl
        ):
            break
    stats = world.means({key: float(np.mean(values)) for key, values in totals.items()})
    variance = batch["returns"].var()
    stats["explained_variance"] = (
        float(1 - (batch["returns"] - batch["values"]).var() / variance) if variance > 0 else float("nan")
    )
    return stats


def learning_rate_at(config, step: int) -> float:
    if not config.anneal_lr:
        return config.learning_rate
    return config.learning_rate * max(0.0, 1.0 - step / config.total_steps)


# ---- environments --------------------------------------------------------------------------------
def make_env(
    config,
    seed: int,
    num_envs: int | None = None,
    opponents: tuple = (),
):
    """The training env: two-player self-play (fast or reference) or one player vs the built-in AI.
    `num_envs` (default config.num_envs) is this process's share under torchrun; the `opponents`
    (pongrl.opponents) play in it."""
    num_envs = num_envs or config.num_envs
    if config.algo == "selfplay":  # the public Gymnasium vector env (or the card's own chain)
        from pongrl.envs import pong_selfplay_v0, selfplay
        from pongrl.envs.builtin_mix import BuiltinGamesAsPlayers, SelfPlayWithBuiltinEnv

        games = num_envs // 2
        builtin_games = pool_game_count(config.builtin_fraction, games)
        self_play_games, self_play = games - builtin_games, None
        if self_play_games and config.env == "reference":
            self_play = selfplay.ReferenceSelfPlayEnv(
                self_play_games, seed, max_cycles=config.max_cycles, mode=config.game_mode
            )
        elif self_play_games:
            self_play = pong_selfplay_v0.vector_env(
                self_play_games,
                seed,
                max_cycles=config.max_cycles,
                game_mode=config.game_mode,
                sticky_actions=config.sticky_actions,
                profiles=tuple(sorted({view for opponent in opponents for view in opponent.views()})),
            )
            for opponent in opponents:
                opponent.attach(self_play)
        if not builtin_games:
            return self_play
        return SelfPlayWithBuiltinEnv(self_play, BuiltinGamesAsPlayers(builtin_games, seed, config.sticky_actions))
    from pongrl.envs.single import ChannelLastVectorEnv, GameVectorEnv

    if config.obs == "seed":  # the C++ vector env has no blue channel: one Python emulator loop per game
        return GameVectorEnv(num_envs, seed, profile="seed", sticky_actions=config.sticky_actions)
    return ChannelLastVectorEnv(num_envs, seed, config.sticky_actions)


def make_actor_critic(config) -> ActorCritic:
    return ActorCritic(NUM_ACTIONS, config.share_network, config.network, config.precision)


def load_opponent_agents(config) -> list:
    """The frozen agents of --opponent-agents (none without --agent-fraction). The fast env shows each its own
    observation profile; the reference env (--env reference) only the self-play card's view, and it does not
    assist their serves."""
    if config.algo != "selfplay" or not config.agent_fraction:
        return []
    from pongrl.agent import load_agent  # the agents sit above the learners

    agents = [load_agent(spec.strip()) for spec in config.opponent_agents.split(",") if spec.strip()]
    for agent in agents:
        if agent.obs_profile != "seed" and config.env == "reference":
            raise PongrlError(
                f"--opponent-agents {agent.name}: it sees the {agent.obs_profile} observation profile; the reference "
                "env shows the self-play card's view (seed) only (use --env fast)"
            )
    return agents


def obs_profile(config) -> str:
    """What pixels the agent sees: the seed's blue-channel view in self-play or with --obs seed."""
    return "seed" if config.algo == "selfplay" or config.obs == "seed" else "standard"


# ---- the learner ---------------------------------------------------------------------------------
class PPOState(LearnerState):
    """Everything a PPO run carries across a stop: the network, optimizer moments, counters, RNGs."""

    optional_modules = ("opponent_pool", "scripted_opponents", "agent_opponents")
    initialized_networks = ("agent",)

    def __init__(self, config, device: torch.device):
        super().__init__(config, RECENT_EPISODES, updates=0, collected=[])
        self.agent = make_actor_critic(config).to(device)
        self.optimizer = make_adam(self.agent.parameters(), config.learning_rate, config.adam_eps)
        # The opponents' games, laid out as pongrl.opponents says: pool, scripted, frozen agents.
        games = config.num_envs // 2
        pool_games, scripted_games, agent_games = (
            pool_game_count(fraction, games) if config.algo == "selfplay" else 0
            for fraction in (config.opponent_pool, config.scripted_fraction, config.agent_fraction)
        )
        self.opponent_pool = self.scripted_opponents = self.agent_opponents = None
        if pool_games:  # past snapshots play some games' second paddle; the first is the initial policy
            self.opponent_pool = OpponentPool(config, games, NUM_ACTIONS, device)
            self.opponent_pool.restart(self.agent)
        if scripted_games:
            names = scripted_names(config.scripted_opponents)
            self.scripted_opponents = ScriptedOpponents(names, pool_games, scripted_games, config.seed)
        if agent_games:
            agents = load_opponent_agents(config)
            self.agent_opponents = AgentOpponents(
                agents, pool_games + scripted_games, agent_games, config.seed, opponent_weights(config)
            )

    def opponents(self) -> list:
        """The kinds of opponent games this run plays, in the env's order."""
        return [o for o in (self.opponent_pool, self.scripted_opponents, self.agent_opponents) if o is not None]

    def modules(self) -> dict:
        names = ("opponent_pool", "scripted_opponents", "agent_opponents")
        present = {name: getattr(self, name) for name in names if getattr(self, name) is not None}
        return {"agent": self.agent, "optimizer": self.optimizer, **present}

    def start_from(self, weights: dict, spec: str) -> None:
        super().start_from(weights, spec)
        if self.opponent_pool:  # the pool's first opponent is the policy the run starts from
            self.opponent_pool.restart(self.agent)

    def on_added(self, names: list[str]) -> None:
        # A branch that adds the pool to a run without one: its first opponent is the restored policy.
        if "opponent_pool" in names:
            self.opponent_pool.restart(self.agent)

    def obs_profile(self) -> str:
        return obs_profile(self.config)


def collection_points(config) -> list[int]:
    """The steps at which the K evenly spaced checkpoints are collected (the card's num_checkpoints)."""
    k = config.num_checkpoints
    return [config.total_steps * i // k for i in range(1, k + 1)] if k else []


def train(
    config, run_dir: str, resume_from: str | None = None, verbose: bool = True, handle_signals: bool = True
) -> TrainingOutcome:
    """Train (or continue, from the checkpoint `resume_from`) a PPO or self-play run in the prepared `run_dir`.
    `verbose` shows progress on stderr; `handle_signals` makes SIGINT/SIGTERM stop it after a checkpoint."""
    state, device = start_learner(PPOState, config, resume_from)
    agent, optimizer, counters = state.agent, state.optimizer, state.counters
    step = counters["env_step"]
    # Under torchrun this process steps its share of the envs, seeded as those envs would be in one
    # process; it starts from rank 0's weights and samples from its own random streams.
    world = init_world(device)
    pool, opponents = state.opponent_pool, state.opponents()
    builtin_games = pool_game_count(config.builtin_fraction, config.num_envs // 2) if config.algo == "selfplay" else 0
    if (opponents or builtin_games) and world.active:
        raise PongrlError(
            "--opponent-pool, --scripted-fraction, --agent-fraction and --builtin-fraction run in one process only, "
            "not under torchrun"
        )
    n, horizon = split_envs(config, world), config.num_steps
    # The entries the update learns from: every player, except the opponents and the built-in AI in their games.
    learner = np.ones(n, bool)
    for opponent in opponents:
        learner &= opponent.learner_mask(n)
    learner[builtin_game_entries(n // 2, builtin_games)] = False
    learners = torch.from_numpy(np.flatnonzero(learner))
    world.broadcast_module(agent)
    if world.rank:
        torch.manual_seed(derived_seed(config.seed, 1000 + world.rank, step))
        state.torch_generator.manual_seed(derived_seed(config.seed, 2000 + world.rank, step))
    games_before = world.rank * (n // 2 if config.algo == "selfplay" else n)  # envs seeded per game
    env = make_env(config, counters["env_seed"] + games_before, n, opponents)

    # Rollout storage, allocated once: observations stay uint8 until the network sees them.
    obs_buffer = torch.zeros((horizon, n, 84, 84, 4), dtype=torch.uint8)
    actions = torch.zeros((horizon, n), dtype=torch.long)
    logprobs = torch.zeros((horizon, n))
    rewards = torch.zeros((horizon, n))
    ended = torch.zeros((horizon, n), dtype=torch.bool)
    values = torch.zeros((horizon, n))

    next_obs = torch.from_numpy(env.reset()[0])
    running_return = np.zeros(n)
    running_length = np.zeros(n, np.int64)
    points = {"won": 0, "lost": 0, "serve_penalties": 0}
    recent_by_player = (deque(maxlen=RECENT_EPISODES), deque(maxlen=RECENT_EPISODES))
    recent_vs = {kind: deque(maxlen=RECENT_EPISODES) for kind in ("pool", "scripted", "agents", "builtin")}
    first_builtin_game = n // 2 - builtin_games

    def track_episodes(reward: np.ndarray, episode_end: np.ndarray, info: dict) -> None:
        """Count points and finished games. The two-player env reports each game's true score in
        info["episode"] (its rewards also carry serve penalties); against the built-in AI the reward
        is the true score change itself."""
        if config.algo == "selfplay":
            if "episode" not in info:  # no game ended this step: its points are counted when it does
                return
            results = info["episode"]
            finished = np.flatnonzero(info["_episode"])
            finished = finished[learner[finished]]  # an opponent's side of a game is not the learner's
            scores = results["points_won"][finished] - results["points_lost"][finished]
            lengths = results["l"][finished]
            points["won"] += int(results["points_won"][finished].sum())
            points["lost"] += int(results["points_lost"][finished].sum())
            points["serve_penalties"] += int(results["serve_penalties"][finished].sum())
        else:
            running_return[:] += reward
            running_length[:] += 1
            points["won"] += int((reward > 0).sum())
            points["lost"] += int((reward < 0).sum())
            finished = np.flatnonzero(episode_end)
            scores, lengths = running_return[finished].copy(), running_length[finished].copy()
            running_return[finished], running_length[finished] = 0, 0
        counters["episodes"] += len(finished)
        state.recent_returns.extend(float(s) for s in scores)
        for index, score in zip(finished, scores):
            owner = next((opponent for opponent in opponents if opponent.owns(index)), None)
            if owner is not None:
                recent_vs[owner.kind].append(float(score))
            elif builtin_games and index // 2 >= first_builtin_game:
                recent_vs["builtin"].append(float(score))
            else:
                recent_by_player[index % 2].append(float(score))
        state.recent_lengths.extend(int(length) for length in lengths)
        for index, score, length in zip(finished, scores, lengths):
            # In self-play entry 2g is first_0 (right paddle) and 2g + 1 second_0: log each player apart.
            player = f"/{PLAYERS[index % 2]}" if config.algo == "selfplay" else ""
            session.board.scalars(
                {f"charts/episodic_return{player}": float(score), f"charts/episodic_length{player}": int(length)}, step
            )

    session = TrainingSession(
        run_dir,
        config,
        METRIC_COLUMNS,
        step,
        step if resume_from else None,
        counters["wall_seconds"],
        config.algo,
        writes=world.is_main,
        verbose=verbose,
        notes=state.notes,
    )
    pending_eval, update_stats = None, {}
    phases = PhaseClock()

    def make_checkpoint(permanent: bool = False) -> str:
        counters.update(env_step=step, wall_seconds=session.stopwatch.seconds())
        return save_checkpoint(
            checkpoint_dir(run_dir), state.payload(), keep=config.keep_checkpoints, permanent=permanent
        )

    def save(permanent: bool = False) -> None:
        """Rank 0 writes; the other ranks wait for it at a barrier."""
        session.checkpoint(lambda: make_checkpoint(permanent), step)
        world.barrier()

    with StopSignal(enabled=handle_signals) as stop:
        while step < config.total_steps and not world.any(stop.received or session.disk_failed):
            learning_rate = learning_rate_at(config, step)
            for group in optimizer.param_groups:
                group["lr"] = learning_rate

            # 1. Roll out `num_steps` steps in every env with the current policy.
            for t in range(horizon):
                obs_buffer[t] = next_obs
                mark = time.perf_counter()
                with torch.inference_mode():
                    obs_on_device = next_obs.to(device)
                    logits, value = agent(obs_on_device)
                    distribution = torch.distributions.Categorical(logits=logits)
                    action = distribution.sample()
                    logprobs[t] = distribution.log_prob(action).cpu()
                values[t], actions[t] = value.cpu(), action.cpu()  # one copy off the device per step
                for opponent in opponents:
                    opponent.play(obs_on_device, actions[t])
                mark = phases.lap("inference", mark)
                obs, reward, terminated, truncated, info = env.step(actions[t].numpy())
                phases.lap("env", mark)
                learn_reward = np.clip(reward, -1.0, 1.0)
                if truncated.any():  # bootstrap a cut game from the value of where it was cut
                    cut = np.flatnonzero(truncated)
                    with torch.inference_mode():
                        cut_value = agent.value(torch.from_numpy(info["final_obs"][cut]).to(device)).cpu().numpy()
                    learn_reward[cut] += config.gamma * cut_value
                episode_end = terminated | truncated
                ended[t] = torch.from_numpy(episode_end | (reward != 0) if config.end_gae_at_point else episode_end)
                rewards[t] = torch.from_numpy(learn_reward.astype(np.float32))
                next_obs = torch.from_numpy(obs)
                track_episodes(reward, episode_end, info)
                for opponent in opponents:
                    opponent.games_ended(episode_end[0::2])
            before, step = step, step + config.num_envs * horizon  # all processes' env steps

            # 2. Advantages, then the update on the flattened rollout.
            with torch.inference_mode():
                next_value = agent.value(next_obs.to(device)).cpu()
            advantages, returns = compute_gae(rewards, values, ended, next_value, config.gamma, config.gae_lambda)
            rollout = {
                "obs": obs_buffer,
                "actions": actions,
                "logprobs": logprobs,
                "advantages": advantages,
                "returns": returns,
                "values": values,
            }
            if opponents:  # (T, N, ...) -> (T, learners, ...): a copy; without opponents the views flatten as they are
                rollout = {key: tensor[:, learners] for key, tensor in rollout.items()}
            batch = {key: tensor.reshape(-1, *tensor.shape[2:]).to(device) for key, tensor in rollout.items()}
            mark = time.perf_counter()
            update_stats = ppo_update(agent, optimizer, batch, config, state.torch_generator, world)
            phases.lap("update", mark)
            counters["updates"] += 1

            # 3. Judge, report, save.
            if world.is_main and session.crossed(config.eval_every, before, step):
                mark = time.perf_counter()
                pending_eval = evaluate_against_builtin(agent, config, derived_seed(config.seed, 7, step))
                phases.lap("eval", mark)
                session.board.scalars(
                    {
                        "eval/mean_return": pending_eval["eval_mean_return"],
                        "eval/sampled_mean_return": pending_eval.get("eval_sampled_mean_return"),
                    },
                    step,
                )
            if session.crossed(config.log_every, before, step) or step >= config.total_steps:
                row = {
                    "episodes": counters["episodes"],
                    "average_return": float(np.mean(state.recent_returns)) if state.recent_returns else None,
                    "average_length": float(np.mean(state.recent_lengths)) if state.recent_lengths else None,
                    # self-play: each paddle's mean score over its last games (zero-sum, so they mirror)
                    **(
                        {
                            f"return_{name}": float(np.mean(recent)) if recent else None
                            for name, recent in zip(PLAYERS, recent_by_player)
                        }
                        if config.algo == "selfplay"
                        else {}
                    ),
                    # the learner's mean score against each kind of opponent: its past snapshots (above zero while it
                    # improves on them), scripted paddles, frozen agents, the built-in AI (--builtin-fraction)
                    **{
                        f"return_vs_{kind}": float(np.mean(recent)) if recent else None
                        for kind, recent in recent_vs.items()
                    },
                    "points_won": points["won"],
                    "points_lost": points["lost"],
                    "serve_penalties": points["serve_penalties"],
                    "learning_rate": learning_rate,
                    **phases.row(),
                    **{k: update_stats.get(k) for k in UPDATE_STATS},
                    **(pending_eval or {}),
                }
                scalars = {f"losses/{k}": update_stats.get(k) for k in UPDATE_STATS}
                scalars.update(
                    {
                        "charts/average_return": row["average_return"],
                        "charts/learning_rate": learning_rate,
                        "charts/points_won": points["won"],
                        "charts/serve_penalties": points["serve_penalties"],
                    }
                )
                session.log(step, row, scalars)
                points = {"won": 0, "lost": 0, "serve_penalties": 0}
                pending_eval = None
            session.show_progress(step, state.recent_returns)
            if pool and session.crossed(config.pool_every, before, step):
                pool.snapshot(agent)
            collected = [p for p in collection_points(config) if before < p <= step]
            if collected:
                counters["collected"] = sorted(set(counters["collected"]) | {step})
                save(permanent=True)
            elif session.crossed(config.checkpoint_every, before, step):
                save()
        if not world.any(session.disk_failed) and session.needs_final_checkpoint(step):
            save()
    env.close()
    world.close()
    return session.end(stop, step)


def evaluate_against_builtin(agent: ActorCritic, config, seed: int) -> dict:
    """The current policy on the right paddle against the built-in AI, in the observation profile the
    agent trains on: greedy play, and (--eval-sampled) play drawing its actions from the policy, as it
    plays in training. The two can differ widely: a self-play policy may score only when sampling."""
    from pongrl.agent import PolicyAgent
    from pongrl.evaluation import evaluate_agent, summarize

    player = PolicyAgent(agent, obs_profile(config))
    greedy = summarize(
        evaluate_agent(player, config.eval_episodes, seed, config.eval_epsilon, sticky_actions=config.sticky_actions)
    )
    scores = {"eval_mean_return": greedy["mean"], "eval_std_return": greedy["std"]}
    if config.eval_sampled:
        sampled = summarize(
            evaluate_agent(player, config.eval_episodes, seed, sample=True, sticky_actions=config.sticky_actions)
        )
        scores.update(eval_sampled_mean_return=sampled["mean"], eval_sampled_std_return=sampled["std"])
    return scores
