"""The markdown summary of an exam, made for a pull request comment or ``$GITHUB_STEP_SUMMARY``.

It says, in this order: the verdict, why the scores may not be the whole truth (a partial exam,
pairs that could not be graded), the leaderboard, every gate check, the changes against a kept
reference, and each run's missed required test points with the best passage the run offered.
Every name and text in it comes from users' files, so all of it is escaped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from exam_harness.core.case_verdicts import REASON_CHARS
from exam_harness.core.display import counted, shorten, visible
from exam_harness.report.terminal import ranked
from exam_harness.results.gate_checks import GateCheck, Verdicts, title
from exam_harness.results.schema import ExamReport, SystemScore, TestPointOutcome
from exam_harness.results.sections import Placement, section_markdown, shown_at

# Characters that start markdown syntax anywhere in a line (a table cell included); '<', '>' and '&'
# become entities so that GitHub never reads a run name as HTML.
_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_[]|#~"} | {"<": "&lt;", ">": "&gt;", "&": "&amp;"})
MISSED_SHOWN = 20  # per run; the JSON report has them all


# GitHub turns '@name' and '@org/team' into mentions that notify people and 'https://...' or 'www.' into
# links; a zero-width space after '@', ':' of '://' and 'www' of 'www.' keeps the text as it reads and inert.
# An '@' inside a word (EXAM-Cover@20, a@b.org) is no mention and stays as written.
_PINGS = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9_])|(?<=[A-Za-z]):(?=//)|(?i:\bwww)(?=\.)")


def escape(text: str) -> str:
    """Markdown-inert text on one line: no markup, no HTML, no @mention and no autolinked URL."""
    return _PINGS.sub(lambda m: m.group() + "&#8203;", visible(" ".join(text.split())).translate(_MARKDOWN))


def code(text: str) -> str:
    """An inline code span that survives backticks in ``text`` (CommonMark: a longer fence; code spans
    take their content literally, so nothing else needs escaping)."""
    flat = visible(" ".join(text.split()))
    longest = current = 0
    for ch in flat:
        current = current + 1 if ch == "`" else 0
        longest = max(longest, current)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def render_markdown(report: ExamReport, verdicts: Verdicts | None = None) -> str:
    """The whole summary as GitHub-flavoured markdown (ends with a newline)."""
    verdicts = verdicts or Verdicts()
    parts = [_heading(report, verdicts), *_warnings(report), _verdict(report),
             *_sections(report, "before"), _leaderboard(report), _context(report)]
    if verdicts.checks:
        parts.append(_gates(report, verdicts.checks))
    if verdicts.reference is not None:
        parts.append(_changes(report, verdicts))
    if verdicts.failures:
        parts.append("### Other failures\n\n" + "\n".join(f"- {escape(line)}" for line in verdicts.failures))
    parts += _sections(report, "after")
    parts.append(_missed(report))
    return "\n\n".join(p for p in parts if p) + "\n"


def _sections(report: ExamReport, placement: Placement) -> list[str]:
    """The markdown of the sections the report holds that are placed ``placement`` the leaderboard."""
    return [text for section, content in shown_at(report.sections, placement)
            if (text := section_markdown(section, content, escape)) is not None]  # contained (results/sections.py)


def _heading(report: ExamReport, verdicts: Verdicts) -> str:
    """The session's verdict: what failed (gates, regressions, required test points, grading) or that all passed."""
    gates = sum(not c.passed for c in verdicts.checks) + len(verdicts.failures) + sum(
        not g.passed for g in (report.verdict.gates if report.verdict else ()) if g.gate not in _COUNTED)
    regressions = sum(c.regressed for c in verdicts.changes)
    required = sum(s.outcomes.required_missed for s in report.systems)
    reasons = [text for n, text in (
        (gates, f"{gates} gate{'s' if gates != 1 else ''} failed"),
        (regressions, f"{regressions} regression{'s' if regressions != 1 else ''}"),
        (required, f"{required} required test point{'s' if required != 1 else ''} missed"),
        (len(report.incomplete_runs), "incomplete grading"),
    ) if n]
    status = "❌ " + ", ".join(reasons) if reasons else "✅ passed"
    return f"## Exam results: {report.leading.title} at τ={report.settings.min_grade} — {status}"


