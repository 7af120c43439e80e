"""Pre-training: corrupt, train, checkpoint, run.

In the order a batch meets them:

* `masking`: which positions are masked, and with what (`mask_tokens`).
* `sampling`: the generator's samples that replace them (inverse CDF or Gumbel-max).
* `pretrainer`: `ElectraPretrainer`, the custom `train_step`; every objective's
  losses and metrics.
* `flops`: training FLOPs of every objective.
* `callbacks`: checkpoints, non-finite loss, TensorBoard summaries.
* `checkpoint`: our checkpoints, read (step, weights, a whole checkpoint with its
  config); `electra_tf.conversion.convert` writes converted ones.
* `distributed_loop`: the multi-worker training loop (Keras' `fit` fails there).
* `settings`: flags, a preset and `--hparams` -> the run's configs, in one pass.
* `run`: a whole run: `pretrain(flags)`, and `run_pretraining` (data, `fit`,
  evaluation, export).
"""
