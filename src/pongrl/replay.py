"""A replay buffer that stores each 84x84 frame once and rebuilds frame stacks when sampled.

Layout: one ring per parallel environment (so consecutive slots of a ring are consecutive steps
of one emulator). Each slot holds the newest frame of an observation and what happened after it:

    frame     the newest 84x84 frame of observation o_t
    action    a_t taken from o_t
    reward    r_t (clipped, for learning)
    terminal  True when the game ended with that step (no bootstrap)
    first     o_t is the first observation of an episode (no frames before it belong to it)
    final     o_t is an episode's last observation: there is no action from it, it only
              serves as the next observation of the slot before it (a truncation bootstraps from it)

A slot i is sampled as a transition when it is not `final` and the n slots after it are written.
Its stack is frames i-3..i with frames from before the episode's `first` slot set to zero, which
is exactly what the emulator showed the agent (the env zero-fills the stack at reset).
"""

from __future__ import annotations

import numpy as np

from pongrl.errors import PongrlError
from pongrl.game import FRAME_SIZE, FRAME_STACK

BUFFER_FORMAT_VERSION = 1
_ARRAYS = ("frames", "actions", "rewards", "terminal", "first", "final")


class FrameReplayBuffer:
    def __init__(self, capacity: int, num_envs: int, n_step: int = 1, gamma: float = 0.99):
        self.num_envs = num_envs
        self.ring_size = capacity // num_envs
        self.capacity = self.ring_size * num_envs
        self.n_step = n_step
        self.gamma = gamma
        shape = (num_envs, self.ring_size)
        self.frames = np.zeros(shape + (FRAME_SIZE, FRAME_SIZE), np.uint8)
        self.actions = np.zeros(shape, np.uint8)
        self.rewards = np.zeros(shape, np.float32)
        self.terminal = np.zeros(shape, np.bool_)
        self.first = np.zeros(shape, np.bool_)
        self.final = np.zeros(shape, np.bool_)
        self.next_slot = np.zeros(num_envs, np.int64)  # where each ring writes next
        self.filled = np.zeros(num_envs, np.int64)  # slots written so far, capped at ring_size
        self.episode_open = np.zeros(num_envs, np.bool_)  # the newest slot awaits a successor

    # ---- writing -------------------------------------------------------------------------
    def _write(self, env: int, frame, action, reward, terminal, final):
        slot = self.next_slot[env]
        self.frames[env, slot] = frame
        self.actions[env, slot] = action
        self.rewards[env, slot] = reward
        self.terminal[env, slot] = terminal
        self.first[env, slot] = not self.episode_open[env]
        self.final[env, slot] = final
        self.next_slot[env] = (slot + 1) % self.ring_size
        self.filled[env] = min(self.filled[env] + 1, self.ring_size)
        self.episode_open[env] = not final

    def add(self, obs, actions, rewards, terminated, truncated, final_obs=None) -> None:
        """Record one vector step: obs (N,4,84,84) before the step, the actions, clipped rewards and
        episode ends. For an env whose game ended, `final_obs[env]` is its last observation."""
        for env in range(self.num_envs):
            ended = bool(terminated[env] or truncated[env])
            self._write(env, obs[env, -1], actions[env], rewards[env], bool(terminated[env]), False)
            if ended:
                self._write(env, final_obs[env, -1], 0, 0.0, False, True)

    def close_episodes(self) -> None:
        """Mark every open episode's newest observation as final: its game is abandoned (for example
        on resume, when the emulators restart), so the step before it becomes a truncation."""
        for env in range(self.num_envs):
            if self.episode_open[env] and self.filled[env]:
                slot = (self.next_slot[env] - 1) % self.ring_size
                self.final[env, slot] = True
                self.terminal[env, slot] = False
            self.episode_open[env] = False

    def __len__(self) -> int:
        return int(self.filled.sum())

    # ---- sampling ------------------------------------------------------------------------
    def _age(self, env: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """Slots between `slot` and the write head: 1 for the newest slot."""
        return (self.next_slot[env] - slot - 1) % self.ring_size + 1

    def _sampleable(self, env: np.ndarray, slot: np.ndarray) -> np.ndarray:
        age = self._age(env, slot)
        filled = self.filled[env]
        stack_intact = (filled < self.ring_size) | (age <= self.ring_size - (FRAME_STACK - 1))
        return (age > self.n_step) & (age <= filled) & stack_intact & ~self.final[env, slot]

    def stacks(self, env: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """Frame stacks (B,4,84,84) ending at the given slots, zero before an episode start.

        The array is laid out frames-last in memory (a transposed view of (B,84,84,4)), which is the
        channels_last layout the network runs in, so torch takes it without a copy: gathering into this
        layout costs 0.4-0.7 ms more per 32 stacks than into (B,4,84,84), and saves the 1.2-1.5 ms
        conversion that batch would need (measured, docs/speed.md)."""
        out = np.zeros((len(env), FRAME_SIZE, FRAME_SIZE, FRAME_STACK), np.uint8).transpose(0, 3, 1, 2)
        alive = np.ones(len(env), np.bool_)
        for back in range(FRAME_STACK):
            index = (slot - back) % self.ring_size
            if alive.all():  # the common case: a plain gather, no masked (slower) write
                out[:, FRAME_STACK - 1 - back] = self.frames[env, index]
            else:
                out[alive, FRAME_STACK - 1 - back] = self.frames[env[alive], index[alive]]
            alive &= ~self.first[env, index]
        return out

    def _candidates(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Slots to try, uniformly over the written part of every ring (rings fill from slot 0, so a small
        learning_starts finds its few transitions); those not sampleable are dropped by the caller."""
        env = rng.integers(0, self.num_envs, size=count)
        return env, (rng.random(count) * np.maximum(self.filled[env], 1)).astype(np.int64)

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Transitions with n-step returns: obs, actions, returns, next_obs, discounts (gamma^k for a
        bootstrap after k steps, 0 after a terminal), and where they are (env, slot)."""
        envs, slots, found = [], [], 0
        for _ in range(100):
            env, slot = self._candidates(2 * batch_size, rng)
            keep = self._sampleable(env, slot)
            envs.append(env[keep])
            slots.append(slot[keep])
            found += int(keep.sum())
            if found >= batch_size:
                break
        else:
            raise PongrlError("replay buffer holds too few transitions to sample from")
        env = np.concatenate(envs)[:batch_size]
        slot = np.concatenate(slots)[:batch_size]
        returns, discounts, next_slot = self._n_step(env, slot)
        return {
            "obs": self.stacks(env, slot),
            "actions": self.actions[env, slot].astype(np.int64),
            "returns": returns,
            "next_obs": self.stacks(env, next_slot),
            "discounts": discounts,
            "env": env,
            "slot": slot,
        }

    def _n_step(self, env: np.ndarray, slot: np.ndarray):
        returns = np.zeros(len(env), np.float32)
        discounts = np.zeros(len(env), np.float32)
        next_slot = (slot + self.n_step) % self.ring_size
        running = np.ones(len(env), np.bool_)
        for k in range(self.n_step):
            index = (slot + k) % self.ring_size
            returns += running * (self.gamma**k) * self.rewards[env, index]
            running &= ~self.terminal[env, index]
            # The observation after this step closed a truncated episode: bootstrap from it now.
            successor = (index + 1) % self.ring_size
            cut = running & self.final[env, successor]
            next_slot = np.where(cut, successor, next_slot)
            discounts = np.where(cut, self.gamma ** (k + 1), discounts)
            running &= ~cut
        discounts = np.where(running, self.gamma**self.n_step, discounts)
        return returns, discounts.astype(np.float32), next_slot

    # ---- persistence ---------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        return {
            **{name: getattr(self, name) for name in _ARRAYS},
            "next_slot": self.next_slot,
            "filled": self.filled,
            "episode_open": self.episode_open,
            "meta": np.array([BUFFER_FORMAT_VERSION, self.num_envs, self.ring_size, self.n_step], np.int64),
        }

    def save(self, path: str) -> None:
        """Write atomically: a temp file beside the target, fsync, then rename."""
        from pongrl.checkpoint import atomic_write

        def write(handle):
            np.savez(handle, **self.state())

        atomic_write(path, write)

    def load(self, path: str) -> None:
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        except Exception as error:  # numpy raises many types for a damaged archive
            raise PongrlError(f"{path}: unreadable replay buffer ({type(error).__name__})") from None
        self._restore(arrays, path)

    def _restore(self, arrays: dict[str, np.ndarray], path: str) -> None:
        """Check the arrays read from `path` against this buffer and copy them in."""
        expected = np.array([BUFFER_FORMAT_VERSION, self.num_envs, self.ring_size, self.n_step])
        if "meta" not in arrays or not np.array_equal(arrays["meta"], expected):
            raise PongrlError(f"{path}: replay buffer does not match this run's configuration")
        for name in (*_ARRAYS, "next_slot", "filled", "episode_open"):
            current = getattr(self, name)
            if name not in arrays or arrays[name].shape != current.shape:
                raise PongrlError(f"{path}: replay buffer is missing or has a malformed {name!r}")
            current[...] = arrays[name]

    def nbytes(self) -> int:
        return sum(array.nbytes for array in self.state().values())


class SumTree:
    """Binary tree of sums over `size` non-negative leaves: set leaves and draw a leaf in proportion
    to its value, each in O(log size) numpy operations for a whole batch."""

    def __init__(self, size: int):
        self.size = size
        self.depth = max(0, int(size - 1).bit_length())  # levels above the leaves
        self.base = 1 << self.depth  # leaves live at nodes[base : base + size]
        self.nodes = np.zeros(2 * self.base, np.float64)

    def total(self) -> float:
        return float(self.nodes[1])

    def leaves(self) -> np.ndarray:
        return self.nodes[self.base : self.base + self.size]

    def set(self, index: np.ndarray, value: np.ndarray) -> None:
        node = np.asarray(index, np.int64) + self.base
        self.nodes[node] = value  # a repeated index (one transition drawn twice) carries the same value each time
        for _ in range(self.depth):  # a parent listed twice gets the same sum twice: no need to deduplicate
            node = node // 2
            self.nodes[node] = self.nodes[2 * node] + self.nodes[2 * node + 1]

    def rebuild(self) -> None:
        for level_start in (1 << k for k in reversed(range(self.depth))):
            node = np.arange(level_start, 2 * level_start)
            self.nodes[node] = self.nodes[2 * node] + self.nodes[2 * node + 1]

    def find(self, mass: np.ndarray) -> np.ndarray:
        """Leaf index holding each cumulative mass in [0, total)."""
        mass = np.array(mass, np.float64)
        node = np.ones(len(mass), np.int64)
        for _ in range(self.depth):
            left = self.nodes[2 * node]
            right = mass >= left
            mass -= np.where(right, left, 0.0)
            node = 2 * node + right
        return node - self.base


class PrioritizedReplayBuffer(FrameReplayBuffer):
    """Proportional prioritized replay (Schaul et al. 2016): a transition is drawn with probability
    p^alpha / sum p^alpha, p its last absolute TD error (new ones get the largest p seen, so each is
    replayed soon), and its loss is weighted by (N * P)^-beta / max weight of the batch to correct
    the bias (N cancels in that ratio). `beta` is set by the training loop (annealed to 1)."""

    def __init__(
        self, capacity: int, num_envs: int, n_step: int = 1, gamma: float = 0.99, alpha: float = 0.5, beta: float = 0.4
    ):
        super().__init__(capacity, num_envs, n_step, gamma)
        self.alpha, self.beta = alpha, beta
        self.tree = SumTree(self.capacity)
        self.max_priority = np.ones(1, np.float64)  # an array so that state() and load() treat it like the rest

    def add(self, obs, actions, rewards, terminated, truncated, final_obs=None) -> None:
        before = self.next_slot.copy()
        super().add(obs, actions, rewards, terminated, truncated, final_obs)
        # The slots just written (one or two per env): new transitions get the largest priority, a
        # `final` slot none (it is never a transition).
        written = (self.next_slot - before) % self.ring_size
        env = np.repeat(np.arange(self.num_envs), written)
        slot = (np.repeat(before, written) + np.concatenate([np.arange(n) for n in written])) % self.ring_size
        priority = np.where(self.final[env, slot], 0.0, self.max_priority[0] ** self.alpha)
        self.tree.set(env * self.ring_size + slot, priority)

    def close_episodes(self) -> None:
        super().close_episodes()
        for env in range(self.num_envs):
            if self.filled[env]:
                slot = (self.next_slot[env] - 1) % self.ring_size
                if self.final[env, slot]:
                    self.tree.set(np.array([env * self.ring_size + slot]), np.zeros(1))

    def _candidates(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        # Stratified: one draw from each of `count` equal slices of the total mass, shuffled because
        # sample() keeps the first sampleable ones (in slice order it would keep the low slices only).
        total = self.tree.total()
        if total <= 0:
            raise PongrlError("replay buffer holds too few transitions to sample from")
        mass = (np.arange(count) + rng.random(count)) * (total / count)
        index = rng.permutation(self.tree.find(np.minimum(mass, np.nextafter(total, 0))))
        return index // self.ring_size, index % self.ring_size

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        batch = super().sample(batch_size, rng)
        probability = self.tree.leaves()[batch["env"] * self.ring_size + batch["slot"]] / self.tree.total()
        weights = probability**-self.beta
        batch["weights"] = (weights / weights.max()).astype(np.float32)
        return batch

    def update_priorities(self, env: np.ndarray, slot: np.ndarray, td_errors: np.ndarray) -> None:
        priority = np.abs(td_errors).astype(np.float64) + 1e-6  # never 0: every transition stays drawable
        self.max_priority[0] = max(self.max_priority[0], float(priority.max()))
        self.tree.set(env * self.ring_size + slot, priority**self.alpha)

    def state(self) -> dict[str, np.ndarray]:
        return {**super().state(), "priorities": self.tree.leaves(), "max_priority": self.max_priority}

    def _restore(self, arrays: dict[str, np.ndarray], path: str) -> None:
        super()._restore(arrays, path)
        priorities, max_priority = arrays.get("priorities"), arrays.get("max_priority")
        if (
            priorities is None
            or priorities.shape != (self.capacity,)
            or max_priority is None
            or max_priority.shape != (1,)
        ):
            raise PongrlError(f"{path}: replay buffer has no priorities (was it saved by a uniform-replay run?)")
        # New transitions enter at max_priority, so it must be a positive number for them ever to be drawn.
        if not (
            np.isfinite(priorities).all()
            and priorities.min() >= 0
            and np.isfinite(max_priority).all()
            and max_priority[0] > 0
        ):
            raise PongrlError(f"{path}: replay buffer has damaged priorities (negative, zero maximum or not finite)")
        self.tree.leaves()[...] = priorities
        self.max_priority[...] = max_priority
        self.tree.rebuild()
