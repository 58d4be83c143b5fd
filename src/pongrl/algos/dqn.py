"""DQN on single-player Pong against the built-in AI, readable top to bottom.

Mnih et al. (2015) with the options that make it learn faster: n-step returns, double DQN,
Huber loss, gradient clipping, and prioritized replay behind `--prioritized-replay`. `--preset seed`
turns them off to reproduce the blog's TF-Agents run. `--dueling` and `--distributional c51|qr` change
the Q-network's head (pongrl.nets.QHead) and, for a distributional head, the loss (distributional.py).

The loop collects `num_envs` steps at a time on ale-py's C++ vector env. Actions are sent to the
emulators first and the gradient steps run while the emulator threads play (`send` ... `recv`),
so emulation hides behind the network update. Everything the run needs to continue exactly is in
the checkpoint: networks, optimizer moments, counters, schedule positions, RNG states, and the
replay buffer beside it.
"""

from __future__ import annotations

import copy
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from pongrl.agent import QAgent
from pongrl.algos.distributional import distributional_losses
from pongrl.checkpoint import checkpoint_name, save_checkpoint
from pongrl.envs import make_vector_env
from pongrl.game import NUM_ACTIONS
from pongrl.evaluation import evaluate_agent, summarize
from pongrl.nets import QNetwork
from pongrl.replay import FrameReplayBuffer, PrioritizedReplayBuffer
from pongrl.learner import LearnerState, make_adam, start_learner
from pongrl.run import PhaseClock, StopSignal, TrainingOutcome, TrainingSession, checkpoint_dir
from pongrl.seeding import derived_seed

METRIC_COLUMNS = [
    "env_step",
    "wall_seconds",
    "episodes",
    "average_return",
    "average_length",
    "loss",
    "q_mean",
    "epsilon",
    "steps_per_second",
    *PhaseClock.COLUMNS,
    "eval_mean_return",
    "eval_std_return",
]
RECENT_EPISODES = 10  # the training curve is the mean over the last 10 finished games


def linear_epsilon(config, env_step: int) -> float:
    fraction = min(1.0, env_step / config.epsilon_decay_steps)
    return config.epsilon_start + fraction * (config.epsilon_end - config.epsilon_start)


def td_targets(returns, discounts, next_q_target, next_q_online=None):
    """n-step TD targets: R + gamma^k * Q_target(s', a*), with a* = argmax Q_target (classic DQN)
    or argmax Q_online (double DQN). `discounts` is 0 after a terminal."""
    chooser = next_q_online if next_q_online is not None else next_q_target
    best_action = chooser.argmax(dim=1, keepdim=True)
    return returns + discounts * next_q_target.gather(1, best_action).squeeze(1)


def td_loss(q_taken, targets, kind: str, weights=None):
    """Mean TD loss; with prioritized replay each transition's loss is scaled by its importance weight."""
    loss_fn = F.smooth_l1_loss if kind == "huber" else F.mse_loss
    if weights is None:
        return loss_fn(q_taken, targets)
    return (weights * loss_fn(q_taken, targets, reduction="none")).mean()


def priority_beta(config, env_step: int) -> float:
    """The importance-weight exponent, annealed linearly from --priority-beta to 1 at --total-steps."""
    fraction = min(1.0, env_step / config.total_steps)
    return config.priority_beta + fraction * (1.0 - config.priority_beta)


def _to_device(frames: np.ndarray, device: torch.device) -> torch.Tensor:
    # channels_last runs the convolutions ~25% faster on CPU (measured, see docs/speed.md); replay
    # batches already come in that layout, so only the emulators' observations are converted here.
    return torch.from_numpy(frames).to(device).contiguous(memory_format=torch.channels_last)


def make_q_network(config) -> QNetwork:
    """The Q-network a run's settings ask for: its torso, precision and head."""
    return QNetwork(
        NUM_ACTIONS,
        config.network,
        config.precision,
        dueling=config.dueling,
        distributional=config.distributional,
        atoms=config.quantiles if config.distributional == "qr" else config.atoms,
        v_min=config.v_min,
        v_max=config.v_max,
    )


