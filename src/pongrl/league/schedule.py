"""The league's schedule: which jobs each round holds, with their opponents and matchmaking weights, as a pure
function of the league directory's files (its settings, the finished jobs' results). A resume after any stop
computes the same schedule again; a round's jobs are fixed in `rounds/rNNN.json` when the round starts.

A round (AlphaStar's league, Vinyals et al. 2019, made small):
- `main`: the main agent trains on from its last weights against a mix: the built-in AI, the scripted battery,
  league members drawn by prioritized fictitious self-play (opponents it beats least, drawn most), its own recent
  snapshots, and itself;
- `main-exploiter`: a new exploiter trained against the main as the round starts, from random weights,
  warm-started from the last main exploiter (the iterated adversaries of Tseng et al. 2024) or from the member
  that does best against the main;
- `league-exploiter`: trains against the whole league by the same matchmaking, to find what nobody covers;
- `matches-NAME`: each new member plays every member before it, the battery and (a main) the built-in AI.
The three training jobs of a round run side by side; the matches wait for them; the next round waits for the
matches, whose results weight its opponents. Round 0 only plays the matches of the starting members.
"""

from __future__ import annotations

import math
import os

from pongrl import zoo
from pongrl.league.settings import LeagueSettings, read_json, write_json
from pongrl.scripted import scripted_names

ROLES = ("main", "main-exploiter", "league-exploiter")
MEMBER_PREFIX = {"main": "main", "main-exploiter": "mx", "league-exploiter": "lx"}


def round_file(league_dir: str, number: int) -> str:
    return os.path.join(league_dir, "rounds", f"r{number:03d}.json")


def job_dir(league_dir: str, job_id: str) -> str:
    return os.path.join(league_dir, "jobs", job_id)


def result_file(league_dir: str, job_id: str) -> str:
    return os.path.join(job_dir(league_dir, job_id), "result.json")


def member_name(role: str, number: int) -> str:
    return f"{MEMBER_PREFIX[role]}-r{number:03d}"


def member_file(name: str) -> str:
    """Where a trained member's weights lie, relative to the league directory."""
    return os.path.join("members", name + ".safetensors")


def resolve(league_dir: str, spec: str) -> str:
    """A member's spec as an agent spec: zoo and Hub names as they are, files under the league directory."""
    return spec if ":" in spec else os.path.join(league_dir, spec)


def starting_members(settings: LeagueSettings) -> list[dict]:
    """The main at round 0 (the --init agent) and the other agents the league starts with."""
    members = [{"name": member_name("main", 0), "spec": settings.init, "role": "main", "round": 0}]
    for spec in (spec.strip() for spec in settings.members.split(",")):
        if spec and spec != settings.init:
            if ":" in spec:  # zoo:NAME, hf://...
                name = spec.removeprefix(zoo.PREFIX).replace(":", "-").replace("/", "-")
            else:  # a file: its name without the folder and the extension
                name = os.path.splitext(os.path.basename(spec.rstrip("/")))[0]
            while name in {member["name"] for member in members}:
                name += "-2"
            members.append({"name": name, "spec": spec, "role": "member", "round": 0})
    return members


def keep_starting_files(league_dir: str, plan: dict) -> dict:
    """Round 0's plan with every starting member given as a file copied into the league (members/NAME.safetensors)
    and named by that copy: a league must not depend on files outside its directory, which may move or change."""
    from pongrl.agent import load_agent, save_safetensors_agent

    copies = {}
    for member in plan["new_members"]:
        if ":" in member["spec"]:
            continue
        inside = member_file(member["name"])
        if not os.path.exists(os.path.join(league_dir, inside)):
            agent = load_agent(member["spec"])
            os.makedirs(os.path.join(league_dir, "members"), exist_ok=True)
            save_safetensors_agent(
                os.path.join(league_dir, inside), agent.state_dict(), agent.algo, agent.env_step, agent.obs_profile
            )
        copies[member["spec"]] = inside

    def renamed(value):
        if isinstance(value, dict):
            return {key: copies.get(item, item) if key == "spec" else renamed(item) for key, item in value.items()}
        return [renamed(item) for item in value] if isinstance(value, list) else value

    return renamed(plan)


