"""Shared test helpers: tiny batches, models and TFRecords, the special-token ids, TF1
names."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pathlib  # noqa: E402
import re  # noqa: E402

import numpy as np  # noqa: E402

# How long a test waits for a subprocess: a guard against hangs only. Tests run
# on busy machines too (a 2-core box with training jobs beside the suite took a
# 5-minute subprocess past 300 s), so no test's outcome may hinge on speed.
SUBPROCESS_TIMEOUT = 3600
# Ids of the special tokens in every tiny test vocabulary (BERT's are 0, 100-103).
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
TINY_VOCABULARY_SIZE = 200
# A tiny random ELECTRA pair written by transformers (see make_fixture.py there).
HF_FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "hf_reference"
# The global_step of `tf1_checkpoint` (the base model's step count).
TF1_STEP = 766_000
SPECIAL_TOKEN_IDS = dict(
    pad_token_id=PAD, cls_token_id=CLS, sep_token_id=SEP, mask_token_id=MASK
)
# An `ElectraEncoder` small enough to build and trace in a second or two.
TINY_ENCODER = dict(
    vocabulary_size=50,
    num_layers=1,
    num_heads=2,
    hidden_dim=16,
    embedding_dim=8,
    intermediate_dim=32,
    dropout=0.0,
    max_sequence_length=8,
)


def random_batch(batch_size=8, length=32, seed=0, vocabulary_size=TINY_VOCABULARY_SIZE):
    """`[CLS] A [SEP] B [SEP] [PAD]...` batches with varied real lengths."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, vocabulary_size, (batch_size, length)).astype("int32")
    segment_ids = np.zeros_like(token_ids)
    padding_mask = np.zeros_like(token_ids)
    for row in range(batch_size):
        real = int(rng.integers(length // 2, length + 1))
        split = real // 2
        token_ids[row, 0] = CLS
        token_ids[row, split] = SEP
        token_ids[row, real - 1] = SEP
        token_ids[row, real:] = PAD
        segment_ids[row, split + 1 : real] = 1
        padding_mask[row, :real] = 1
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
    }


def labelled_tokens(batch, rng):
    """A tagger's sample weights for a `random_batch`: 1 at real tokens but
    [CLS] and [SEP], a few left out (0) as a word's later pieces are."""
    ids = batch["token_ids"]
    return (
        batch["padding_mask"].astype(bool)
        & (ids != CLS)
        & (ids != SEP)
        & (rng.random(ids.shape) > 0.3)
    ).astype("float32")


def conll_preset(path, conll, max_sequence_length, weight=None):
    """A `tiny`-preset encoder saved as a keras-hub preset at `path`, its
    vocabulary the special tokens and the lower-cased words of the CoNLL file
    `conll` (TINY_VOCABULARY_SIZE tokens); every weight `weight`, or drawn."""
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.finetuning.tagging_data import read_conll
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.keras_hub_preset import save_keras_hub_preset
    from electra_tf.presets import get_preset

    words = sorted({w.lower() for s in read_conll(conll).words for w in s})
    tokens = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)[
        :TINY_VOCABULARY_SIZE
    ]
    tokens += [f"unused{i}" for i in range(TINY_VOCABULARY_SIZE - len(tokens))]
    encoder = ElectraEncoder.discriminator_from_config(
        get_preset("tiny").model.override(
            vocabulary_size=TINY_VOCABULARY_SIZE,
            max_sequence_length=max_sequence_length,
        )
    )
    if weight is not None:
        encoder.set_weights(
            [np.full(w.shape, weight, "float32") for w in encoder.weights]
        )
    save_keras_hub_preset(encoder, Vocabulary(tuple(tokens)), str(path))
    return path


def encoder_inputs(token_ids, real=None):
    """The encoder's inputs for `token_ids` (one segment), padded past `real`
    tokens (None: past the [PAD] ids)."""
    token_ids = np.asarray(token_ids, "int32")
    padding_mask = (token_ids != PAD).astype("int32")
    if real is not None:
        padding_mask = np.zeros_like(token_ids)
        padding_mask[:, :real] = 1
    return {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": padding_mask,
    }


def tiny_serving_config(vocabulary_size: int):
    """A one-layer, 16-wide `ModelConfig` for exports that serve text
    (length 32, no dropout)."""
    from electra_tf.config import ModelConfig

    return ModelConfig(
        vocabulary_size=vocabulary_size,
        num_layers=1,
        hidden_dim=16,
        embedding_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=32,
        generator_hidden_size=0.5,
        dropout=0.0,
    )


