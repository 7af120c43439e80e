"""Our pre-training checkpoints, read: `checkpoint_step` and `restore_weights`
read what `run_pretraining` resumes and `--init-checkpoint` starts from;
`load_pretraining_checkpoint` loads one of ours (a run's, or one
`electra_tf.conversion.convert` wrote) with its config and vocabulary, to
convert it onwards or inspect it.
"""

from __future__ import annotations

import dataclasses
import json
import os

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from electra_tf.config import ConfigError, ModelConfig, PretrainingConfig
from electra_tf.data.vocabulary import Vocabulary, VocabularyError
from electra_tf.pretraining.pretrainer import ElectraPretrainer

# Where a checkpoint written by this project keeps the optimizer step (the
# second under mixed_float16, whose loss-scale optimizer wraps ours).
_STEP_KEYS = (
    "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE",
    "optimizer/inner_optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE",
)


def checkpoint_step(path: str) -> int:
    """The optimizer step stored in a checkpoint of ours (0 if it has none)."""
    try:
        reader = tf.train.load_checkpoint(path)
    except (ValueError, tf.errors.OpError) as error:
        raise ConfigError(f"cannot read checkpoint {path}: {error}") from error
    for key in _STEP_KEYS:
        if reader.has_tensor(key):
            return int(reader.get_tensor(key))
    return 0


def restore_weights(pretrainer, path: str) -> None:
    """Loads the generator's and discriminator's weights from a checkpoint.

    Only the weights: a compiled Keras model tracks its optimizer as a child,
    so restoring `model=pretrainer` would also bring back the other run's step
    counter and Adam moments. Matching is by the object graph, so any
    checkpoint written by `run_pretraining` works; every weight must be found.
    """
    towers = {
        name: getattr(pretrainer, name)
        for name in (
            "discriminator_encoder",
            "discriminator",
            "discriminator_mlm",
            "generator",
        )
        if getattr(pretrainer, name, None) is not None
    }
    root = tf.train.Checkpoint(model=tf.train.Checkpoint(**towers))
    # A restore stopped by a tensor of another shape leaves TensorFlow's
    # pending restorations on the model, which warn one line per checkpoint
    # value when collected (hundreds of lines before the error): compare the
    # shapes first, and restore only a checkpoint whose shapes fit.
    differing = _shapes_that_differ(root, path)
    if differing:
        more = f" and {len(differing) - 3} more" if len(differing) > 3 else ""
        raise ConfigError(
            f"--init-checkpoint {path} does not hold this model's weights: "
            f"{'; '.join(differing[:3])}{more}"
        )
    try:
        root.read(path).expect_partial().assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.NotFoundError) as error:
        raise ConfigError(
            f"--init-checkpoint {path} does not hold this model's weights: "
            f"{_first_line(error)}"
        ) from None


def _shapes_that_differ(root, path) -> list[str]:
    """`"<object path>: shape [..] in the checkpoint, [..] in the model"` for
    each variable of `root` whose checkpoint value (matched through the
    checkpoint's object graph, as a restore matches it) has another shape."""
    try:
        reader = tf.train.load_checkpoint(path)
        graph = trackable_object_graph_pb2.TrackableObjectGraph()
        graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    except (ValueError, tf.errors.OpError):
        return []  # not an object-based checkpoint: the restore says what is wrong
    shapes = reader.get_variable_to_shape_map()
    view = tf.train.TrackableView(root)
    differing, pending, seen = [], [(root, 0, "")], set()
    while pending:
        trackable, node_id, name = pending.pop()
        if node_id in seen:
            continue
        seen.add(node_id)
        node = graph.nodes[node_id]
        # A variable (Keras' or TensorFlow's): its value's attribute.
        for attribute in node.attributes:
            if attribute.name != "VARIABLE_VALUE":
                continue
            stored = shapes.get(attribute.checkpoint_key)
            shape = [int(d) for d in getattr(trackable, "shape", ())]
            if stored is not None and list(stored) != shape:
                where = getattr(trackable, "path", None) or name.lstrip("/")
                differing.append(
                    f"{where}: shape {list(stored)} in the checkpoint, {shape} "
                    "in the model"
                )
        children = view.children(trackable)
        for reference in node.children:
            child = children.get(reference.local_name)
            if child is not None:
                pending.append(
                    (child, reference.node_id, f"{name}/{reference.local_name}")
                )
    return sorted(differing)


