"""The ``calibration`` section of every output (terminal, JSON, markdown, HTML; the pytest session and
``evaluate`` alike): given a team's labels (``--exam-team-labels FILE``, ``--team-labels FILE``), each judge's
TPR, TNR, precision, base rate and Cohen's kappa with 95% intervals, the judges' agreement with each other and
every EXAM-Cover, n-EXAM and nugget F score beside its corrected estimate (docs/calibration.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from exam_harness.features.calibration.inputs import LABELS, NAME
from exam_harness.features.calibration.model import Calibration, Figures, Interval
from exam_harness.results.sections import preformatted_html, preformatted_markdown

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from exam_harness.results.scored import Scored

# the judges' figures the tables show (the base rate is the labels' own: the titles give it)
FIGURES = (("TPR", "tpr"), ("TNR", "tnr"), ("precision", "precision"), ("κ", "kappa"))


def shown(interval: Interval) -> str:
    """``0.812 [0.71, 0.89]``."""
    if interval.value is None:
        return "–"
    if interval.low is None or interval.high is None:
        return f"{interval.value:.3f}"
    return f"{interval.value:.3f} [{interval.low:.2f}, {interval.high:.2f}]"


def _cell(interval: Interval) -> str:
    """A table's cell: the value over its interval (``0.812`` / ``0.71–0.89``), narrow enough for 80 columns."""
    if interval.value is None or interval.low is None or interval.high is None:
        return shown(interval)
    return f"{interval.value:.3f}\n{interval.low:.2f}–{interval.high:.2f}"


def _cells(figures: Figures) -> list[str]:
    return [str(figures.pairs), *(_cell(getattr(figures, name)) for _, name in FIGURES)]


def judges_table(content: Calibration) -> Table:
    from rich.table import Table

    design = content.design
    drawn = (f"sample {design.sample}: {design.labelled} of {design.population} {design.unit}s" if design.sample
             else f"{design.labelled} labels of no sample, each weighing 1")
    base = f"; base rate {shown(content.judges[0].figures.base_rate)}" if content.judges else ""
    table = Table(title=f"Judges against the team's labels {content.labels} ({drawn}{base}; under each figure "
                        "its 95% interval)",
                  title_justify="left", header_style="bold")
    table.add_column("judge (grade ≥ τ)", min_width=14)
    for head in ("pairs", *(name for name, _ in FIGURES)):
        table.add_column(head, justify="right", no_wrap=True)
    for row in content.judges:
        mark = ", scoring" if row.first else ", panel member" if row.member else ""
        table.add_row(f"{row.judge} (≥ {row.min_grade}{mark})", *_cells(row.figures))
    return table


def splits_table(content: Calibration) -> Table | None:
    from rich.table import Table

    if not any(row.splits for row in content.judges):
        return None
    table = Table(title="By field of the labels", title_justify="left", header_style="bold")
    table.add_column("judge", min_width=8)
    table.add_column("field", min_width=8)
    for head in ("pairs", *(name for name, _ in FIGURES)):
        table.add_column(head, justify="right", no_wrap=True)
    for row in content.judges:
        for split in row.splits:
            base = f" (base rate {split.figures.base_rate.value:.2f})" if split.figures.base_rate.value is not None \
                else ""
            table.add_row(row.judge, f"{split.field} = {split.value}{base}", *_cells(split.figures))
    return table


def between_table(content: Calibration) -> Table | None:
    from rich.table import Table

    if not content.between:
        return None
    table = Table(title="Judges against each other (every pair both graded)", title_justify="left",
                  header_style="bold")
    for head in ("judge", "judge", "pairs", "agree", "κ"):
        table.add_column(head, justify="left" if head == "judge" else "right")
    for row in content.between:
        table.add_row(row.a, row.b, str(row.pairs), "–" if row.agreement is None else f"{row.agreement:.3f}",
                      "–" if row.kappa is None else f"{row.kappa:.3f}")
    return table