def make_pretrainer(model_config, pretraining_config):
    from electra_tf.pretraining.pretrainer import ElectraPretrainer

    return ElectraPretrainer(model_config, pretraining_config, **SPECIAL_TOKEN_IDS)


def randomize_weights(model, seed=0):
    """Random weights of a visible scale (LayerNorm gains around 1).

    At the 0.02-stddev initialisation outputs hardly depend on the inputs,
    so a wrong mapping or a tokenisation difference could hide in them.
    """
    rng = np.random.default_rng(seed)
    for variable in model.trainable_weights:
        is_gain = variable.path.endswith("gamma")
        noise = rng.standard_normal(tuple(variable.shape))
        variable.assign((1.0 if is_gain else 0.0) + (0.2 if is_gain else 0.3) * noise)


def tf1_name(hf_name, tower, untied=False):
    """google-research/electra's name of a Hugging Face tensor (the inverse of
    transformers' TF1 conversion script), and whether to transpose it.
    `untied`: the generator's embeddings are its own (`generator/embeddings`,
    the original's `untied_generator_embeddings`)."""
    name = hf_name.removeprefix("electra.")
    if name == "generator_lm_head.bias":
        return "generator_predictions/output_bias", False
    name = re.sub(r"layer\.(\d+)", r"layer_\1", name)
    name = name.replace("dense_prediction", "dense_1").replace(".", "/")
    transpose = False
    if name.endswith("LayerNorm/weight"):
        name = name.removesuffix("weight") + "gamma"
    elif name.endswith("LayerNorm/bias"):
        name = name.removesuffix("bias") + "beta"
    elif name.endswith("_embeddings/weight"):
        name = name.removesuffix("/weight")
    elif name.endswith("/weight"):
        name, transpose = name.removesuffix("weight") + "kernel", True
    if not name.startswith(("discriminator_predictions", "generator_predictions")):
        # Shared embeddings live under the discriminator's scope.
        shared = name.startswith("embeddings/") and not untied
        name = (
            "electra/" if tower == "discriminator" or shared else "generator/"
        ) + name
    return name, transpose


def write_tf1_checkpoint(tensors, prefix, step):
    """What the original's Estimator wrote: variables, Adam slots, global_step."""
    import tensorflow as tf

    with tf.Graph().as_default():
        for name, value in tensors.items():
            tf.compat.v1.get_variable(name, initializer=value)
            for slot in ("adam_m", "adam_v"):
                tf.compat.v1.get_variable(
                    f"{name}/{slot}", initializer=np.zeros_like(value)
                )
        global_step = tf.compat.v1.train.get_or_create_global_step()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(global_step.assign(step))
            return tf.compat.v1.train.Saver().save(
                session, str(prefix), global_step=step
            )


def write_pretraining_records(path, count, length, start=0):
    """`count` TFRecords of pre-training examples; every id of record i is start + i."""
    import tensorflow as tf

    from electra_tf.data.tfrecord_format import serialize_examples

    ids = np.repeat(np.arange(start, start + count)[:, None], length, axis=1)
    features = {
        "input_ids": ids,
        "input_mask": np.ones_like(ids),
        "segment_ids": np.zeros_like(ids),
    }
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in serialize_examples(features):
            writer.write(record)


def reduced_policies(model):
    """{layer path: dtype policy} of `model`'s layers (itself included) whose
    policy computes below float32 (`electra_tf.export.float32.REDUCED_POLICIES`)."""
    from electra_tf.export.float32 import REDUCED_POLICIES

    return {
        layer.path: layer.dtype_policy.name
        for layer in model._flatten_layers(include_self=True)
        if layer.dtype_policy.name in REDUCED_POLICIES
    }


def reduced_precision_ops(function):
    """The ops of a traced or loaded concrete `function` (and of the functions
    it calls) that take or give bfloat16 or float16 tensors: empty when it
    computes in float32."""
    from tensorflow.core.framework import types_pb2

    reduced = (types_pb2.DT_BFLOAT16, types_pb2.DT_HALF)
    graph = function.graph.as_graph_def()
    nodes = [*graph.node, *(n for f in graph.library.function for n in f.node_def)]
    return {
        node.op
        for node in nodes
        for value in node.attr.values()
        if value.type in reduced or set(value.list.type) & set(reduced)
    }
