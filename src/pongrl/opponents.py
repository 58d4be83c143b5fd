"""The opponents of a self-play run's games: past snapshots of the policy, scripted paddles and frozen agents.

Plain self-play trains the policy against its current self only. Three kinds of games can take part of a run's
games instead, each a stated fraction (`pongrl train selfplay --opponent-pool F --scripted-fraction F
--agent-fraction F`; `--builtin-fraction` adds games against the built-in AI, pongrl.envs.builtin_mix). In each
of them another player holds one paddle and only the learner's steps enter the update. The learner takes the first
paddle (`first_0`, the right one) in a kind's even games and the second in its odd ones: one policy plays both
paddles, the second through a mirrored image that is not quite the first's, and a learner trained on the right
paddle alone lets its left-paddle play decay (docs/results.md). The games are laid out in the run's vector env as
[pool games][scripted games][agent games][self-play games][games against the built-in AI].

- The pool (`OpponentPool`): past snapshots of the policy (Unity ML-Agents' snapshot self-play, OpenAI Five's past
  opponents), a remedy for a policy that forgets what it used to beat. In pongrl's second self-play run,
  checkpoints that beat the built-in AI sat 100k agent steps from checkpoints that lost nearly every point.
  A snapshot is taken when training starts and every `--pool-every` agent steps, into a window of the last
  `--pool-size` (a new snapshot replaces the oldest in place). Each pool game draws its opponent from the window,
  uniformly, when its game starts. The opponents sample their actions from their policy, as the learner does, or
  with `--pool-play greedy` take its most probable action: a greedy copy returns every fast flat shot, as the
  built-in AI does, where a sampling copy lets a quarter through (docs/results.md).
- Scripted paddles (`ScriptedOpponents`, pongrl.scripted): a paddle parked or held, a random one, ball chasers. An
  agent that never met them can lose to a paddle that never moves. Each scripted game draws its opponent from
  `--scripted-opponents` when its game starts.
- Frozen agents (`AgentOpponents`): any agents (`--opponent-agents`: zoo agents, checkpoints, exploiters trained
  against the policy), greedy, drawn per game, each seeing its own observation profile of its side; their serves
  are assisted, as in matches between agents. Their weights are not saved with the run: the run names them, and a
  resume checks it meets the same weights.

The opponents, their draws and random streams are part of the learner's state, so a resume continues against the
same opponents.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from pongrl.config import pool_game_count
from pongrl.errors import PongrlError
from pongrl.nets import ActorCritic
from pongrl.scripted import scripted_player
from pongrl.seeding import derived_seed


class OpponentGames:
    """`count` consecutive games from `first_game` of a self-play vector env (entries 2g and 2g + 1 are game g's
    players), in each of which an opponent holds one paddle: the second in the kind's even games, the first in its
    odd ones. `opponent[i]` is the opponent game first_game + i plays now, drawn from `choices` as its game starts."""

    kind = ""  # the metrics' name for these games (return_vs_KIND)
    # Whether these opponents' serves are pressed for them: a player that never learned to serve (a scripted
    # paddle, an agent trained against the built-in AI) would otherwise stall its game after every point it wins.
    assisted = False

    def __init__(self, first_game: int, count: int, choices: int, rng: np.random.Generator):
        self.first_game, self.count, self.choices, self.rng = first_game, count, choices, rng
        local = np.arange(count)
        self.opponent_entries = 2 * (first_game + local) + (local % 2 == 0)
        self.opponent = np.zeros(count, np.int64)

    def learner_mask(self, num_entries: int) -> np.ndarray:
        """Which batch entries the update learns from: all but these opponents' paddles."""
        learner = np.ones(num_entries, bool)
        learner[self.opponent_entries] = False
        return learner

    def views(self) -> tuple[str, ...]:
        """The observation profiles besides the card's view that these opponents need the env to keep."""
        return ()

    def attach(self, env) -> None:
        """Play in `env` (a FastSelfPlayEnv keeping `views()`), serves assisted where `assisted`."""
        self.env = env
        if self.assisted:
            env.assist_serves(self.opponent_entries)

    def owns(self, entry: int) -> bool:
        """Whether batch entry `entry` belongs to one of these games."""
        return self.first_game <= entry // 2 < self.first_game + self.count

    def games_ended(self, game_ended: np.ndarray) -> None:
        """Each of these games that just ended (`game_ended`: per game of the env) meets a new opponent."""
        for game in np.flatnonzero(game_ended[self.first_game : self.first_game + self.count]):
            self.opponent[game] = self.rng.integers(self.choices)

    def playing(self):
        """(opponent index, its entries) for every opponent that plays now."""
        for index in np.unique(self.opponent):
            yield index, self.opponent_entries[self.opponent == index]

    def draws_state(self) -> dict:
        return {"opponent": torch.from_numpy(self.opponent.copy()), "rng": self.rng.bit_generator.state}

    def load_draws(self, state: dict) -> None:
        if len(state["opponent"]) != self.count:
            raise ValueError("the opponents' games do not match the run's fractions")
        self.opponent = state["opponent"].numpy().astype(np.int64)
        self.rng.bit_generator.state = state["rng"]


