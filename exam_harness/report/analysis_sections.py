"""Report sections the pytest plugin prints on request: the baseline comparison (the analyses' sections are the
registered analyses' own, session/analyses.py).

Each section is ``(title, text)``: plain text rendered by rich at a given width, ready for
``terminalreporter.write_sep("-", title)`` + ``terminalreporter.write(text)``.
"""

from __future__ import annotations

from collections.abc import Mapping

from exam_harness.core.display import render_text
from exam_harness.measures.significance import compare_to_baseline

Section = tuple[str, str]


def baseline_section(
    per_query_by_run: Mapping[str, Mapping[str, float]],
    baseline: str,
    *,
    alpha: float = 0.05,
    method: str = "permutation",
    measure: str = "EXAM-Cover",
    n_resamples: int = 10000,
    seed: int = 0,
    width: int = 100,
) -> Section:
    """Every run against ``baseline`` (difference, CI, p; worse runs marked) as a printable section."""
    from rich.table import Table
    from rich.text import Text

    qids = sorted({q for scores in per_query_by_run.values() for q in scores})
    comparisons = compare_to_baseline(per_query_by_run, baseline, queries=qids, alpha=alpha, method=method,
                               n_resamples=n_resamples, seed=seed)
    table = Table(title=f"{measure} against baseline {baseline!r} ({method} test over {len(qids)} queries, "
                  f"α = {alpha:g}; ▼ significantly worse, ▲ better)", title_justify="left", header_style="bold")
    for name, justify in (("run", "left"), ("mean", "right"), ("Δ", "right"), ("CI of Δ", "right"), ("p", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for c in sorted(comparisons, key=lambda c: (-c.diff, c.run)):
        mark = "▼ " if c.significantly_worse else "▲ " if c.significantly_better else ""
        table.add_row(c.run, f"{c.mean:.4f}", Text(f"{mark}{c.diff:+.4f}"), f"[{c.ci_low:+.4f}, {c.ci_high:+.4f}]",
                      f"{c.p:.3g}")
    return (f"exam: {measure} against baseline {baseline}", render_text(table, width))