def rounds_started(league_dir: str) -> int:
    """How many rounds have their file (round 0 included)."""
    number = 0
    while os.path.exists(round_file(league_dir, number)):
        number += 1
    return number


def read_round(league_dir: str, number: int) -> dict:
    return read_json(round_file(league_dir, number))


def done(league_dir: str, job_id: str) -> bool:
    return os.path.exists(result_file(league_dir, job_id))


def round_done(league_dir: str, number: int) -> bool:
    return all(done(league_dir, job_id) for job_id in read_round(league_dir, number)["jobs"])


def members(league_dir: str, through_round: int) -> list[dict]:
    """Every member that entered the league by the end of round `through_round`, in order of entry."""
    entered = []
    for number in range(through_round + 1):
        entered += read_round(league_dir, number)["new_members"]
    return entered


def match_results(league_dir: str, through_round: int) -> list[dict]:
    """The results of every matches job of the rounds up to `through_round` that finished."""
    results = []
    for number in range(min(through_round, rounds_started(league_dir) - 1) + 1):
        for job_id, job in read_round(league_dir, number)["jobs"].items():
            if job["kind"] == "matches" and done(league_dir, job_id):
                results.append(read_json(result_file(league_dir, job_id)))
    return results


def win_rates(results: list[dict], player: str) -> dict[str, tuple[float, int]]:
    """`player`'s share of points of games won against each member it met (draws half), and the games: from the
    matches it played and those its opponents played against it."""
    tally: dict[str, list[float]] = {}
    for result in results:
        for row in result["rows"]:
            if row["kind"] != "agent":
                continue
            if result["member"] == player:
                won, other = row["wins"] + 0.5 * row["draws"], row["opponent"]
            elif row["opponent"] == player:
                won, other = row["losses"] + 0.5 * row["draws"], result["member"]
            else:
                continue
            entry = tally.setdefault(other, [0.0, 0])
            entry[0] += won
            entry[1] += row["games"]
    return {other: ((won + 1) / (games + 2), int(games)) for other, (won, games) in tally.items()}


def payoff(results: list[dict]) -> dict[str, dict[str, dict]]:
    """member -> opponent -> {"point_difference", "win_rate", "games"} from the member's side, for every pair
    played (each direction), and the member's rows against the built-in AI and the battery."""
    table: dict[str, dict[str, dict]] = {}
    for result in results:
        for row in result["rows"]:
            cell = {
                "point_difference": row["point_difference"],
                "win_rate": (row["wins"] + 0.5 * row["draws"]) / row["games"] if row["games"] else math.nan,
                "games": row["games"],
            }
            table.setdefault(result["member"], {})[row["opponent"]] = cell
            if row["kind"] == "agent":
                table.setdefault(row["opponent"], {})[result["member"]] = {
                    "point_difference": 0.0 - row["point_difference"],
                    "win_rate": 1 - cell["win_rate"],
                    "games": row["games"],
                }
    return table


def strongest_opponent(league_dir: str, main: dict, others: list[dict], scores: dict[str, dict]) -> str:
    """The spec of the member that does best against the main (the main's lowest point difference in `scores`,
    its row of the payoff table) among those whose weights can start an exploiter of the main's network: the warm
    start of the cheapest strong attack, a peer that already nearly holds its own, trained on against it. "" if
    none; among equal scores, the member that entered first."""
    from pongrl.agent import PolicyAgent, load_agent  # torch, for the leagues that ask
    from pongrl.nets import is_shared_torso

    def network_kind(agent) -> tuple:
        weights = agent.network.state_dict()
        return agent.obs_profile, is_shared_torso(weights), {name: tuple(t.shape) for name, t in weights.items()}

    wanted = network_kind(load_agent(resolve(league_dir, main["spec"])))
    met = [member for member in others if member["name"] in scores]
    for member in sorted(met, key=lambda member: scores[member["name"]]["point_difference"]):
        agent = load_agent(resolve(league_dir, member["spec"]))
        if isinstance(agent, PolicyAgent) and network_kind(agent) == wanted:
            return member["spec"]
    return ""