class OpponentPool(OpponentGames):
    kind = "pool"

    def __init__(self, config, num_games: int, num_actions: int, device: torch.device):
        self.pool_games = pool_game_count(config.opponent_pool, num_games)
        super().__init__(0, self.pool_games, 1, np.random.default_rng(derived_seed(config.seed, 31)))
        self.slots = [
            ActorCritic(num_actions, config.share_network, config.network, config.precision).to(device).eval()
            for _ in range(config.pool_size)
        ]
        self.filled = 0  # slots holding a snapshot (the choices of a game's draw)
        self.next_slot = 0  # where the next snapshot goes (the oldest once the window is full)
        self.greedy = config.pool_play == "greedy"

    def restart(self, agent: ActorCritic) -> None:
        """An empty window but for `agent` (the pool's first opponent), which every pool game plays."""
        self.filled, self.next_slot = 0, 0
        self.opponent[:] = 0
        self.snapshot(agent)

    def snapshot(self, agent: ActorCritic) -> None:
        self.slots[self.next_slot].load_state_dict(agent.state_dict())
        self.filled = self.choices = min(self.filled + 1, len(self.slots))
        self.next_slot = (self.next_slot + 1) % len(self.slots)

    @torch.inference_mode()
    def play(self, obs: torch.Tensor, actions: torch.Tensor) -> None:
        """Overwrite the pool opponents' actions with their own (sampled or greedy)."""
        for slot, entries in self.playing():
            entries = torch.from_numpy(entries)
            logits = self.slots[slot].logits(obs[entries.to(obs.device)])
            chosen = logits.argmax(dim=1) if self.greedy else torch.distributions.Categorical(logits=logits).sample()
            actions[entries] = chosen.cpu()

    def state_dict(self) -> dict:
        return {
            "snapshots": [self.slots[i].state_dict() for i in range(self.filled)],
            "next_slot": self.next_slot,
            **self.draws_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        snapshots = state["snapshots"]
        if len(snapshots) > len(self.slots) or len(state["opponent"]) != self.pool_games:
            raise ValueError("the opponent pool does not match --pool-size / --opponent-pool")
        for slot, weights in zip(self.slots, snapshots):
            slot.load_state_dict(weights)
        self.filled = self.choices = len(snapshots)
        self.next_slot = int(state["next_slot"])
        self.load_draws(state)


class ScriptedOpponents(OpponentGames):
    """Scripted paddles (pongrl.scripted) in `count` games from `first_game`, each game's drawn from `names`."""

    kind, assisted = "scripted", True

    def __init__(self, names: list[str], first_game: int, count: int, seed: int):
        super().__init__(first_game, count, len(names), np.random.default_rng(derived_seed(seed, 37)))
        self.players = [scripted_player(name, "seed", derived_seed(seed, 41, i)) for i, name in enumerate(names)]

    def play(self, obs: torch.Tensor, actions: torch.Tensor) -> None:
        """Overwrite the scripted paddles' actions with their own."""
        for index, entries in self.playing():
            chosen = self.players[index].act(obs[torch.from_numpy(entries).to(obs.device)].cpu().numpy())
            actions[torch.from_numpy(entries)] = torch.from_numpy(chosen)

    def state_dict(self) -> dict:
        return {**self.draws_state(), "players": [player.rng.bit_generator.state for player in self.players]}

    def load_state_dict(self, state: dict) -> None:
        if len(state["players"]) != len(self.players):
            raise ValueError("the scripted opponents do not match --scripted-opponents")
        self.load_draws(state)
        for player, rng_state in zip(self.players, state["players"]):
            player.rng.bit_generator.state = rng_state


class AgentOpponents(OpponentGames):
    """Frozen agents (pongrl.agent.Agent) in `count` games from `first_game`, greedy, each game's drawn from
    `agents` (with probabilities `weights`, or uniformly). An agent of the self-play card's view sees the env's
    observations; one of another profile (zoo:dqn's and zoo:ppo's "standard") sees that profile's view of its side,
    which the env keeps for it (`views`, `attach`). Their weights' digests are saved, so that a resume that would
    meet other weights under the same names is refused."""

    kind, assisted = "agents", True

    def __init__(self, agents: list, first_game: int, count: int, seed: int, weights: list[float] | None = None):
        super().__init__(first_game, count, len(agents), np.random.default_rng(derived_seed(seed, 43)))
        self.agents = agents
        self.weights = weights  # draw probabilities (a league's matchmaking); None: uniform
        self.digests = [weights_digest(agent.state_dict()) for agent in agents]

    def games_ended(self, game_ended: np.ndarray) -> None:
        if self.weights is None:
            return super().games_ended(game_ended)
        for game in np.flatnonzero(game_ended[self.first_game : self.first_game + self.count]):
            self.opponent[game] = self.rng.choice(self.choices, p=self.weights)

    def views(self) -> tuple[str, ...]:
        """The observation profiles besides the card's view that these agents see."""
        return tuple(sorted({agent.obs_profile for agent in self.agents} - {"seed"}))

    @torch.inference_mode()
    def play(self, obs: torch.Tensor, actions: torch.Tensor) -> None:
        """Overwrite the frozen agents' actions with their greedy ones."""
        for index, entries in self.playing():
            agent = self.agents[index]
            if agent.obs_profile == "seed":
                seen = obs[torch.from_numpy(entries).to(obs.device)].cpu().numpy()
            else:
                seen = self.env.player_views(entries, agent.obs_profile)
            actions[torch.from_numpy(entries)] = torch.from_numpy(agent.preferences(seen).argmax(axis=1))

    def state_dict(self) -> dict:
        return {**self.draws_state(), "digests": list(self.digests)}

    def load_state_dict(self, state: dict) -> None:
        saved = list(state["digests"])
        changed = [a.name for a, old, new in zip(self.agents, saved, self.digests) if old != new]
        if changed or len(saved) != len(self.digests):
            # A PongrlError, not a damaged checkpoint's: the checkpoint is whole, the files it names have changed.
            raise PongrlError(
                f"--opponent-agents {', '.join(changed) or self.agents[0].name}: the weights behind the name differ "
                "from those the run was saved with (restore them, or start a new run)"
            )
        self.load_draws(state)


def weights_digest(state_dict: dict) -> str:
    """A SHA-256 of a network's weights (names, shapes and values), whatever file they came from."""
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        tensor = state_dict[name].detach().to(torch.float32).contiguous().cpu()
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()
