"""`pongrl probe features`, `gallery` and `steer`: sparse dictionaries of an agent's layers, beside the probes; and
`pongrl probe aim` and `opponent-move`: does the agent aim by where it believes the opponent is? (pongrl.cli.probe
adds these subcommands to `pongrl probe`; kept apart so that each file stays readable)."""

from __future__ import annotations

import os

from pongrl.cli.common import AGENT_HELP, finite_float, integer, positive_int
from pongrl.errors import PongrlError


def add_features(steps) -> None:
    """The parsers of `probe features` and `probe gallery`, under `pongrl probe`'s subcommands."""
    features = steps.add_parser(
        "features",
        help="learn a sparse dictionary (TopK sparse autoencoder) of one layer on a collect of the agent, judge "
        "it and match its features to the labels",
    )
    features.add_argument("agent", metavar="AGENT", help=AGENT_HELP)
    features.add_argument(
        "--probes", required=True, metavar="DIR", help="a folder written by pongrl probe collect that recorded AGENT"
    )
    features.add_argument(
        "--layer", default="fc", metavar="L", help="the layer, stored whole by the collect (default fc)"
    )
    features.add_argument("--size", type=positive_int, default=2048, help="features in the dictionary (default 2048)")
    features.add_argument(
        "--k", type=positive_int, default=32, help="features that fire on each frame: the sparsity (default 32)"
    )
    features.add_argument("--epochs", type=positive_int, default=10, help="passes over the train frames (default 10)")
    features.add_argument(
        "--games",
        type=integer,
        default=10,
        help="paired games against the built-in AI with the layer as it is and reconstructed; 0: none (default 10)",
    )
    features.add_argument(
        "--sticky-actions",
        type=finite_float,
        default=0.0,
        metavar="P",
        help="play those games under sticky actions P (default 0)",
    )
    features.add_argument(
        "--seed", type=integer, default=0, help="seed of the training and of the split into games (default 0)"
    )
    features.add_argument(
        "--allow-small-test",
        action="store_true",
        help="learn even when the split's test games hold too few frames or games to judge on (refused otherwise, "
        "saying how many frames to collect)",
    )
    features.add_argument(
        "--out",
        metavar="FOLDER",
        help="where to write dictionary.pt, features.csv and features.md (default DIR/features/L)",
    )
    gallery = steps.add_parser(
        "gallery", help="draw each feature of a dictionary on the frames where it fires most, as the agent plays"
    )
    gallery.add_argument("agent", metavar="AGENT", help=AGENT_HELP + "; the agent whose layer the dictionary is of")
    gallery.add_argument("--dictionary", required=True, metavar="FILE", help="a dictionary.pt of pongrl probe features")
    gallery.add_argument(
        "--features",
        nargs="+",
        type=integer,
        metavar="I",
        help="the features to draw (default: the live features that match no label, most frequent first, then "
        "those that match one, up to --count)",
    )
    gallery.add_argument("--count", type=positive_int, default=16, help="features drawn by default (default 16)")
    gallery.add_argument("--top", type=positive_int, default=6, help="frames shown per feature (default 6)")
    gallery.add_argument(
        "--frames", type=positive_int, default=5_000, help="agent steps played to find them (default 5000)"
    )
    gallery.add_argument("--seed", type=integer, default=0, help="game seed (default 0)")
    gallery.add_argument("--out", metavar="FOLDER", help="where to draw (default: gallery/ beside the dictionary)")
    steer = steps.add_parser(
        "steer",
        help="push a layer along dictionary features' directions while the agent plays the built-in AI, beside "
        "random directions of the same size; does its play change?",
    )
    steer.add_argument("agent", metavar="AGENT", help=AGENT_HELP + "; the agent whose layer the dictionary is of")
    steer.add_argument("--dictionary", required=True, metavar="FILE", help="a dictionary.pt of pongrl probe features")
    steer.add_argument(
        "--features",
        nargs="+",
        type=integer,
        metavar="I",
        help="the features to steer along (default: the 4 strongest that match no label)",
    )
    steer.add_argument(
        "--alpha",
        nargs="+",
        type=finite_float,
        default=[-3.0, 3.0],
        metavar="A",
        help="steering sizes, in units of the feature's mean activation where it fires (default -3 3)",
    )
    steer.add_argument("--games", type=positive_int, default=10, help="games per condition (default 10)")
    steer.add_argument(
        "--random-draws",
        type=positive_int,
        default=1,
        metavar="K",
        help="random directions per feature, of the same size, as controls (default 1)",
    )
    steer.add_argument(
        "--sticky-actions", type=finite_float, default=0.0, metavar="P", help="sticky actions P (default 0)"
    )
    steer.add_argument("--seed", type=integer, default=0, help="game seed (default 0)")
    steer.add_argument(
        "--out", metavar="FOLDER", help="where to write steer.csv and steer.png (default: steer/ beside the dictionary)"
    )

    aim = steps.add_parser(
        "aim",
        help="steer a layer along the probe of the opponent's paddle while the agent plays the built-in AI or "
        "another agent; does it send the ball elsewhere?",
    )
    aim.add_argument("agent", metavar="AGENT", help=AGENT_HELP)
    aim.add_argument(
        "--probes", required=True, metavar="DIR", help="a folder written by pongrl probe collect that recorded AGENT"
    )
    aim.add_argument("--layer", default="fc", metavar="L", help="the layer to steer (conv1, ..., fc) (default fc)")
    aim.add_argument(
        "--label",
        default="enemy_y",
        choices=("enemy_y", "enemy_vy"),
        help="the opponent's label whose probe to steer along (default enemy_y)",
    )
    aim.add_argument(
        "--kind",
        choices=("steer", "steer-pattern"),
        default="steer",
        help="steer (the probe's reading moves by alpha) or steer-pattern (the layer moves as it does, on average, "
        "with the opponent alpha units away) (default steer)",
    )
    aim.add_argument(
        "--alpha",
        nargs="+",
        type=finite_float,
        default=[-20.0, 20.0],
        metavar="A",
        help="steering sizes in units of the label (RAM rows, or rows per step) (default -20 20)",
    )
    aim.add_argument("--games", type=positive_int, default=10, help="games per condition (default 10)")
    aim.add_argument(
        "--random-draws", type=positive_int, default=1, metavar="K", help="random directions as controls (default 1)"
    )
    aim.add_argument("--sticky-actions", type=finite_float, default=0.0, metavar="P", help="sticky actions (default 0)")
    aim.add_argument("--seed", type=integer, default=0, help="game seed (default 0)")
    aim.add_argument(
        "--opponent",
        default="builtin",
        metavar="B",
        help="builtin (single-player Pong), or an agent at the left paddle of two-player Pong, greedy, serves "
        "pressed for both (no sticky actions then) (default builtin)",
    )
    aim.add_argument("--out", metavar="FILE", help="the CSV to write (default DIR/aim.csv)")

    move = steps.add_parser(
        "opponent-move",
        help="move the opponent's paddle up or down (by its own controls) while the ball flies to the agent, on "
        "the two-player game; does the agent send the ball elsewhere?",
    )
    move.add_argument("agent", metavar="AGENT", help=AGENT_HELP)
    move.add_argument("--opponent", required=True, metavar="B", help="the agent at the left paddle (greedy)")
    move.add_argument(
        "--returns", type=positive_int, default=20, help="the agent's incoming flights measured per game (default 20)"
    )
    move.add_argument("--games", type=positive_int, default=4, help="games, each from its own start (default 4)")
    move.add_argument(
        "--move-steps",
        type=positive_int,
        default=4,
        metavar="N",
        help="agent steps before each return in which the opponent is moved (default 4)",
    )
    move.add_argument("--seed", type=integer, default=0, help="the starts' seed (default 0)")
    move.add_argument("--out", metavar="FILE", default="opponent_move.csv", help="the CSV (default opponent_move.csv)")