class DQNState(LearnerState):
    """Everything a DQN run carries across a stop; the replay buffer is saved beside the checkpoint."""

    def __init__(self, config, device: torch.device):
        super().__init__(config, RECENT_EPISODES, grad_steps=0, last_target_update=0, train_credit=0)
        self.q_network = make_q_network(config).to(device, memory_format=torch.channels_last)
        self.target_network = make_q_network(config).to(device, memory_format=torch.channels_last)
        self.target_network.load_state_dict(self.q_network.state_dict())
        self.optimizer = make_adam(self.q_network.parameters(), config.learning_rate, config.adam_eps)
        if config.prioritized_replay:
            self.buffer = PrioritizedReplayBuffer(
                config.buffer_size,
                config.num_envs,
                config.n_step,
                config.gamma,
                config.priority_alpha,
                config.priority_beta,
            )
        else:
            self.buffer = FrameReplayBuffer(config.buffer_size, config.num_envs, config.n_step, config.gamma)

    def modules(self) -> dict:
        return {"q_network": self.q_network, "target_network": self.target_network, "optimizer": self.optimizer}

    def obs_profile(self) -> str:
        return QAgent.obs_profile

    def on_resume(self) -> None:
        # The emulators cannot be restored mid-game, so games open at the checkpoint end there
        # (a truncation for the learner) and fresh games start.
        self.buffer.close_episodes()

    def restore(self, payload: dict) -> None:
        super().restore(payload)
        replay_file = payload.get("replay_buffer")
        if replay_file:
            replay_path = os.path.join(os.path.dirname(payload["path"]), replay_file)
            if os.path.exists(replay_path):
                self.buffer.load(replay_path)
            else:
                self.notes.append(
                    f"pongrl: note: {replay_path} is gone (only the latest checkpoint keeps its replay "
                    "buffer); refilling the buffer before learning again"
                )


