"""Training health of a pre-training run: is the discriminator learning?

ELECTRA's discriminator can look busy while learning nothing. Its loss falls
for a few hundred steps (the near-uniform early generator replaces common
words by rare ones, which the token alone gives away), then sits at the base
rate: once the generator samples plausible words, the best the discriminator
can do without context is to predict the replaced fraction everywhere, whose
cross-entropy is the binary entropy of that fraction. A run can spend its
whole budget there (this project's 2,000-step demo did). No peer reports it.

`TrainingHealth` reads the held-out metrics of each evaluation and reports
what it sees, each finding with its likely cause and remedy:

* `base_rate_plateau`: held-out `rtd_loss` within `plateau_margin` of the
  base-rate entropy, AUC under `plateau_auc` (under `plateau_auc +
  auc_tolerance` once a plateau has begun) and balanced accuracy (where
  logged) within `balanced_margin` of 0.5 for `plateau_evaluations`
  evaluations in a row, while the generator's MLM accuracy rises;
* `left_plateau`: the discriminator rose above the base rate after a plateau;
* `generator_too_strong`: the generator's samples are so often the original
  token that few tokens are replaced (the paper's section 3.2 warning: a
  generator as strong as the discriminator leaves it too hard a task);
* `divergence`: the training loss climbed far above its best, or the
  held-out RTD loss is worse than predicting the base rate.

Electric (`objective="electric"`) is read the same way with its own words:
its labels mark every sampled position as noise, so `replaced_fraction` is
the sampled fraction whatever the samples are, and the plateau is its
discriminator's energy doing no better than cancelling the cloze model's
log q (the noise correction), i.e. using no context beyond what the cloze
model knows. `generator_too_strong` does not apply to it: a sample equal to
the original still counts as noise, so no signal is lost, and
noise-contrastive estimation favours noise close to the data.

`TrainingHealthMonitor` runs it inside `fit`, logs every finding and writes
the base-rate entropy to TensorBoard as `epoch_rtd_loss` of a run named
`base_rate`, so it is drawn in the same chart as the training and held-out
`rtd_loss` curves.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os

import keras
import tensorflow as tf

logger = logging.getLogger(__name__)


def balanced_accuracy(metrics: dict[str, float]) -> str:
    """ ", balanced accuracy 0.500" for a finding's text, "" when not logged."""
    value = metrics.get("rtd_balanced_accuracy")
    return "" if value is None else f", balanced accuracy {value:.3f}"


def base_rate_loss(replaced_fraction: float) -> float:
    """Binary entropy (nats) of `replaced_fraction`: the RTD loss of no context.

    A discriminator that ignores its input and predicts the replaced fraction
    p for every token has cross-entropy -p log p - (1 - p) log(1 - p).
    """
    p = min(max(float(replaced_fraction), 1e-7), 1.0 - 1e-7)
    return -p * math.log(p) - (1.0 - p) * math.log(1.0 - p)


@dataclasses.dataclass(frozen=True)
class HealthFinding:
    """One observation of the monitor at one evaluation."""

    # "base_rate_plateau", "left_plateau", "generator_too_strong", "divergence".
    check: str
    # Optimizer step of the evaluation.
    step: int
    # What was seen, the likely cause and the remedy, for a person to read.
    message: str

    @property
    def is_problem(self) -> bool:
        return self.check != "left_plateau"


