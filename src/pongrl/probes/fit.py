"""`pongrl probe fit`: linear probes of every recorded layer for every label, split by whole games.

For each (agent, layer): the games are split once, with a fixed seed, into train and test games (never
frames: neighbouring frames of one game are nearly the same, and would leak); features are standardized
with the train games' statistics. Two scores per label:
- AtariARI's protocol (Anand et al. 2019): each label's values (raw RAM bytes, or the derived labels'
  values) as classes, a linear softmax classifier, weighted F1 on the test games (a value never seen in
  training counts as a miss);
- for positions and velocities, R^2 of a ridge regression (scikit-learn), its penalty chosen per label on
  held-out train games (whole games again) and refitted on all of them. The ball's position and velocity are
  fitted and scored on in-play frames (their bytes read 0 while it is out of play: `ball_in_play` is its own
  label), the predictive labels where they are defined; the rows' frame counts are the split's.
Each score comes with its control (Hewitt and Liang 2019): the same probe trained on the train games'
labels shuffled across frames, scored against the true test labels. Selectivity is score minus control:
a strong probe on a layer that does not know the label scores high on the control too. The baselines of
AtariARI's table are rows of their own: `random-init` (the first agent's architecture, untrained) and each
agent's `input` layer (its observation's pixels).

About 500 lines on purpose: the split, the two probes, their controls and the frames each label is scored on are
one protocol, and a reader checks it in one place.
"""

from __future__ import annotations

import json
import os

import numpy as np
import torch

from pongrl.checkpoint import write_csv
from pongrl.errors import PongrlError
from pongrl.probes.collect import SETTINGS_FILE, game_files
from pongrl.probes.labels import IN_PLAY_LABELS, LABELS, PREDICTIVE_LABELS, REGRESSION_LABELS, scored_frames

TEST_FRACTION = 0.2
# Below these a probe's test score rests on a few neighbouring frames and means little: fit refuses (or, when
# asked to go on, marks every row).
MIN_TEST_FRAMES = 1_000
MIN_TEST_GAMES = 2
SPLIT_SEED = 0
# Ridge penalties tried, per 1,000 train frames; each label's is chosen on held-out train games.
RIDGE_ALPHAS = (0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0)
VALIDATION_FRACTION = 0.25
CLASSIFIER_EPOCHS = 8
CLASSIFIER_MIN_STEPS = 400  # small collects get more epochs: 8 epochs of a few batches leave a probe unfitted
CLASSIFIER_BATCH = 512
COLUMNS = [
    "agent",
    "env_step",
    "layer",
    "label",
    "metric",
    "score",
    "control",
    "selectivity",
    "train_frames",
    "train_games",
    "test_frames",
    "test_games",
    "small_test",
]


def split_games(frames: dict[int, int], seed: int = SPLIT_SEED) -> tuple[list[int], list[int]]:
    """Whole games to train and test, disjoint (asserted), from each game's frame count: in a seeded random
    order, the first games whose frames come closest to TEST_FRACTION of all frames (at least one game, and
    at least one left to train on). Games differ in length (a collect's last game is cut short), so a share
    of the games could be a share of almost no frames."""
    if len(frames) < 2:
        raise PongrlError(f"probes need at least two games to split train from test; the collect holds {len(frames)}")
    order = [int(game) for game in np.random.default_rng(seed).permutation(sorted(frames))]
    taken = np.cumsum([frames[game] for game in order[:-1]])
    test_count = int(np.argmin(np.abs(taken - TEST_FRACTION * sum(frames.values())))) + 1
    test, train = sorted(order[:test_count]), sorted(order[test_count:])
    assert not set(train) & set(test)
    return train, test


def is_small_test(test_frames: int, test_games: int) -> bool:
    return test_frames < MIN_TEST_FRAMES or test_games < MIN_TEST_GAMES


