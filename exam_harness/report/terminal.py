"""The leaderboard of the pytest summary (and of ``exam-harness leaderboard``), from a report.

Two tables keep it readable on an 80-column terminal: the exam scores (EXAM-Cover, n-EXAM, nugget F,
case outcomes) and the trec_eval measures over EXAM-Qrels of one label variant; either is split into continued
tables where its columns (many measures, a long run name) need more than the width.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from typing import Any

from rich.console import Group

from exam_harness.core.display import counted, render_text, visible
from exam_harness.measures.lookup import find_measure
from exam_harness.report.tables import Column, Leaderboard, StderrLayout, render_table, split_to_fit
from exam_harness.results.schema import FALLBACK_CAUSE, ExamReport, MeasureInfo, SystemScore
from exam_harness.results.sections import section_lines, shown_at

WIDE = 132  # from this width on, "± stderr" shares the value's line


def _tally(system: SystemScore) -> str:
    """Cases answered out of all cases, then required test points missed (F) and errors (E)."""
    o = system.outcomes
    text = f"{o.answered}/{o.answered + o.missed + o.required_missed + o.errors + o.skipped}"
    extra = [f"{n} {code}" for n, code in ((o.required_missed, "F"), (o.errors, "E")) if n]
    return text + (f" ({', '.join(extra)})" if extra else "")


def _label(system: SystemScore, *, generated: bool) -> str:
    """The run's name, `(gen)` for generated answers, `!` when a score rests on pairs that failed."""
    gen = " (gen)" if generated and system.generated else ""
    return system.run + gen + (" !" if system.incomplete_queries else "")


def incomplete_line(report: ExamReport) -> str | None:
    """The footnote of `!`: whose scores are lower bounds, over how many queries and failed pairs."""
    runs = [s for s in report.systems if s.incomplete_queries]
    if not runs:
        return None
    shown = ", ".join(f"{s.run!r} ({len(s.incomplete_queries)} of {s.queries} queries)" for s in runs)
    fallbacks = sum(s.fallbacks for s in runs)
    if fallbacks:  # marked for too many grades read by a fallback rule (--exam-max-fallbacks)
        cause = report.incomplete_cause
        also = "" if cause == FALLBACK_CAUSE else f"{cause} and "
        return (f"! incomplete: {also}{fallbacks} grades were read by a fallback rule, more than "
                f"--exam-max-fallbacks allows; the scores of {shown} rest on them (not scores)")
    return (f"! incomplete: {report.incomplete_cause}; the scores of {shown} count them as "
            "not covered (lower bounds, not scores)")


def fallback_line(report: ExamReport) -> str | None:
    """Each run's grades read by a fallback rule from answers holding no grade (none: no line)."""
    if not any(s.fallbacks for s in report.systems):
        return None
    shown = ", ".join(f"{s.run!r} {s.fallbacks} of {sum(n for g, n in s.grade_counts.items() if g != 'failed')}"
                      for s in sorted(report.systems, key=lambda s: s.run))
    return f"fallbacks: grades read by a fallback rule from answers holding no grade: {shown}"


def ranked(report: ExamReport) -> list[SystemScore]:
    """The systems in leaderboard order: the leading measure (EXAM-Cover) descending, ties by name."""
    lead = report.leading.name
    return sorted(report.systems, key=lambda s: (-s.scores[lead].mean if lead in s.scores else 0.0, s.run))


def _column(info: MeasureInfo, systems: Sequence[SystemScore]) -> Column:
    values = {s.run: (score.mean, score.stderr) if (score := s.scores.get(info.name)) is not None else None
              for s in systems}
    return Column(info.title, values)


