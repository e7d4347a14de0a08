"""A self-contained static HTML report of an exam (``--exam-html DIR``): one file, no server, no CDN.

The page shows the leaderboard, a per-query × run heatmap of EXAM-Cover, each run's grade
distribution, a drill-down from each run to its missed test points and their best passages, and the
settings. Everything in a report that a user wrote (run names, query ids, test point texts, answers,
passages) is escaped on the way in; the one inline script is pinned by a Content-Security-Policy hash.
The output depends on the report alone (no clock), so the same report renders the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from exam_harness.core.case_verdicts import (
    PASSAGE_CHARS as SNIPPET_CHARS,  # the text beside an id, as a report keeps it
)
from exam_harness.core.display import counted, shorten
from exam_harness.io.textio import atomic_write_text
from exam_harness.report.html_assets import CSS, JS
from exam_harness.results.schema import ExamReport, QueryScore, Score, SystemScore, TestPointOutcome
from exam_harness.results.sections import Section, section_html, shown_at, shown_sections

# the drill-down lists these outcomes, worst first, under these names
DRILL_OUTCOMES = {"required-missed": "required missed", "error": "errors", "missed": "missed"}
PASSAGE_CHARS = 1200  # a passage is shown up to this length: one page can hold many runs' misses
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(JS.encode("utf-8")).digest()).decode("ascii")
_CSP = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; "
        "base-uri 'none'; form-action 'none'")
# YlGnBu: a sequential ramp that stays readable in greyscale and for red-green colour blindness
_RAMP = ((0.0, (255, 255, 217)), (0.25, (199, 233, 180)), (0.5, (65, 182, 196)),
         (0.75, (34, 94, 168)), (1.0, (8, 29, 88)))


def _e(value: object) -> str:
    """Escape for text and quoted attribute values alike."""
    return html.escape(str(value), quote=True)


def _json_for_script(value: object) -> str:
    """JSON that cannot end or break out of its <script> element."""
    text = json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _natural_key(text: str) -> tuple[tuple[int, str], ...]:
    """Sort "q2" before "q10"; re.split puts digit runs at the odd positions."""
    return tuple((int(part), part) if i % 2 else (0, part) for i, part in enumerate(re.split(r"(\d+)", text)))


def run_anchor(index: int, run: str) -> str:
    """The id of a run's drill-down: its leaderboard position keeps ids unique whatever the names."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", run).strip("-")[:40]
    return f"run-{index + 1}" + (f"-{slug}" if slug else "")


def colour(value: float) -> tuple[str, str]:
    """Background and text colour of a heatmap cell of ``value`` in [0, 1]."""
    v = min(max(value, 0.0), 1.0) if math.isfinite(value) else 0.0
    (lo, c0), (hi, c1) = next((a, b) for a, b in pairwise(_RAMP) if v <= b[0])
    t = (v - lo) / (hi - lo)
    r, g, b = (round(x + (y - x) * t) for x, y in zip(c0, c1))
    return f"#{r:02x}{g:02x}{b:02x}", ("#ffffff" if v > 0.45 else "#1d2330")