def corrected_tables(content: Calibration) -> list[Table]:
    """Per tau, every run's raw score beside its corrected one and its interval, for each measure corrected."""
    from rich.table import Table

    design = content.scores_design
    if design is None:
        return []
    tables = []
    for tau in sorted({c.min_grade or 0 for c in content.corrected if not c.missing}):
        table = Table(title=f"Corrected scores at grade ≥ {tau} (raw: the judge's; corrected by {design.labelled} "
                            f"labelled {design.unit}s of {design.population}; 95% interval)",
                      title_justify="left", header_style="bold")
        table.add_column("run", style="cyan", min_width=6)
        table.add_column("measure", min_width=8)
        for head in ("raw", "corrected", "95% interval"):
            table.add_column(head, justify="right", no_wrap=True)
        for c in content.corrected:
            if (c.min_grade or 0) != tau or c.missing:
                continue
            for run, found in c.runs.items():
                interval = "–" if found.low is None or found.high is None else f"[{found.low:.3f}, {found.high:.3f}]"
                table.add_row(run, c.title, f"{found.raw:.3f}",
                              "–" if found.corrected is None else f"{found.corrected:.3f}", interval)
        tables.append(table)
    return tables


def terminal_parts(content: Calibration) -> list[RenderableType]:
    parts: list[RenderableType] = [judges_table(content)]
    parts += [t for t in (splits_table(content), between_table(content)) if t is not None]
    parts += corrected_tables(content)
    parts += [f"no corrected {c.title} (grade ≥ {c.min_grade}): {c.missing}" for c in content.corrected if c.missing]
    parts += list(content.notes)
    return parts


def markdown_section(title: str, content: Calibration, escape: Callable[[str], str]) -> str:
    """The judges' figures and the corrected scores as markdown tables (a pull request's comment reads them)."""
    design = content.design
    drawn = (f"sample `{design.sample}`: {design.labelled} of {design.population} {design.unit}s" if design.sample
             else f"{design.labelled} labels of no sample, each weighing 1")
    lines = [f"### {title}", "", f"Labels {escape(content.labels)} ({drawn}); 95% intervals in brackets.", "",
             "| judge | τ | pairs | base rate | TPR | TNR | precision | κ |", "|:--|--:|--:|--:|--:|--:|--:|--:|"]
    for row in content.judges:
        f = row.figures
        name = escape(row.judge) + (" (scoring)" if row.first else " (panel member)" if row.member else "")
        lines.append(f"| {name} | {row.min_grade} | {f.pairs} | " + " | ".join(
            shown(getattr(f, key)) for key in ("base_rate", "tpr", "tnr", "precision", "kappa")) + " |")
    design_of_scores = content.scores_design
    if design_of_scores is not None and any(not c.missing for c in content.corrected):
        lines += ["", f"Corrected scores ({design_of_scores.labelled} labelled {design_of_scores.unit}s of "
                  f"{design_of_scores.population}):", "", "| run | measure | raw | corrected | 95% interval |",
                  "|:--|:--|--:|--:|--:|"]
        for c in content.corrected:
            for run, found in c.runs.items():
                interval = "–" if found.low is None or found.high is None else f"[{found.low:.3f}, {found.high:.3f}]"
                corrected = "–" if found.corrected is None else f"{found.corrected:.3f}"
                lines.append(f"| {escape(run)} | {escape(c.title)} (τ={c.min_grade}) | {found.raw:.3f} | {corrected} | "
                             f"{interval} |")
    rest = [t for t in (splits_table(content), between_table(content)) if t is not None]
    block = preformatted_markdown(rest) if rest else ""
    notes = [f"- no corrected {escape(c.title)} (τ={c.min_grade}): {escape(c.missing)}" for c in content.corrected
             if c.missing] + [f"- {escape(note)}" for note in content.notes]
    return "\n".join(lines) + ("\n\n" + block if block else "") + ("\n\n" + "\n".join(notes) if notes else "")


@dataclass(frozen=True)
class CalibrationSection:
    name: str = NAME
    title: str = "Calibration against the team's labels"
    model: type[BaseModel] = Calibration
    placement: Literal["before", "after"] = "after"
    brief: bool = True

    def compute(self, scored: Scored) -> Calibration | None:
        given = scored.input(LABELS)
        if given is None:
            return None
        from exam_harness.features.calibration.compute import calibration, judges_of

        return calibration(given.path, given.labels, judges_of(given, scored), exam=scored.ctx.exam,
                           result=scored.result, measures=scored.measures)

    def terminal(self, content: Calibration) -> Sequence[RenderableType]:
        return terminal_parts(content)

    def markdown(self, content: Calibration, escape: Callable[[str], str]) -> str:
        return markdown_section(self.title, content, escape)

    def html(self, content: Calibration) -> str:
        return preformatted_html(self.name, self.title, self.terminal(content))


SECTION = CalibrationSection()