# checks the heading counts from the gates' own decisions (Verdicts) or the report's incomplete runs
_COUNTED = frozenset({"exam-fail-under", "exam-baseline", "exam-compare-fail", "incomplete-exam"})


def _verdict(report: ExamReport) -> str:
    """Every check of the session's verdict, passed or failed, by its test case name and message."""
    if report.verdict is None or not report.verdict.gates:
        return ""
    gates = report.verdict.gates
    failed = sum(not g.passed for g in gates)
    lines = [f"- {'✅' if g.passed else '❌'} {code(g.case)}: {escape(g.message)}" for g in gates]
    return f"### Verdict: {len(gates) - failed} of {len(gates)} checks passed\n\n" + "\n".join(lines)


def _warnings(report: ExamReport) -> list[str]:
    lines = []
    if report.partial:
        lines.append(f"> **Partial exam:** {escape(report.partial)}. These scores cover part of the exam only.")
    incomplete = [s for s in report.systems if s.incomplete_queries]
    if incomplete:
        runs = ", ".join(f"{escape(s.run)} ({len(s.incomplete_queries)} of {s.queries} queries)" for s in incomplete)
        lines.append(f"> **Incomplete:** {escape(report.incomplete_cause)}; the scores of {runs} "
                     "count them as not covered (lower bounds, not scores).")
    if any(s.fallbacks for s in report.systems):
        runs = ", ".join(f"{escape(s.run)} {s.fallbacks} of {_graded(s)}" for s in sorted(report.systems,
                                                                                        key=lambda s: s.run))
        lines.append(f"> **Fallbacks:** grades read by a fallback rule from answers holding no grade: {runs}.")
    return lines


def _graded(system: SystemScore) -> int:
    return sum(n for grade, n in system.grade_counts.items() if grade != "failed")


def _number(value: float | None, stderr: float | None = None) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{value:.4f}" + (f" ± {stderr:.4f}" if stderr is not None else "")


def _cases(system: SystemScore) -> int:
    o = system.outcomes
    return o.answered + o.missed + o.required_missed + o.errors + o.skipped


def _leaderboard(report: ExamReport) -> str:
    """The exam measures (each a column, read by name; a measure no run has a value of gets none) and
    the case tallies, runs in leaderboard order."""
    systems = ranked(report)
    measures = [m for m in report.exam_measures() if any(m.name in s.scores for s in systems)]
    head = ["#", "run", *(m.title for m in measures), "answered", "missed", "required missed", "errors"]
    align = ["--:", ":--", *("--:" for _ in measures), "--:", "--:", "--:", "--:"]
    rows = []
    for rank, s in enumerate(systems, 1):
        o = s.outcomes
        name = escape(s.run) + (" (generated)" if s.generated else "") + (" **!**" if s.incomplete_queries else "")
        scores = [s.scores.get(m.name) for m in measures]
        cells = [str(rank), name, *(_number(v.mean, v.stderr) if v is not None else "–" for v in scores),
                 f"{o.answered}/{_cases(s)}", str(o.missed), str(o.required_missed), str(o.errors)]
        rows.append(cells)
    return _table(head, align, rows)


def _context(report: ExamReport) -> str:
    st, cache = report.settings, report.cache
    about = [code(st.grader.model)] if st.grader.model else []
    grader = code(st.grader.name) + (f" ({'; '.join(about)})" if about else "")
    return (f"{counted(report.queries, 'query', 'queries')} · {counted(report.test_points, 'test point')} · "
            f"{counted(len(report.systems), 'run')} · grader "
            f"{grader} · k={st.k} · τ={st.min_grade} · "
            f"{cache.unique_pairs} pairs ({cache.hits} cached, {cache.graded} graded, {cache.failures} failed)")


