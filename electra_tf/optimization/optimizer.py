"""Adam with decoupled weight decay as the original ELECTRA (and BERT) uses it."""

from __future__ import annotations

import re

import keras
import tensorflow as tf

# Variables matching this (by path) get no weight decay: LayerNorm scales and
# offsets, and every bias.
DEFAULT_DECAY_EXCLUSIONS = r"(layer_norm|LayerNorm|/bias$|/beta$|/gamma$|output_bias$)"


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraAdam(keras.optimizers.AdamW):
    """Keras' AdamW with the original ELECTRA's three differences.

    1. No bias correction: `var -= lr * (m / (sqrt(v) + eps) + wd * var)`,
       with `m` and `v` the raw moving averages (the original `AdamWeightDecay`
       skips the correction). Early updates are therefore LARGER than Adam's,
       by `(1 - beta_1**t) / sqrt(1 - beta_2**t)`: 3x to 6.5x over the first
       hundred steps, 2x at step 300, 1.26x at 1000, 1.0x after ~5000 (with
       the default betas); the learning-rate warm-up covers most of that.
    2. Weight decay is decided by variable PATH (`decay_exclusions`, a regex),
       because Keras names LayerNorm weights just `gamma`/`beta`.
    3. Optional per-variable learning-rate multipliers (`learning_rate_multipliers`,
       a list of `(regex, multiplier)` pairs matched against variable paths,
       first match wins), used for layer-wise decay in fine-tuning. They scale
       the learning rate, weight decay included; scaling gradients instead
       would do nothing under Adam.

    It also fixes an order of operations that matters under `tf.distribute`:
    Keras clips gradients BEFORE summing them across replicas, so
    `global_clipnorm` would clip each replica's partial gradient. Here the
    gradients are summed first, then clipped by their true global norm.

    The learning-rate schedule is evaluated at the number of APPLIED updates,
    so with gradient accumulation the schedule counts updates, not micro-batches.
    """

    def __init__(
        self,
        learning_rate=1e-4,
        weight_decay=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        decay_exclusions=DEFAULT_DECAY_EXCLUSIONS,
        learning_rate_multipliers=None,
        **kwargs,
    ):
        super().__init__(
            learning_rate=learning_rate,
            weight_decay=weight_decay,
            beta_1=beta_1,
            beta_2=beta_2,
            epsilon=epsilon,
            **kwargs,
        )
        self.decay_exclusions = decay_exclusions
        self.learning_rate_multipliers = [
            (str(pattern), float(multiplier))
            for pattern, multiplier in (learning_rate_multipliers or [])
        ]
        self._decay_exclusions_re = re.compile(decay_exclusions)
        self._multiplier_res = [
            (re.compile(pattern), multiplier)
            for pattern, multiplier in self.learning_rate_multipliers
        ]

    def build(self, var_list):
        super().build(var_list)
        # Per-variable constants, resolved once from the variable paths.
        self._decays = [
            self._decay_exclusions_re.search(v.path) is None for v in var_list
        ]
        self._multipliers = [self.learning_rate_multiplier(v.path) for v in var_list]

    def learning_rate_multiplier(self, path: str) -> float:
        for pattern, multiplier in self._multiplier_res:
            if pattern.search(path):
                return multiplier
        return 1.0

    def decays(self, path: str) -> bool:
        return self._decay_exclusions_re.search(path) is None

    def _get_current_learning_rate(self):
        if isinstance(
            self._learning_rate, keras.optimizers.schedules.LearningRateSchedule
        ):
            updates = self._iterations
            if self.gradient_accumulation_steps:
                updates = updates // self.gradient_accumulation_steps
            return self._learning_rate(updates)
        return super()._get_current_learning_rate()

    def _apply_weight_decay(self, variables):
        # Folded into `update_step`, where the per-variable multiplier is known.
        return

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        lr = tf.cast(learning_rate, variable.dtype) * self._multipliers[index]
        gradient = tf.cast(gradient, variable.dtype)
        m = self._momentums[index]
        v = self._velocities[index]
        self.assign_add(m, (gradient - m) * (1 - self.beta_1))
        self.assign_add(v, (tf.square(gradient) - v) * (1 - self.beta_2))
        update = m / (tf.sqrt(v) + self.epsilon)
        if self.weight_decay and self._decays[index]:
            update += tf.cast(self.weight_decay, variable.dtype) * variable
        self.assign_sub(variable, lr * update)

    # --- cross-replica order: all-reduce, then clip ---
    # Set (while tracing) by `ElectraLossScaleOptimizer`, which sums first.
    _gradients_summed = False

    def _backend_apply_gradients(self, grads, trainable_variables):
        if not self._gradients_summed:
            grads = _sum_across_replicas(grads)
        super()._backend_apply_gradients(grads, trainable_variables)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        # Already summed in `_backend_apply_gradients`.
        return grads_and_vars

    def get_config(self):
        config = super().get_config()
        config["decay_exclusions"] = self.decay_exclusions
        config["learning_rate_multipliers"] = self.learning_rate_multipliers
        return config


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraLossScaleOptimizer(keras.optimizers.LossScaleOptimizer):
    """Keras' dynamic loss scaling (for mixed_float16), one verdict for all replicas.

    Keras decides per replica whether the gradients are finite, assuming they
    are already summed across replicas. `ElectraAdam` sums them later, inside
    `apply` (before clipping): then Keras either follows the first replica's
    verdict (and may apply a non-finite sum) or lets each replica decide (and
    one may skip while another waits forever in the all-reduce). Here the
    gradients are summed first, so every replica judges the same sum: all
    skip, or none does.
    """

    def apply(self, grads, trainable_variables=None):
        context = tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return super().apply(grads, trainable_variables)
        # Summing here (non-finite values stay non-finite in the sum) rather
        # than all-reducing the verdict: a collective inside Keras' merge_call
        # would be ordered differently on different replicas.
        grads = _sum_across_replicas(grads)
        self.inner_optimizer._gradients_summed = True
        try:
            return super().apply(grads, trainable_variables)
        finally:
            self.inner_optimizer._gradients_summed = False


def _sum_across_replicas(grads):
    """Gradients summed over the replicas of a `tf.distribute` step (None kept)."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return grads
    present = [g for g in grads if g is not None]
    summed = iter(context.all_reduce(tf.distribute.ReduceOp.SUM, present))
    return [None if g is None else next(summed) for g in grads]
