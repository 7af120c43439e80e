"""The ELECTRA transformer encoder, used for both discriminator and generator."""

from __future__ import annotations

import keras
import keras_hub
from keras import ops
from keras_hub.layers import PositionEmbedding

from electra_tf.models.disentangled_embedding import DisentangledEmbedding
from electra_tf.models.hashed_dropout import HashedDropout
from electra_tf.models.transformer_layer import ElectraTransformerLayer

# `ElectraEncoder(attention=...)`: which positions each position attends to.
ATTENTION = ("bidirectional", "left_to_right", "right_to_left")


def truncated_normal(stddev: float) -> keras.initializers.Initializer:
    return keras.initializers.TruncatedNormal(stddev=stddev)


def causal_mask(token_ids, attention: str):
    """bool [B, L, L]: query t may attend to key s; None for "bidirectional".

    "left_to_right": s <= t; "right_to_left": s >= t. keras-hub's block
    combines it with the padding mask.
    """
    if attention == "bidirectional":
        return None
    positions = ops.cumsum(ops.ones_like(token_ids), axis=1)  # [B, L]: 1..L
    query = ops.expand_dims(positions, 2)  # [B, L, 1]
    key = ops.expand_dims(positions, 1)  # [B, 1, L]
    if attention == "left_to_right":
        return ops.less_equal(key, query)
    return ops.greater_equal(key, query)


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraEncoder(keras_hub.models.Backbone):
    """A BERT-style post-LayerNorm encoder with ELECTRA's original numerics.

    Its layers carry the names and inputs of `keras_hub.models.ElectraBackbone`
    (`token_embedding`, `position_embedding`, `segment_embedding`,
    `embeddings_layer_norm`, `embeddings_projection`, `transformer_layer_i`;
    inputs `token_ids`, `segment_ids`, `padding_mask`), so weights map one to
    one. It differs from keras-hub's backbone where keras-hub differs from the
    original ELECTRA:

    * GELU is the exact erf form (keras-hub uses the tanh approximation);
    * there is no tanh pooler: `pooled_output` is `sequence_output[:, 0]`,
      which is what the original fine-tunes on;
    * LayerNorm epsilon and initialiser range are arguments;
    * every dropout is a `HashedDropout` (the transformer blocks are
      `ElectraTransformerLayer`s: keras-hub's block with its dropouts
      swapped), fast under XLA on CPUs and the same on any replica count.

    The generator is an `ElectraEncoder` built with `embedding_source=` the
    discriminator's encoder: it then reuses (not copies) the token, position
    and segment embeddings and the embedding LayerNorm, and keeps its own
    `embeddings_projection` and transformer stack. With gradient-disentangled
    sharing (GDES) the discriminator is built with `token_embedding_base=` the
    generator's encoder instead: its token table is then a
    `DisentangledEmbedding`, the generator's table (gradient stopped) plus a
    residual of its own; the rest of its embedding block is its own. Neither
    kind of encoder can be rebuilt from its config alone; `ElectraPretrainer`
    rebuilds the sharing, and `standalone_encoder` makes an ordinary copy.

    Args:
        vocabulary_size: rows of the token embedding.
        num_layers: transformer blocks.
        num_heads: attention heads per block.
        hidden_dim: width of the transformer blocks.
        embedding_dim: width of the embeddings; projected to `hidden_dim` by
            `embeddings_projection` when the two differ.
        intermediate_dim: feed-forward width.
        dropout: dropout rate on embeddings, attention and block outputs.
        max_sequence_length: rows of the position embedding.
        num_segments: rows of the segment embedding.
        layer_norm_epsilon: epsilon of every LayerNorm (original: 1e-12).
        initializer_range: stddev of the truncated-normal initialiser.
        embedding_source: another `ElectraEncoder` whose embedding block this
            one shares, or None to own its embeddings.
        token_embedding_base: another `ElectraEncoder` whose token table,
            gradient stopped, this one's adds a residual to (GDES), or None.
        attention: "bidirectional" (every position attends to every real
            one), or a causal direction for the towers of Electric's cloze
            model: "left_to_right" (position t attends to positions <= t) or
            "right_to_left" (to positions >= t).

    Example:
    >>> import numpy as np
    >>> encoder = ElectraEncoder(
    ...     vocabulary_size=100, num_layers=1, num_heads=1, hidden_dim=16,
    ...     embedding_dim=8, intermediate_dim=32, max_sequence_length=12)
    >>> outputs = encoder({
    ...     "token_ids": np.ones((2, 12), "int32"),
    ...     "segment_ids": np.zeros((2, 12), "int32"),
    ...     "padding_mask": np.ones((2, 12), "int32")})
    >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
    ((2, 12, 16), (2, 16))
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        embedding_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        embedding_source=None,
        token_embedding_base=None,
        attention="bidirectional",
        dtype=None,
        **kwargs,
    ):
        initializer = truncated_normal(initializer_range)
        if attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION}, got {attention!r}")
        if embedding_source is not None and token_embedding_base is not None:
            raise ValueError("give embedding_source or token_embedding_base, not both")

        # === Layers ===
        if embedding_source is not None:
            # Shared objects: the same variables train under both towers.
            self.token_embedding = embedding_source.token_embedding
            self.position_embedding = embedding_source.position_embedding
            self.segment_embedding = embedding_source.segment_embedding
            self.embeddings_layer_norm = embedding_source.embeddings_layer_norm
        else:
            if token_embedding_base is not None:
                self.token_embedding = DisentangledEmbedding(
                    token_embedding_base.token_embedding,
                    input_dim=vocabulary_size,
                    output_dim=embedding_dim,
                    dtype=dtype,
                    name="token_embedding",
                )
            else:
                self.token_embedding = keras.layers.ReversibleEmbedding(
                    input_dim=vocabulary_size,
                    output_dim=embedding_dim,
                    embeddings_initializer=initializer,
                    dtype=dtype,
                    name="token_embedding",
                )
            self.position_embedding = PositionEmbedding(
                sequence_length=max_sequence_length,
                initializer=initializer,
                dtype=dtype,
                name="position_embedding",
            )
            self.segment_embedding = keras.layers.Embedding(
                input_dim=num_segments,
                output_dim=embedding_dim,
                embeddings_initializer=initializer,
                dtype=dtype,
                name="segment_embedding",
            )
            self.embeddings_layer_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon,
                dtype=dtype,
                name="embeddings_layer_norm",
            )
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        self.embeddings_dropout = HashedDropout(
            dropout, dtype=dtype, name="embeddings_dropout"
        )
        self.embeddings_projection = None
        if hidden_dim != embedding_dim:
            self.embeddings_projection = keras.layers.Dense(
                hidden_dim,
                # The original left this at the TF1 default (Glorot uniform).
                kernel_initializer="glorot_uniform",
                dtype=dtype,
                name="embeddings_projection",
            )
        self.transformer_layers = [
            ElectraTransformerLayer(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                # Keras' "gelu" is the exact erf form.
                activation="gelu",
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=initializer,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        tokens = self.token_embedding(token_ids)
        x = self.embeddings_add(
            (
                tokens,
                self.position_embedding(tokens),
                self.segment_embedding(segment_ids),
            )
        )
        x = self.embeddings_layer_norm(x)
        x = self.embeddings_dropout(x)
        if self.embeddings_projection is not None:
            x = self.embeddings_projection(x)
        attention_mask = causal_mask(token_ids, attention)
        for transformer_layer in self.transformer_layers:
            x = transformer_layer(
                x, padding_mask=padding_mask, attention_mask=attention_mask
            )
        super().__init__(
            inputs={
                "token_ids": token_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
            },
            outputs={"sequence_output": x, "pooled_output": x[:, 0, :]},
            dtype=dtype,
            **kwargs,
        )

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.embedding_dim = embedding_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.attention = attention
        # A flag, not the source itself: storing the source layer here would make
        # Keras track (and save) the whole discriminator inside the generator.
        self.shares_embeddings = embedding_source is not None
        self.disentangles_embeddings = token_embedding_base is not None

    def get_config(self):
        if self.shares_embeddings or self.disentangles_embeddings:
            raise NotImplementedError(
                "An encoder that shares another's embeddings is not serialisable "
                "on its own; save the ElectraPretrainer that owns both."
            )
        config = super().get_config()
        config.update(self.architecture())
        return config

    def architecture(self) -> dict:
        """The constructor arguments that fix the shapes and numerics.

        Unlike `get_config`, also answers for an encoder that shares another's
        embeddings (to build an independent copy of it).
        """
        return {
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "embedding_dim": self.embedding_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "attention": self.attention,
        }

    def reinitialize_top_layers(self, count: int, stddev: float) -> None:
        """Draws the top `count` transformer blocks' weights afresh.

        Kernels from a truncated normal of `stddev`, biases 0, LayerNorms the
        identity: what a new block of the same shape starts from. Fine-tuning
        from a pre-trained encoder with its top blocks re-initialised (Zhang et
        al., 2021, "Revisiting Few-sample BERT Fine-tuning") keeps the lower,
        general layers and drops the ones specialised to the pre-training
        task; `count == num_layers` keeps only the embeddings.

        Raises:
            ValueError: `count` outside [0, num_layers].
        """
        if not 0 <= count <= self.num_layers:
            raise ValueError(
                f"can re-initialise 0 to {self.num_layers} layers, got {count}"
            )
        for layer in self.transformer_layers[self.num_layers - count :]:
            fresh = ElectraTransformerLayer.from_config(
                {**layer.get_config(), "kernel_initializer": truncated_normal(stddev)}
            )
            fresh.build((None, None, self.hidden_dim))
            # Same class and config: the same weights in the same order.
            layer.set_weights(fresh.get_weights())

    @classmethod
    def discriminator_from_config(
        cls,
        config,
        token_embedding_base=None,
        dtype=None,
        name="discriminator_encoder",
    ):
        """The discriminator encoder of a `ModelConfig`."""
        return cls(
            vocabulary_size=config.vocabulary_size,
            num_layers=config.num_layers,
            num_heads=config.resolved_num_heads,
            hidden_dim=config.hidden_dim,
            embedding_dim=config.embedding_dim,
            intermediate_dim=config.resolved_intermediate_dim,
            dropout=config.dropout,
            max_sequence_length=config.max_sequence_length,
            num_segments=config.num_segments,
            layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range,
            token_embedding_base=token_embedding_base,
            dtype=dtype,
            name=name,
        )

    @classmethod
    def generator_from_config(
        cls,
        config,
        embedding_source=None,
        attention="bidirectional",
        dtype=None,
        name="generator_encoder",
    ):
        """The generator encoder of a `ModelConfig` (`generator_hidden_size` wide).

        `attention`: "bidirectional" (ELECTRA's generator) or a direction for
        one tower of Electric's cloze model.
        """
        return cls(
            vocabulary_size=config.vocabulary_size,
            num_layers=config.generator_num_layers,
            num_heads=config.generator_num_heads,
            hidden_dim=config.generator_hidden_dim,
            embedding_dim=config.generator_embedding_dim,
            intermediate_dim=config.generator_intermediate_dim,
            dropout=config.dropout,
            max_sequence_length=config.max_sequence_length,
            num_segments=config.num_segments,
            layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range,
            embedding_source=embedding_source,
            attention=attention,
            dtype=dtype,
            name=name,
        )


def standalone_encoder(encoder: ElectraEncoder, name=None) -> ElectraEncoder:
    """A copy of `encoder` that owns ordinary embeddings, for saving on its own.

    Shared embeddings are copied; a GDES token table is folded into one
    ordinary table (the base's plus the residual), so what is exported is a
    standard ELECTRA encoder.
    """
    copy = ElectraEncoder(**encoder.architecture(), name=name or encoder.name)
    # The same layers in the same order (a DisentangledEmbedding's one weight
    # is its residual): the weights match one to one.
    copy.set_weights(encoder.get_weights())
    copy.token_embedding.embeddings.assign(encoder.token_embedding.embeddings)
    return copy
