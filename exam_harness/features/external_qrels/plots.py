"""The external qrels section's figures under ``--plot``: per official qrels measure one figure, one scatter panel
per leaderboard compared with it (a point per run and query: the official qrels' value across, the leaderboard's
value up)."""

from __future__ import annotations

import math
import re
from pathlib import Path

from exam_harness.features.external_qrels.model import OFFICIAL_QRELS_SOURCE, ExternalQrelsResult
from exam_harness.report.plots import image_bytes, pyplot, written
from exam_harness.report.tables import title_of


def _panel_title(source: str, measure: str, min_grade: int | None, level: int | None) -> str:
    if min_grade is not None:
        return f"{title_of(measure)} (grade ≥ {min_grade})"
    return f"{Path(source).name} {title_of(measure)} (level {level})"


def plot_per_query(
    external: ExternalQrelsResult, folder: str | Path, *, name: str = "per-query", dpi: int = 130
) -> list[Path]:
    """Draw ``NAME-MEASURE.png`` and ``.svg`` into ``folder`` (created) per official qrels measure of
    the per-query correlations; returns the paths. Panel titles give the mean per-query Kendall tau
    and the pooled one (over every point)."""
    return written(folder, per_query_images(external, name=name, dpi=dpi))


def per_query_images(external: ExternalQrelsResult, *, name: str = "per-query", dpi: int = 130) -> dict[str, bytes]:
    """:func:`plot_per_query`'s images by file name."""
    plt = pyplot()
    official_name = external.official_qrels or OFFICIAL_QRELS_SOURCE
    images: dict[str, bytes] = {}
    for official_measure in dict.fromkeys(c.official_measure for c in external.per_query):
        entries = [c for c in external.per_query if c.official_measure == official_measure]
        cols = min(3, len(entries))
        rows = math.ceil(len(entries) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.8 * rows), squeeze=False)
        for i, entry in enumerate(entries):
            ax = axes[i // cols][i % cols]
            xs = [p[2] for p in entry.points]
            ys = [p[3] for p in entry.points]
            # rasterized: thousands of points would make the SVG large and slow to write and to view
            ax.scatter(xs, ys, s=6, alpha=0.35, edgecolors="none", rasterized=True)
            if entry.measure == official_measure:  # same measure on both axes: equal scores lie on the diagonal
                ax.plot([0, 1], [0, 1], transform=ax.transAxes, color="0.6", linewidth=0.8, linestyle="--")
            mean_tau = "–" if entry.mean_kendall is None else f"{entry.mean_kendall:.2f}"
            pooled = "–" if entry.pooled.kendall is None else f"{entry.pooled.kendall:.2f}"
            ax.set_title(_panel_title(entry.source, entry.measure, entry.min_grade, entry.relevance_level)
                         + f"\nmean per-query τ {mean_tau}, pooled τ {pooled}", fontsize=8)
            ax.set_xlabel(f"{title_of(official_measure)} over {official_name}", fontsize=7)
            ax.grid(alpha=0.3)
        for j in range(len(entries), rows * cols):
            axes[j // cols][j % cols].set_visible(False)
        fig.suptitle(f"Per-query scores against the official qrels ({title_of(official_measure)}); "
                     "a point per run and query", fontsize=10)
        fig.tight_layout()
        slug = re.sub(r"[^A-Za-z0-9]+", "", official_measure)
        images[f"{name}-{slug}.png"] = image_bytes(fig, "png", dpi=dpi)
        images[f"{name}-{slug}.svg"] = image_bytes(fig, "svg")
        plt.close(fig)
    return images
