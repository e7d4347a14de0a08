"""The significance section: every run against a baseline run (``evaluate --baseline``), per measure,
by the ``--significance`` test; kept under ``--brief``. The terminal shows the cover leaderboards'
comparisons at each tau; the JSON holds every measure's. It reads the feature's scoring input
(:data:`~exam_harness.features.significance.baseline.BASELINE`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from exam_harness.features.significance.baseline import BASELINE
from exam_harness.results.sections import preformatted_html, preformatted_markdown

if TYPE_CHECKING:
    from rich.table import Table

    from exam_harness.results.scored import Scored

_SHOWN = ("exam-cover", "n-exam-cover")  # the measures whose comparisons the terminal shows (by short name)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComparisonResult(_Model):
    diff: float
    ci: tuple[float, float]
    p: float
    significantly_worse: bool
    significantly_better: bool


class MeasureComparisons(_Model):
    """One measure (``measure``: its name in ``measures[]``): each run against the baseline, the runs in
    the order the leaderboards list them (by the official leaderboard where known, else by score)."""

    measure: str
    key: str  # the short name (exam-cover@20)
    title: str
    min_grade: int
    runs: dict[str, ComparisonResult]


class Significance(_Model):
    baseline: str
    method: str
    alpha: float
    resamples: int
    measures: list[MeasureComparisons]


def significance(scored: Scored) -> Significance | None:
    test = scored.input(BASELINE)
    if test is None:
        return None
    from exam_harness.measures.significance import compare_to_baseline
    from exam_harness.results.evaluation import system_order
    from exam_harness.results.schema import MeasureInfo

    measures = []
    generated = {run for run, given in scored.runs.items() if given.generated}
    for measure in scored.measures:  # the document's measures, in its order
        # a baseline of generated answers has no value of a measure that scores none (a trec measure)
        if not measure.scores_run(test.baseline in generated):
            continue
        result = scored.result[measure]
        per_query = {run: dict(values) for run, values in result.per_query.items()}
        queries = sorted({q for values in per_query.values() for q in values})
        found = {c.run: c for c in compare_to_baseline(per_query, test.baseline, queries=queries, alpha=test.alpha,
                                                        method=test.method, n_resamples=test.resamples,
                                                        seed=test.seed)}
        means = result.means
        order = system_order([r for r in means if r != test.baseline], scored.official, means)
        info = MeasureInfo.of(result.measure)
        measures.append(MeasureComparisons(
            measure=info.name, key=result.measure.key, title=info.title, min_grade=info.min_grade or 0,
            runs={run: ComparisonResult(diff=c.diff, ci=(c.ci_low, c.ci_high), p=c.p,
                                        significantly_worse=c.significantly_worse,
                                        significantly_better=c.significantly_better)
                  for run in [*order, *found] if (c := found.get(run)) is not None}))
    return Significance(baseline=test.baseline, method=test.method, alpha=test.alpha, resamples=test.resamples,
                        measures=measures)


def significance_table(content: Significance, min_grade: int) -> Table | None:
    """The baseline comparison of the cover leaderboards at one tau."""
    from rich.table import Table
    from rich.text import Text

    shown = [m for m in content.measures if m.min_grade == min_grade and m.key.startswith(_SHOWN)]
    if not shown:
        return None
    table = Table(
        title=f"Against baseline {content.baseline!r} at grade ≥ {min_grade} ({content.method} test, "
        f"α = {content.alpha:g}; ▼ significantly worse, ▲ better)",
        title_justify="left", header_style="bold",
    )
    table.add_column("run", style="cyan", no_wrap=True)
    for m in shown:
        table.add_column(f"{m.title} Δ [CI]", justify="right", no_wrap=True)
        table.add_column("p", justify="right")
    for run in shown[0].runs:
        cells: list[Any] = [run]
        for m in shown:
            c = m.runs.get(run)
            if c is None:
                cells += ["–", "–"]
                continue
            mark = "▼ " if c.significantly_worse else "▲ " if c.significantly_better else ""
            style = "red" if c.significantly_worse else "green" if c.significantly_better else ""
            cells.append(Text(f"{mark}{c.diff:+.3f} [{c.ci[0]:+.3f}, {c.ci[1]:+.3f}]", style=style))
            cells.append(Text(f"{c.p:.3g}", style=style))
        table.add_row(*cells)
    return table


@dataclass(frozen=True)
class SignificanceSection:
    name: str = "significance"
    title: str = "Against the baseline"
    model: type[BaseModel] = Significance
    placement: Literal["before", "after"] = "after"
    brief: bool = True

    def compute(self, scored: Scored) -> Significance | None:
        return significance(scored)

    def terminal(self, content: Significance) -> list[Table]:
        taus = sorted({m.min_grade for m in content.measures})
        return [table for tau in taus if (table := significance_table(content, tau)) is not None]

    def markdown(self, content: Significance, escape: Callable[[str], str]) -> str:
        return preformatted_markdown(self.terminal(content))

    def html(self, content: Significance) -> str:
        return preformatted_html(self.name, self.title, self.terminal(content))


SECTION = SignificanceSection()