def cmd_aim(args, progress) -> int:
    from pongrl.probes.aim import aim, describe, write_results

    out = args.out or os.path.join(args.probes, "aim.csv")
    if os.path.isdir(out):
        raise PongrlError(f"--out {out}: a folder, not a file")
    conditions = 1 + len(args.alpha) * (1 + args.random_draws)
    with progress(conditions * args.games, "game") as bar:
        rows = aim(
            args.agent,
            args.probes,
            args.layer,
            args.label,
            args.kind,
            tuple(args.alpha),
            args.games,
            args.seed,
            args.random_draws,
            args.sticky_actions,
            bar.update,
            args.opponent,
        )
    for row in rows:
        print(describe(row))
    print(f"{len(rows)} conditions x {args.games} games: {write_results(rows, out)}")
    return 0


def cmd_opponent_move(args, progress) -> int:
    from pongrl.probes.opponent_move import describe, opponent_moves, write_results

    if os.path.isdir(args.out):
        raise PongrlError(f"--out {args.out}: a folder, not a file")
    with progress(args.games, "game") as bar:
        rows = opponent_moves(
            args.agent, args.opponent, args.returns, args.games, args.seed, args.move_steps, progress=bar.update
        )
    for row in rows:
        print(describe(row))
    print(f"{args.games} games x {args.returns} flights: {write_results(rows, args.out)}")
    return 0


def cmd_features(args, progress) -> int:
    from pongrl.probes.features import batches, describe, learn_features, write_results

    out = args.out or os.path.join(args.probes, "features", args.layer)
    if os.path.exists(out) and not os.path.isdir(out):
        raise PongrlError(f"--out {out}: not a folder")
    total = batches(args.probes, args.size, args.epochs, args.seed) if os.path.isdir(args.probes) else None
    with progress(total, "batch") as bar:
        dictionary = learn_features(
            args.agent,
            args.probes,
            args.layer,
            args.size,
            args.k,
            args.epochs,
            args.games,
            args.seed,
            args.sticky_actions,
            bar.update,
            args.allow_small_test,
        )
    paths = write_results(dictionary, out)
    print("\n".join(describe(dictionary)))
    print(f"{', '.join(paths)}")
    return 0


def cmd_gallery(args, progress) -> int:
    from pongrl.probes.gallery import gallery

    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.dictionary)), "gallery")
    if os.path.exists(out) and not os.path.isdir(out):
        raise PongrlError(f"--out {out}: not a folder")
    with progress(args.frames, "frame") as bar:
        paths = gallery(
            args.agent, args.dictionary, out, args.features, args.count, args.top, args.frames, args.seed, bar.update
        )
    print(f"{len(paths)} features drawn: {os.path.join(out, 'gallery.md')}")
    return 0


def cmd_steer(args, progress) -> int:
    from pongrl.probes.steer_features import describe, steer_features, write_results

    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.dictionary)), "steer")
    if os.path.exists(out) and not os.path.isdir(out):
        raise PongrlError(f"--out {out}: not a folder")
    conditions = 1 + len(args.features or [None] * 4) * len(args.alpha) * (1 + args.random_draws)
    with progress(conditions * args.games, "game") as bar:
        rows = steer_features(
            args.agent,
            args.dictionary,
            args.features,
            tuple(args.alpha),
            args.games,
            args.seed,
            args.random_draws,
            args.sticky_actions,
            bar.update,
        )
    for row in rows:
        print(describe(row))
    csv_path, chart_path = write_results(rows, out)
    print(f"{len(rows)} conditions x {args.games} games: {csv_path}, {chart_path}")
    return 0