def matchmaking_weights(settings: LeagueSettings, rates: dict, opponents: list[dict]) -> list[float]:
    """Prioritized fictitious self-play: each opponent's weight from the player's (smoothed) win rate p against
    it; an opponent not met yet counts as p = 1/2."""
    weights = []
    for opponent in opponents:
        p = rates.get(opponent["name"], (0.5, 0))[0]
        if settings.matchmaking == "hard":
            weights.append((1 - p) ** settings.matchmaking_power)
        elif settings.matchmaking == "even":
            weights.append(p * (1 - p))
        else:
            weights.append(1.0)
    return weights


def heaviest(settings: LeagueSettings, opponents: list[dict], weights: list[float]) -> tuple[list[dict], list[float]]:
    """The `max_opponents` opponents of most weight (earlier members first among equals)."""
    order = sorted(range(len(opponents)), key=lambda i: (-weights[i], i))[: settings.max_opponents]
    order.sort()
    return [opponents[i] for i in order], [weights[i] for i in order]


def training_settings(settings: LeagueSettings, seed: int) -> dict:
    """What every member's training run shares (pongrl.config.PPOConfig fields)."""
    return dict(
        seed=seed,
        num_envs=settings.num_envs,
        network=settings.network,
        num_steps=settings.num_steps,
        num_minibatches=settings.num_minibatches,
        update_epochs=settings.update_epochs,
        max_cycles=settings.max_cycles,
        checkpoint_every=settings.checkpoint_every,
        sticky_actions=settings.sticky_actions,
        eval_every=0,
        num_checkpoints=1,
        keep_checkpoints=2,
        torch_threads=1,
    )


def league_mix(settings: LeagueSettings, league_dir: str, opponents: list[dict], weights: list[float]) -> dict:
    """The self-play settings of games against league members drawn by these weights (none: no such games)."""
    if not opponents:
        return {}
    return dict(
        opponent_agents=",".join(resolve(league_dir, member["spec"]) for member in opponents),
        opponent_weights=",".join(f"{weight:.6g}" for weight in weights),
    )