def _fmt(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else "–"


def _sort_value(value: float | None) -> float | None:
    """A number for the sorting script; NaN would break JSON.parse and cannot be ranked anyway."""
    return value if value is not None and math.isfinite(value) else None


def _ordered(preferred: Sequence[str], seen: Iterable[str]) -> list[str]:
    """``preferred`` items that occur in ``seen`` first, then the rest of ``seen`` in first-seen order."""
    seen_list = list(dict.fromkeys(seen))
    return [x for x in preferred if x in seen_list] + [x for x in seen_list if x not in preferred]


def _header(report: ExamReport, title: str, sections: Sequence[Section]) -> str:
    """The page's header and navigation (to each section drawn: ``sections``), banners and verdict."""
    s = report.settings
    parts = [
        f'<header><h1>{_e(title)}</h1><p class="meta">{_e(counted(len(report.systems), "run"))} · '
        f'{_e(counted(report.queries, "query", "queries"))} · '
        f'{_e(counted(report.test_points, "test point"))} · grader {_e(s.grader.name)}'
        + (f" ({_e(s.grader.model)})" if s.grader.model else "")
        + f" · k={_e(s.k)} · τ={_e(s.min_grade)} · created {_e(report.created)}</p></header>",
        '<nav><a href="#leaderboard">Leaderboard</a><a href="#heatmap">Heatmap</a>'
        '<a href="#grades">Grade distributions</a><a href="#drilldown">Drill-down</a>'
        + "".join(f'<a href="#{_e(section.name)}">{_e(section.title)}</a>' for section in sections)
        + '<a href="#settings">Settings</a></nav>',
    ]
    if report.partial:
        parts.append(f'<div class="banner partial" role="alert">partial exam: {_e(report.partial)}</div>')
    if any(sys.fallbacks for sys in report.systems):
        runs = ", ".join(f"{sys.run} {sys.fallbacks} of {sum(n for g, n in sys.grade_counts.items() if g != 'failed')}"
                         for sys in sorted(report.systems, key=lambda sys: sys.run))
        parts.append(f'<div class="banner fallbacks" role="alert">grades read by a fallback rule from answers holding '
                     f"no grade: {_e(runs)}</div>")
    parts.append(_verdict(report))
    return "\n".join(p for p in parts if p)


def _verdict(report: ExamReport) -> str:
    """The session's verdict banner: passed or failed, and every check (gate, regression, incomplete
    grading) with its outcome and message; nothing for a report no session decided."""
    verdict = report.verdict
    if verdict is None:
        return ""
    failed = sum(not g.passed for g in verdict.gates)
    if failed:
        head = f"verdict: failed ({failed} of {len(verdict.gates)} checks failed)"
    elif verdict.gates:
        head = f"verdict: passed ({len(verdict.gates)} checks)"
    else:
        head = "verdict: passed (no gate asked for)"
    items = "".join(
        f'<li class="{"passed" if g.passed else "failed"}"><code>{_e(g.case)}</code> '
        f'{"passed" if g.passed else "FAILED"}: {_e(g.message)}</li>' for g in verdict.gates)
    state = "passed" if verdict.passed else "failed"
    role = "status" if verdict.passed else "alert"
    return (f'<section id="verdict" class="verdict {state}" role="{role}"><strong>{_e(head)}</strong>'
            + (f"<ul>{items}</ul>" if items else "") + "</section>")


@dataclass(frozen=True)
class _Column:
    """A sortable leaderboard column; ``group`` (a qrels label) spans a header over its measures."""

    title: str
    value: Callable[[SystemScore], Score | int | None]
    group: str | None = None


def _measure(name: str) -> Callable[[SystemScore], Score | None]:
    return lambda s: s.scores.get(name)


def _columns(report: ExamReport, systems: Sequence[SystemScore]) -> list[_Column]:
    """Every measure of the report by name: the exam measures (a measure no run has a value of gets no
    column), the case tallies, then the trec measures grouped by label variant."""
    columns = [_Column(m.title, _measure(m.name)) for m in report.exam_measures()
               if any(m.name in sys.scores for sys in systems)]
    # the case tallies sit beside the EXAM scores: the qrels groups can be many and scroll off to the right
    columns += [
        _Column("answered", lambda s: s.outcomes.answered),
        _Column("missed", lambda s: s.outcomes.missed),
        _Column("required missed", lambda s: s.outcomes.required_missed),
        _Column("errors", lambda s: s.outcomes.errors),
    ]
    for label in report.labels():
        columns += [_Column(m.title, _measure(m.name), group=label) for m in report.label_measures(label)]
    return columns


def _cell(col: int, value: Score | int | None) -> str:
    if isinstance(value, int):
        return f'<td class="num" data-col="{col}" data-v="{value}">{value}</td>'
    if value is None or _sort_value(value.mean) is None:
        return f'<td class="num" data-col="{col}" data-v="">–</td>'
    return (f'<td class="num" data-col="{col}" data-v="{value.mean!r}">{_fmt(value.mean)} '
            f"<small>± {_fmt(value.stderr)}</small></td>")


def _leaderboard(report: ExamReport, systems: Sequence[SystemScore], anchors: Mapping[str, str]) -> str:
    columns = _columns(report, systems)
    two_rows = any(c.group for c in columns)
    span = ' rowspan="2"' if two_rows else ""
    top = [f'<th scope="col"{span}>#</th>', f'<th scope="col"{span}>run</th>']
    sub = []
    for i, c in enumerate(columns):
        if c.group is None:
            top.append(f'<th scope="col" class="num"{span} data-col="{i}">{_e(c.title)}</th>')
            continue
        if i == 0 or columns[i - 1].group != c.group:
            width = sum(1 for other in columns if other.group == c.group)
            top.append(f'<th scope="colgroup" class="group" colspan="{width}">{_e(c.group)}</th>')
        sub.append(f'<th scope="col" class="num" data-col="{i}" title="{_e(c.group)}: {_e(c.title)}">'
                   f"{_e(c.title)}</th>")
    head = f"<tr>{''.join(top)}</tr>" + (f"<tr>{''.join(sub)}</tr>" if two_rows else "")

    rows = []
    for rank, sys in enumerate(systems, 1):
        flag = (f' <span class="flag" title="incomplete: {len(sys.incomplete_queries)} of {sys.queries} queries '
                f'rest on pairs that could not be graded; scores are lower bounds">!</span>'
                if sys.incomplete_queries else "")
        gen = ' <span class="tag">gen</span>' if sys.generated else ""
        cells = [f'<td class="num">{rank}</td>',
                 f'<th scope="row" class="run"><a href="#{_e(anchors[sys.run])}">{_e(sys.run)}</a>{gen}{flag}</th>']
        cells += [_cell(i, c.value(sys)) for i, c in enumerate(columns)]
        cls = "run-row incomplete" if sys.incomplete_queries else "run-row"
        rows.append(f'<tr class="{cls}" data-run="{_e(sys.run)}">{"".join(cells)}</tr>')

    notes = []
    incomplete = [sys for sys in systems if sys.incomplete_queries]
    if incomplete:
        shown = ", ".join(f"<b>{_e(sys.run)}</b> ({len(sys.incomplete_queries)} of {sys.queries} queries)"
                          for sys in incomplete)
        notes.append(f'<p class="note incomplete-note"><span class="flag">!</span> incomplete: '
                     f"{_e(report.incomplete_cause)}; the scores of {shown} count them "
                     "as not covered (lower bounds, not scores).</p>")
    notes.append(f'<p class="note">Sorted by {_e(report.leading.title)} (mean over queries ± standard error); '
                 "a run's name links to its missed test points. Click a column header to sort by it.</p>")
    return (f'<section id="leaderboard"><h2>Leaderboard</h2><div class="scroll">'
            f'<table id="leaderboard-table"><thead>{head}</thead><tbody>\n' + "\n".join(rows)
            + "\n</tbody></table></div>" + "".join(notes) + "</section>")


def _heatmap(report: ExamReport, systems: Sequence[SystemScore], anchors: Mapping[str, str]) -> tuple[str, object]:
    """The heatmap section and the matrix its script sorts rows by (queries × runs, None for no score)."""
    runs = [sys.run for sys in systems]
    by_pair: dict[tuple[str, str], QueryScore] = {(q.run, q.query_id): q for q in report.per_query}
    lead = report.leading
    cover = {pair: q.scores.get(lead.name) for pair, q in by_pair.items()}
    queries = sorted({q.query_id for q in report.per_query if q.run in anchors}, key=_natural_key)
    head = "".join(f'<th scope="col" class="run"><a href="#{_e(anchors[r])}">{_e(r)}</a></th>' for r in runs)
    rows = []
    matrix: list[list[float | None]] = []
    for i, qid in enumerate(queries):
        cells = []
        values: list[float | None] = []
        for run in runs:
            q = by_pair.get((run, qid))
            value = cover.get((run, qid))
            values.append(_sort_value(value) if value is not None else None)
            if q is None or value is None:
                cells.append(f'<td class="cell none" title="{_e(run)} · {_e(qid)}: no score">–</td>')
                continue
            bg, fg = colour(value)
            tip = f"{run} · {qid}: {q.covered}/{q.test_points} test points covered"
            if q.incomplete:
                tip += " (incomplete: a lower bound)"
            cls = "cell inc" if q.incomplete else "cell"
            mark = "!" if q.incomplete else ""
            cells.append(f'<td class="{cls}" style="background-color:{bg};color:{fg}" title="{_e(tip)}" '
                         f'data-v="{value!r}">{_fmt(value, 2)}{mark}</td>')
        matrix.append(values)
        rows.append(f'<tr data-q="{i}"><th scope="row">{_e(qid)}</th>{"".join(cells)}</tr>')
    stops = ", ".join(f"{colour(v)[0]} {round(v * 100)}%" for v, _ in _RAMP)
    legend = (f'<div class="legend"><span>0</span><span class="ramp" style="background:linear-gradient(to right, '
              f'{stops})"></span><span>1</span><span>{_e(lead.title)} of a query; '
              "<b>!</b> and hatching: incomplete (a lower bound)</span></div>")
    heading = _e(lead.title.partition("@")[0])
    section = (f'<section id="heatmap"><h2>{heading} per query × run</h2>{legend}<div id="heat-controls" '
               f'class="controls"></div><div class="scroll"><table id="heatmap-table"><thead><tr>'
               f'<th scope="col">query</th>{head}</tr></thead><tbody>\n' + "\n".join(rows)
               + "\n</tbody></table></div></section>")
    return section, {"runs": runs, "queries": queries, "cover": matrix}


def _grade_keys(report: ExamReport, systems: Sequence[SystemScore]) -> list[str]:
    """Every grade of the grader's scale, then any other key the counts hold ("failed" last)."""
    scale = [str(g) for g in range(report.settings.grader.max_grade + 1)]
    extra = sorted({key for sys in systems for key in sys.grade_counts} - set(scale) - {"failed"}, key=_natural_key)
    failed = ["failed"] if any("failed" in sys.grade_counts for sys in systems) else []
    return scale + extra + failed


def _grade_chart(sys: SystemScore, keys: Sequence[str], top: int, tau: int) -> str:
    """An inline SVG bar chart; ``top`` (the largest count over all runs) keeps runs comparable."""
    bar, gap, height, pad = 26, 6, 90, 16
    width = len(keys) * (bar + gap) + gap
    parts = [f'<svg class="grade-bars" role="img" width="{width}" height="{height + 2 * pad}" '
             f'viewBox="0 0 {width} {height + 2 * pad}" aria-label="grade counts of {_e(sys.run)}">']
    for i, key in enumerate(keys):
        n = sys.grade_counts.get(key, 0)
        h = round(height * n / top) if top else 0
        x = gap + i * (bar + gap)
        y = pad + height - h
        fill = "#c0392b" if key == "failed" else ("#225ea8" if key.isdigit() and int(key) >= tau else "#b8c0cc")
        parts.append(f'<rect class="bar" data-grade="{_e(key)}" data-n="{n}" x="{x}" y="{y}" width="{bar}" '
                     f'height="{h}" fill="{fill}"><title>grade {_e(key)}: {n} pairs</title></rect>')
        parts.append(f'<text x="{x + bar / 2:g}" y="{y - 3}" text-anchor="middle">{n}</text>')
        label = "fail" if key == "failed" else _e(key)
        parts.append(f'<text x="{x + bar / 2:g}" y="{pad + height + 12}" text-anchor="middle">{label}</text>')
    parts.append("</svg>")
    total = sum(sys.grade_counts.values())
    relevant = sum(n for key, n in sys.grade_counts.items() if key.isdigit() and int(key) >= tau)
    share = f"{relevant / total:.1%}" if total else "–"
    return (f'<div class="grade-chart" data-run="{_e(sys.run)}"><h3>{_e(sys.run)}</h3>{"".join(parts)}'
            f'<div class="note">{total} pairs; grade ≥ {tau}: {share}</div></div>')


def _grades(report: ExamReport, systems: Sequence[SystemScore]) -> str:
    keys = _grade_keys(report, systems)
    top = max((n for sys in systems for n in sys.grade_counts.values()), default=0)
    tau = report.settings.min_grade
    charts = "\n".join(_grade_chart(sys, keys, top, tau) for sys in systems)
    return (f'<section id="grades"><h2>Grade distributions</h2><p class="note">Grades of each run\'s top-'
            f"{_e(report.settings.k)} passages against its queries' test points; blue bars reach τ={_e(tau)} "
            "(the grade that covers a test point), red: pairs that could not be graded.</p>"
            f'<div class="grade-grid">{charts}</div></section>')


def _passage(o: TestPointOutcome, passages: Mapping[str, str]) -> str:
    """The best passage's id with its text cut beside it; the session's passages (up to PASSAGE_CHARS) open
    below it. A report read from a file has only the cut text it keeps (``best_passage_text``)."""
    pid = o.best_passage
    if pid is None:
        return '<span class="muted">–</span>'
    text = passages.get(pid)
    cut = o.best_passage_text
    if cut is None and text is not None and o.text is not None:  # not for a secret bank (its text is None)
        cut = shorten(text, SNIPPET_CHARS)
    beside = f' <span class="passage-text">{_e(cut)}</span>' if cut else ""
    if text is None:
        return f"<code>{_e(pid)}</code>{beside}"
    shown = text if len(text) <= PASSAGE_CHARS else text[:PASSAGE_CHARS] + f"… ({len(text)} characters)"
    return (f'<details class="passage"><summary><code>{_e(pid)}</code>{beside}</summary>'
            f"<blockquote>{_e(shown)}</blockquote></details>")


def _outcome_row(o: TestPointOutcome, passages: Mapping[str, str]) -> str:
    required = ' <span class="tag">required</span>' if o.required else ""
    if o.text is None:
        # a secret bank: its text never reaches a report, so the id is all there is to show
        point = f'<code class="tp-id">{_e(o.test_point_id)}</code>'
    else:
        point = f'<code class="tp-id">{_e(o.test_point_id)}</code><div class="tp-text">{_e(o.text)}</div>'
    grade = "–" if o.best_grade is None else _e(o.best_grade)
    reason = '<span class="muted">–</span>' if o.reason is None else _e(o.reason)
    return (f'<tr class="tp outcome-{_e(o.outcome)}" data-outcome="{_e(o.outcome)}">'
            f"<td>{_e(o.query_id)}</td><td class=\"text\">{point}</td>"
            f'<td><span class="tag">{_e(o.kind)}</span>{required}</td>'
            f'<td class="outcome {_e(o.outcome)}">{_e(o.outcome)}</td><td class="num">{grade}</td>'
            f"<td>{_passage(o, passages)}</td><td class=\"reason\">{reason}</td></tr>")


def _drilldown(report: ExamReport, systems: Sequence[SystemScore], anchors: Mapping[str, str],
               passages: Mapping[str, str]) -> str:
    severity = {name: i for i, name in enumerate(DRILL_OUTCOMES)}
    by_run: dict[str, list[TestPointOutcome]] = {}
    for o in report.outcomes:
        if o.outcome in severity:
            by_run.setdefault(o.run, []).append(o)
    parts = ['<section id="drilldown"><h2>Drill-down: missed test points</h2>']
    if not report.outcomes:
        parts.append('<p class="note">This report holds no per-test-point outcomes.</p>')
    for sys in systems:
        found = sorted(by_run.get(sys.run, []),
                       key=lambda o: (severity[o.outcome], _natural_key(o.query_id), _natural_key(o.test_point_id)))
        tally = Counter(o.outcome for o in found)
        summary = ", ".join(f"{tally[name]} {shown}" for name, shown in DRILL_OUTCOMES.items())
        parts.append(f'<details class="run-drill" id="{_e(anchors[sys.run])}" data-run="{_e(sys.run)}">'
                     f"<summary>{_e(sys.run)} — {_e(summary)}</summary>")
        if found:
            rows = "\n".join(_outcome_row(o, passages) for o in found)
            parts.append('<div class="scroll"><table class="drill"><thead><tr><th>query</th><th>test point</th>'
                         '<th>kind</th><th>outcome</th><th class="num">best grade</th><th>best passage</th>'
                         f"<th>reason</th></tr></thead><tbody>\n{rows}\n</tbody></table></div>")
        else:
            parts.append('<p class="note">Nothing missed.</p>')
        parts.append('<p class="note"><a href="#leaderboard">↑ leaderboard</a></p></details>')
    parts.append("</section>")
    return "\n".join(parts)


def _settings(report: ExamReport) -> str:
    s, g, c = report.settings, report.settings.grader, report.cache
    grader = f"{g.name} {g.version}" + (f" · model {g.model}" if g.model else "") + (
        f" @ {g.revision}" if g.revision else "") + (f" · prompt {g.prompt_class}" if g.prompt_class else "")
    items: list[tuple[str, str]] = [
        ("grader", grader),
        ("grader options", json.dumps(g.options, sort_keys=True) if g.options else "–"),
        ("k (top passages graded)", str(s.k)),
        ("min grade τ", f"{s.min_grade} (of 0–{g.max_grade})"),
        ("qrels m", str(s.qrels_m)),
        ("pool", s.pool),
        ("measures", ", ".join(s.measures) or "–"),
        ("label variants", ", ".join(s.label_variants) or "–"),
        ("banks", ", ".join(s.banks) or "–"),
        ("run files", ", ".join(s.runs) or "–"),
        ("cache", f"{c.path or 'none'}: {c.hits} hits, {c.misses} misses ({c.hit_rate:.1%} hit rate), "
                  f"{c.graded} graded, {c.failures} failures; {c.pairs} pairs ({c.unique_pairs} unique); "
                  f"{c.grading_seconds:.1f} s grading"),
        ("qrels files", ", ".join(f"{q.file} ({q.label} ≥ {q.relevance_level})" for q in report.qrels) or "–"),
        ("tool version", report.tool_version),
        ("schema version", report.schema_version),
        ("created", report.created),
    ]
    rows = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items)
    return f'<section id="settings"><h2>Settings</h2><dl class="settings">{rows}</dl></section>'