def refuse_small_test(data: "ProbeData", test_games: list[int]) -> None:
    """One line that says why the split is too small to score probes on, and how many frames would do."""
    test_frames = sum(data.frames_of[game] for game in test_games)
    typical_game = int(np.median(data.rows))
    enough = int(max(MIN_TEST_FRAMES, MIN_TEST_GAMES * typical_game) / TEST_FRACTION)
    raise PongrlError(
        f"{data.out_dir}: the split by whole games leaves {test_frames:,} test frames in "
        f"{_games(len(test_games))}, under the floor of {MIN_TEST_FRAMES:,} frames in {MIN_TEST_GAMES} "
        f"games: collect about {-(-enough // 1000) * 1000:,} frames "
        f"(probe collect with a larger --frames continues the collect), "
        f"or pass --allow-small-test to fit anyway with every row marked"
    )


class ProbeData:
    """The game files of a collect, read a dataset at a time."""

    def __init__(self, out_dir: str):
        import h5py

        self.out_dir = out_dir
        settings_path = os.path.join(out_dir, SETTINGS_FILE)
        try:
            with open(settings_path) as handle:
                self.settings = json.load(handle)
        except (OSError, ValueError):
            raise PongrlError(f"{out_dir}: not a probe collect (no readable {SETTINGS_FILE})") from None
        self.paths = game_files(out_dir)
        self.games, self.rows = [], []
        for path in self.paths:
            try:
                with h5py.File(path, "r") as data:
                    self.games.append(int(data.attrs["game"]))
                    self.rows.append(len(data["step"]))
                    if path == self.paths[0]:
                        self.layers = {int(index): sorted(group.keys()) for index, group in data["agents"].items()}
                        self.labels = set(data["labels"].keys())
            except (OSError, KeyError) as error:
                raise PongrlError(f"{path}: unreadable probe data ({error})") from None
        if not self.paths:
            raise PongrlError(f"{out_dir}: the collect holds no complete game yet")
        self.frames = sum(self.rows)
        self.frames_of = dict(zip(self.games, self.rows))

    @property
    def complete(self) -> bool:
        return self.frames >= self.settings.get("frames", 0)

    def read(self, dataset: str, games: list[int]) -> np.ndarray:
        import h5py

        chosen = set(games)
        parts = []
        for path, game in zip(self.paths, self.games):
            if game in chosen:
                with h5py.File(path, "r") as data:
                    parts.append(data[dataset][...])
        return np.concatenate(parts)