def train(
    config, run_dir: str, resume_from: str | None = None, verbose: bool = True, handle_signals: bool = True
) -> TrainingOutcome:
    """Train (or continue, from the checkpoint `resume_from`) a DQN run in the prepared `run_dir`.
    `verbose` shows progress on stderr; `handle_signals` makes SIGINT/SIGTERM stop it after a checkpoint."""
    state, device = start_learner(DQNState, config, resume_from)
    q_network, target_network, optimizer = state.q_network, state.target_network, state.optimizer
    buffer, counters, rng = state.buffer, state.counters, state.rng
    recent_returns, recent_lengths = state.recent_returns, state.recent_lengths
    env_step = counters["env_step"]
    env, obs = make_vector_env(config.num_envs, counters["env_seed"], sticky_actions=config.sticky_actions)
    running_return = np.zeros(config.num_envs)
    running_length = np.zeros(config.num_envs, np.int64)

    session = TrainingSession(
        run_dir,
        config,
        METRIC_COLUMNS,
        env_step,
        env_step if resume_from else None,
        counters["wall_seconds"],
        "dqn",
        verbose=verbose,
        notes=state.notes,
    )
    losses, q_means, pending_eval = [], [], None
    phases = PhaseClock()  # "env" is only the wait for the emulators that the gradient steps did not hide

    def make_checkpoint() -> str:
        counters.update(env_step=env_step, wall_seconds=session.stopwatch.seconds())
        payload = state.payload()
        payload["replay_buffer"] = None
        if config.save_buffer:
            payload["replay_buffer"] = f"replay_{checkpoint_name(env_step)}.npz"
            buffer.save(os.path.join(checkpoint_dir(run_dir), payload["replay_buffer"]))
        return save_checkpoint(checkpoint_dir(run_dir), payload, keep=config.keep_checkpoints)

    with StopSignal(enabled=handle_signals) as stop:
        while env_step < config.total_steps and not stop.received and not session.disk_failed:
            # 1. Act: epsilon-greedy on the current stacks, random until learning starts.
            epsilon = linear_epsilon(config, env_step)
            mark = time.perf_counter()
            if env_step < config.learning_starts:
                actions = rng.integers(0, NUM_ACTIONS, config.num_envs)
            else:
                with torch.inference_mode():
                    actions = q_network(_to_device(obs, device)).argmax(dim=1).cpu().numpy()
                explore = rng.random(config.num_envs) < epsilon
                actions = np.where(explore, rng.integers(0, NUM_ACTIONS, config.num_envs), actions)
            env.send(actions.astype(np.int64))
            mark = phases.lap("inference", mark)

            # 2. Learn while the emulators play this step.
            # After a resume without its replay buffer, the buffer refills before learning again.
            refilled = len(buffer) >= max(config.batch_size, min(config.learning_starts, buffer.capacity // 2))
            if env_step >= config.learning_starts and refilled:
                counters["train_credit"] += config.num_envs
                if config.prioritized_replay:
                    buffer.beta = priority_beta(config, env_step)
                while counters["train_credit"] >= config.train_frequency:
                    counters["train_credit"] -= config.train_frequency
                    loss, q_mean = _gradient_step(config, buffer, rng, q_network, target_network, optimizer, device)
                    counters["grad_steps"] += 1
                    losses.append(loss)
                    q_means.append(q_mean)

            # 3. Store what the emulators did.
            mark = phases.lap("update", mark)
            next_obs, rewards, terminated, truncated, info = env.recv()
            phases.lap("env", mark)
            buffer.add(obs, actions, np.clip(rewards, -1, 1), terminated, truncated, info.get("final_obs"))
            running_return += rewards
            running_length += 1
            for i in np.flatnonzero(terminated | truncated):
                counters["episodes"] += 1
                recent_returns.append(float(running_return[i]))
                recent_lengths.append(int(running_length[i]))
                session.board.scalars(
                    {"charts/episodic_return": running_return[i], "charts/episodic_length": running_length[i]}, env_step
                )
                running_return[i], running_length[i] = 0, 0
            obs = next_obs
            before, env_step = env_step, env_step + config.num_envs

            if env_step - counters["last_target_update"] >= config.target_update_every:
                target_network.load_state_dict(q_network.state_dict())
                counters["last_target_update"] = env_step

            # 4. Judge, report, save.
            if session.crossed(config.eval_every, before, env_step):
                mark = time.perf_counter()
                agent = QAgent(q_network if device.type == "cpu" else _cpu_copy(q_network))
                games = evaluate_agent(
                    agent,
                    config.eval_episodes,
                    derived_seed(config.seed, 7, env_step),
                    config.eval_epsilon,
                    sticky_actions=config.sticky_actions,
                )
                q_network.train()
                pending_eval = summarize(games)
                phases.lap("eval", mark)
                session.board.scalars(
                    {"eval/mean_return": pending_eval["mean"], "eval/std_return": pending_eval["std"]}, env_step
                )
            if session.crossed(config.log_every, before, env_step) or env_step >= config.total_steps:
                row = {
                    "episodes": counters["episodes"],
                    "average_return": float(np.mean(recent_returns)) if recent_returns else None,
                    "average_length": float(np.mean(recent_lengths)) if recent_lengths else None,
                    "loss": float(np.mean(losses)) if losses else None,
                    "q_mean": float(np.mean(q_means)) if q_means else None,
                    "epsilon": epsilon,
                    **phases.row(),
                    "eval_mean_return": pending_eval["mean"] if pending_eval else None,
                    "eval_std_return": pending_eval["std"] if pending_eval else None,
                }
                session.log(
                    env_step,
                    row,
                    {
                        "charts/average_return": row["average_return"],
                        "losses/td_loss": row["loss"],
                        "losses/q_values": row["q_mean"],
                        "charts/epsilon": epsilon,
                    },
                )
                losses, q_means, pending_eval = [], [], None
            session.show_progress(env_step, recent_returns, eps=f"{epsilon:.2f}")
            if session.crossed(config.checkpoint_every, before, env_step):
                session.checkpoint(make_checkpoint, env_step)
        if session.needs_final_checkpoint(env_step):
            session.checkpoint(make_checkpoint, env_step)
    env.close()
    return session.end(stop, env_step)


def _gradient_step(config, buffer, rng, q_network, target_network, optimizer, device):
    batch = buffer.sample(config.batch_size, rng)
    obs = _to_device(batch["obs"], device)
    next_obs = _to_device(batch["next_obs"], device)
    actions = torch.from_numpy(batch["actions"]).to(device)
    returns = torch.from_numpy(batch["returns"]).to(device)
    discounts = torch.from_numpy(batch["discounts"]).to(device)
    weights = torch.from_numpy(batch["weights"]).to(device) if "weights" in batch else None
    if config.distributional == "none":
        with torch.no_grad():
            next_q_target = target_network(next_obs)
            next_q_online = q_network(next_obs) if config.double_dqn else None
            targets = td_targets(returns, discounts, next_q_target, next_q_online)
        q_values = q_network(obs)
        q_taken = q_values.gather(1, actions.unsqueeze(1)).squeeze(1)
        loss = td_loss(q_taken, targets, config.loss, weights)
        errors = targets - q_taken.detach()
    else:
        losses, q_taken = distributional_losses(
            q_network, target_network, obs, next_obs, actions, returns, discounts, config.double_dqn
        )
        loss = losses.mean() if weights is None else (weights * losses).mean()
        errors = losses.detach()  # each transition's own loss is its priority (Hessel et al. 2018)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if config.max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(q_network.parameters(), config.max_grad_norm)
    optimizer.step()
    if weights is not None:
        buffer.update_priorities(batch["env"], batch["slot"], errors.cpu().numpy())
    return loss.item(), q_taken.mean().item()


def _cpu_copy(network: QNetwork) -> QNetwork:
    return copy.deepcopy(network).cpu()