def _first_line(error: BaseException, limit: int = 400) -> str:
    """The error's first line, cut to `limit` characters (TensorFlow's
    "objects not bound" message goes on to print every variable's values)."""
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    text = text.split(" [<", 1)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclasses.dataclass
class PretrainingCheckpoint:
    """One of our checkpoints, loaded.

    Attributes:
        pretrainer: an `ElectraPretrainer` holding its weights.
        step: the optimizer step stored in it.
        vocabulary: the run's `Vocabulary` (with its casing), or None if its
            file is gone.
    """

    pretrainer: ElectraPretrainer
    step: int
    vocabulary: Vocabulary | None


def _newest_checkpoint(directory: str) -> str | None:
    """A run's newest checkpoint, or a converted one (written without the
    `checkpoint` state file) with the highest step."""
    latest = tf.train.latest_checkpoint(directory)
    if latest is not None:
        return latest
    prefixes = [
        name.removesuffix(".index")
        for name in tf.io.gfile.glob(os.path.join(directory, "ckpt-*.index"))
    ]
    steps = {p: p.rsplit("-", 1)[1] for p in prefixes}
    numbered = [p for p, step in steps.items() if step.isdigit()]
    return max(numbered, key=lambda p: int(steps[p])) if numbered else None


def _find_config(checkpoint: str) -> str:
    folder = os.path.dirname(os.path.abspath(checkpoint))
    for candidate in (folder, os.path.dirname(folder)):
        path = os.path.join(candidate, "config.json")
        if tf.io.gfile.exists(path):
            return path
    raise ConfigError(
        f"no config.json next to {checkpoint} or one directory up (a run's "
        "model directory has one); pass its path"
    )


def load_pretraining_checkpoint(path, config_path=None) -> PretrainingCheckpoint:
    """Loads one of our pre-training checkpoints with its run's config.

    Args:
        path: a checkpoint prefix (`runs/x/checkpoints/ckpt-1000`, or a
            converted `ckpt-<step>`), or a directory whose newest checkpoint
            is taken (a run's `checkpoints/` or the model directory itself).
        config_path: the run's `config.json`; default: found next to the
            checkpoint or one directory up.

    Raises:
        ConfigError: naming what is missing or does not match.
    """
    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        latest = _newest_checkpoint(path) or _newest_checkpoint(
            os.path.join(path, "checkpoints")
        )
        if latest is None:
            raise ConfigError(f"no checkpoint in {path}")
        path = latest
    elif not tf.io.gfile.exists(f"{path}.index"):
        what = "does not exist" if not tf.io.gfile.exists(path) else "is a file"
        raise ConfigError(
            f"no checkpoint at {path}: it {what}; pass a checkpoint prefix "
            "(runs/x/checkpoints/ckpt-1000, beside its .index file) or a "
            "directory of checkpoints"
        )
    config_path = config_path or _find_config(path)
    with tf.io.gfile.GFile(config_path) as f:
        try:
            config = json.load(f)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{config_path} is not JSON: {error}") from error
    if "model" not in config:
        raise ConfigError(f"{config_path} has no model config")
    vocabulary = None
    ids = {}
    vocabulary_path = config.get("vocabulary") or ""
    if vocabulary_path and not os.path.isabs(vocabulary_path):
        # A converted checkpoint's config names its vocabulary relative to
        # where it was written; look beside the config too.
        beside = os.path.join(os.path.dirname(config_path), "vocab.txt")
        if not tf.io.gfile.exists(vocabulary_path) and tf.io.gfile.exists(beside):
            vocabulary_path = beside
    if vocabulary_path:
        try:
            vocabulary = Vocabulary.from_file(
                vocabulary_path, bool(config.get("lowercase", True))
            )
        except VocabularyError:
            vocabulary = None
    if vocabulary is not None:
        ids = vocabulary.special_token_ids()
    pretrainer = ElectraPretrainer(
        ModelConfig.from_dict(config["model"]),
        PretrainingConfig.from_dict(config.get("pretraining", {})),
        **ids,
    )
    restore_weights(pretrainer, path)
    return PretrainingCheckpoint(
        pretrainer=pretrainer,
        step=checkpoint_step(path),
        vocabulary=vocabulary,
    )
