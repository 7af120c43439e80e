"""The report's figures: per task, test score against pre-training FLOPs
(`<output>_<task>.png`) and, when generators were varied, against the
generator's width (`<output>_<task>_generators.png`)."""

from __future__ import annotations

import contextlib
import pathlib

from bench.studies.paper.design import (
    GENERATOR_VARIANT,
    UNIFORM_GENERATOR_VARIANT,
    is_generator_ablation,
    label,
)


def draw(setup, summary, output: pathlib.Path) -> None:
    for task, points in summary.items():
        if points:  # nothing to draw before a task's first run
            plot(task, points, pathlib.Path(f"{output}_{task}.png"))
        if any(is_generator_ablation(p["variant"]) for p in points.values()):
            path = pathlib.Path(f"{output}_{task}_generators.png")
            plot_generators(setup, task, points, path)


@contextlib.contextmanager
def _figure(task: str, path, xlabel: str, title: str):
    """Axes for a task's test scores; labelled, written to `path` and closed
    when the block ends."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    try:
        yield axes
        axes.set(xlabel=xlabel, ylabel=f"{task} test accuracy (mean; dots: runs)")
        axes.set_title(f"{task}: {title}")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(path, dpi=120)
    finally:
        plt.close(figure)


def _curve(axes, xs, points, **style) -> None:
    """Means ± standard deviation of `points` at `xs`, and every fine-tuning run
    as a dot in the line's colour."""
    axes.errorbar(
        xs,
        [p["test_mean"] for p in points],
        yerr=[p["test_std"] for p in points],
        marker="o",
        capsize=3,
        **style,
    )
    for x, p in zip(xs, points):
        tests = [r["test"] for r in p["runs"]]
        color = axes.lines[-1].get_color()
        axes.scatter([x] * len(tests), tests, s=6, alpha=0.35, color=color)


def _level(axes, point, style) -> None:
    axes.axhline(
        point["test_mean"],
        color="grey",
        linestyle=style,
        linewidth=1,
        label=label(point["variant"]),
    )


def plot(task, points, path) -> None:
    curves = {}
    for point in points.values():
        # Other generators train for ELECTRA's steps, not its FLOPs: they are
        # drawn against their width (`plot_generators`), not on this axis.
        if not is_generator_ablation(point["variant"]):
            curves.setdefault(point["variant"], []).append(point)
    none = curves.pop("none", [])
    xlabel = "pre-training FLOPs (paper's count)"
    with _figure(task, path, xlabel, "test score against pre-training compute") as axes:
        for variant, curve in sorted(curves.items()):
            curve = sorted(curve, key=lambda p: p["flops"])
            # A compute curve starts from no pre-training; a row with only its
            # final encoder is a point, joined to nothing it did not measure.
            line = "-" if len(curve) > 1 else "none"
            if len(curve) > 1:
                curve = none[:1] + curve
            xs = [p["flops"] for p in curve]
            _curve(axes, xs, curve, linestyle=line, label=label(variant))
        if none:
            _level(axes, none[0], ":")


def generator_width(setup: dict, variant: str) -> float | None:
    """A variant's generator width as a fraction of the discriminator's
    (ELECTRA's own: the preset's, or the study's --hparams); None for the
    uniform generator and the variants that are not ELECTRA's generators."""
    if variant.startswith(GENERATOR_VARIANT):
        return float(variant.removeprefix(GENERATOR_VARIANT))
    if variant == "electra":
        from electra_tf.presets import get_preset

        own = get_preset(setup["preset"]).model.generator_hidden_size
        return float(setup.get("hparams", {}).get("generator_hidden_size", own))
    return None


def plot_generators(setup, task, points, path) -> None:
    """The paper's Figure 3 at this scale: the final encoders' test score
    against the generator's width, at equal discriminator steps; the uniform
    generator and no pre-training as lines."""
    final = {}
    for point in points.values():
        if point["step"] >= final.get(point["variant"], {"step": -1})["step"]:
            final[point["variant"]] = point
    widths = {v: generator_width(setup, v) for v in final}
    sized = sorted(
        ((w, final[v]) for v, w in widths.items() if w is not None), key=lambda i: i[0]
    )
    xlabel = "generator width / discriminator width"
    title = "generator size at ELECTRA's steps (paper Figure 3)"
    with _figure(task, path, xlabel, title) as axes:
        xs = [w for w, _ in sized]
        _curve(axes, xs, [p for _, p in sized], label="ELECTRA, learned generator")
        for variant, style in ((UNIFORM_GENERATOR_VARIANT, "--"), ("none", ":")):
            if variant in final:
                _level(axes, final[variant], style)
        axes.set_xscale("log", base=2)