def plan_round(league_dir: str, settings: LeagueSettings, number: int) -> dict:
    """The jobs of round `number` (rounds before it complete), as `rounds/rNNN.json` keeps them."""
    seed = settings.seed * 1000 + number * 10
    if number == 0:
        new = starting_members(settings)
        return {"round": 0, "new_members": new, "jobs": matches_jobs(settings, [], new, 0, seed)}
    league = members(league_dir, number - 1)
    results = match_results(league_dir, number - 1)
    main_before = member_name("main", number - 1)
    main = next(member for member in league if member["name"] == main_before)
    main_spec = main["spec"]
    jobs = {}

    others = [member for member in league if member["name"] != main_before]
    weights = matchmaking_weights(settings, win_rates(results, main_before), others)
    opponents, weights = heaviest(settings, others, weights)
    fractions = dict(
        builtin_fraction=settings.builtin_fraction,
        scripted_fraction=settings.scripted_fraction if settings.battery.strip() else 0.0,
        scripted_opponents=settings.battery or "all",
        agent_fraction=settings.league_fraction if opponents else 0.0,
        opponent_pool=settings.snapshot_fraction,
        pool_every=settings.snapshot_every,
    )
    jobs[f"r{number:03d}-main"] = {
        "kind": "train",
        "role": "main",
        "member": member_name("main", number),
        "steps": settings.main_steps,
        "init": main_spec,
        "settings": {
            **training_settings(settings, seed + 1),
            **{name: value for name, value in fractions.items() if value},
            **league_mix(settings, league_dir, opponents, weights),
            "learning_rate": settings.learning_rate,
            "anneal_lr": False,
            "ent_coef": settings.ent_coef,
        },
        "opponents": [member["name"] for member in opponents],
        "weights": weights,
    }

    warm = settings.main_exploiter_init == "warm" or (settings.main_exploiter_init == "alternate" and number % 2 == 0)
    last_exploiter = [member for member in league if member["role"] == "main-exploiter"]
    if settings.main_exploiter_init == "strongest":
        exploiter_init = strongest_opponent(league_dir, main, others, payoff(results).get(main_before, {}))
    elif warm:
        exploiter_init = last_exploiter[-1]["spec"] if last_exploiter else settings.warm_from
    else:
        exploiter_init = ""
    jobs[f"r{number:03d}-main-exploiter"] = {
        "kind": "train",
        "role": "main-exploiter",
        "member": member_name("main-exploiter", number),
        "steps": settings.main_exploiter_steps,
        "target": main_spec,
        "init": exploiter_init,
        "settings": training_settings(settings, seed + 2),
    }

    reset = (number - 1) % settings.league_exploiter_reset == 0
    last_league_exploiter = [member for member in league if member["role"] == "league-exploiter"]
    rates = win_rates(results, last_league_exploiter[-1]["name"]) if last_league_exploiter else {}
    opponents, weights = heaviest(settings, league, matchmaking_weights(settings, rates, league))
    jobs[f"r{number:03d}-league-exploiter"] = {
        "kind": "train",
        "role": "league-exploiter",
        "member": member_name("league-exploiter", number),
        "steps": settings.league_exploiter_steps,
        "init": "" if reset or not last_league_exploiter else last_league_exploiter[-1]["spec"],
        "settings": {
            **training_settings(settings, seed + 3),
            "agent_fraction": 1.0,
            **league_mix(settings, league_dir, opponents, weights),
        },
        "opponents": [member["name"] for member in opponents],
        "weights": weights,
    }
    new = [
        {"name": job["member"], "spec": member_file(job["member"]), "role": job["role"], "round": number}
        for job in jobs.values()
    ]
    trained_by = {job["member"]: job_id for job_id, job in jobs.items()}
    jobs.update(matches_jobs(settings, league, new, number, seed, trained_by))
    return {"round": number, "new_members": new, "jobs": jobs}


def matches_jobs(
    settings: LeagueSettings,
    league: list[dict],
    new: list[dict],
    number: int,
    seed: int,
    trained_by: dict[str, str] | None = None,
) -> dict:
    """Each new member against every member before it (the league, then the new ones listed earlier), the
    battery, and, for a main, the built-in AI under both protocols. `trained_by` names the job that trains each
    new member: a member's matches wait for its own training and that of the new ones it plays, not for the rest
    (so the main's matches use a core while the exploiters still train)."""
    trained_by = trained_by or {}
    battery = scripted_names(settings.battery) if settings.battery.strip() else []
    jobs = {}
    for index, member in enumerate(new):
        earlier = league + new[:index]
        jobs[f"r{number:03d}-matches-{member['name']}"] = {
            "kind": "matches",
            "member": member["name"],
            "spec": member["spec"],
            "against": [{"name": other["name"], "spec": other["spec"]} for other in earlier],
            "battery": battery,
            "builtin_games": settings.builtin_games if member["role"] == "main" else 0,
            "games": settings.match_games,
            "sticky_actions": settings.sticky_actions,
            "max_frames": settings.max_frames,
            "seed": seed + 5,
            "after": [trained_by[other["name"]] for other in new[: index + 1] if other["name"] in trained_by],
        }
    return jobs


def start_round(league_dir: str, settings: LeagueSettings, number: int) -> dict:
    """Fix round `number`'s jobs in its file (the same plan again if a stop came before the file was written)."""
    plan = plan_round(league_dir, settings, number)
    if number == 0:
        plan = keep_starting_files(league_dir, plan)
    write_json(round_file(league_dir, number), plan)
    return plan
