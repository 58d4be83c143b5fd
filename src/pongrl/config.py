"""Typed configuration for each algorithm, its presets, and loading/saving as YAML.

Every field carries a docstring-like comment in `FIELD_HELP` that the CLI shows in `--help`.
Frequencies are counted in environment steps (one step of one emulator), whatever the
number of parallel environments.

Longer than most modules (~400 lines) on purpose: every setting of every algorithm, its help and its checks
live here once, so that a reader sees the whole experiment surface in one file.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, fields
from typing import Any

import yaml

from pongrl._version import __version__
from pongrl.errors import PongrlError
from pongrl.game import CLASSIC_MODE, GAME_MODES, MAX_CYCLES
from pongrl.scripted import scripted_names


@dataclass
class DQNConfig:
    algo: str = "dqn"
    preset: str = "default"
    total_steps: int = 2_000_000
    seed: int = 1
    init: str = ""
    num_envs: int = 4
    sticky_actions: float = 0.0
    network: str = "nature"
    buffer_size: int = 100_000
    learning_starts: int = 10_000
    train_frequency: int = 4
    batch_size: int = 32
    learning_rate: float = 2.5e-4
    adam_eps: float = 1.5e-4
    gamma: float = 0.99
    n_step: int = 3
    double_dqn: bool = True
    prioritized_replay: bool = False
    priority_alpha: float = 0.5
    priority_beta: float = 0.4
    dueling: bool = False
    distributional: str = "none"
    atoms: int = 51
    quantiles: int = 200
    v_min: float = -10.0
    v_max: float = 10.0
    loss: str = "huber"
    max_grad_norm: float = 10.0
    target_update_every: int = 2_000
    epsilon_start: float = 1.0
    epsilon_end: float = 0.01
    epsilon_decay_steps: int = 100_000
    log_every: int = 5_000
    eval_every: int = 50_000
    eval_episodes: int = 5
    eval_epsilon: float = 0.0
    checkpoint_every: int = 50_000
    keep_checkpoints: int = 3
    save_buffer: bool = True
    torch_threads: int = 0
    device: str = "cpu"
    precision: str = "float32"
    on_disk_error: str = "stop"
    track: bool = False
    wandb_project: str = "pongrl"


FIELD_HELP: dict[str, str] = {
    "preset": "named set of hyperparameters the run started from",
    "total_steps": "environment steps to train for (all parallel envs together)",
    "seed": "random seed for python, numpy, torch and the emulators",
    "num_envs": "parallel emulators collecting experience",
    "sticky_actions": "probability that the emulator repeats the previous action on a frame instead of the new one, "
    "in training and in the run's evaluations (0.25 is the ALE v5 protocol, Machado et al. 2018; "
    "0 is the deterministic protocol of the seeds)",
    "network": "convolutional torso: nature (Mnih et al. 2015, the seeds') or small (Mnih et al. 2013, about a third "
    "of the arithmetic)",
    "buffer_size": "replay capacity in transitions (each 84x84 frame stored once)",
    "learning_starts": "random-policy steps collected before the first gradient step",
    "train_frequency": "environment steps per gradient step",
    "batch_size": "transitions per gradient step",
    "learning_rate": "Adam learning rate",
    "adam_eps": "Adam epsilon",
    "gamma": "discount factor",
    "n_step": "steps summed into the TD target (1 = classic DQN)",
    "double_dqn": "select the next action with the online network (van Hasselt et al. 2016)",
    "prioritized_replay": "draw transitions in proportion to their last TD error (Schaul et al. 2016, proportional)",
    "priority_alpha": "prioritized replay: how strongly priorities skew the draw (0 = uniform)",
    "priority_beta": "prioritized replay: importance-weight exponent at the start, annealed to 1 at --total-steps",
    "dueling": "value and advantage streams, Q = V + A - mean over actions of A (Wang et al. 2016)",
    "distributional": "value head: none (expected Q-values), c51 (a categorical return distribution on fixed atoms, "
    "Bellemare et al. 2017) or qr (quantile regression with the quantile Huber loss, Dabney et al. 2018); "
    "with c51 or qr the TD loss is the distributional one and --loss is not used",
    "atoms": "c51: atoms of the return distribution, evenly spaced on [--v-min, --v-max]",
    "quantiles": "qr: quantiles of the return distribution",
    "v_min": "c51: the lowest return the distribution can hold (returns are of clipped rewards; "
    "a target past the bounds lands on the end atom)",
    "v_max": "c51: the highest return the distribution can hold",
    "loss": "TD loss: huber or mse",
    "max_grad_norm": "clip the global gradient norm to this (0 = no clipping)",
    "target_update_every": "environment steps between target-network copies",
    "epsilon_start": "exploration epsilon at step 0",
    "epsilon_end": "exploration epsilon after the decay",
    "epsilon_decay_steps": "environment steps of linear epsilon decay",
    "log_every": "environment steps between rows of metrics.csv",
    "eval_every": "environment steps between evaluations against the built-in AI (0 = never)",
    "eval_episodes": "whole games per evaluation",
    "eval_epsilon": "epsilon of the evaluation policy",
    "checkpoint_every": "environment steps between checkpoints",
    "keep_checkpoints": "periodic checkpoints kept on disk (the newest ones)",
    "save_buffer": "save the replay buffer beside the latest checkpoint, for exact resume",
    "on_disk_error": "when a checkpoint cannot be written (disk full, read-only): stop, or continue training",
    "torch_threads": "torch intra-op threads (0 = torch's default)",
    "device": "cpu, cuda or auto",
    "precision": "arithmetic of the convolutional torso: float32, or bfloat16 under autocast (weights, heads, "
    "losses and Adam stay float32); faster only where the hardware has bfloat16 units "
    "(benchmarks/network.py measures it)",
    "track": "also log to Weights & Biases (needs wandb installed)",
    "wandb_project": "Weights & Biases project name",
}

# The preset "seed" is the blog post's TF-Agents run (lr 2.5e-4, batch 64, 4 collect steps per
# train step, target update every 2,000 train steps = 8,000 env steps, epsilon 1.0 -> 0.01 over
# 150,000 env steps, replay 100,000, squared loss, one environment, 20,000 random initial steps,
# evaluation of 5 games every 5,000 train steps = 20,000 env steps).
DQN_PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "seed": dict(
        num_envs=1,
        learning_rate=2.5e-4,
        adam_eps=1e-7,
        batch_size=64,
        train_frequency=4,
        target_update_every=8_000,
        gamma=0.99,
        n_step=1,
        double_dqn=False,
        loss="mse",
        max_grad_norm=0.0,
        epsilon_start=1.0,
        epsilon_end=0.01,
        epsilon_decay_steps=150_000,
        buffer_size=100_000,
        learning_starts=20_000,
        eval_every=20_000,
        eval_episodes=5,
    ),
    # The recipe of zoo:dqn: the default preset with dueling heads, a C51 head and prioritized replay, trained
    # under sticky actions 0.25 (the ALE v5 protocol) for 1.5M env steps. Rainbow (Hessel et al. 2018) but its
    # noisy networks: n-step returns and double DQN are the default's. On one seed it started winning later than
    # the default and ended ahead under sticky actions (docs/results.md).
    "rainbow": dict(
        dueling=True,
        distributional="c51",
        prioritized_replay=True,
        sticky_actions=0.25,
        total_steps=1_500_000,
    ),
    # RL Baselines3 Zoo's Atari DQN (hyperparams/dqn.yml, as Stable-Baselines3 runs it): one env, no n-step,
    # no double DQN, Huber loss, Adam eps 1e-8, target copy every 1,000 env steps, 100,000 random steps
    # first, epsilon to 0.01 over the first 10% of 10M steps. For side-by-side speed benchmarks.
    "zoo": dict(
        total_steps=10_000_000,
        num_envs=1,
        buffer_size=100_000,
        learning_rate=1e-4,
        adam_eps=1e-8,
        batch_size=32,
        learning_starts=100_000,
        target_update_every=1_000,
        train_frequency=4,
        n_step=1,
        double_dqn=False,
        loss="huber",
        max_grad_norm=10.0,
        epsilon_start=1.0,
        epsilon_end=0.01,
        epsilon_decay_steps=1_000_000,
    ),
}


@dataclass
class PPOConfig:
    algo: str = "selfplay"
    preset: str = "default"
    total_steps: int = 10_000_000
    seed: int = 1
    init: str = ""
    num_envs: int = 16
    sticky_actions: float = 0.0
    network: str = "nature"
    num_steps: int = 128
    learning_rate: float = 2.5e-4
    anneal_lr: bool = True
    adam_eps: float = 1e-5
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    norm_adv: bool = True
    clip_coef: float = 0.1
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float = 0.0
    share_network: bool = True
    end_gae_at_point: bool = False
    opponent_pool: float = 0.0
    builtin_fraction: float = 0.0
    scripted_fraction: float = 0.0
    scripted_opponents: str = "all"
    agent_fraction: float = 0.0
    opponent_agents: str = ""
    opponent_weights: str = ""
    pool_size: int = 8
    pool_every: int = 200_000
    pool_play: str = "sample"
    env: str = "fast"
    obs: str = "standard"
    max_cycles: int = MAX_CYCLES
    game_mode: int = CLASSIC_MODE  # pong_v3's classic game, the self-play model card's
    num_checkpoints: int = 10
    log_every: int = 10_000
    eval_every: int = 200_000
    eval_episodes: int = 5
    eval_epsilon: float = 0.0
    eval_sampled: bool = True
    checkpoint_every: int = 100_000
    keep_checkpoints: int = 3
    torch_threads: int = 0
    device: str = "cpu"
    precision: str = "float32"
    on_disk_error: str = "stop"
    track: bool = False
    wandb_project: str = "pongrl"


FIELD_HELP.update(
    {
        "num_steps": "rollout length per environment between updates",
        "anneal_lr": "anneal the learning rate linearly to 0 at --total-steps (stretched when a resume extends it)",
        "gae_lambda": "GAE lambda",
        "num_minibatches": "minibatches per epoch",
        "update_epochs": "passes over each rollout",
        "norm_adv": "normalise advantages per minibatch",
        "clip_coef": "PPO clipping of the probability ratio (and of the value change)",
        "clip_vloss": "clip the value loss as CleanRL does",
        "ent_coef": "entropy bonus coefficient",
        "vf_coef": "value loss coefficient",
        "target_kl": "stop the epochs of an update when the approximate KL passes this (0 = never)",
        "share_network": "the critic reuses the actor's torso (one CNN instead of two)",
        "end_gae_at_point": "end the GAE episode at every scored point, as the self-play model card's script does "
        "(done or reward != 0)",
        "opponent_pool": "self-play: fraction of games in which a past snapshot of the policy plays one paddle "
        "(0 = plain self-play)",
        "builtin_fraction": "self-play: fraction of games played against the built-in AI on the single-player "
        "emulator, the learner on the right paddle in the card's view (0 = none)",
        "scripted_fraction": "self-play: fraction of games in which a scripted paddle (pongrl.scripted) plays one "
        "side (0 = none)",
        "scripted_opponents": "self-play: the scripted paddles of those games, comma-separated, or all "
        "(each game draws one as it starts)",
        "agent_fraction": "self-play: fraction of games in which a frozen agent of --opponent-agents plays one side, "
        "greedy (0 = none)",
        "opponent_agents": "self-play: the frozen opponents, comma-separated agents of any observation profile "
        "(zoo:NAME, checkpoints, runs, exploiters)",
        "opponent_weights": "self-play: how often each agent of --opponent-agents is drawn, comma-separated "
        "non-negative weights in the same order (empty = all equally; a league's matchmaking sets them)",
        "init": "start from this agent's weights (zoo:NAME, a run, a checkpoint, hf://...) with a fresh optimizer and "
        "counters; the same algorithm, network and observation profile (empty = random weights)",
        "pool_size": "self-play: how many past snapshots the opponent pool keeps (the newest)",
        "pool_every": "self-play: agent steps between snapshots into the opponent pool",
        "pool_play": "self-play: how the pool's opponents choose their actions, sample (as the learner does) or greedy "
        "(the most probable action: a sharper defender, see docs/results.md)",
        "env": "two-player env implementation: fast or reference (PettingZoo + SuperSuit)",
        "obs": "ppo only: observation profile, standard (grayscale) or seed (the view of the self-play model card: "
        "blue channel, score rows blanked, channel last)",
        "max_cycles": "self-play: raw frames after which a two-player game is cut (a truncation)",
        "game_mode": "self-play: the cartridge's two-player Pong variation, 4 (pong_v3's classic, the self-play model "
        "card's) or 3 (its ball reaches 3-4 px/frame as in the single-player game; see docs/results.md)",
        "num_checkpoints": "checkpoints collected at evenly spaced steps and kept for later study",
        "eval_sampled": "also evaluate with actions sampled from the policy (as it plays in training), "
        "beside greedy play",
    }
)

# The self-play model card's run (CleanRL ppo_pettingzoo_ma_atari): 8 games x 2 players = 16 envs,
# 128 steps, 4 minibatches, 4 epochs, lr 2.5e-4 annealed, gamma 0.99, lambda 0.95, clip 0.1,
# ent 0.01, vf 0.5, max grad norm 0.5, 30M agent steps, Adam eps 1e-5, GAE cut at every point.
SELFPLAY_PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "seed": dict(total_steps=30_000_000, share_network=False, end_gae_at_point=True),
}
# CleanRL's ppo_atari against the built-in AI: 8 envs, 128 steps, 4 minibatches, 4 epochs.
PPO_PRESETS: dict[str, dict[str, Any]] = {
    "default": dict(algo="ppo", num_envs=8, total_steps=10_000_000),
    "seed": dict(algo="ppo", num_envs=8, total_steps=10_000_000, share_network=False, obs="seed"),
    # RL Baselines3 Zoo's Atari PPO (hyperparams/ppo.yml): 8 envs x 128 steps, 4 epochs of minibatch 256, lr
    # 2.5e-4 annealed, clip 0.1, ent 0.01, vf 0.5, shared torso, no value clipping (SB3's clip_range_vf=None).
    # The Zoo also anneals the clip range; pongrl keeps it constant.
    "zoo": dict(
        algo="ppo",
        num_envs=8,
        num_steps=128,
        update_epochs=4,
        num_minibatches=4,
        learning_rate=2.5e-4,
        clip_coef=0.1,
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        share_network=True,
        clip_vloss=False,
        total_steps=10_000_000,
    ),
}

CONFIG_CLASSES = {
    "dqn": (DQNConfig, DQN_PRESETS),
    "ppo": (PPOConfig, PPO_PRESETS),
    "selfplay": (PPOConfig, SELFPLAY_PRESETS),
}

# Fields that a resume may change without starting a different experiment: where it runs and how it reports.
# The evaluation's cadence and size are reporting: it plays its own emulator with its own seeded generator and
# touches none of the learner's state, so a long run may evaluate less often (each evaluation of a self-play
# run stops training for minutes) or with more games.
RESUME_MUTABLE = {
    "total_steps",
    "device",
    "torch_threads",
    "precision",
    "track",
    "on_disk_error",
    "eval_every",
    "eval_episodes",
}
# What a resume may change besides the step count (where the run runs and how it reports), and what a branch
# may change: any setting but the algorithm, the preset it started from and the step count.
RESUME_SETTINGS = RESUME_MUTABLE - {"total_steps"}
BRANCH_SETTINGS = ({f.name for f in fields(DQNConfig)} | {f.name for f in fields(PPOConfig)}) - {
    "algo",
    "preset",
    "total_steps",
    "init",  # a branch starts from its run's checkpoint
}


def field_types(cls) -> dict[str, type]:
    return {f.name: type(f.default) for f in fields(cls)}


def make_config(algo: str, preset: str, overrides: dict[str, Any]):
    """Build a config: dataclass defaults, then the preset, then explicit overrides."""
    if algo not in CONFIG_CLASSES:
        raise PongrlError(f"unknown algorithm {algo!r} (choose from {', '.join(CONFIG_CLASSES)})")
    cls, presets = CONFIG_CLASSES[algo]
    if preset not in presets:
        raise PongrlError(f"unknown preset {preset!r} for {algo} (choose from {', '.join(presets)})")
    values = {
        **presets[preset],
        **{k: v for k, v in overrides.items() if v is not None},
        "preset": preset,
        "algo": algo,
    }
    config = cls(**values)
    validate(config)
    return config


POSITIVE = {
    "total_steps",
    "num_envs",
    "buffer_size",
    "train_frequency",
    "batch_size",
    "n_step",
    "target_update_every",
    "log_every",
    "checkpoint_every",
    "keep_checkpoints",
    "eval_episodes",
    "epsilon_decay_steps",
    "num_steps",
    "num_minibatches",
    "update_epochs",
    "max_cycles",
    "pool_size",
    "pool_every",
}
NON_NEGATIVE = {
    "learning_starts",
    "eval_every",
    "max_grad_norm",
    "torch_threads",
    "target_kl",
    "num_checkpoints",
    "ent_coef",
    "vf_coef",
    "clip_coef",
}
STRICTLY_POSITIVE_FLOATS = {"learning_rate", "adam_eps"}
UNIT_INTERVAL = {
    "opponent_pool",
    "builtin_fraction",
    "scripted_fraction",
    "agent_fraction",
    "gamma",
    "epsilon_start",
    "epsilon_end",
    "eval_epsilon",
    "gae_lambda",
    "priority_alpha",
    "priority_beta",
}
CHOICES = {
    "on_disk_error": ("stop", "continue"),
    "loss": ("huber", "mse"),
    "distributional": ("none", "c51", "qr"),
    "device": ("cpu", "cuda", "auto"),
    "env": ("fast", "reference"),
    "obs": ("standard", "seed"),
    "network": ("nature", "small"),
    "precision": ("float32", "bfloat16"),
    "game_mode": GAME_MODES,
    "pool_play": ("sample", "greedy"),
}


MAX_TORCH_THREADS = 1024


def validate(config) -> None:
    """Refuse values that cannot make a working run, with a message naming the flag."""
    for name in (f.name for f in fields(config)):
        value, flag = getattr(config, name), "--" + name.replace("_", "-")
        if name in POSITIVE and value <= 0:
            raise PongrlError(f"{flag} must be positive, got {value}")
        if name in NON_NEGATIVE and value < 0:
            raise PongrlError(f"{flag} must not be negative, got {value}")
        if name in STRICTLY_POSITIVE_FLOATS and not value > 0:
            raise PongrlError(f"{flag} must be positive, got {value}")
        if name in UNIT_INTERVAL and not 0.0 <= value <= 1.0:
            raise PongrlError(f"{flag} must be in [0, 1], got {value}")
        if name in CHOICES and value not in CHOICES[name]:
            raise PongrlError(f"{flag} must be one of {', '.join(map(str, CHOICES[name]))}, got {value!r}")
    if not 0.0 <= config.sticky_actions < 1.0:  # at 1 the first action would repeat for ever
        raise PongrlError(f"--sticky-actions must be in [0, 1), got {config.sticky_actions}")
    if config.torch_threads > MAX_TORCH_THREADS:  # a typo here would start that many threads at the first layer
        raise PongrlError(f"--torch-threads must be at most {MAX_TORCH_THREADS}, got {config.torch_threads}")
    if isinstance(config, DQNConfig):
        if config.buffer_size // config.num_envs < config.n_step + 8:
            raise PongrlError("--buffer-size is too small for the number of environments")
        for flag, count in (("--atoms", config.atoms), ("--quantiles", config.quantiles)):
            if count < 2:  # one atom or quantile is a point mass: plain DQN with a different loss
                raise PongrlError(f"{flag} must be at least 2, got {count}")
        if not config.v_min < config.v_max:
            raise PongrlError(f"--v-min must be below --v-max, got {config.v_min} and {config.v_max}")
    if isinstance(config, PPOConfig):
        if config.algo != "selfplay" and config.game_mode != 4:
            raise PongrlError(
                "--game-mode is for self-play only (against the built-in AI the game is the single-player one)"
            )
        if config.env == "reference" and config.sticky_actions:
            raise PongrlError(
                "--sticky-actions needs --env fast (PettingZoo's emulator repeats the first player's actions only)"
            )
        if config.algo == "selfplay" and config.num_envs % 2:
            raise PongrlError(f"--num-envs counts players in self-play and must be even, got {config.num_envs}")
        learners = config.num_envs
        if config.pool_play != "sample" and not config.opponent_pool:
            raise PongrlError("--pool-play is how the opponent pool plays: it needs --opponent-pool")
        games = config.num_envs // 2
        mix = (
            ("--opponent-pool", config.opponent_pool, "pool game"),
            ("--scripted-fraction", config.scripted_fraction, "game against a scripted paddle"),
            ("--agent-fraction", config.agent_fraction, "game against a frozen agent"),
            ("--builtin-fraction", config.builtin_fraction, "game against the built-in AI"),
        )
        for flag, fraction, kind in mix:
            if not fraction:
                continue
            if config.algo != "selfplay":
                raise PongrlError(f"{flag} is for self-play only")
            if pool_game_count(fraction, games) == 0:
                raise PongrlError(f"{flag} {fraction} gives no {kind} among {games} games")
            learners -= pool_game_count(fraction, games)  # the opponents' steps are not learned from
        if sum(pool_game_count(fraction, games) for _, fraction, _ in mix) > games:
            raise PongrlError(
                "--opponent-pool, --scripted-fraction, --agent-fraction and --builtin-fraction ask for more than "
                f"the {games} games together"
            )
        if config.scripted_fraction:
            scripted_names(config.scripted_opponents)
        if config.scripted_fraction and config.env == "reference":
            # a scripted paddle's serves are pressed for it, which PettingZoo's env has no way to do
            raise PongrlError("--scripted-fraction needs --env fast")
        if config.opponent_weights.strip():
            opponent_weights(config)
        if config.agent_fraction and not config.opponent_agents.strip():
            raise PongrlError("--agent-fraction needs --opponent-agents (the agents that play those games)")
        if (learners * config.num_steps) % config.num_minibatches:
            raise PongrlError(
                "--num-minibatches must divide the learned steps of a rollout "
                "(--num-envs x --num-steps, less the pool opponents' steps)"
            )


def opponent_weights(config) -> list[float] | None:
    """The draw probabilities of --opponent-agents from --opponent-weights (None: all equally likely)."""
    if not config.opponent_weights.strip():
        return None
    agents = [spec for spec in config.opponent_agents.split(",") if spec.strip()]
    try:
        weights = [float(value) for value in config.opponent_weights.split(",")]
    except ValueError:
        raise PongrlError(
            f"--opponent-weights must be comma-separated numbers, got {config.opponent_weights!r}"
        ) from None
    if len(weights) != len(agents):
        raise PongrlError(f"--opponent-weights gives {len(weights)} weights for {len(agents)} --opponent-agents")
    if not all(math.isfinite(weight) and weight >= 0 for weight in weights) or sum(weights) <= 0:
        raise PongrlError("--opponent-weights must be non-negative numbers, not all zero")
    return [weight / sum(weights) for weight in weights]


def pool_game_count(fraction: float, num_games: int) -> int:
    """How many of a self-play run's games are played against the opponent pool (pongrl.opponents), or
    against the built-in AI (pongrl.envs.builtin_mix), given the fraction asked for."""
    return int(round(fraction * num_games))


def to_dict(config) -> dict[str, Any]:
    return dataclasses.asdict(config)


def from_dict(data: Any, source: str):
    """Rebuild a config from a plain dict, refusing unknown or ill-typed keys."""
    if not isinstance(data, dict) or "algo" not in data:
        raise PongrlError(f"{source}: not a pongrl config (no 'algo' key)")
    algo = data["algo"]
    if algo not in CONFIG_CLASSES:
        raise PongrlError(f"{source}: unknown algorithm {algo!r}")
    cls, _ = CONFIG_CLASSES[algo]
    types = field_types(cls)
    unknown = sorted(set(data) - set(types))
    if unknown:
        raise PongrlError(f"{source}: unknown config keys {', '.join(unknown)}")
    values = {}
    for key, value in data.items():
        want = types[key]
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not want:
            raise PongrlError(f"{source}: config key {key!r} should be {want.__name__}, got {value!r}")
        values[key] = value
    config = cls(**values)
    try:
        validate(config)
    except PongrlError as error:
        raise PongrlError(f"{source}: {error}") from None
    return config


# config.yaml's one key that is no setting: the pongrl version that wrote the file (a resume writes it again),
# so that a run says which release made it. Loading sets it aside.
VERSION_KEY = "pongrl_version"


def save_yaml(config, path: str) -> None:
    from pongrl.checkpoint import atomic_write_bytes

    text = yaml.safe_dump({VERSION_KEY: __version__, **to_dict(config)}, sort_keys=False)
    atomic_write_bytes(path, text.encode())


def load_yaml(path: str):
    if not os.path.isfile(path):
        raise PongrlError(f"{path}: no such config file")
    try:
        with open(path) as handle:
            data = yaml.safe_load(handle)
    except yaml.YAMLError as error:
        raise PongrlError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None
    if isinstance(data, dict):
        data.pop(VERSION_KEY, None)
    return from_dict(data, path)


def check_same_experiment(payload: dict, config) -> None:
    """A checkpoint resumes only the run it came from: same algorithm and the same settings, apart
    from those a resume may change (RESUME_MUTABLE)."""
    if payload.get("algo") != config.algo:
        raise PongrlError(
            f"{payload.get('path')}: a {payload.get('algo')!r} checkpoint cannot resume a {config.algo} run"
        )
    saved = payload.get("config", {})
    current = to_dict(config)
    # A setting added after the checkpoint was written is absent from it: it ran with the default.
    defaults = {f.name: f.default for f in fields(config)}
    differing = sorted(k for k in current if k not in RESUME_MUTABLE and saved.get(k, defaults[k]) != current[k])
    if differing:
        raise PongrlError(
            f"{payload.get('path')}: checkpoint does not match the run's config.yaml ({', '.join(differing)} differ)"
        )