def _gates(report: ExamReport, checks: Sequence[GateCheck]) -> str:
    rows = [[escape(c.run), escape(c.title or title(c.measure, report)), _number(c.value), f"{c.limit:g}",
             "✅" if c.passed else "❌"] for c in checks]
    failed = sum(not c.passed for c in checks)
    head = f"### Gates: {len(checks) - failed} of {len(checks)} passed"
    return head + "\n\n" + _table(["run", "measure", "value", "threshold", ""], [":--", ":--", "--:", "--:", ":-:"],
                                  rows)


def _changes(report: ExamReport, verdicts: Verdicts) -> str:
    heading = f"### Against {code(verdicts.reference or '')}"
    if not verdicts.changes:
        return heading + "\n\nNo run of this exam is in the reference."
    rows = []
    for c in verdicts.changes:
        p = "–" if math.isnan(c.p) else f"{c.p:.3g}"
        significance = "" if math.isnan(c.p) else (" (significant)" if c.p < verdicts.alpha else "")
        rows.append([escape(c.run), escape(c.title or title(c.measure, report)), f"{c.old:.4f}", f"{c.new:.4f}",
                     f"{c.delta:+.4f}", f"{p}{significance}", str(c.queries), "❌ regressed" if c.regressed else ""])
    note = (f"p: paired permutation test over the queries both reports scored; significant at α={verdicts.alpha:g}. "
            "A run fails when it drops by more than its allowance, significant or not.")
    return (heading + "\n\n" + _table(["run", "measure", "reference", "now", "Δ", "p", "queries", ""],
                                      [":--", ":--", "--:", "--:", "--:", "--:", "--:", ":--"], rows)
            + "\n\n" + note)


def _missed(report: ExamReport) -> str:
    """Each run's missed required test points; every missed test point when the banks mark none required."""
    required = {(o.query_id, o.test_point_id) for o in report.outcomes if o.required}
    points = len(required) or len({(o.query_id, o.test_point_id) for o in report.outcomes})
    if not points:
        return ""
    wanted = ("required-missed", "error") if required else ("missed", "error")
    by_run: dict[str, list[TestPointOutcome]] = {}
    for o in report.outcomes:
        if o.outcome in wanted and (o.required or not required):
            by_run.setdefault(o.run, []).append(o)
    what = "required test points" if required else "test points"
    if not by_run:
        return f"### Missed {what}\n\nEvery run answered all {points} {what}."
    blocks = [f"### Missed {what} ({points} per run)"]
    for run in sorted(by_run):
        missed = by_run[run]
        items = [_missed_item(o) for o in missed[:MISSED_SHOWN]]
        if len(missed) > MISSED_SHOWN:
            items.append(f"- … and {len(missed) - MISSED_SHOWN} more (see the JSON report's `outcomes`)")
        blocks.append(f"<details><summary><b>{escape(run)}</b>: {len(missed)} of {points} missed</summary>\n\n"
                      + "\n".join(items) + "\n\n</details>")
    return "\n\n".join(blocks)


def _missed_item(o: TestPointOutcome) -> str:
    # the id as CI output shows it, and the question beside it for the reader
    what = code(o.test_point_id) + (f" *{escape(o.text)}*" if o.text else "")
    if o.outcome == "error":
        return f"- {code(o.query_id)} {what}: could not be graded"
    if o.best_passage is None:
        return f"- {code(o.query_id)} {what}: no graded passage in the top k"
    passage = f" “{escape(o.best_passage_text)}”" if o.best_passage_text else ""
    reason = f", reason {code(shorten(o.reason, REASON_CHARS))}" if o.reason else ""
    return f"- {code(o.query_id)} {what}: best grade {o.best_grade} (passage {code(o.best_passage)}{passage}{reason})"


def _table(head: Sequence[str], align: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
