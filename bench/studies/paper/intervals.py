"""One arm minus another (ELECTRA minus the rest; every other pre-trained
arm minus no pre-training and MLM), with two 95% intervals (`compare`).

An arm's score is the mean of its pre-training runs' means (each run's mean
over its fine-tuning seeds). The arms' runs are independent, so both
intervals are unpaired: `two_level_bootstrap` resamples each arm's runs, then
each drawn run's fine-tuning scores (both sources of spread);
`welch_interval` is Welch's t-interval over the run means alone.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from bench.studies.paper.design import is_final

SAMPLES = 10000
LEVEL = 0.95


def arm_mean(runs: dict) -> float:
    return float(np.mean([np.mean(scores) for scores in runs.values()]))


def resampled_means(runs: dict, samples: int, rng) -> np.ndarray:
    """`samples` two-level bootstrap resamples of `arm_mean(runs)`."""
    scores = list(runs.values())
    sizes = np.array([len(s) for s in scores])
    table = np.zeros((len(scores), sizes.max()))
    for i, s in enumerate(scores):
        table[i, : len(s)] = s
    picked = rng.integers(len(scores), size=(samples, len(scores)))
    counts = sizes[picked][..., None]  # each drawn run's number of scores
    within = rng.integers(counts, size=(*picked.shape, sizes.max()))
    drawn = table[picked[..., None], within]
    drawn = np.where(np.arange(sizes.max()) < counts, drawn, 0.0)
    return (drawn.sum(-1) / counts[..., 0]).mean(-1)


def two_level_bootstrap(a: dict, b: dict, samples=SAMPLES, seed=0) -> dict:
    """Percentile interval of `arm_mean(a) - arm_mean(b)`; `a` and `b` map a
    pre-training run to its fine-tuning scores."""
    rng = np.random.default_rng(seed)
    differences = resampled_means(a, samples, rng) - resampled_means(b, samples, rng)
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(differences, [tail, 100 - tail])
    return {"low": float(low), "high": float(high)}


def welch_interval(a: dict, b: dict) -> dict:
    means = [[np.mean(scores) for scores in arm.values()] for arm in (a, b)]
    test = stats.ttest_ind(*means, equal_var=False)
    low, high = test.confidence_interval(LEVEL)
    return {"low": float(low), "high": float(high), "df": float(test.df)}


def compare(a: dict, b: dict, samples=SAMPLES, seed=0) -> dict:
    """The difference `a - b` and both intervals. `bootstrap` is None when a
    side has one score; a side with one pre-training run gives a bootstrap over
    its fine-tuning seeds alone and no `t_interval`."""
    found = {
        "difference": arm_mean(a) - arm_mean(b),
        "pretraining_runs": [len(a), len(b)],
        "scores": [sum(map(len, a.values())), sum(map(len, b.values()))],
        "bootstrap": None,
        "t_interval": None,
    }
    if min(found["scores"]) > 1:
        found["bootstrap"] = two_level_bootstrap(a, b, samples, seed)
    if min(found["pretraining_runs"]) > 1:
        found["t_interval"] = welch_interval(a, b)
    return found


BASELINES = ("none", "mlm")


def comparisons(setup, summary) -> dict:
    """Per task, ELECTRA against every other final point, and every other
    pre-trained arm (a recipe, a generator) against each baseline: a recipe
    study has no arm named ELECTRA, and its question is whether a recipe
    beats no pre-training and MLM; there MLM is also compared with no
    pre-training, the gain a recipe is measured against."""
    found = {}
    for task, points in summary.items():
        finals = {}
        for point in points.values():
            if is_final(setup, point):
                runs = finals[point["variant"]] = {}
                for run in point["runs"]:
                    runs.setdefault(run["pretraining_seed"], []).append(run["test"])
        pairs = []
        if "electra" in finals:
            pairs = [("electra", o) for o in finals if o != "electra"]
        pairs += [
            (arm, base)
            for arm in finals
            if arm not in ("electra", *BASELINES)
            for base in BASELINES
            if base in finals
        ]
        if "electra" not in finals and all(base in finals for base in BASELINES):
            pairs.append(BASELINES[::-1])
        if pairs:
            found[task] = {
                f"{a} - {b}": compare(finals[a], finals[b]) for a, b in pairs
            }
    return found


def interval_text(name: str, compared: dict) -> str:
    """The difference and its intervals for comparison `name` ("electra -
    mlm"), saying which spread an interval leaves out and why one is absent."""
    left, right = name.split(" - ")
    head = f"{compared['difference']:+.4f}"
    if compared["bootstrap"] is None:
        single = left if compared["scores"][0] == 1 else right
        return f"{head}; no interval ({single}: one pre-training run, one seed)"

    def bounds(interval):
        return f"[{interval['low']:+.4f}, {interval['high']:+.4f}]"

    text = f"{head}, 95% two-level bootstrap {bounds(compared['bootstrap'])}"
    if compared["t_interval"] is not None:
        return text + f", Welch t over run means {bounds(compared['t_interval'])}"
    alone = [s for s, n in zip((left, right), compared["pretraining_runs"]) if n == 1]
    return text + (
        f" over fine-tuning seeds only for {' and '.join(alone)} (one pre-training "
        "run: narrower than the truth; no t-interval)"
    )