def _standardize(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, std = train.mean(0), train.std(0)
    std[std == 0] = 1.0
    return (train - mean) / std, (test - mean) / std


def ridge_r2(x_train, y_train, x_test, y_test, validation: np.ndarray | None = None) -> np.ndarray:
    """R^2 on the test frames of one ridge regression per column of y. With `validation` (a mask of the
    train frames that belong to held-out train games), each column's penalty is the one of RIDGE_ALPHAS
    that predicts the held-out games best; the probe is then refitted on every train frame. Without a
    fitted penalty a probe on a layer wider than its frames overfits (R^2 far below zero)."""
    import warnings

    from scipy.linalg import LinAlgWarning
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score

    def predict(alpha, fit_rows, x):
        # The smallest penalties leave the float16 layers' Gram matrix ill-conditioned, and scipy says so
        # once per fit (hundreds of lines in a study); the penalty chosen on held-out games answers for it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LinAlgWarning)
            model = Ridge(alpha=alpha * fit_rows.sum() / 1000).fit(x_train[fit_rows], y_train[fit_rows])
        return model.predict(x).reshape(len(x), -1)  # one column comes back flat

    def r2_columns(truth, predicted):
        return np.array(
            [
                r2_score(truth[:, k], predicted[:, k]) if np.ptp(truth[:, k]) > 0 else np.nan
                for k in range(truth.shape[1])
            ]
        )

    every = np.ones(len(x_train), bool)
    alphas = np.full(y_train.shape[1], 1.0)
    if validation is not None and validation.any() and (~validation).any():
        held_out = np.stack(
            [
                r2_columns(y_train[validation], predict(alpha, ~validation, x_train[validation]))
                for alpha in RIDGE_ALPHAS
            ]
        )
        alphas = np.array(RIDGE_ALPHAS)[np.nan_to_num(held_out, nan=-np.inf).argmax(0)]
    predicted = np.empty_like(y_test, dtype=np.float64)
    for alpha in np.unique(alphas):
        columns = alphas == alpha
        predicted[:, columns] = predict(alpha, every, x_test)[:, columns]
    return r2_columns(y_test, predicted)


def classifier_f1s(x_train, y_train: dict, x_test, y_test: dict, seed: int) -> dict:
    """Weighted F1 on the test frames of one linear softmax classifier per probe (a name: its train and
    test labels), the probes trained side by side. One linear layer holds every probe's outputs and the
    loss is the sum of the probes' losses, so each probe's weights get only their own gradient (Adam and
    its weight decay act weight by weight): the same training as one probe at a time, on one pass over
    the features per batch instead of one per probe."""
    from sklearn.metrics import f1_score

    scores, heads = {}, []  # heads: (name, classes, targets, first output, last output)
    width = 0
    for name, labels in y_train.items():
        classes, targets = np.unique(labels, return_inverse=True)
        if len(classes) == 1:  # a constant: nothing to learn, it predicts its one value
            predicted = np.full_like(y_test[name], classes[0])
            scores[name] = float(f1_score(y_test[name], predicted, average="weighted", zero_division=0))
        else:
            heads.append((name, classes, torch.from_numpy(targets), width, width + len(classes)))
            width += len(classes)
    if not heads:
        return scores
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    features = torch.from_numpy(x_train)
    probes = torch.nn.Linear(features.shape[1], width)
    optimizer = torch.optim.Adam(probes.parameters(), lr=1e-3, weight_decay=1e-4)
    batches = -(-len(features) // CLASSIFIER_BATCH)
    for _ in range(max(CLASSIFIER_EPOCHS, -(-CLASSIFIER_MIN_STEPS // batches))):
        for index in torch.randperm(len(features), generator=generator).split(CLASSIFIER_BATCH):
            logits = probes(features[index])
            loss = sum(
                torch.nn.functional.cross_entropy(logits[:, first:last], targets[index])
                for _, _, targets, first, last in heads
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        logits = probes(torch.from_numpy(x_test))
    for name, classes, _, first, last in heads:
        predicted = classes[logits[:, first:last].argmax(1).numpy()]
        scores[name] = float(f1_score(y_test[name], predicted, average="weighted", zero_division=0))
    return scores


def repeated_test_games(data: ProbeData, train_games: list[int], test_games: list[int]) -> list[int]:
    """Test games whose ground truth repeats a train game's frame for frame (greedy play against the
    built-in AI is deterministic, so a collect can play one game twice): probes on them leak."""
    import hashlib

    def fingerprint(game: int) -> str:
        digest = hashlib.sha256()
        for name in ("ball_x", "ball_y", "player_y", "enemy_y"):
            digest.update(data.read(f"labels/{name}", [game]).tobytes())
        return digest.hexdigest()

    seen = {fingerprint(game) for game in train_games}
    return [game for game in test_games if fingerprint(game) in seen]


def repeated_games(out_dir: str, seed: int = SPLIT_SEED) -> list[int]:
    """The test games of the split of `out_dir`'s collect (by `seed`) that repeat a train game frame for frame:
    their probes leak (greedy play from the game's start repeats games; collect with sampling for distinct ones)."""
    data = ProbeData(out_dir)
    return repeated_test_games(data, *split_games(data.frames_of, seed))


def split_labels(data: ProbeData, labels: list[str], seed: int = SPLIT_SEED):
    """The games split into train and test, each side's labels by name (with ball_in_play, which says which
    frames the ball's labels are scored on), the control's shuffle of the train frames, and the mask of the train
    frames in held-out train games (whole games, for choosing penalties)."""
    train_games, test_games = split_games(data.frames_of, seed)
    read = dict.fromkeys([*labels, *(["ball_in_play"] if set(labels) & set(IN_PLAY_LABELS) else [])])
    y_train = {name: data.read(f"labels/{name}", train_games) for name in read}
    y_test = {name: data.read(f"labels/{name}", test_games) for name in read}
    shuffle = np.random.default_rng(seed + 1).permutation(len(next(iter(y_train.values()))))
    rows_of = data.frames_of
    held_out = (
        set(train_games[::-1][: int(round(VALIDATION_FRACTION * len(train_games)))]) if len(train_games) > 1 else set()
    )
    validation = np.concatenate([np.full(rows_of[game], game in held_out) for game in train_games])
    return train_games, test_games, y_train, y_test, shuffle, validation


def probe_layer(
    x_train,
    x_test,
    y_train: dict,
    y_test: dict,
    shuffle: np.ndarray,
    labels: list[str],
    classify_scales: bool = True,
    seed: int = SPLIT_SEED,
    validation: np.ndarray | None = None,
) -> list[dict]:
    """Every probe of one layer (standardized features): the R^2 of the labels on a scale and the F1 of
    the labels' classifiers, each with its shuffled-label control (`shuffle` permutes the train frames;
    `validation` marks the held-out train games that choose the ridge penalties). The ball's position and
    velocity get their R^2 on in-play frames and their F1 on all frames (AtariARI's protocol: out of play is a
    class); the predictive labels are probed where they are defined."""
    rows = []
    # Each predictive label is defined on frames of its own; the ball's labels share the in-play frames, one fit.
    groups = [[name] for name in labels if name in PREDICTIVE_LABELS]
    groups += [[name for name in labels if name in IN_PLAY_LABELS]]
    for names in [group for group in groups if group]:
        train_rows = scored_frames(names[0], y_train[names[0]], y_train.get("ball_in_play"))
        test_rows = scored_frames(names[0], y_test[names[0]], y_test.get("ball_in_play"))
        rows += _probe_on_frames(names, x_train, x_test, y_train, y_test, train_rows, test_rows, seed, validation)
    labels = [name for name in labels if name not in PREDICTIVE_LABELS]
    regression = [name for name in labels if name in REGRESSION_LABELS and name not in IN_PLAY_LABELS]
    if regression:
        targets_train = np.stack([y_train[name] for name in regression], 1).astype(np.float64)
        targets_test = np.stack([y_test[name] for name in regression], 1).astype(np.float64)
        scores = ridge_r2(x_train, targets_train, x_test, targets_test, validation)
        controls = ridge_r2(x_train, targets_train[shuffle], x_test, targets_test, validation)
        rows += [
            {"label": name, "metric": "r2", "score": score, "control": control, "selectivity": score - control}
            for name, score, control in zip(regression, scores, controls)
        ]
    classified = labels if classify_scales else [name for name in labels if name not in REGRESSION_LABELS]
    # Each label and its control (the labels shuffled) are two probes of one joint fit.
    scores = classifier_f1s(
        x_train,
        {
            **{(name, False): y_train[name] for name in classified},
            **{(name, True): y_train[name][shuffle] for name in classified},
        },
        x_test,
        {(name, control): y_test[name] for name in classified for control in (False, True)},
        seed,
    )
    for name in classified:
        score, control = scores[(name, False)], scores[(name, True)]
        rows.append({"label": name, "metric": "f1", "score": score, "control": control, "selectivity": score - control})
    return rows


MIN_DEFINED_FRAMES = 20  # a label scored on fewer train (or 2 test) frames gets no score


def _probe_on_frames(
    names: list[str], x_train, x_test, y_train: dict, y_test: dict, train_rows, test_rows, seed: int, validation
) -> list[dict]:
    """The probes and controls of labels scored on the same frames only (`train_rows`, `test_rows`), fitted
    jointly: R^2 for quantities, F1 for the point's outcome; NaN when too few frames hold them."""
    metric = "r2" if names[0] in REGRESSION_LABELS else "f1"
    count = len(names)
    if train_rows.sum() < MIN_DEFINED_FRAMES or test_rows.sum() < 2:
        scores = controls = [float("nan")] * count
    else:
        x_fit, x_score = x_train[train_rows], x_test[test_rows]
        y_fit = np.stack([y_train[name][train_rows] for name in names], 1)
        y_score = np.stack([y_test[name][test_rows] for name in names], 1)
        shuffled = y_fit[np.random.default_rng(seed + 1).permutation(len(y_fit))]
        if metric == "r2":
            held_out = validation[train_rows] if validation is not None else None
            targets = np.concatenate([y_fit, shuffled], 1).astype(np.float64)
            truths = np.concatenate([y_score, y_score], 1).astype(np.float64)
            found = ridge_r2(x_fit, targets, x_score, truths, held_out)
            scores, controls = found[:count], found[count:]
        else:
            fits = {(k, False): y_fit[:, k] for k in range(count)} | {(k, True): shuffled[:, k] for k in range(count)}
            truths = {(k, control): y_score[:, k] for k in range(count) for control in (False, True)}
            f1 = classifier_f1s(x_fit, fits, x_score, truths, seed)
            scores, controls = [f1[(k, False)] for k in range(count)], [f1[(k, True)] for k in range(count)]
    return [
        {
            "label": name,
            "metric": metric,
            "score": float(score),
            "control": float(control),
            "selectivity": float(score - control),
        }
        for name, score, control in zip(names, scores, controls)
    ]


def chosen_layers(
    data: ProbeData, layers: list[str] | None = None, agents: list[str] | None = None
) -> list[tuple[int, str]]:
    """The (agent index, layer) pairs a fit covers: every stored layer of every agent, or only those named."""
    return [
        (index, layer)
        for index, agent in enumerate(data.settings["agents"])
        if not agents or agent["name"] in agents
        for layer in data.layers[index]
        if not layers or layer in layers
    ]


def fit(
    out_dir: str,
    layers: list[str] | None = None,
    labels: list[str] | None = None,
    seed: int = SPLIT_SEED,
    progress=None,
    classify_scales: bool = True,
    agents: list[str] | None = None,
    allow_small_test: bool = False,
) -> tuple[list[dict], ProbeData]:
    """Fit every probe; returns the rows of probes.csv and the data read. `classify_scales=False` skips
    AtariARI's classifier for the labels that get R^2 (positions and velocities: up to ~200 classes each,
    most of the fitting time), as the study across checkpoints does; `agents` keeps only the agents of those
    names. A split whose test games hold fewer than MIN_TEST_FRAMES frames or MIN_TEST_GAMES games is
    refused, unless `allow_small_test`: then every row says small_test."""
    data = ProbeData(out_dir)
    known_layers = sorted({name for names in data.layers.values() for name in names})
    for layer in layers or []:
        if layer not in known_layers:
            raise PongrlError(f"no layer {layer!r} in {out_dir} (it has: {', '.join(known_layers)})")
    for label in labels or []:
        if label not in LABELS:
            raise PongrlError(f"no label {label!r} (labels: {', '.join(LABELS)})")
        if label not in data.labels:
            raise PongrlError(f"{out_dir}: its collect holds no label {label!r} (collected before pongrl had it)")
    names = [agent["name"] for agent in data.settings["agents"]]
    for name in agents or []:
        if name not in names:
            raise PongrlError(f"no agent {name!r} in {out_dir} (it has: {', '.join(names)})")
    labels = labels or [name for name in LABELS if name in data.labels]
    train_games, test_games = split_games(data.frames_of, seed)
    test_frames = sum(data.frames_of[game] for game in test_games)
    small_test = is_small_test(test_frames, len(test_games))
    if small_test and not allow_small_test:
        refuse_small_test(data, test_games)
    train_games, test_games, y_train, y_test, shuffle, validation = split_labels(data, labels, seed)
    rows = []
    fitted_inputs: dict[str, list[dict]] = {}  # by observation profile: agents of one profile share their input
    for index, layer in chosen_layers(data, layers, agents):
        agent = data.settings["agents"][index]
        base = {
            "agent": agent["name"],
            "env_step": agent["env_step"],
            "layer": layer,
            "train_frames": len(shuffle),
            "train_games": len(train_games),
            "test_frames": test_frames,
            "test_games": len(test_games),
            "small_test": small_test,
        }
        profile = agent.get("obs_profile")
        if layer == "input" and profile in fitted_inputs:
            rows += [{**base, **row} for row in fitted_inputs[profile]]
        else:
            x_train, x_test = _standardize(
                data.read(f"agents/{index}/{layer}", train_games).astype(np.float32),
                data.read(f"agents/{index}/{layer}", test_games).astype(np.float32),
            )
            probes = probe_layer(x_train, x_test, y_train, y_test, shuffle, labels, classify_scales, seed, validation)
            if layer == "input":
                fitted_inputs[profile] = probes
            rows += [{**base, **row} for row in probes]
        if progress:
            progress(1)
    return rows, data


def _games(count: int) -> str:
    return f"{count} game" + ("" if count == 1 else "s")


def split_summary(rows: list[dict]) -> str:
    """The frames and games the probes were trained and tested on, in words (the rows share one split)."""
    first = rows[0]
    text = (
        f"trained on {first['train_frames']:,} frames in {_games(first['train_games'])}, tested on "
        f"{first['test_frames']:,} frames in {_games(first['test_games'])}"
    )
    if first["small_test"]:
        text += (
            f" (under the floor of {MIN_TEST_FRAMES:,} test frames in {MIN_TEST_GAMES} games: every score is "
            f"marked small_test and means little)"
        )
    return text


def write_results(rows: list[dict], out_dir: str) -> tuple[str, str]:
    """probes.csv (every row) and probes.md (its split in words, then AtariARI's layout: one table per metric,
    a row per agent and layer, a column per label; control in brackets), in `out_dir` (made if missing)."""
    os.makedirs(out_dir, exist_ok=True)
    csv_path, md_path = os.path.join(out_dir, "probes.csv"), os.path.join(out_dir, "probes.md")
    write_csv(csv_path, rows, COLUMNS, number_format=".4f")
    lines = [f"Probes {split_summary(rows)}." if rows else "No probes.", ""]
    for metric, title in (("f1", "Weighted F1 (AtariARI's protocol)"), ("r2", "R^2 (ridge regression)")):
        chosen = [row for row in rows if row["metric"] == metric]
        if not chosen:
            continue
        labels = list(dict.fromkeys(row["label"] for row in chosen))
        keys = list(dict.fromkeys((row["agent"], row["layer"]) for row in chosen))
        table = {(row["agent"], row["layer"], row["label"]): row for row in chosen}
        lines += [
            f"### {title}, test games (control: shuffled labels)",
            "",
            "| agent | layer | " + " | ".join(labels) + " |",
            "|---|---|" + "---:|" * len(labels),
        ]
        for agent, layer in keys:
            cells = []
            for label in labels:
                row = table.get((agent, layer, label))
                cells.append(
                    "-" if row is None or np.isnan(row["score"]) else f"{row['score']:.2f} ({row['control']:.2f})"
                )
            lines.append(f"| {agent} | {layer} | " + " | ".join(cells) + " |")
        lines.append("")
    with open(md_path, "w") as handle:
        handle.write("\n".join(lines))
    return csv_path, md_path