class TrainingHealth:
    """Judges a run from its sequence of evaluations (pure Python, no graph).

    Call `update(step, metrics)` after each evaluation with the held-out
    metrics (`rtd_loss`, `rtd_auc`, `replaced_fraction`, `mlm_accuracy`,
    `sampled_accuracy`) and, if known, the training `loss`; it returns the new
    findings. A finding is reported once, when its condition starts (the
    plateau when it has lasted `plateau_evaluations` evaluations), not at
    every evaluation while it lasts.
    """

    def __init__(
        self,
        *,
        objective: str = "electra",
        plateau_margin: float = 0.05,
        plateau_auc: float = 0.56,
        plateau_evaluations: int = 3,
        auc_tolerance: float = 0.02,
        balanced_margin: float = 0.05,
        strong_generator_accuracy: float = 0.75,
        divergence_factor: float = 1.5,
    ):
        # A discriminator whose held-out loss is within 5% of the base-rate
        # entropy and whose AUC is under 0.56 has learned next to nothing a
        # constant cannot do. Why 0.56, not 0.5: without context it still
        # ranks tokens by the token alone (words the generator replaces more
        # often), so the recorded plateaus read AUC 0.48-0.572, higher with a
        # stronger generator (BENCHMARKS.md section 18's 16-unit one:
        # 0.548-0.564, which the earlier 0.55 missed), while every recorded
        # departure read 0.58-0.63 at its first evaluation off the plateau.
        # Why the AUC and not the loss gap decides: the gap does not separate
        # them (that plateau sat 1.9-2.2% under the base rate, section 13's
        # 1/8 generator 2.4-2.8% under it after leaving; the margin only
        # guards against counting a discriminator that has clearly learned).
        self.plateau_margin = plateau_margin
        self.plateau_auc = plateau_auc
        self.plateau_evaluations = plateau_evaluations
        # A held-out AUC from a small evaluation set wanders by about 0.01
        # (the demo's ~1,000 replaced held-out tokens; its plateau read
        # 0.49-0.557) and a plateau's level drifts with its generator: once a
        # plateau has begun, an evaluation less than `auc_tolerance` above
        # `plateau_auc` continues it instead of ending it (the 16-unit run's
        # 0.564, section 13's warm-up-1,500 run's 0.572). Leaving needs 0.58,
        # under the lowest recorded departure (0.582).
        self.auc_tolerance = auc_tolerance
        # Balanced accuracy (`rtd_balanced_accuracy`, the mean of the accuracy
        # on replaced and on original tokens) of a discriminator that calls
        # every token original is exactly 0.5, whatever the replaced fraction
        # (plain accuracy then reads 1 - that fraction). An evaluation above
        # 0.5 + `balanced_margin` calls replaced tokens replaced: not a plateau.
        # Evaluations that lack it (runs from before it was logged) are read
        # by the loss and AUC alone.
        self.balanced_margin = balanced_margin
        # With 3/4 of the samples equal to the original, under 4% of the
        # tokens are replaced at mask_prob 0.15: little signal per example.
        # Released models end at 0.35-0.67.
        self.strong_generator_accuracy = strong_generator_accuracy
        self.divergence_factor = divergence_factor
        # The pre-training objective: "electric" words the findings for
        # noise-contrastive estimation (see the module docstring).
        self.objective = objective
        self.history: list[tuple[int, dict[str, float]]] = []
        self.findings: list[HealthFinding] = []
        self._plateau_start: int | None = None
        self._plateau_reported = False
        self._strong_reported = False
        self._diverged_reported = False
        self._best_loss = math.inf

    def on_plateau(self, metrics: dict[str, float], continuing: bool = False) -> bool:
        """Whether one evaluation sits at the base rate (`continuing`: right
        after others that did, so within `auc_tolerance` of `plateau_auc`)."""
        if "rtd_loss" not in metrics or "replaced_fraction" not in metrics:
            return False
        floor = base_rate_loss(metrics["replaced_fraction"])
        near_floor = metrics["rtd_loss"] >= (1.0 - self.plateau_margin) * floor
        auc_limit = self.plateau_auc + (self.auc_tolerance if continuing else 0.0)
        # At the base rate every probability is near the replaced fraction,
        # below 0.5: every token is called original, balanced accuracy 0.5.
        balanced = metrics.get("rtd_balanced_accuracy", 0.5)
        calls_none = balanced < 0.5 + self.balanced_margin
        return near_floor and metrics.get("rtd_auc", 0.5) < auc_limit and calls_none

    def update(self, step: int, metrics: dict[str, float]) -> list[HealthFinding]:
        metrics = {k: float(v) for k, v in metrics.items()}
        self.history.append((step, metrics))
        new = self._plateau(step, metrics)
        new += self._generator(step, metrics)
        new += self._divergence(step, metrics)
        self.findings += new
        return new

    def _plateau(self, step, metrics):
        if not self.on_plateau(metrics, continuing=self._plateau_start is not None):
            found = []
            if self._plateau_reported and "rtd_auc" in metrics:
                found.append(
                    HealthFinding(
                        "left_plateau",
                        step,
                        f"the discriminator left the base rate at step {step} "
                        f"(held-out AUC {metrics['rtd_auc']:.3f}"
                        f"{balanced_accuracy(metrics)}, rtd_loss "
                        f"{metrics['rtd_loss']:.4f} against the base rate's "
                        f"{base_rate_loss(metrics['replaced_fraction']):.4f}): it "
                        "now uses context.",
                    )
                )
            self._plateau_start, self._plateau_reported = None, False
            return found
        if self._plateau_start is None:
            self._plateau_start = len(self.history) - 1
        streak = self.history[self._plateau_start :]
        if self._plateau_reported or len(streak) < self.plateau_evaluations:
            return []
        first = streak[0][1].get("mlm_accuracy")
        last = metrics.get("mlm_accuracy")
        generator_learns = first is None or last is None or last >= first
        if not generator_learns:
            return []
        self._plateau_reported = True
        floor = base_rate_loss(metrics["replaced_fraction"])
        electric = self.objective == "electric"
        learner = (
            "the cloze model's accuracy at the masked positions"
            if electric
            else "the generator's MLM accuracy"
        )
        learning = (
            f"; {learner} went {first:.3f} -> {last:.3f}"
            if first is not None and last is not None
            else ""
        )
        if electric:
            fraction = "fraction of sampled (noise) positions"
            cause = (
                "Likely cause: the discriminator's energy does no better than "
                "cancel the noise correction (the cloze model's log q): it uses "
                "no context beyond what the cloze model knows. Remedies: keep "
                "training (how long Electric stays here was not measured; "
                "ELECTRA's tiny-preset runs left after 3,000-4,000 steps); for a "
                "narrow model, initializer_range above BERT's 0.02 (0.1 at 64 "
                "units) and no dropout, which were measured on ELECTRA's "
                "discriminator (BENCHMARKS.md, section 13)."
            )
        else:
            fraction = "replaced fraction"
            cause = (
                "Likely cause: the generator's samples became plausible (it "
                "learned word frequencies) before the discriminator learned to "
                "use context. Remedies: keep training (at the tiny preset the "
                "longer runs measured left it after 3,000-4,000 steps); a "
                "narrower generator leaves it sooner (generator_hidden_size "
                "0.0625 at tiny: after ~1,250 steps); for a narrow model, "
                "initializer_range above BERT's 0.02 (0.1 at 64 units) and no "
                "dropout (BENCHMARKS.md, section 13)."
            )
        return [
            HealthFinding(
                "base_rate_plateau",
                step,
                f"the discriminator is at the base rate for {len(streak)} "
                f"evaluations (steps {streak[0][0]}-{step}): held-out rtd_loss "
                f"{metrics['rtd_loss']:.4f} against {floor:.4f} for predicting "
                f"the {fraction} {metrics['replaced_fraction']:.3f} "
                f"everywhere, AUC {metrics.get('rtd_auc', float('nan')):.3f}"
                f"{balanced_accuracy(metrics)}{learning}. {cause}",
            )
        ]

    def _generator(self, step, metrics):
        accuracy = metrics.get("sampled_accuracy")
        # Electric labels a sample equal to the original as noise: a strong
        # cloze model costs it no labels (see the module docstring).
        if accuracy is None or self.objective == "electric":
            return []
        if accuracy < self.strong_generator_accuracy:
            self._strong_reported = False
            return []
        if self._strong_reported:
            return []
        self._strong_reported = True
        return [
            HealthFinding(
                "generator_too_strong",
                step,
                f"{accuracy:.0%} of the generator's samples are the original "
                f"token, so only {metrics.get('replaced_fraction', 0.0):.1%} of "
                "the tokens are replaced: the discriminator gets little signal "
                "and the hardest possible task (the paper, section 3.2: "
                "generators 1/4-1/2 the discriminator's size work best). "
                "Remedies: a smaller generator (generator_hidden_size), a higher "
                "sampling temperature, or mask_prob up.",
            )
        ]

    def _divergence(self, step, metrics):
        found = []
        loss = metrics.get("loss")
        rose = (
            loss is not None
            and math.isfinite(self._best_loss)
            and loss > self.divergence_factor * self._best_loss
        )
        if loss is not None and not math.isfinite(loss):
            rose = True
        if loss is not None and math.isfinite(loss):
            self._best_loss = min(self._best_loss, loss)
        worse_than_constant = (
            "rtd_loss" in metrics
            and "replaced_fraction" in metrics
            and len(self.history) > self.plateau_evaluations
            and metrics["rtd_loss"]
            > self.divergence_factor * base_rate_loss(metrics["replaced_fraction"])
        )
        if (rose or worse_than_constant) and not self._diverged_reported:
            self._diverged_reported = True
            seen = (
                f"the training loss is {loss:.4g}, over {self.divergence_factor}x "
                f"its best ({self._best_loss:.4g})"
                if rose
                else f"the held-out rtd_loss {metrics['rtd_loss']:.4f} is over "
                f"{self.divergence_factor}x the base rate's "
                f"{base_rate_loss(metrics['replaced_fraction']):.4f}"
            )
            found.append(
                HealthFinding(
                    "divergence",
                    step,
                    f"training is diverging at step {step}: {seen}. Remedies: a "
                    "lower learning_rate or a longer warmup_steps, clip_norm 1.0, "
                    "float32 precision; resume from the last good checkpoint.",
                )
            )
        elif not (rose or worse_than_constant):
            self._diverged_reported = False
        return found