def _ranking(report: ExamReport) -> Callable[[SystemScore], tuple[bool, float, str]]:
    """Leaderboard order: the leading measure (EXAM-Cover) descending, NaN last, ties by name (as on the terminal)."""
    lead = report.leading.name

    def rank(system: SystemScore) -> tuple[bool, float, str]:
        score = system.scores.get(lead)
        cover = _sort_value(score.mean) if score is not None else None
        return cover is None, -(cover or 0.0), system.run

    return rank


def render_html(report: ExamReport, passages: Mapping[str, str] | None = None, *, title: str = "EXAM report") -> str:
    """The whole report as one HTML document; ``passages`` (id -> text) fills in the best passages' texts."""
    systems = sorted(report.systems, key=_ranking(report))
    anchors = {sys.run: run_anchor(i, sys.run) for i, sys in enumerate(systems)}
    heatmap, matrix = _heatmap(report, systems, anchors)
    shown = {placement: [(section, text) for section, content in shown_at(report.sections, placement)
                         if (text := section_html(section, content)) is not None]  # contained (results/sections.py)
             for placement in ("before", "after")}
    body = "\n".join([
        _header(report, title, [section for section, _ in shown_sections(report.sections)  # in the registry's order
                                if any(section is drawn for part in shown.values() for drawn, _ in part)]),
        *(text for _, text in shown["before"]),
        _leaderboard(report, systems, anchors),
        heatmap,
        _grades(report, systems),
        *(text for _, text in shown["after"]),
        _drilldown(report, systems, anchors, passages or {}),
        _settings(report),
    ])
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="exam-harness {_e(report.tool_version)}">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style></head>\n<body>\n{body}\n"
        f'<script type="application/json" id="exam-data">{_json_for_script(matrix)}</script>\n'
        f"<script>{JS}</script>\n</body></html>\n"
    )


def write_html_report(report: ExamReport, directory: Path, passages: Mapping[str, str] | None = None) -> Path:
    """Write ``directory/index.html`` atomically (creating ``directory``) and return its path."""
    path = Path(directory) / "index.html"
    atomic_write_text(path, render_html(report, passages))
    return path
