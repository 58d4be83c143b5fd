"""Past versions of the self-play policy as opponents (`pongrl train selfplay --opponent-pool F`).

Plain self-play trains the policy against its current self only, and it can forget how to play what it
used to be: in pongrl's second self-play run, checkpoints that beat the built-in AI on average sat
100k agent steps from checkpoints that lost nearly every point (docs/results.md). The common remedy is
to play part of the games against frozen snapshots of the policy from earlier in the run (Unity
ML-Agents' snapshot self-play, OpenAI Five's past opponents).

Here the first round(F x games) games are pool games: one paddle is played by a snapshot and only the
other's steps enter the update; the other games are self-play as before. The learner takes the first paddle
(`first_0`, the right one) in even pool games and the second in odd ones. Why both: one policy plays both
paddles, the second through a mirrored image that is not quite the first's, and a learner trained on the
right paddle alone let its left-paddle play decay, so that its snapshots (the opponents) got weaker by the
hour: a branch with every game a pool game went from +1.6 (plain self-play's right-paddle edge in variation 3)
to +8 points a game against 20k-step-old snapshots within 550k agent steps (docs/results.md). Runs saved
before this change had the learner on the first paddle of every pool game.
A snapshot of the policy is taken when training starts and every `--pool-every` agent steps, into a
window of the last `--pool-size` (a new snapshot replaces the oldest in place, so a game that was
playing the oldest goes on against the newest). Each pool game draws its opponent from the window,
uniformly, when its game starts. The opponents sample their actions from their policy, as the learner
does, or with `--pool-play greedy` take its most probable action. Why greedy: a greedy copy of the policy
defends like the built-in AI in the one way measured (it returns every fast flat shot, which a sampling copy
lets through a quarter of the time), so against it the learner is paid only for shots that beat a sharp
defender (docs/results.md). The pool is part of the learner's state, so a resume continues against the same
opponents.
"""

from __future__ import annotations

import numpy as np
import torch

from pongrl.config import pool_game_count
from pongrl.nets import ActorCritic
from pongrl.seeding import derived_seed


class OpponentPool:
    def __init__(self, config, num_games: int, num_actions: int, device: torch.device):
        self.pool_games = pool_game_count(config.opponent_pool, num_games)
        self.slots = [
            ActorCritic(num_actions, config.share_network, config.network, config.precision).to(device).eval()
            for _ in range(config.pool_size)
        ]
        self.filled = 0  # slots holding a snapshot
        self.next_slot = 0  # where the next snapshot goes (the oldest once the window is full)
        self.opponent = np.zeros(self.pool_games, np.int64)  # the slot each pool game plays against
        self.rng = np.random.default_rng(derived_seed(config.seed, 31))
        self.greedy = config.pool_play == "greedy"
        # The batch entry each pool game's opponent plays: entry 2g is game g's first paddle, 2g + 1 its second.
        games = np.arange(self.pool_games)
        self.opponent_entries = 2 * games + (games % 2 == 0)

    def learner_mask(self, num_entries: int) -> np.ndarray:
        """Which batch entries the update learns from: all but the pool opponents' paddles."""
        learner = np.ones(num_entries, bool)
        learner[self.opponent_entries] = False
        return learner

    def restart(self, agent: ActorCritic) -> None:
        """An empty window but for `agent` (the pool's first opponent), which every pool game plays."""
        self.filled, self.next_slot = 0, 0
        self.opponent[:] = 0
        self.snapshot(agent)

    def snapshot(self, agent: ActorCritic) -> None:
        self.slots[self.next_slot].load_state_dict(agent.state_dict())
        self.filled = min(self.filled + 1, len(self.slots))
        self.next_slot = (self.next_slot + 1) % len(self.slots)

    def games_ended(self, game_ended: np.ndarray) -> None:
        """Each pool game that just ended meets a new opponent drawn from the window."""
        for game in np.flatnonzero(game_ended[: self.pool_games]):
            self.opponent[game] = self.rng.integers(self.filled)

    @torch.inference_mode()
    def play(self, obs: torch.Tensor, actions: torch.Tensor) -> None:
        """Overwrite the pool opponents' actions with their own (sampled or greedy)."""
        for slot in np.unique(self.opponent):
            entries = torch.from_numpy(self.opponent_entries[self.opponent == slot])
            logits = self.slots[slot].logits(obs[entries.to(obs.device)])
            chosen = logits.argmax(dim=1) if self.greedy else torch.distributions.Categorical(logits=logits).sample()
            actions[entries] = chosen.cpu()

    def state_dict(self) -> dict:
        return {
            "snapshots": [self.slots[i].state_dict() for i in range(self.filled)],
            "next_slot": self.next_slot,
            "opponent": torch.from_numpy(self.opponent.copy()),
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict) -> None:
        snapshots = state["snapshots"]
        if len(snapshots) > len(self.slots) or len(state["opponent"]) != self.pool_games:
            raise ValueError("the opponent pool does not match --pool-size / --opponent-pool")
        for slot, weights in zip(self.slots, snapshots):
            slot.load_state_dict(weights)
        self.filled, self.next_slot = len(snapshots), int(state["next_slot"])
        self.opponent = state["opponent"].numpy().astype(np.int64)
        self.rng.bit_generator.state = state["rng"]
