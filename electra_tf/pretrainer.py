"""The pre-training model: generator + discriminator in one custom `train_step`."""

from __future__ import annotations

import keras
import tensorflow as tf

from electra_tf import random_streams
from electra_tf.config import ModelConfig, PretrainingConfig
from electra_tf.discriminator import ElectraDiscriminator
from electra_tf.encoder import ElectraEncoder
from electra_tf.generator import ElectraGenerator
from electra_tf.masking import mask_tokens
from electra_tf.sampling import gumbel_max_sample, replace_tokens

# Steps of evaluation batches are keyed by this constant instead of the
# optimizer step, so an evaluation sees the same masks whenever it runs.
_EVAL_STEP = -1

MLM_METRICS = ("loss", "mlm_loss", "mlm_accuracy")
RTD_METRICS = (
    "sampled_accuracy",
    "rtd_loss",
    "rtd_accuracy",
    "rtd_precision",
    "rtd_recall",
    "rtd_auc",
    "replaced_fraction",
)


def _cross_replica_sum(value):
    """Sums `value` over the replicas of a `tf.distribute` step (identity outside)."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def _update_and_micro_batch(optimizer):
    """(update, micro-batch within it): the position that keys a step's draws.

    With gradient accumulation `optimizer.iterations` counts updates, so all
    k micro-batches of an update share its key, and `global_example_index`
    places each after the ones before it: the draws are those of one step on
    the concatenated batch. Keras keeps the micro-batch count only in the
    private `_iterations`.
    """
    # A LossScaleOptimizer (mixed_float16) wraps the optimizer that accumulates.
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    steps = inner.gradient_accumulation_steps
    if not steps:
        return optimizer.iterations, 0
    return inner.iterations, inner._iterations % steps


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraPretrainer(keras.Model):
    """ELECTRA pre-training (replaced token detection) or the MLM baseline.

    One step, all inside the graph (`call`):

    1. mask the batch dynamically (`masking.mask_tokens`);
    2. run the generator on the masked ids, logits only at masked slots;
    3. sample replacements with Gumbel-max in float32 (`sampling`), with no
       gradient through the sample;
    4. write them into the original ids; label `replaced = sample != original`;
    5. run the discriminator on the corrupted ids;
    6. `loss = gen_weight * mlm + disc_weight * rtd`, with mlm the mean
       cross-entropy over masked slots and rtd the mean sigmoid cross-entropy
       over all real tokens.

    Means are over the GLOBAL batch: each replica divides its sum by the
    all-reduced count, so summing gradients over replicas (what the optimizer
    does) gives exactly the single-device gradient, whatever the replica count
    and however tokens are spread between replicas.

    With `objective="mlm"` the generator is the discriminator's encoder with the
    MLM head (BERT trained with ELECTRA's masking), and only the MLM loss is used.

    Train it with `compile(optimizer=...)` and `fit()` on batches of dicts
    `token_ids`, `segment_ids`, `padding_mask` (int32 [B, L]); no `loss=` is
    given to `compile`, the model computes its own.

    Args:
        model_config: a `ModelConfig` or its dict.
        pretraining_config: a `PretrainingConfig` or its dict.
        pad_token_id, cls_token_id, sep_token_id, mask_token_id: ids of the
            special tokens in the vocabulary (defaults: BERT uncased).
    """

    def __init__(
        self,
        model_config,
        pretraining_config,
        pad_token_id=0,
        cls_token_id=101,
        sep_token_id=102,
        mask_token_id=103,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(model_config, dict):
            model_config = ModelConfig.from_dict(model_config)
        if isinstance(pretraining_config, dict):
            pretraining_config = PretrainingConfig.from_dict(pretraining_config)
        if pretraining_config.max_seq_length > model_config.max_sequence_length:
            raise ValueError(
                f"max_seq_length {pretraining_config.max_seq_length} exceeds the "
                f"model's max_sequence_length {model_config.max_sequence_length}"
            )
        self.model_config = model_config
        self.pretraining_config = pretraining_config
        self.pad_token_id = pad_token_id
        self.cls_token_id = cls_token_id
        self.sep_token_id = sep_token_id
        self.mask_token_id = mask_token_id
        self.is_electra = pretraining_config.objective == "electra"

        # === Models ===
        self.discriminator_encoder = ElectraEncoder.discriminator_from_config(
            model_config
        )
        if self.is_electra:
            self.discriminator = ElectraDiscriminator(
                self.discriminator_encoder, name="discriminator"
            )
            generator_encoder = ElectraEncoder.generator_from_config(
                model_config,
                embedding_source=(
                    self.discriminator_encoder if model_config.tie_embeddings else None
                ),
            )
        else:
            self.discriminator = None
            generator_encoder = self.discriminator_encoder
        self.generator = ElectraGenerator(generator_encoder, name="generator")

        # === Metrics ===
        names = MLM_METRICS + (RTD_METRICS if self.is_electra else ())
        self._trackers = {}
        for name in names:
            if name == "rtd_accuracy":
                tracker = keras.metrics.BinaryAccuracy(name=name)
            elif name == "rtd_precision":
                tracker = keras.metrics.Precision(name=name)
            elif name == "rtd_recall":
                tracker = keras.metrics.Recall(name=name)
            elif name == "rtd_auc":
                tracker = keras.metrics.AUC(name=name)
            else:
                tracker = keras.metrics.Mean(name=name)
            self._trackers[name] = tracker

    @property
    def metrics(self):
        return list(self._trackers.values())

    # === The step ===
    def call(self, inputs, training=False, step=None):
        """Runs masking, generator, sampling and discriminator on one batch.

        Args:
            inputs: dict of int32 [B, L] `token_ids`, `segment_ids`,
                `padding_mask`.
            training: enables dropout.
            step: key of the random draws; defaults to the optimizer's step
                when training and a fixed evaluation key otherwise.

        Returns:
            A dict of tensors: `loss` (this replica's share of the global mean
            loss, the quantity to differentiate), the global `mlm_loss`,
            `rtd_loss` and total `global_loss`, and what the metrics and the
            TensorBoard text summary need (`masked`, `mlm_logits`,
            `sampled_ids`, `corrupted_ids`, `is_replaced`, `rtd_logits`).
        """
        config = self.pretraining_config
        token_ids = tf.cast(inputs["token_ids"], tf.int32)
        segment_ids = tf.cast(inputs["segment_ids"], tf.int32)
        padding_mask = tf.cast(inputs["padding_mask"], tf.int32)
        micro_batch = 0
        if step is None:
            optimizer = getattr(self, "optimizer", None)
            if training and optimizer is not None:
                step, micro_batch = _update_and_micro_batch(optimizer)
            else:
                step = _EVAL_STEP
        key = random_streams.step_key(config.seed, step)
        batch_size = tf.shape(token_ids)[0]
        example_index = random_streams.global_example_index(batch_size, micro_batch)

        masked = mask_tokens(
            token_ids,
            padding_mask,
            key=key,
            example_index=example_index,
            mask_prob=config.mask_prob,
            max_predictions=config.max_predictions_per_seq,
            mask_token_prob=config.mask_token_prob,
            mask_token_id=self.mask_token_id,
            special_token_ids=(
                self.pad_token_id,
                self.cls_token_id,
                self.sep_token_id,
                self.mask_token_id,
            ),
        )
        mlm_logits = self.generator(
            {
                "token_ids": masked.masked_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
                "mask_positions": masked.positions,
            },
            training=training,
        )
        mlm_per_slot = keras.losses.sparse_categorical_crossentropy(
            masked.target_ids, mlm_logits, from_logits=True
        )
        mlm_count = _cross_replica_sum(tf.reduce_sum(masked.weights)) + 1e-6
        mlm_local = tf.reduce_sum(mlm_per_slot * masked.weights) / mlm_count
        outputs = {"masked": masked, "mlm_logits": mlm_logits}
        if not self.is_electra:
            outputs["mlm_loss"] = _cross_replica_sum(mlm_local)
            outputs["loss"] = mlm_local
            outputs["global_loss"] = outputs["mlm_loss"]
            return outputs

        if config.uniform_generator:
            # Equal logits: Gumbel-max then samples uniformly over the vocabulary.
            sampling_logits = tf.zeros_like(mlm_logits)
        else:
            sampling_logits = mlm_logits
        sampled_ids = gumbel_max_sample(
            sampling_logits,
            key=key,
            example_index=example_index,
            temperature=config.temperature,
            disallowed_ids=masked.target_ids if config.disallow_correct else None,
        )
        corrupted_ids, is_replaced = replace_tokens(token_ids, masked, sampled_ids)
        rtd_logits = self.discriminator(
            {
                "token_ids": corrupted_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
            },
            training=training,
        )
        real = tf.cast(padding_mask, tf.float32)
        rtd_per_token = tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.cast(is_replaced, tf.float32), logits=rtd_logits
        )
        rtd_count = _cross_replica_sum(tf.reduce_sum(real)) + 1e-6
        rtd_local = tf.reduce_sum(rtd_per_token * real) / rtd_count
        loss = config.gen_weight * mlm_local + config.disc_weight * rtd_local
        outputs.update(
            loss=loss,
            mlm_loss=_cross_replica_sum(mlm_local),
            rtd_loss=_cross_replica_sum(rtd_local),
            global_loss=_cross_replica_sum(loss),
            sampled_ids=sampled_ids,
            corrupted_ids=corrupted_ids,
            is_replaced=is_replaced,
            rtd_logits=rtd_logits,
        )
        return outputs

    def _update_metrics(self, inputs, outputs):
        masked = outputs["masked"]
        trackers = self._trackers
        trackers["loss"].update_state(outputs["global_loss"])
        trackers["mlm_loss"].update_state(outputs["mlm_loss"])
        predicted = tf.argmax(outputs["mlm_logits"], axis=-1, output_type=tf.int32)
        trackers["mlm_accuracy"].update_state(
            tf.cast(tf.equal(predicted, masked.target_ids), tf.float32),
            sample_weight=masked.weights,
        )
        if not self.is_electra:
            return
        trackers["sampled_accuracy"].update_state(
            tf.cast(tf.equal(outputs["sampled_ids"], masked.target_ids), tf.float32),
            sample_weight=masked.weights,
        )
        trackers["rtd_loss"].update_state(outputs["rtd_loss"])
        real = tf.cast(inputs["padding_mask"], tf.float32)
        labels = tf.cast(outputs["is_replaced"], tf.float32)
        probabilities = tf.sigmoid(outputs["rtd_logits"])
        for name in ("rtd_accuracy", "rtd_precision", "rtd_recall", "rtd_auc"):
            trackers[name].update_state(labels, probabilities, sample_weight=real)
        trackers["replaced_fraction"].update_state(labels, sample_weight=real)

    def train_step(self, data):
        inputs = data[0] if isinstance(data, tuple) else data
        with tf.GradientTape() as tape:
            outputs = self(inputs, training=True)
            # Loss scaling for mixed_float16 (a no-op otherwise).
            scaled_loss = self.optimizer.scale_loss(outputs["loss"])
        variables = self.trainable_variables
        gradients = tape.gradient(scaled_loss, variables)
        # The embedding lookups' gradients come as IndexedSlices whose repeated
        # token ids are not yet summed; Keras' global-norm clipping would take
        # the norm of those unsummed slices, not the gradient's. Dense ones give
        # the true norm, the same whether or not micro-batches are accumulated
        # (the accumulator is dense) and what a TPU computes.
        gradients = [
            tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
            for g in gradients
        ]
        self.optimizer.apply(gradients, variables)
        self._update_metrics(inputs, outputs)
        return {name: tracker.result() for name, tracker in self._trackers.items()}

    def test_step(self, data):
        inputs = data[0] if isinstance(data, tuple) else data
        outputs = self(inputs, training=False)
        self._update_metrics(inputs, outputs)
        return {name: tracker.result() for name, tracker in self._trackers.items()}

    def get_config(self):
        return {
            "model_config": self.model_config.to_dict(),
            "pretraining_config": self.pretraining_config.to_dict(),
            "pad_token_id": self.pad_token_id,
            "cls_token_id": self.cls_token_id,
            "sep_token_id": self.sep_token_id,
            "mask_token_id": self.mask_token_id,
            "name": self.name,
        }
