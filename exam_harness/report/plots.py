"""The leaderboard picture of the papers: systems in official order, each measure min-max normalised.

One panel per minimum grade. The x axis lists the systems by official rank (best left; systems the
official leaderboard lacks come last); each measure's scores are scaled to 0..1 over the systems
(best = 1) and drawn with standard-error bars scaled alike, the official order as a falling grey
line, so a measure that disagrees with the official ranking stands out as a jagged line.
matplotlib is an optional extra (``pip install 'exam-harness[plot]'``), imported on use.

A section draws its own figures beside them (its optional ``images``: the external qrels feature's per-query
scatter plots) with :func:`pyplot` and :func:`image_bytes`.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from exam_harness.core.errors import ConfigError
from exam_harness.io.textio import atomic_write_bytes
from exam_harness.results.evaluation import (
    EvaluationReport,
    Leaderboard,
    correlation_of,
    official_of,
    system_order,
)

DEFAULT_PLOT_MEASURES: tuple[str, ...] = ("exam-cover", "n-exam-cover", "P@20", "ndcg@10", "mrr")


def pyplot() -> Any:
    """matplotlib's pyplot drawing into files (a ConfigError naming the extra when matplotlib is missing)."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ConfigError(
            "drawing leaderboards needs matplotlib: pip install 'exam-harness[plot]'"
        ) from exc
    matplotlib.use("Agg", force=True)  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


def _pick(result: EvaluationReport, tau: int, measures: Sequence[str], label: str) -> list[Leaderboard]:
    boards = []
    every = result.boards()
    for wanted in measures:
        for b in every:
            if b.min_grade != tau:
                continue
            cut_off = b.measure.startswith(("exam-cover", "n-exam-cover", "alpha-ndcg"))
            base = b.measure.split("@", 1)[0] if cut_off else b.measure
            if (base == wanted or b.measure == wanted) and (b.label is None or b.label == label):
                boards.append(b)
                break
    return boards


def _normalised(board: Leaderboard, runs: Sequence[str]) -> tuple[list[float], list[float]]:
    values = [board.systems.get(r, float("nan")) for r in runs]
    finite = [v for v in values if v == v]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    span = high - low or 1.0
    scaled = [(v - low) / span for v in values]
    errors = [board.stderr.get(r, 0.0) / span for r in runs]
    return scaled, errors


def image_bytes(fig: Any, suffix: str, **kwargs: Any) -> bytes:
    """``fig`` saved in the format ``suffix`` names (png, svg)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=suffix, **kwargs)
    return buffer.getvalue()


def written(folder: str | Path, images: Mapping[str, bytes]) -> list[Path]:
    """Each image written atomically into ``folder`` (created) by its file name."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in images.items():
        atomic_write_bytes(folder / name, data)
    return [folder / name for name in images]


def plot_leaderboards(
    result: EvaluationReport,
    folder: str | Path,
    *,
    measures: Sequence[str] = DEFAULT_PLOT_MEASURES,
    label: str = "max-grade",
    name: str = "leaderboards",
    dpi: int = 130,
) -> list[Path]:
    """Draw ``NAME.png`` and ``NAME.svg`` into ``folder`` (created); returns the two paths."""
    return written(folder, leaderboard_images(result, measures=measures, label=label, name=name, dpi=dpi))


def leaderboard_images(
    result: EvaluationReport,
    *,
    measures: Sequence[str] = DEFAULT_PLOT_MEASURES,
    label: str = "max-grade",
    name: str = "leaderboards",
    dpi: int = 130,
) -> dict[str, bytes]:
    """``NAME.png`` and ``NAME.svg``: the leaderboards against the official ranking, by file name."""
    plt = pyplot()
    every = result.boards()
    taus = sorted({b.min_grade for b in every})
    if not taus:
        raise ConfigError("nothing to draw: the result has no leaderboards")
    official = official_of(result.sections) or {}
    first = every[0]
    runs = system_order(list(first.systems), official, first.systems)
    left_out = [r for r in runs if official and r not in official]
    # Runs the official leaderboard lacks are left out: nothing to compare them with, and an outlier
    # among them would squash every other system into the top of the min-max scale.
    runs = [r for r in runs if r not in left_out]
    width = max(9.0, 0.28 * len(runs) + 4.5)
    fig, axes = plt.subplots(len(taus), 1, figsize=(width, 3.2 * len(taus) + 1.2), sharex=True, squeeze=False)
    xs = list(range(len(runs)))
    markers = "osD^vP*X"
    for row, tau in enumerate(taus):
        ax = axes[row][0]
        if official:
            ranks = [official.get(r) for r in runs]
            known = [x for x in ranks if x is not None]
            if known:
                lo, hi = min(known), max(known)
                span = (hi - lo) or 1.0
                ax.plot(xs, [(hi - r) / span if r is not None else float("nan") for r in ranks], color="0.55",
                        linewidth=2.2, label="official", zorder=1)
        for i, board in enumerate(_pick(result, tau, measures, label)):
            scaled, errors = _normalised(board, runs)
            corr = correlation_of(result.sections, board.name)
            tag = f" (ρ={corr.spearman:.2f})" if corr is not None and corr.spearman is not None else ""
            ax.errorbar(xs, scaled, yerr=errors, marker=markers[i % len(markers)], markersize=3.5, linewidth=1.0,
                        elinewidth=0.6, capsize=2, label=board.title + tag, zorder=2 + i)
        ax.set_ylim(-0.15, 1.15)
        ax.set_ylabel("min-max normalised")
        ax.set_title(f"grade ≥ {tau}", loc="left", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.85)
    bottom = axes[-1][0]
    bottom.set_xticks(xs)
    bottom.set_xticklabels(runs, rotation=70, ha="right", fontsize=7)
    xlabel = "systems by official rank (best left)" if official else "systems by score"
    if left_out:
        xlabel += f"; not in the official leaderboard, left out: {', '.join(left_out)}"
    bottom.set_xlabel(xlabel)
    fig.suptitle("Leaderboards against the official ranking (± standard error)", fontsize=11)
    fig.tight_layout()
    images = {f"{name}.png": image_bytes(fig, "png", dpi=dpi), f"{name}.svg": image_bytes(fig, "svg")}
    plt.close(fig)
    return images