class TrainingHealthMonitor(keras.callbacks.Callback):
    """Runs `TrainingHealth` on every held-out evaluation of `fit`.

    Evaluations are the `val_*` entries Keras adds to an epoch's logs (a Keras
    epoch of a pre-training run is `checkpoint_every` steps). Findings go to
    the log (warnings for problems) and to TensorBoard as text under
    `health`; the base-rate entropy goes to `log_dir/base_rate`.
    """

    def __init__(
        self, log_dir: str | None = None, health: TrainingHealth | None = None
    ):
        super().__init__()
        self.health = health or TrainingHealth()
        self.writer = (
            tf.summary.create_file_writer(os.path.join(log_dir, "base_rate"))
            if log_dir
            else None
        )

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        held_out = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if "rtd_loss" not in held_out:
            return  # no evaluation this epoch, or an objective without RTD
        if "loss" in logs:
            held_out["loss"] = logs["loss"]
        step = int(self.model.optimizer.iterations.numpy())
        findings = self.health.update(step, held_out)
        for finding in findings:
            log = logger.warning if finding.is_problem else logger.info
            log("Training health (%s): %s", finding.check, finding.message)
        if self.writer is not None:
            with self.writer.as_default(step=step):
                tf.summary.scalar(
                    "epoch_rtd_loss", base_rate_loss(held_out["replaced_fraction"])
                )
                for finding in findings:
                    tf.summary.text("health", f"{finding.check}: {finding.message}")
            self.writer.flush()
