"""`pongrl probe collect`, `fit`, `across`, `intervene` and `counterfactual`: linear probes of what each layer
of an agent knows, and whether it uses it, with progress bars on a terminal and the warnings a probe's reader needs
(an interrupted collect, test games that repeat train games); `features`, `gallery` and `steer` (sparse dictionaries
of its layers) and `aim` (does it aim by the opponent?) are in pongrl.cli.features.
"""

from __future__ import annotations

import os
import sys

from pongrl.cli.common import AGENT_HELP, finite_float, integer, positive_int
from pongrl.cli.features import add_features, cmd_aim, cmd_features, cmd_gallery, cmd_opponent_move, cmd_steer
from pongrl.errors import PongrlError


def add_probe(commands) -> None:
    probe = commands.add_parser("probe", help="linear probes of what each layer of an agent knows (RAM ground truth)")
    steps = probe.add_subparsers(
        dest="probe_command",
        metavar="{collect,fit,across,intervene,counterfactual,features,gallery,steer,aim,opponent-move}",
        required=True,
    )
    collect = steps.add_parser("collect", help="play games and record the RAM labels and every layer's activations")
    collect.add_argument(
        "agents",
        nargs="+",
        metavar="AGENT",
        help=AGENT_HELP + "; the first plays, all record their layers on the same frames",
    )
    collect.add_argument("--frames", type=positive_int, required=True, help="agent steps to record")
    collect.add_argument("--out", required=True, help="folder to write (an interrupted collect continues there)")
    collect.add_argument(
        "--opponent",
        default="builtin",
        metavar="B",
        help="builtin (single-player Pong), or an agent: the first AGENT plays it on the two-player "
        "emulator (default builtin)",
    )
    collect.add_argument(
        "--side",
        choices=("right", "left"),
        default="right",
        help="the first AGENT's paddle against an agent; every layer is recorded, and every label "
        "named, from its side (left: mirrored) (default right)",
    )
    collect.add_argument("--sample", action="store_true", help="the first agent samples its actions instead of greedy")
    collect.add_argument("--seed", type=integer, default=0, help="game seed (default 0)")
    collect.add_argument(
        "--whole-layers",
        default="",
        metavar="LAYERS",
        help="comma-separated layers to store whole instead of through the random projection (e.g. conv3, for a "
        "dictionary of it with probe features; the Nature network's conv3 is 3,136 floats a frame)",
    )
    fit = steps.add_parser("fit", help="fit linear probes per agent, layer and label; write probes.csv and probes.md")
    fit.add_argument("out", metavar="DIR", help="a folder written by pongrl probe collect")
    fit.add_argument("--layers", nargs="+", help="only these layers (default all)")
    fit.add_argument("--labels", nargs="+", help="only these labels (default all)")
    fit.add_argument(
        "--agents", nargs="+", metavar="NAME", help="only these agents, by the names collect gave them (default all)"
    )
    fit.add_argument(
        "--results",
        metavar="FOLDER",
        help="write probes.csv and probes.md here instead of DIR (a partial fit then leaves DIR's results as they are)",
    )
    fit.add_argument("--seed", type=integer, default=0, help="seed of the split into train and test games (default 0)")
    _add_allow_small_test(fit)
    across = steps.add_parser(
        "across", help="the study over runs' checkpoints: collect, fit, probes.png against env steps"
    )
    across.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run directories (all their kept checkpoints take part), shipped series such as "
        "'zoo:selfplay-small-*', or checkpoint files (grouped by their run)",
    )
    across.add_argument("--out", required=True, help="folder to write (an interrupted study continues there)")
    across.add_argument(
        "--every", type=positive_int, default=1, help="every K-th checkpoint of each run, and its last (default 1)"
    )
    across.add_argument("--frames", type=positive_int, default=20_000, help="agent steps to record (default 20000)")
    across.add_argument("--layers", nargs="+", help="only these layers (default all)")
    across.add_argument("--labels", nargs="+", help="only these labels (default all)")
    across.add_argument(
        "--greedy",
        action="store_true",
        help="the playing checkpoint plays greedily (default: it samples its actions, so that no two "
        "games repeat: greedy play against the built-in AI is deterministic)",
    )
    across.add_argument("--seed", type=integer, default=0, help="game seed (default 0)")
    _add_allow_small_test(across)
    across.add_argument(
        "--intervene-layer",
        nargs="+",
        metavar="L",
        help="then steer each recorded checkpoint along its probes' directions in these layers (conv1, ..., fc) "
        "while it plays the built-in AI, beside random directions: intervene.csv and used.png, the steering "
        "response against env steps (needs --intervene-label)",
    )
    across.add_argument(
        "--intervene-label", nargs="+", metavar="NAME", help="the labels to steer along (ball_y, landing_y, ...)"
    )
    across.add_argument(
        "--intervene-kind",
        nargs="+",
        default=["steer"],
        metavar="KIND",
        help="steer (along the probe: its reading moves by alpha), steer-pattern (along the label's "
        "pattern: the layer moves as it does, on average, when the label moves by alpha) and/or steer-partial "
        "(the pattern with the other --intervene-label labels held fixed) (default steer)",
    )
    _add_steering(across, [-20.0, 20.0])
    intervene = steps.add_parser(
        "intervene",
        help="steer or ablate a probe's direction inside the agent while it "
        "plays the built-in AI; does its paddle follow?",
    )
    intervene.add_argument("agent", metavar="AGENT", help=AGENT_HELP)
    intervene.add_argument(
        "--probes",
        required=True,
        metavar="DIR",
        help="a folder written by pongrl probe collect that recorded AGENT: the probes' directions are fitted on it",
    )
    intervene.add_argument(
        "--layer", nargs="+", required=True, metavar="L", help="the layers to edit (conv1, conv2, ..., fc)"
    )
    intervene.add_argument(
        "--label",
        nargs="+",
        required=True,
        metavar="NAME",
        help="the labels whose probe directions to move along (on a scale: ball_y, landing_y, ...)",
    )
    intervene.add_argument(
        "--kind",
        nargs="+",
        default=["steer"],
        metavar="KIND",
        help="steer (add alpha units of the label along the probe), steer-pattern (add alpha times the label's "
        "pattern: how the layer moves per unit of the label; a layer stored whole), steer-partial (the pattern "
        "with the other --label labels held fixed), ablate (remove the direction), "
        "mean-ablate (set it to its mean) (default steer)",
    )
    _add_steering(intervene, [-20.0, -10.0, 10.0, 20.0])
    intervene.add_argument("--seed", type=integer, default=0, help="game seed (default 0)")
    intervene.add_argument(
        "--out", metavar="FOLDER", help="where to write intervene.csv and intervene.png (default DIR/intervene)"
    )
    world = steps.add_parser(
        "counterfactual",
        help="move the ball in the emulator's RAM on copies of the agent's game "
        "states; how do the probe's reading and the agent's policy follow?",
    )
    world.add_argument("agent", metavar="AGENT", help=AGENT_HELP)
    world.add_argument(
        "--probes",
        required=True,
        metavar="DIR",
        help="a folder written by pongrl probe collect that recorded AGENT (the probe is fitted on it)",
    )
    world.add_argument("--layer", required=True, metavar="L", help="the layer whose probe is read (conv1, ..., fc)")
    world.add_argument("--label", default="ball_y", metavar="NAME", help="the probe's label (default ball_y)")
    world.add_argument(
        "--move",
        nargs="+",
        default=["ball_y=-10", "ball_y=+10"],
        metavar="NAME=DELTA",
        help="RAM edits: ball_y or ball_x moved by DELTA (default ball_y=-10 ball_y=+10)",
    )
    world.add_argument("--states", type=positive_int, default=50, help="game states to edit (default 50)")
    world.add_argument(
        "--steps-after",
        type=positive_int,
        default=4,
        help="agent steps played after the edit before reading (default 4: a whole new frame stack)",
    )
    world.add_argument("--seed", type=integer, default=0, help="game seed (default 0)")
    world.add_argument("--out", metavar="FILE", help="the CSV to write (default DIR/counterfactual.csv)")
    add_features(steps)


