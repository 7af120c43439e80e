"""The pre-training model: generator + discriminator in one custom `train_step`."""

from __future__ import annotations

import keras
import tensorflow as tf

from electra_tf import random_streams
from electra_tf.config import (
    RTD_OBJECTIVES,
    ModelConfig,
    PretrainingConfig,
    check_model_and_objective,
)
from electra_tf.models.all_tokens_mlm import (
    ElectraAllTokensMLM,
    copy_mixture_log_likelihood,
    copy_mixture_prediction,
)
from electra_tf.models.cloze_generator import (
    ElectraClozeGenerator,
    electric_correction,
)
from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.generator import ElectraGenerator
from electra_tf.pretraining.balanced_accuracy import BalancedAccuracy
from electra_tf.pretraining.masking import candidate_mask, given_masking, mask_tokens
from electra_tf.pretraining.sampling import replace_tokens, sample

# Optional batch entries that replace the step's random draws, for tests and
# tools only (`tests/pretraining/test_step_parity.py` runs the same step as
# transformers on the same draws): the masking (all three of `masked_ids`
# [B, L], `mask_positions` [B, N] and `mask_weights` [B, N]) and the
# generator's samples (`sampled_ids` [B, N], with the masking). A batch
# without them, what training reads, draws as usual.
INJECTED_MASKING = ("masked_ids", "mask_positions", "mask_weights")
INJECTED_SAMPLES = "sampled_ids"

# Steps of evaluation batches are keyed by this constant instead of the
# optimizer step, so an evaluation sees the same masks whenever it runs.
_EVAL_STEP = -1

# Metrics, by what produces them. The generator's MLM (for "mlm", the model
# itself) is always there; the rest depend on the objective.
MLM_METRICS = ("loss", "mlm_loss", "mlm_accuracy")
RTD_METRICS = (
    "rtd_loss",
    "rtd_accuracy",
    "rtd_balanced_accuracy",
    "rtd_precision",
    "rtd_recall",
    "rtd_auc",
)
REPLACE_MLM_METRICS = ("replace_mlm_loss", "replace_mlm_accuracy")
ALL_TOKENS_MLM_METRICS = (
    "all_tokens_mlm_loss",
    "all_tokens_mlm_accuracy",
    "all_tokens_mlm_replaced_accuracy",
)
OBJECTIVE_METRICS = {
    "electra": MLM_METRICS
    + ("sampled_accuracy",)
    + RTD_METRICS
    + ("replaced_fraction",),
    "mlm": MLM_METRICS,
    "replace_mlm": MLM_METRICS
    + ("sampled_accuracy", "replaced_fraction")
    + REPLACE_MLM_METRICS,
    "all_tokens_mlm": MLM_METRICS
    + ("sampled_accuracy", "replaced_fraction")
    + ALL_TOKENS_MLM_METRICS,
}
OBJECTIVE_METRICS["electra_15"] = OBJECTIVE_METRICS["electra"]
# Electric's generator trains on `cloze_loss` (every candidate position);
# `mlm_loss` and `mlm_accuracy` are its figures at the masked slots, as for
# the other objectives' generators.
OBJECTIVE_METRICS["electric"] = (
    MLM_METRICS + ("cloze_loss", "sampled_accuracy") + RTD_METRICS
) + ("replaced_fraction",)
# The name of the discriminator-sized model's loss, per objective.
DISC_LOSS = {
    "electra": "rtd_loss",
    "electra_15": "rtd_loss",
    "electric": "rtd_loss",
    "replace_mlm": "replace_mlm_loss",
    "all_tokens_mlm": "all_tokens_mlm_loss",
}


