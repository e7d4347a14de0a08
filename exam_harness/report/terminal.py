"""The leaderboard of the pytest summary (and of ``exam-harness leaderboard``), from a report.

Two tables keep it readable on an 80-column terminal: the exam scores (EXAM-Cover, n-EXAM, nugget F,
case outcomes) and the trec_eval measures over EXAM-Qrels of one label variant.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from typing import Any

from rich.console import Group

from exam_harness.measures.trec import TrecMeasure
from exam_harness.report.schema import ExamReport, SystemScore
from exam_harness.report.tables import Column, Leaderboard, render_table, render_text

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
    return (f"! incomplete: {report.cache.failures} pairs could not be graded; the scores of {shown} count them as "
            "not covered (lower bounds, not scores)")


def leaderboard(report: ExamReport, *, label: str = "max-grade", width: int = WIDE) -> Group:
    """Systems ordered by EXAM-Cover (ties by name), as two rich tables."""
    k, tau = report.settings.k, report.settings.min_grade
    wide = width >= WIDE
    systems = sorted(report.systems, key=lambda s: (-s.exam_cover, s.run))
    runs = [s.run for s in systems]
    exam_columns = [
        Column(f"EXAM-Cover@{k}", {s.run: (s.exam_cover, s.exam_cover_stderr) for s in systems}),
        Column(f"n-EXAM@{k}", {s.run: (s.n_exam_cover, s.n_exam_cover_stderr) for s in systems}),
    ]
    if any(s.nugget_f is not None for s in systems):
        exam_columns.append(Column("nugget-F", {
            s.run: (s.nugget_f.mean, s.nugget_f.stderr) if s.nugget_f else None for s in systems}))
    exam_table = Leaderboard(
        f"EXAM scores (grader {report.settings.grader.name}, τ={tau}, k={k})", runs, exam_columns,
        labels={s.run: _label(s, generated=True) for s in systems},
        after=[("answered", {s.run: _tally(s) for s in systems})],
    )
    measure_columns = []
    for name in report.settings.measures:
        values = {}
        for s in systems:
            score = s.qrels_measures.get(label, {}).get(name)
            values[s.run] = (score.mean, score.stderr) if score is not None else None
        measure_columns.append(Column(TrecMeasure(name=name).title, values))
    level = next((q.relevance_level for q in report.qrels if q.label == label), None)
    level_text = f" ≥ {level}" if level is not None else ""
    qrels_table = Leaderboard(
        f"EXAM-Qrels measures ({label}{level_text} relevant{'' if wide else '; ± in JSON'})", runs, measure_columns,
        labels={s.run: _label(s, generated=wide) for s in systems},
    )
    tables = [render_table(exam_table, "inline" if wide else "below"),
              render_table(qrels_table, "inline" if wide else "hidden")]
    extra = list(dict.fromkeys(m for s in systems for m in s.measures))  # the TREC RAG scores, in plan order
    if extra:
        track_columns = [Column(name, {
            s.run: (s.measures[name].mean, s.measures[name].stderr) if name in s.measures else None
            for s in systems}) for name in extra]
        track_table = Leaderboard(f"TREC RAG nugget scores (support: grade ≥ {tau}{'' if wide else '; ± in JSON'})",
                                  runs, track_columns, labels={s.run: _label(s, generated=wide) for s in systems})
        tables.append(render_table(track_table, "inline" if wide else "hidden"))
    return Group(*tables)


def cache_line(report: ExamReport) -> str:
    c = report.cache
    rate = 100.0 * c.hits / c.unique_pairs if c.unique_pairs else 100.0
    line = (
        f"{report.queries} queries, {report.test_points} test points, {len(report.systems)} runs; "
        f"grades: {c.pairs} pairs, {c.unique_pairs} unique; cache {c.hits} hits / {c.misses} misses "
        f"({rate:.1f}% hits); graded {c.graded} in {c.grading_seconds:.1f}s"
    )
    if c.failures:
        line += f"; {c.failures} FAILED (not scored)"
    return line + decided_line(report)


def decided_line(report: ExamReport) -> str:
    """Which part of a composite grader decided how many grades ("; decided by answer-key 12, embedding
    198"), so a reader knows why a passage stating the answer got the top grade."""
    if not report.decided_by:
        return ""
    return "; decided by " + ", ".join(f"{part} {n}" for part, n in report.decided_by.items())


def n_exam_dropped_line(report: ExamReport) -> str | None:
    """The note that n-EXAM's mean leaves out queries whose pool covers no test point (``--exam-n-exam-empty
    skip``), naming them: a mean over fewer queries is not comparable with one over all of them."""
    dropped = sorted({r.query_id for r in report.per_query if r.n_exam_cover is None})
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
    if report.partial:
        lines.append(f"partial exam: {report.partial}")
    dropped = n_exam_dropped_line(report)
    if dropped:
        lines.append(dropped)
    table = render_text(leaderboard(report, label=label, width=width), width, color=color)
    return table + "".join(line + "\n" for line in lines)


def render_summary(terminalreporter: Any, report: ExamReport, written: Sequence[str]) -> None:
    terminalreporter.write_sep("=", "exam leaderboard")
    width = getattr(getattr(terminalreporter, "_tw", None), "fullwidth", None)
    terminalreporter.write(render_to_text(report, color=bool(terminalreporter.hasmarkup), width=width))
    if written:
        terminalreporter.write_line("reports: " + ", ".join(written))
