"""Our weights under the original ELECTRA's TF1 variable names and shapes.

Every conversion goes through this layout: a flat `{name: numpy array}` dict
with the names and shapes of google-research/electra's checkpoints, e.g.

    electra/embeddings/word_embeddings                    [V, E]
    electra/embeddings/{position,token_type}_embeddings   [P, E], [S, E]
    electra/embeddings/LayerNorm/{gamma,beta}             [E]
    electra/embeddings_project/{kernel,bias}              [E, H], [H]  (E != H)
    electra/encoder/layer_N/attention/self/{query,key,value}/{kernel,bias}
    electra/encoder/layer_N/attention/output/{dense,LayerNorm}/...
    electra/encoder/layer_N/{intermediate,output}/dense/{kernel,bias}
    electra/encoder/layer_N/output/LayerNorm/{gamma,beta}
    discriminator_predictions/{dense,dense_1}/{kernel,bias}
    generator/embeddings_project/..., generator/encoder/layer_N/...
    generator_predictions/{dense/kernel,dense/bias,LayerNorm/gamma,
                           LayerNorm/beta,output_bias}

Kernels are [in, out] as in TF1 and Keras (a torch Linear weight is the
transpose). The generator's embeddings are the discriminator's
(`electra/embeddings/...`) when tied; an untied generator has its own under
`generator/embeddings/...`, as wide as its hidden size and with no
`generator/embeddings_project` (the original's `untied_generator_embeddings`).

Hugging Face and TF1 conversion translate names to and from this layout;
`model_config_from_tensors` reads the architecture back from the shapes (all
but the number of attention heads, which no shape shows).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from electra_tf.config import ModelConfig, PretrainingConfig
from electra_tf.errors import ConversionError
from electra_tf.models.tower import standalone_tower
from electra_tf.pretraining.pretrainer import ElectraPretrainer

DISCRIMINATOR_SCOPE = "electra"
GENERATOR_SCOPE = "generator"

# (original name, Keras variable path), relative to the embeddings scope.
_EMBEDDINGS = (
    ("word_embeddings", "token_embedding/embeddings"),
    ("position_embeddings", "position_embedding/embeddings"),
    ("token_type_embeddings", "segment_embedding/embeddings"),
    ("LayerNorm/gamma", "embeddings_layer_norm/gamma"),
    ("LayerNorm/beta", "embeddings_layer_norm/beta"),
)
_PROJECTION = (
    ("embeddings_project/kernel", "embeddings_projection/kernel"),
    ("embeddings_project/bias", "embeddings_projection/bias"),
)
# Relative to `<scope>/encoder/layer_N` and `transformer_layer_N`.
_BLOCK = (
    ("attention/self/query/kernel", "self_attention_layer/query/kernel"),
    ("attention/self/query/bias", "self_attention_layer/query/bias"),
    ("attention/self/key/kernel", "self_attention_layer/key/kernel"),
    ("attention/self/key/bias", "self_attention_layer/key/bias"),
    ("attention/self/value/kernel", "self_attention_layer/value/kernel"),
    ("attention/self/value/bias", "self_attention_layer/value/bias"),
    ("attention/output/dense/kernel", "self_attention_layer/attention_output/kernel"),
    ("attention/output/dense/bias", "self_attention_layer/attention_output/bias"),
    ("attention/output/LayerNorm/gamma", "self_attention_layer_norm/gamma"),
    ("attention/output/LayerNorm/beta", "self_attention_layer_norm/beta"),
    ("intermediate/dense/kernel", "feedforward_intermediate_dense/kernel"),
    ("intermediate/dense/bias", "feedforward_intermediate_dense/bias"),
    ("output/dense/kernel", "feedforward_output_dense/kernel"),
    ("output/dense/bias", "feedforward_output_dense/bias"),
    ("output/LayerNorm/gamma", "feedforward_layer_norm/gamma"),
    ("output/LayerNorm/beta", "feedforward_layer_norm/beta"),
)
_DISCRIMINATOR_HEAD = (
    ("discriminator_predictions/dense/kernel", "rtd_dense/kernel"),
    ("discriminator_predictions/dense/bias", "rtd_dense/bias"),
    ("discriminator_predictions/dense_1/kernel", "rtd_output/kernel"),
    ("discriminator_predictions/dense_1/bias", "rtd_output/bias"),
)
_GENERATOR_HEAD = (
    ("generator_predictions/dense/kernel", "mlm_head/intermediate_dense/kernel"),
    ("generator_predictions/dense/bias", "mlm_head/intermediate_dense/bias"),
    ("generator_predictions/LayerNorm/gamma", "mlm_head/intermediate_layer_norm/gamma"),
    ("generator_predictions/LayerNorm/beta", "mlm_head/intermediate_layer_norm/beta"),
    ("generator_predictions/output_bias", "mlm_head/output_bias"),
)


def _original_shape(keras_path: str, shape) -> tuple[int, ...]:
    """The TF1 shape of a Keras variable: attention kernels are 2-D there."""
    shape = tuple(int(d) for d in shape)
    if re.search(r"/(query|key|value)/kernel$", keras_path):
        return (shape[0], int(np.prod(shape[1:])))
    if keras_path.endswith("attention_output/kernel"):
        return (int(np.prod(shape[:-1])), shape[-1])
    if re.search(r"self_attention_layer/\w+/bias$", keras_path):
        return (int(np.prod(shape)),)
    return shape


def tower_variables(model, scope: str, embeddings_scope: str) -> dict:
    """`{original name: Keras variable}` of one tower.

    Args:
        model: an `ElectraEncoder`, `ElectraDiscriminator` or `ElectraGenerator`.
        scope: `electra` (the discriminator's, or the MLM baseline's encoder)
            or `generator`.
        embeddings_scope: where its embedding block is named:
            `electra/embeddings` (the discriminator's, shared) or
            `generator/embeddings` (a generator's own).
    """
    by_path = {variable.path: variable for variable in model.weights}
    encoder = getattr(model, "encoder", model)
    pairs = [(f"{embeddings_scope}/{o}", k) for o, k in _EMBEDDINGS]
    if encoder.embeddings_projection is not None:
        pairs += [(f"{scope}/{o}", k) for o, k in _PROJECTION]
    for i in range(encoder.num_layers):
        pairs += [
            (f"{scope}/encoder/layer_{i}/{o}", f"transformer_layer_{i}/{k}")
            for o, k in _BLOCK
        ]
    if "rtd_dense/kernel" in by_path:
        pairs += list(_DISCRIMINATOR_HEAD)
    if "mlm_head/output_bias" in by_path:
        pairs += list(_GENERATOR_HEAD)
    return {original: by_path[keras_path] for original, keras_path in pairs}


def check_convertible(pretrainer) -> None:
    """Raises `ConversionError` for a pretrainer with no counterpart elsewhere.

    Electric's two-tower cloze generator exists neither in the original's
    layout nor in Hugging Face's. Nor do the discriminators of the paper's
    ablations: `replace_mlm`'s is an MLM whose head the original layout
    would name as the generator's, `all_tokens_mlm`'s adds a copy head. Each
    has an ordinary discriminator encoder, in the run's exports
    (`export/discriminator/`, a keras-hub preset).
    """
    objective = pretrainer.pretraining_config.objective
    what = {
        "electric": "an Electric pretrainer's two-tower cloze generator has",
        "replace_mlm": "a replace_mlm pretrainer's MLM discriminator has",
        "all_tokens_mlm": (
            "an all_tokens_mlm pretrainer's discriminator (an MLM with a copy head) has"
        ),
    }
    if objective in what:
        raise ConversionError(
            f"{what[objective]} no counterpart in the original or Hugging Face "
            "layouts: convert only its discriminator's encoder (electra-convert "
            "electra-to-hf --encoder-only, a Hugging Face ElectraModel), or use "
            "the run's export/discriminator, a keras-hub preset, as it is"
        )


def pretrainer_variables(pretrainer) -> dict:
    """`{original name: variable}` of an `ElectraPretrainer` (both towers).

    Shared embeddings appear once, under `electra/embeddings/`.

    Raises:
        ConversionError: the objective has no original layout
            (`check_convertible`).
    """
    check_convertible(pretrainer)
    if pretrainer.pretraining_config.objective == "mlm":
        # The MLM baseline: the original names its encoder `electra`.
        return tower_variables(
            pretrainer.generator, DISCRIMINATOR_SCOPE, "electra/embeddings"
        )
    discriminator = pretrainer.discriminator
    if discriminator.encoder.disentangles_embeddings:
        # GDES: the discriminator's table folded into one, an untied pair.
        discriminator = standalone_tower(discriminator)
    variables = tower_variables(
        discriminator, DISCRIMINATOR_SCOPE, "electra/embeddings"
    )
    shared = pretrainer.generator.encoder.shares_embeddings
    variables.update(
        tower_variables(
            pretrainer.generator,
            GENERATOR_SCOPE,
            "electra/embeddings" if shared else "generator/embeddings",
        )
    )
    return variables


def read_tensors(variables: Mapping) -> dict[str, np.ndarray]:
    """The values of `variables` in the original shapes."""
    return {
        name: np.reshape(
            np.asarray(variable.numpy(), dtype=np.float32),
            _original_shape(variable.path, variable.shape),
        )
        for name, variable in variables.items()
    }


def assign_tensors(
    variables: Mapping,
    tensors: Mapping[str, np.ndarray],
    source: str,
    allow_unused: bool = False,
) -> None:
    """Assigns `tensors` (original names and shapes) to `variables`.

    Nothing is assigned unless everything fits.

    Raises:
        ConversionError: listing, tensor by tensor, every name the model needs
            that `tensors` lacks, every shape that differs, and (unless
            `allow_unused`) every tensor the model has no place for.
    """
    problems = []
    for name, variable in variables.items():
        expected = _original_shape(variable.path, variable.shape)
        if name not in tensors:
            problems.append(f"{name}: missing (the model needs {list(expected)})")
            continue
        found = tuple(np.shape(tensors[name]))
        if found != expected:
            problems.append(
                f"{name}: shape {list(found)} in {source}, {list(expected)} in "
                "the model"
            )
    if not allow_unused:
        problems += [
            f"{name}: in {source} but not in the model"
            for name in sorted(set(tensors) - set(variables))
        ]
    if problems:
        raise ConversionError(f"{source} does not fit the model", problems)
    for name, variable in variables.items():
        value = np.reshape(np.asarray(tensors[name]), tuple(variable.shape))
        variable.assign(value.astype(variable.dtype))


def _layer_count(tensors, scope) -> int:
    pattern = re.compile(rf"^{scope}/encoder/layer_(\d+)/")
    indices = {int(m.group(1)) for name in tensors if (m := pattern.match(name))}
    return max(indices) + 1 if indices else 0


def _shape(tensors, name, source) -> tuple[int, ...]:
    if name not in tensors:
        raise ConversionError(f"{source} has no {name}: not an ELECTRA checkpoint")
    return tuple(np.shape(tensors[name]))


def model_config_from_tensors(
    tensors: Mapping[str, np.ndarray],
    source: str,
    num_heads: int = 0,
    generator_num_heads: int = 0,
    **fields,
) -> ModelConfig:
    """The `ModelConfig` whose models have exactly these tensors.

    Sizes come from the shapes; attention heads, which no shape shows, from
    `num_heads` (0: the original's rule, max(1, hidden // 64)). Our generator
    always has max(1, hidden // 64) heads and a 4x feed-forward, as the
    original's `get_generator_config`; a generator built otherwise is refused.

    Args:
        tensors: original names -> arrays (both towers, or the discriminator).
        source: what the tensors came from, for error messages.
        num_heads: the discriminator's attention heads (0: the rule).
        generator_num_heads: the generator's, if known, to check the rule.
        **fields: other `ModelConfig` fields (dropout, layer_norm_epsilon, ...).
    """
    vocabulary_size, embedding_dim = _shape(
        tensors, "electra/embeddings/word_embeddings", source
    )
    max_sequence_length = _shape(
        tensors, "electra/embeddings/position_embeddings", source
    )[0]
    num_segments = _shape(tensors, "electra/embeddings/token_type_embeddings", source)[
        0
    ]
    num_layers = _layer_count(tensors, DISCRIMINATOR_SCOPE)
    prefix = "electra/encoder/layer_0"
    hidden_dim = _shape(tensors, f"{prefix}/attention/self/query/kernel", source)[1]
    intermediate_dim = _shape(tensors, f"{prefix}/intermediate/dense/kernel", source)[1]
    config = {
        "vocabulary_size": vocabulary_size,
        "num_layers": num_layers,
        "hidden_dim": hidden_dim,
        "embedding_dim": embedding_dim,
        # 0 is ModelConfig's "the original's rule": kept where the rule holds,
        # so a converted config compares equal to a preset's.
        "num_heads": 0 if num_heads in (0, max(1, hidden_dim // 64)) else num_heads,
        "intermediate_dim": 0
        if intermediate_dim == 4 * hidden_dim
        else intermediate_dim,
        "max_sequence_length": max_sequence_length,
        "num_segments": num_segments,
    }
    generator_layers = _layer_count(tensors, GENERATOR_SCOPE)
    if generator_layers:
        prefix = "generator/encoder/layer_0"
        generator_hidden = _shape(
            tensors, f"{prefix}/attention/self/query/kernel", source
        )[1]
        generator_intermediate = _shape(
            tensors, f"{prefix}/intermediate/dense/kernel", source
        )[1]
        problems = []
        if generator_intermediate != 4 * generator_hidden:
            problems.append(
                f"{prefix}/intermediate/dense/kernel: feed-forward width "
                f"{generator_intermediate}, but the generator's is 4 x its "
                f"hidden width {generator_hidden}"
            )
        untied = "generator/embeddings/word_embeddings" in tensors
        if untied:
            # The original's untied generator: embeddings of its own width,
            # no projection (what `embedding_sharing="none"` builds).
            generator_embedding = _shape(
                tensors, "generator/embeddings/word_embeddings", source
            )[1]
            if generator_embedding != generator_hidden:
                problems.append(
                    f"generator/embeddings/word_embeddings: width "
                    f"{generator_embedding}, but an untied generator's embeddings "
                    f"are as wide as its hidden size {generator_hidden} (the "
                    "original's untied_generator_embeddings)"
                )
        rule = max(1, generator_hidden // 64)
        if generator_num_heads and generator_num_heads != rule:
            problems.append(
                f"generator: {generator_num_heads} attention heads, but the "
                f"generator's are max(1, {generator_hidden} // 64) = {rule}"
            )
        if problems:
            raise ConversionError(
                f"{source}: a generator our ModelConfig cannot describe", problems
            )
        config.update(
            generator_hidden_size=generator_hidden / hidden_dim,
            generator_layers=0 if generator_layers == num_layers else generator_layers,
            embedding_sharing="none" if untied else "tied",
        )
    config.update(fields)
    model_config = ModelConfig(**config)
    if generator_layers and model_config.generator_hidden_dim != generator_hidden:
        raise ConversionError(
            f"{source}: generator width {generator_hidden} is not a fraction of "
            f"{hidden_dim} that ModelConfig rounds back to it"
        )
    return model_config


def has_generator(tensors: Mapping[str, np.ndarray]) -> bool:
    return _layer_count(tensors, GENERATOR_SCOPE) > 0


def pretrainer_from_tensors(
    tensors: Mapping[str, np.ndarray],
    model_config: ModelConfig,
    source: str,
    pretraining_config: PretrainingConfig | None = None,
    **special_token_ids,
):
    """An `ElectraPretrainer` of `model_config` holding original-layout `tensors`.

    `pretraining_config` defaults to ours with `max_seq_length` at most the
    position table; `special_token_ids` (`pad_token_id`, ...) go to
    `ElectraPretrainer`. Raises `ConversionError` tensor by tensor.
    """
    if pretraining_config is None:
        pretraining_config = PretrainingConfig(
            max_seq_length=min(128, model_config.max_sequence_length)
        )
    pretrainer = ElectraPretrainer(
        model_config, pretraining_config, **special_token_ids
    )
    assign_tensors(pretrainer_variables(pretrainer), tensors, source)
    return pretrainer