def _cross_replica_sum(value):
    """Sums `value` over the replicas of a `tf.distribute` step (identity outside)."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def _global_mean(values, weights):
    """This replica's share of the weighted mean of `values` over the global batch.

    Summed over replicas it is the weighted mean of the whole batch: the
    denominator is the all-reduced weight.
    """
    count = _cross_replica_sum(tf.reduce_sum(weights)) + 1e-6
    return tf.reduce_sum(values * weights) / count


def _masked_mean_cross_entropy(masked, logits):
    """`_global_mean` of the cross-entropy of the original tokens at masked slots."""
    per_slot = keras.losses.sparse_categorical_crossentropy(
        masked.target_ids, logits, from_logits=True
    )
    return _global_mean(per_slot, masked.weights)


def _update_accuracy(tracker, logits, target_ids, weights):
    predicted = tf.argmax(logits, axis=-1, output_type=tf.int32)
    tracker.update_state(
        tf.cast(tf.equal(predicted, target_ids), tf.float32), sample_weight=weights
    )


def _ramp(updates, steps: int):
    """float32 `min(1, updates / steps)`: 1 when `updates` is None."""
    if updates is None:
        return tf.constant(1.0)
    return tf.minimum(1.0, tf.cast(updates, tf.float32) / float(steps))


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
    """ELECTRA pre-training and the paper's other objectives (`objective`).

    One step, all inside the graph (`call`):

    1. mask the batch dynamically (`masking.mask_tokens`);
    2. run the generator on the masked ids, logits only at masked slots;
    3. sample replacements in float32 (`sampling`; the original's Gumbel-max
       or the equivalent, faster inverse CDF), with no gradient through the
       sample;
    4. write them into the original ids; label `replaced = sample != original`;
    5. run the discriminator-sized model on the corrupted ids;
    6. `loss = gen_weight * mlm + disc_weight * disc`, with mlm the mean
       cross-entropy over masked slots and disc the discriminator-sized
       model's loss.

    What step 5 and `disc` are depends on `pretraining_config.objective`:

    * "electra": the RTD head (`discriminator`); disc is the mean sigmoid
      cross-entropy over all real tokens (`rtd_loss`).
    * "electra_15": the same, with the mean over the masked positions only.
    * "replace_mlm": an MLM head at the masked positions
      (`discriminator_mlm`, an `ElectraGenerator` on the discriminator's
      encoder); disc is its mean cross-entropy of the original tokens over
      the masked slots (`replace_mlm_loss`).
    * "all_tokens_mlm": `discriminator_mlm` is an `ElectraAllTokensMLM`;
      disc is the mean over all real tokens of
      `-log(D * [input == original] + (1 - D) * softmax(logits)[original])`
      (`all_tokens_mlm_loss`).
    * "electric": Electric's noise-contrastive estimation. The generator is
      an `ElectraClozeGenerator` (two causal towers) reading the UNMASKED
      input: it predicts every position from the others, trains on every
      candidate position (`cloze_loss`), and is sampled at the masked ones.
      Every sampled position is labelled noise (even a sample equal to the
      original), and the RTD logit gets `electric_correction`; disc is the
      RTD loss over all real tokens (`rtd_loss`).
    * "mlm": no steps 3-5: the generator is the discriminator's encoder with
      the MLM head (BERT trained with ELECTRA's masking), and the loss is the
      MLM loss alone.

    In every case the discriminator-sized encoder (`discriminator_encoder`,
    the same architecture) is what fine-tuning keeps. The sample is an
    integer id, so the disc loss reaches the generator only through the
    shared embeddings (`model_config.embedding_sharing`: "tied", ELECTRA's;
    "gdes", where it does not reach the generator at all and the MLM loss
    does not reach the discriminator's residual table; "none"). With
    `uniform_generator` the samples are uniform over the vocabulary and the
    generator is neither run nor trained; its MLM metrics are then those of
    uniform logits, as in the original. Two curricula for small budgets, both
    read from the optimizer's update count: `uniform_share_steps` mixes
    uniform draws into the samples, their share falling from 1 to 0, and
    `disc_weight_ramp_steps` raises the disc weight from 0.

    Means are over the GLOBAL batch: each replica divides its sum by the
    all-reduced count, so summing gradients over replicas (what the optimizer
    does) gives exactly the single-device gradient, whatever the replica count
    and however tokens are spread between replicas.

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
        objective = pretraining_config.objective

        # === Models ===
        check_model_and_objective(model_config, pretraining_config)
        sharing = model_config.embedding_sharing
        # Electric's generator is two causal towers; the first holds (or
        # shares) the embeddings, the second always shares the first's.
        electric = objective == "electric"
        first_tower = {
            "attention": "left_to_right" if electric else "bidirectional",
            "name": (
                "generator_left_to_right_encoder" if electric else "generator_encoder"
            ),
        }
        generator_encoder = None
        if sharing == "gdes":
            # The generator owns the table the discriminator's adds to.
            generator_encoder = ElectraEncoder.generator_from_config(
                model_config, **first_tower
            )
        self.discriminator_encoder = ElectraEncoder.discriminator_from_config(
            model_config, token_embedding_base=generator_encoder
        )
        # The RTD model, or (replace_mlm, all_tokens_mlm) the MLM-type model
        # on the same encoder; export and serving handle only the RTD one.
        self.discriminator = None
        self.discriminator_mlm = None
        if objective in RTD_OBJECTIVES:
            self.discriminator = ElectraDiscriminator(
                self.discriminator_encoder, name="discriminator"
            )
        elif objective == "replace_mlm":
            self.discriminator_mlm = ElectraGenerator(
                self.discriminator_encoder, name="discriminator_mlm"
            )
        elif objective == "all_tokens_mlm":
            self.discriminator_mlm = ElectraAllTokensMLM(
                self.discriminator_encoder, name="discriminator_mlm"
            )
        if objective == "mlm":
            generator_encoder = self.discriminator_encoder
        elif generator_encoder is None:
            generator_encoder = ElectraEncoder.generator_from_config(
                model_config,
                embedding_source=(
                    self.discriminator_encoder if sharing == "tied" else None
                ),
                **first_tower,
            )
        if electric:
            self.generator = ElectraClozeGenerator(
                generator_encoder,
                ElectraEncoder.generator_from_config(
                    model_config,
                    embedding_source=generator_encoder,
                    attention="right_to_left",
                    name="generator_right_to_left_encoder",
                ),
                name="generator",
            )
        else:
            self.generator = ElectraGenerator(generator_encoder, name="generator")

        # === Metrics ===
        self._trackers = {}
        for name in OBJECTIVE_METRICS[objective]:
            if name == "rtd_accuracy":
                tracker = keras.metrics.BinaryAccuracy(name=name)
            elif name == "rtd_precision":
                tracker = keras.metrics.Precision(name=name)
            elif name == "rtd_balanced_accuracy":
                tracker = BalancedAccuracy(name=name)
            elif name == "rtd_recall":
                tracker = keras.metrics.Recall(name=name)
            elif name == "rtd_auc":
                tracker = keras.metrics.AUC(name=name)
            else:
                tracker = keras.metrics.Mean(name=name)
            self._trackers[name] = tracker

    @property
    def _special_ids(self):
        """Ids masking never chooses (and Electric's cloze loss skips)."""
        return (
            self.pad_token_id,
            self.cls_token_id,
            self.sep_token_id,
            self.mask_token_id,
        )

    def _updates_done(self):
        """The optimizer's update count, which the curricula
        (`uniform_share_steps`, `disc_weight_ramp_steps`) read, in training and
        in evaluation alike; None without an optimizer (a model only evaluated
        or exported: the curricula are then at their end)."""
        optimizer = getattr(self, "optimizer", None)
        return None if optimizer is None else optimizer.iterations

    @property
    def metrics(self):
        return list(self._trackers.values())

    # === The step ===
    def call(self, inputs, training=False, step=None):
        """Runs masking, generator, sampling and the objective's model on a batch.

        Args:
            inputs: dict of int32 [B, L] `token_ids`, `segment_ids`,
                `padding_mask`; tests and tools may add the draws to use
                instead of drawing (`INJECTED_MASKING`, `INJECTED_SAMPLES`).
            training: enables dropout.
            step: key of the random draws; defaults to the optimizer's step
                when training and a fixed evaluation key otherwise.

        Returns:
            A dict of tensors: `loss` (this replica's share of the global mean
            loss, the quantity to differentiate), the global `mlm_loss`, the
            objective's loss (`rtd_loss`, `replace_mlm_loss` or
            `all_tokens_mlm_loss`) and total `global_loss`, and what the
            metrics, the tests and the TensorBoard text summary need
            (`masked`, `mlm_logits`, `sampled_ids`, `corrupted_ids`,
            `is_replaced`; `rtd_logits` and `rtd_weights`;
            `replace_mlm_logits`; `all_tokens_mlm_logits`, `copy_logits`;
            electric: `cloze_logits` [B, L, V], `cloze_loss`, and
            `rtd_logits` with the noise correction added).
        """
        config = self.pretraining_config
        objective = config.objective
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
        updates = self._updates_done()
        batch_size = tf.shape(token_ids)[0]
        example_index = random_streams.global_example_index(batch_size, micro_batch)

        if INJECTED_MASKING[0] in inputs:
            masked = given_masking(
                token_ids, *(inputs[name] for name in INJECTED_MASKING)
            )
        else:
            masked = mask_tokens(
                token_ids,
                padding_mask,
                key=key,
                example_index=example_index,
                mask_prob=config.mask_prob,
                max_predictions=config.max_predictions_per_seq,
                mask_token_prob=config.mask_token_prob,
                mask_token_id=self.mask_token_id,
                special_token_ids=self._special_ids,
            )
        vocabulary_size = self.model_config.vocabulary_size
        outputs = {"masked": masked}
        if objective == "electric":
            # The cloze model reads the UNMASKED input; it predicts every
            # position from the others and learns at every candidate one.
            if config.uniform_generator:
                cloze_logits = tf.zeros(
                    [batch_size, tf.shape(token_ids)[1], vocabulary_size]
                )
            else:
                cloze_logits = self.generator(
                    {
                        "token_ids": token_ids,
                        "segment_ids": segment_ids,
                        "padding_mask": padding_mask,
                    },
                    training=training,
                )
            candidates = candidate_mask(token_ids, padding_mask, self._special_ids)
            gen_local = _global_mean(
                keras.losses.sparse_categorical_crossentropy(
                    token_ids, cloze_logits, from_logits=True
                ),
                tf.cast(candidates, tf.float32),
            )
            # The masked slots: what is sampled there, and the MLM metrics.
            mlm_logits = tf.gather(cloze_logits, masked.positions, batch_dims=1)
            outputs.update(
                cloze_logits=cloze_logits, cloze_loss=_cross_replica_sum(gen_local)
            )
        elif config.uniform_generator:
            # Equal logits: the sampler then draws uniformly over the
            # vocabulary, and no generator needs to run.
            mlm_logits = tf.zeros(
                [batch_size, config.max_predictions_per_seq, vocabulary_size]
            )
        else:
            mlm_logits = self.generator(
                {
                    "token_ids": masked.masked_ids,
                    "segment_ids": segment_ids,
                    "padding_mask": padding_mask,
                    "mask_positions": masked.positions,
                },
                training=training,
            )
        mlm_local = _masked_mean_cross_entropy(masked, mlm_logits)
        if objective != "electric":
            gen_local = mlm_local
        outputs["mlm_logits"] = mlm_logits
        if objective == "mlm":
            outputs["mlm_loss"] = _cross_replica_sum(mlm_local)
            outputs["loss"] = mlm_local
            outputs["global_loss"] = outputs["mlm_loss"]
            return outputs

        if INJECTED_SAMPLES in inputs:
            sampled_ids = tf.cast(inputs[INJECTED_SAMPLES], tf.int32)
        else:
            sampled_ids = sample(
                config.sampler,
                mlm_logits,
                key=key,
                example_index=example_index,
                temperature=config.temperature,
                disallowed_ids=masked.target_ids if config.disallow_correct else None,
                uniform_share=(
                    1.0 - _ramp(updates, config.uniform_share_steps)
                    if config.uniform_share_steps
                    else None
                ),
            )
        corrupted_ids, is_replaced = replace_tokens(token_ids, masked, sampled_ids)
        if objective == "electric":
            # Noise-contrastive labels: every sampled position is noise, even
            # where the sample is the original token.
            is_replaced = masked.chosen
        corrupted = {
            "token_ids": corrupted_ids,
            "segment_ids": segment_ids,
            "padding_mask": padding_mask,
        }
        real = tf.cast(padding_mask, tf.float32)
        if objective in RTD_OBJECTIVES:
            rtd_logits = self.discriminator(corrupted, training=training)
            if objective == "electric":
                rtd_logits += electric_correction(
                    cloze_logits, corrupted_ids, config.mask_prob
                )
            # electra_15 learns only from the positions masking chose.
            rtd_weights = real
            if objective == "electra_15":
                rtd_weights = tf.cast(masked.chosen, tf.float32)
            rtd_per_token = tf.nn.sigmoid_cross_entropy_with_logits(
                labels=tf.cast(is_replaced, tf.float32), logits=rtd_logits
            )
            disc_local = _global_mean(rtd_per_token, rtd_weights)
            outputs.update(rtd_logits=rtd_logits, rtd_weights=rtd_weights)
        elif objective == "replace_mlm":
            replace_mlm_logits = self.discriminator_mlm(
                {**corrupted, "mask_positions": masked.positions}, training=training
            )
            disc_local = _masked_mean_cross_entropy(masked, replace_mlm_logits)
            outputs["replace_mlm_logits"] = replace_mlm_logits
        else:
            predicted = self.discriminator_mlm(corrupted, training=training)
            log_likelihood = copy_mixture_log_likelihood(
                predicted["mlm_logits"],
                predicted["copy_logits"],
                input_ids=corrupted_ids,
                target_ids=token_ids,
            )
            disc_local = _global_mean(-log_likelihood, real)
            outputs.update(
                all_tokens_mlm_logits=predicted["mlm_logits"],
                copy_logits=predicted["copy_logits"],
            )
        disc_weight = config.resolved_disc_weight
        if config.disc_weight_ramp_steps:
            disc_weight *= _ramp(updates, config.disc_weight_ramp_steps)
        loss = config.gen_weight * gen_local + disc_weight * disc_local
        outputs.update(
            {
                "loss": loss,
                "mlm_loss": _cross_replica_sum(mlm_local),
                DISC_LOSS[objective]: _cross_replica_sum(disc_local),
                "global_loss": _cross_replica_sum(loss),
                "sampled_ids": sampled_ids,
                "corrupted_ids": corrupted_ids,
                "is_replaced": is_replaced,
            }
        )
        return outputs

    def _update_metrics(self, inputs, outputs):
        masked = outputs["masked"]
        objective = self.pretraining_config.objective
        trackers = self._trackers
        trackers["loss"].update_state(outputs["global_loss"])
        trackers["mlm_loss"].update_state(outputs["mlm_loss"])
        if objective == "electric":
            trackers["cloze_loss"].update_state(outputs["cloze_loss"])
        _update_accuracy(
            trackers["mlm_accuracy"],
            outputs["mlm_logits"],
            masked.target_ids,
            masked.weights,
        )
        if objective == "mlm":
            return
        trackers["sampled_accuracy"].update_state(
            tf.cast(tf.equal(outputs["sampled_ids"], masked.target_ids), tf.float32),
            sample_weight=masked.weights,
        )
        real = tf.cast(inputs["padding_mask"], tf.float32)
        labels = tf.cast(outputs["is_replaced"], tf.float32)
        trackers["replaced_fraction"].update_state(labels, sample_weight=real)
        disc_loss = DISC_LOSS[objective]
        trackers[disc_loss].update_state(outputs[disc_loss])
        if objective in RTD_OBJECTIVES:
            # Over the tokens the RTD loss covers (electra_15: masked only).
            probabilities = tf.sigmoid(outputs["rtd_logits"])
            for name in RTD_METRICS[1:]:
                trackers[name].update_state(
                    labels, probabilities, sample_weight=outputs["rtd_weights"]
                )
        elif objective == "replace_mlm":
            _update_accuracy(
                trackers["replace_mlm_accuracy"],
                outputs["replace_mlm_logits"],
                masked.target_ids,
                masked.weights,
            )
        else:
            predicted = copy_mixture_prediction(
                outputs["all_tokens_mlm_logits"],
                outputs["copy_logits"],
                outputs["corrupted_ids"],
            )
            correct = tf.cast(
                tf.equal(predicted, tf.cast(inputs["token_ids"], tf.int32)),
                tf.float32,
            )
            trackers["all_tokens_mlm_accuracy"].update_state(
                correct, sample_weight=real
            )
            trackers["all_tokens_mlm_replaced_accuracy"].update_state(
                correct, sample_weight=labels * real
            )

    def train_step(self, data):
        inputs = data[0] if isinstance(data, tuple) else data
        with tf.GradientTape() as tape:
            outputs = self(inputs, training=True)
            # Loss scaling for mixed_float16 (a no-op otherwise).
            scaled_loss = self.optimizer.scale_loss(outputs["loss"])
        # Weights the loss does not reach (the generator under
        # `uniform_generator`) get no gradient and no update.
        variables = self.trainable_variables
        gradients = tape.gradient(scaled_loss, variables)
        variables = [v for v, g in zip(variables, gradients) if g is not None]
        gradients = [g for g in gradients if g is not None]
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