def _add_steering(parser, alphas: list[float]) -> None:
    """The flags of the games played under an edit: sizes, games per condition, sticky actions."""
    parser.add_argument(
        "--alpha",
        nargs="+",
        type=finite_float,
        default=alphas,
        metavar="A",
        help="steering sizes in units of the label, e.g. rows of ball height "
        f"(default {' '.join(f'{alpha:g}' for alpha in alphas)})",
    )
    parser.add_argument("--games", type=positive_int, default=10, help="games per condition (default 10)")
    parser.add_argument(
        "--random-draws",
        type=positive_int,
        default=1,
        metavar="K",
        help="random directions drawn as controls, each edited like the probe's (default 1)",
    )
    parser.add_argument(
        "--sticky-actions",
        type=finite_float,
        default=0.0,
        metavar="P",
        help="play the games under sticky actions P (default 0: the exact protocol, starts drawn)",
    )


def _add_allow_small_test(parser) -> None:
    parser.add_argument(
        "--allow-small-test",
        action="store_true",
        help="fit even when the split's test games hold too few frames or games to score on "
        "(refused otherwise, saying how many frames to collect); every row is then marked "
        "small_test",
    )


def _progress(total: int | None, unit: str):
    """A progress bar on a terminal, silent otherwise (logs and pipes get the final line only)."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, disable=not sys.stderr.isatty(), dynamic_ncols=True)


def _warn_repeated_games(out: str, seed: int) -> None:
    from pongrl.probes.fit import repeated_games

    repeated = repeated_games(out, seed)
    if repeated:
        print(
            f"pongrl probe: warning: {len(repeated)} test game(s) repeat a train game frame for frame "
            f"({', '.join(map(str, repeated))}): their probes leak; collect with --sample for distinct games",
            file=sys.stderr,
        )


def cmd_probe(args) -> int:
    return {
        "collect": _collect,
        "fit": _fit,
        "across": _across,
        "intervene": _intervene,
        "counterfactual": _counterfactual,
        "features": lambda args: cmd_features(args, _progress),
        "gallery": lambda args: cmd_gallery(args, _progress),
        "steer": lambda args: cmd_steer(args, _progress),
        "aim": lambda args: cmd_aim(args, _progress),
        "opponent-move": lambda args: cmd_opponent_move(args, _progress),
    }[args.probe_command](args)


def _collect(args) -> int:
    from pongrl.probes.collect import collect

    with _progress(args.frames, "frame") as bar:
        summary = collect(
            args.agents,
            args.frames,
            args.out,
            args.opponent,
            args.sample,
            args.seed,
            bar.update,
            side=args.side,
            whole_layers=tuple(name.strip() for name in args.whole_layers.split(",") if name.strip()),
        )
    print(
        f"{args.out}: {summary['frames']:,} frames in {summary['games']} games, layers of "
        f"{', '.join(summary['agents'])}"
    )
    return 0


def _fit(args) -> int:
    from pongrl.probes.fit import ProbeData, chosen_layers, fit, split_summary, write_results

    # Refused before fitting rather than after it, when the results are written.
    if args.results and os.path.exists(args.results) and not os.path.isdir(args.results):
        raise PongrlError(f"--results {args.results}: not a folder")
    data = ProbeData(args.out)
    if not data.complete:
        print(
            f"pongrl probe fit: {args.out} holds an interrupted collect ({data.frames:,} of "
            f"{data.settings['frames']:,} frames): fitting the {len(data.games)} complete games",
            file=sys.stderr,
        )
    _warn_repeated_games(args.out, args.seed)
    with _progress(len(chosen_layers(data, args.layers, args.agents)), "layer") as bar:
        rows, _ = fit(
            args.out,
            args.layers,
            args.labels,
            args.seed,
            bar.update,
            agents=args.agents,
            allow_small_test=args.allow_small_test,
        )
    csv_path, md_path = write_results(rows, args.results or args.out)
    print(f"{len(rows)} probes, {split_summary(rows)}: {csv_path}, {md_path}")
    return 0


def _across(args) -> int:
    from pongrl.probes.across import study_agents
    from pongrl.probes.charts import plot_across
    from pongrl.probes.collect import collect
    from pongrl.probes.fit import fit, split_summary, write_results

    if bool(args.intervene_layer) != bool(args.intervene_label):
        raise PongrlError("--intervene-layer and --intervene-label go together: give both, or neither")
    agents = study_agents(args.runs, args.every)
    if args.intervene_layer:
        from pongrl.probes.across import check_steering

        check_steering(args.out, agents[0], _across_plan(args))
    print(
        f"pongrl probe across: {len(agents)} checkpoints record {args.frames:,} frames played by {agents[0]}",
        file=sys.stderr,
    )
    with _progress(args.frames, "frame") as bar:
        collect(agents, args.frames, args.out, sample=not args.greedy, seed=args.seed, progress=bar.update)
    _warn_repeated_games(args.out, args.seed)
    with _progress(None, "layer") as bar:
        rows, data = fit(
            args.out,
            args.layers,
            args.labels,
            progress=bar.update,
            classify_scales=False,
            allow_small_test=args.allow_small_test,
        )
    csv_path, md_path = write_results(rows, args.out)
    chart = plot_across(rows, data.settings["agents"], os.path.join(args.out, "probes.png"))
    print(f"{len(rows)} probes of {len(agents)} checkpoints, {split_summary(rows)}: {csv_path}, {md_path}, {chart}")
    if args.intervene_layer:
        _intervene_across(args, len(agents))
    return 0


def _across_plan(args):
    """The steering that `probe across --intervene-...` asks for."""
    from pongrl.probes.intervene import Intervention

    return Intervention(
        args.intervene_layer,
        args.intervene_label,
        args.intervene_kind,
        args.alpha,
        args.games,
        args.seed,
        args.sticky_actions,
        args.random_draws,
    )


def _intervene_across(args, checkpoints: int) -> None:
    from pongrl.probes.across import INTERVENE_CSV, intervene_across, steering_response
    from pongrl.probes.charts import plot_used

    plan = _across_plan(args)
    with _progress(checkpoints * plan.games_to_play(), "game") as bar:
        rows = intervene_across(args.out, plan, bar.update)
    responses = steering_response(rows)
    chart = plot_used(responses, os.path.join(args.out, "used.png"))
    _print_responses(responses)
    print(f"steering responses of {checkpoints} checkpoints: {os.path.join(args.out, INTERVENE_CSV)}, {chart}")


def _print_responses(responses: list[dict]) -> None:
    """One line per steering response (`across.steering_response`), with its checkpoint where it has one."""
    for row in responses:
        where = f"{row['run']} {row['env_step']:>10,.0f} " if row["run"] else ""
        print(
            f"{where}{row['layer']} {row['label']} {row['kind']} {row['direction']}: steering response "
            f"{row['response']:+.3f} [{row['response_low']:+.3f}, {row['response_high']:+.3f}] paddle rows per unit"
            f" (probe R^2 {row['probe_r2']:.2f})"
        )


def _intervene(args) -> int:
    from pongrl.probes.across import steering_response
    from pongrl.probes.intervene import Intervention, describe, intervene, write_results

    out = args.out or os.path.join(args.probes, "intervene")
    if os.path.exists(out) and not os.path.isdir(out):
        raise PongrlError(f"--out {out}: not a folder")
    plan = Intervention(
        args.layer, args.label, args.kind, args.alpha, args.games, args.seed, args.sticky_actions, args.random_draws
    )
    with _progress(plan.games_to_play(), "game") as bar:
        rows = intervene(args.agent, args.probes, plan, bar.update)
    csv_path, chart_path = write_results(rows, out)
    for row in rows:
        print(describe(row))
    _print_responses(steering_response(rows))
    print(f"{len(rows)} conditions x {args.games} games: {csv_path}, {chart_path}")
    return 0


def _counterfactual(args) -> int:
    from pongrl.probes.counterfactual import counterfactuals, describe, parse_move, write_results

    moves = [parse_move(text) for text in args.move]
    out = args.out or os.path.join(args.probes, "counterfactual.csv")
    if os.path.isdir(out):
        raise PongrlError(f"--out {out}: a folder, not a file")
    with _progress(args.states, "state") as bar:
        rows = counterfactuals(
            args.agent, args.probes, args.layer, args.label, moves, args.states, args.steps_after, args.seed, bar.update
        )
    for row in rows:
        print(describe(row))
    print(f"{len(rows)} moves x {args.states} states: {write_results(rows, out)}")
    return 0