def leaderboard(report: ExamReport, *, label: str = "max-grade", width: int = WIDE) -> Group:
    """Systems ordered by EXAM-Cover (ties by name), as two rich tables: the exam measures, and the trec
    measures over the EXAM-Qrels of ``label``; each column is a measure of the report, read by name."""
    k, tau = report.settings.k, report.settings.min_grade
    wide = width >= WIDE
    systems = ranked(report)
    runs = [s.run for s in systems]
    # a measure no run has a value of (nugget F of an exam without nuggets) gets no column
    exam_columns = [_column(info, systems) for info in report.exam_measures()
                    if any(info.name in s.scores for s in systems)]
    labels = {s.run: _label(s, generated=True) for s in systems}
    tallies = {s.run: _tally(s) for s in systems}
    # many exam measures (the TREC RAG scores beside EXAM-Cover), or a long run name, split a table into tables
    # that fit the width (report/tables.py): a cut cell would read "0…"
    layout: StderrLayout = "inline" if wide else "below"
    exam_board = Leaderboard(f"EXAM scores (grader {report.settings.grader.name}, τ={tau}, k={k})", runs,
                             exam_columns, labels=labels, after=[("answered", tallies)])
    exam_tables = [render_table(part, layout) for part in split_to_fit(exam_board, width, layout)]
    measure_columns = [_column(info, systems) for info in report.label_measures(label)]
    level = next((q.relevance_level for q in report.qrels if q.label == label), None)
    level_text = f" ≥ {level}" if level is not None else ""
    qrels_table = Leaderboard(
        f"EXAM-Qrels measures ({label}{level_text} relevant{'' if wide else '; ± in JSON'})", runs, measure_columns,
        labels={s.run: _label(s, generated=wide) for s in systems},
    )
    if not measure_columns:  # no trec measure asked for (--exam-measures named others only)
        return Group(*exam_tables)
    layout = "inline" if wide else "hidden"
    return Group(*exam_tables, *(render_table(part, layout) for part in split_to_fit(qrels_table, width, layout)))


def cache_line(report: ExamReport) -> str:
    c = report.cache
    rate = 100.0 * c.hits / c.unique_pairs if c.unique_pairs else 100.0
    line = (
        f"{counted(report.queries, 'query', 'queries')}, {counted(report.test_points, 'test point')}, "
        f"{counted(len(report.systems), 'run')}; "
        f"grades: {c.pairs} pairs, {c.unique_pairs} unique; cache {c.hits} hits / {c.misses} misses "
        f"({rate:.1f}% hits); graded {c.graded} in {c.grading_seconds:.1f}s"
    )
    if c.failures:
        line += f"; {c.failures} FAILED (not scored)"
    return line


def n_exam_dropped_line(report: ExamReport) -> str | None:
    """The note that n-EXAM's mean leaves out queries whose pool covers no test point (``--exam-n-exam-empty
    skip``), naming them: a mean over fewer queries is not comparable with one over all of them."""
    n_exam = find_measure(report.measures, "n-exam-cover")
    if n_exam is None:
        return None
    dropped = sorted({r.query_id for r in report.per_query if n_exam.name not in r.scores})
    if not dropped:
        return None
    shown = ", ".join(dropped[:5]) + (f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
    return (f"note: n-EXAM@{report.settings.k} leaves out {len(dropped)} of {report.queries} queries whose pool covers "
            f"no test point at τ={report.settings.min_grade} ({shown}); --exam-n-exam-empty zero scores them 0")


def render_to_text(report: ExamReport, *, color: bool, width: int | None = None, label: str = "max-grade") -> str:
    width = width or shutil.get_terminal_size((120, 24)).columns
    # The summary lines are never wrapped: CI logs grep them whole.
    lines = [cache_line(report)]
    note = incomplete_line(report)
    if note:
        lines.append(note)
    fallbacks = fallback_line(report)
    if fallbacks:
        lines.append(fallbacks)
    if report.partial:
        lines.append(f"partial exam: {report.partial}")
    lines = [visible(line) for line in lines]  # a kept report's texts (a partial note) are data: escaped
    for section, content in shown_at(report.sections, "after"):  # cost, judge variance, a plugin's part
        lines += section_lines(section, content, width)  # escaped, and contained (results/sections.py)
    dropped = n_exam_dropped_line(report)
    if dropped:
        lines.append(visible(dropped))
    table = render_text(leaderboard(report, label=label, width=width), width, color=color)
    before = [line for section, content in shown_at(report.sections, "before")  # placed before the leaderboard
              for line in section_lines(section, content, width)]
    return "".join(line + "\n" for line in before) + table + "".join(line + "\n" for line in lines)


def render_summary(terminalreporter: Any, report: ExamReport, written: Sequence[str]) -> None:
    terminalreporter.write_sep("=", "exam leaderboard")
    width = getattr(getattr(terminalreporter, "_tw", None), "fullwidth", None)
    terminalreporter.write(render_to_text(report, color=bool(terminalreporter.hasmarkup), width=width))
    if written:
        terminalreporter.write_line("reports: " + ", ".join(written))
