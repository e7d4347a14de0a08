"""What the viewer's screens show, from a result document alone (no Textual here): the leaderboard of every
measure with its intervals (and, where the calibration section holds them, each score corrected by the team's
labels beside the raw one, with its 95% interval), the verdict with its failed checks first, each run's queries
and test points, the flips against a reference, the sections (each registered one by its own terminal
rendering, any other generically).

Both documents of the one schema are read through the project's reader (results/document.py): the pytest
report (``exam-report.json``, kept reports of older schemas migrated) and ``evaluate``'s. Only the pytest
report holds outcomes per run and test point; ``evaluate``'s holds per-query scores with ``--per-query``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from exam_harness.config.gates import GateResult
from exam_harness.features.calibration.model import Calibration, CorrectedRun, CorrectedScores
from exam_harness.features.flips.flips import MISSED, Flip, flips
from exam_harness.results.document import read_document
from exam_harness.results.evaluation import EvaluationReport, MeasureStats, system_order
from exam_harness.results.schema import ExamReport, MeasureInfo, QueryScore, SystemScore, TestPointOutcome
from exam_harness.results.sections import Section, active_sections

Document = ExamReport | EvaluationReport


@dataclass(frozen=True)
class Opened:
    """A document as read from its file."""

    path: Path
    document: Document

    @property
    def name(self) -> str:
        return self.path.name


def open_document(path: Path) -> Opened:
    """The document at ``path`` through the project's reader (a bad file is an InputError naming it)."""
    return Opened(path, read_document(path))


def headings(measures: Sequence[MeasureInfo]) -> list[str]:
    """Each measure's column heading: its title, with its tau where the document scores several taus and its
    qrels label where the measure has one (``P@20 τ4 count``); unique within the document."""
    taus = {m.min_grade for m in measures if m.min_grade is not None}
    labels = {m.label for m in measures if m.label is not None}
    shown = []
    for m in measures:
        parts = [m.title]
        if len(taus) > 1 and m.min_grade is not None:
            parts.append(f"τ{m.min_grade}")
        if m.label is not None and len(labels) > 1:
            parts.append(m.label)
        shown.append(" ".join(parts))
    counts: dict[str, int] = {}
    for text in shown:
        counts[text] = counts.get(text, 0) + 1
    return [text if counts[text] == 1 else f"{text} ({m.name})" for text, m in zip(shown, measures)]


@dataclass(frozen=True)
class Cell:
    """One run's value of one measure, with what the document says about it."""

    mean: float | None
    stderr: float | None
    interval: tuple[float, float] | None = None  # evaluate's bootstrap interval
    reference: float | None = None  # the reference document's mean, when one is given

    def text(self) -> str:
        if self.mean is None:
            return "–"
        return f"{self.mean:.3f}" + (f" ±{self.stderr:.3f}" if self.stderr is not None else "")


@dataclass(frozen=True)
class Column:
    """A column of the leaderboard after the run's: a measure of the document (``measures[index]``), or its
    score corrected by the team's labels (``corrected``: the calibration section's entry of that measure)."""

    heading: str
    index: int
    corrected: CorrectedScores | None = None


def corrected_text(found: CorrectedRun | None) -> str:
    """A corrected cell: the estimate and its 95% interval (``0.612 [0.55, 0.67]``), ``–`` where there is none."""
    if found is None or found.corrected is None:
        return "–"
    if found.low is None or found.high is None:
        return f"{found.corrected:.3f}"
    return f"{found.corrected:.3f} [{found.low:.2f}, {found.high:.2f}]"


def calibration_of(document: Document) -> Calibration | None:
    """The document's calibration section (the calibration feature's; read from its JSON where the feature is not
    registered here); None where the document holds none, or one this version cannot read (the sections screen
    shows it as its JSON)."""
    content = document.sections.get("calibration")
    if content is None or isinstance(content, Calibration):
        return content
    try:
        return Calibration.model_validate(content.model_dump() if isinstance(content, BaseModel) else content)
    except ValidationError:
        return None


class Viewed:
    """The document being viewed, and the reference to compare it with (a second document, or none)."""

    def __init__(self, opened: Opened, reference: Opened | None = None) -> None:
        self.opened = opened
        self.document: Document = opened.document
        self.reference = reference
        self.measures: list[MeasureInfo] = list(self.document.measures)
        self.headings = headings(self.measures)
        self._systems = {s.run: s for s in self.document.systems}
        self._stats: dict[str, MeasureStats] = (
            {s.measure: s for s in self.document.leaderboards} if isinstance(self.document, EvaluationReport) else {})
        ref = reference.document if reference is not None else None
        self._reference_scores = {s.run: s.scores for s in ref.systems} if ref is not None else {}
        self.calibration = calibration_of(self.document)
        self.columns = self._columns()

    def _columns(self) -> list[Column]:
        """Each measure's column, and beside each measure the calibration section corrects its corrected one."""
        columns = []
        for index, (measure, heading) in enumerate(zip(self.measures, self.headings, strict=True)):
            columns.append(Column(heading, index))
            found = self.calibration.corrected_of(measure.name) if self.calibration is not None else None
            if found is not None and not found.missing:
                columns.append(Column(f"{heading} corrected", index, found))
        return columns

    # -- the document as a whole --------------------------------------------------------------------------

    @property
    def is_exam_report(self) -> bool:
        return isinstance(self.document, ExamReport)

    def summary(self) -> str:
        """What the document is (its kind, schema, creation time), its grader, k and tau, and its size."""
        d = self.document
        grader = d.settings.grader
        model = f" ({grader.model})" if grader.model else ""
        if isinstance(d, ExamReport):
            kind, taus = "exam report", f"τ={d.settings.min_grade}"
            size = f"{d.queries} queries, {d.test_points} test points"
        else:
            kind, taus = f"evaluation of {d.grading.source} grades", "τ=" + ",".join(map(str, d.settings.min_grades))
            size = f"{d.collection.queries} queries, {d.collection.test_points} test points"
        return (f"{self.opened.name}: {kind}, schema {d.schema_version}, created {d.created}\n"
                f"{size}, {len(d.systems)} runs, {len(self.measures)} measures; grader {grader.name}{model}, {taus}, "
                f"k={d.settings.k}")

    def runs(self) -> list[str]:
        """The runs in the leaderboard's order: evaluate's by the official leaderboard where the document holds
        one, else by the first measure (EXAM-Cover), best first."""
        from exam_harness.results.evaluation import official_of

        first = self.measures[0].name if self.measures else None
        scores = {s.run: s.scores[first].mean for s in self.document.systems if first in s.scores} if first else {}
        return system_order(list(self._systems), official_of(self.document.sections), scores)

    def system(self, run: str) -> SystemScore:
        return self._systems[run]

    def cell(self, run: str, measure: MeasureInfo) -> Cell:
        score = self._systems[run].scores.get(measure.name)
        stats = self._stats.get(measure.name)
        interval = stats.ci.get(run) if stats is not None else None
        before = self._reference_scores.get(run, {}).get(measure.name)
        return Cell(score.mean if score else None, score.stderr if score else None,
                    (interval[0], interval[1]) if interval else None, before.mean if before else None)

    def column_text(self, run: str, column: Column) -> str:
        """The leaderboard's cell of ``run`` in ``column``."""
        if column.corrected is not None:
            return corrected_text(column.corrected.run(run))
        return self.cell(run, self.measures[column.index]).text()

    def cell_details(self, run: str, at: int) -> list[str]:
        """What the leaderboard says of the cell of ``run`` in the ``at``-th column after the run's: the measure's
        full name, the mean, standard error and interval, the score corrected by the team's labels, the
        reference's value, the queries left out; of a corrected column, the estimate, its interval, the raw score
        and the labels that correct it."""
        column = self.columns[at]
        measure = self.measures[column.index]
        if column.corrected is not None:
            return self._corrected_details(run, column, column.corrected)
        cell = self.cell(run, measure)
        lines = [f"{run} · {self.headings[column.index]} = {measure.name}"]
        if cell.mean is None:
            lines.append("no value (the measure gives this run none: a trec_eval measure of generated answers)")
        else:
            value = f"mean {cell.mean:.4f}, standard error {cell.stderr:.4f}"
            if cell.interval is not None:
                value += f", bootstrap interval [{cell.interval[0]:.4f}, {cell.interval[1]:.4f}]"
            lines.append(value)
        lines += self._correction_line(run, measure)
        if cell.reference is not None and self.reference is not None:
            change = f" ({cell.mean - cell.reference:+.4f})" if cell.mean is not None else ""
            lines.append(f"in {self.reference.name}: {cell.reference:.4f}{change}")
        stats = self._stats.get(measure.name)
        if stats is not None and stats.dropped:
            lines.append(f"scores {stats.queries} queries; left out ({len(stats.dropped)}): "
                         + ", ".join(stats.dropped[:8]) + (" ..." if len(stats.dropped) > 8 else ""))
        system = self._systems[run]
        if system.incomplete_queries:
            lines.append(f"incomplete (a lower bound) on {len(system.incomplete_queries)} queries: "
                         + ", ".join(system.incomplete_queries[:8]))
        return lines

    def _correction_line(self, run: str, measure: MeasureInfo) -> list[str]:
        """Of a raw cell: its score corrected by the team's labels, or why the calibration section has none."""
        found = self.calibration.corrected_of(measure.name) if self.calibration is not None else None
        if found is None:
            return []
        if found.missing:
            return [f"not corrected by the team's labels: {found.missing}"]
        return [f"corrected by the team's labels: {_corrected_value(found.run(run))} (s: the calibration section)"]

    def _corrected_details(self, run: str, column: Column, found: CorrectedScores) -> list[str]:
        assert self.calibration is not None
        measure = self.measures[column.index]
        score = found.run(run)
        design = self.calibration.scores_design
        drawn = (f"{design.labelled} labelled {design.unit}s of {design.population}" if design is not None else
                 "labels of no sample")
        lines = [f"{run} · {column.heading} = {measure.name} corrected by the team's labels "
                 f"{self.calibration.labels} ({drawn})"]
        if score is None:
            lines.append("no corrected value for this run (the calibration section holds none)")
        else:
            lines.append(f"corrected {_corrected_value(score)}; raw (the judge's) {score.raw:.4f}")
        return [*lines, "s: the calibration section (the judges' figures against the labels)"]

    # -- the verdict --------------------------------------------------------------------------------------

    def verdict(self) -> tuple[bool, list[GateResult], str]:
        return self._verdict

    @functools.cached_property
    def _verdict(self) -> tuple[bool, list[GateResult], str]:
        """(passed, the checks with the failed ones first, where the verdict comes from): the session's verdict
        an exam report holds, else the checks a saved document always gets (``exam-harness verdict`` without
        gates: incomplete runs, fallback grades, the budget)."""
        d = self.document
        if isinstance(d, ExamReport) and d.verdict is not None:
            passed, gates, source = d.verdict.passed, d.verdict.gates, "the session's verdict"
        else:
            from exam_harness.results.verdict import Checks, decide

            found = decide(d, Checks())
            passed, gates = found.passed, found.gates
            source = "the checks every document gets (exam-harness verdict without gates)"
        failed_cases = sum(s.outcomes.required_missed + s.outcomes.errors for s in d.systems)
        if failed_cases:
            passed = False
        return passed, sorted(gates, key=lambda g: g.passed), source

    def verdict_lines(self) -> list[str]:
        passed, gates, source = self.verdict()
        failed = [g for g in gates if not g.passed]
        head = f"verdict: {'PASSED' if passed else 'FAILED'} ({len(gates)} checks, {len(failed)} failed; {source})"
        cases = [f"{s.run}: {s.outcomes.required_missed} required test points missed"
                 for s in self.document.systems if s.outcomes.required_missed]
        errors = [f"{s.run}: {s.outcomes.errors} cases could not be graded" for s in self.document.systems
                  if s.outcomes.errors]
        return [head, *(g.message for g in failed), *cases, *errors, *(g.message for g in gates if g.passed)]

    # -- runs, queries, test points -----------------------------------------------------------------------

    @functools.cached_property
    def _outcomes(self) -> dict[str, dict[str, list[TestPointOutcome]]]:
        """run -> query -> its outcomes, in the document's order (grouped once, on first use)."""
        grouped: dict[str, dict[str, list[TestPointOutcome]]] = {}
        if isinstance(self.document, ExamReport):
            for o in self.document.outcomes:
                grouped.setdefault(o.run, {}).setdefault(o.query_id, []).append(o)
        return grouped

    @functools.cached_property
    def _per_query(self) -> dict[str, dict[str, QueryScore]]:
        rows: dict[str, dict[str, QueryScore]] = {}
        for row in self.document.per_query:
            rows.setdefault(row.run, {})[row.query_id] = row
        return rows

    def has_outcomes(self) -> bool:
        return bool(self._outcomes)

    def why_no_queries(self, run: str) -> str | None:
        """Why a run's queries cannot be shown (None when they can)."""
        if run in self._per_query or run in self._outcomes:
            return None
        if isinstance(self.document, EvaluationReport):
            return ("this evaluation document holds no per-query scores: evaluate writes them with --per-query "
                    "(and only a pytest report holds test points)")
        return "the document holds no query of this run"

    def queries(self, run: str) -> list[QueryRow]:
        """The run's queries: each one's per-query scores and its test points' tally."""
        scores = self._per_query.get(run, {})
        outcomes = self._outcomes.get(run, {})
        order = list(dict.fromkeys([*outcomes, *scores]))
        return [QueryRow(run, q, scores.get(q), outcomes.get(q, [])) for q in order]

    def points(self, run: str, query_id: str) -> list[TestPointOutcome]:
        """The run's test points of the query, missed required ones first, then missed, then the rest."""
        found = self._outcomes.get(run, {}).get(query_id, [])
        return sorted(found, key=_point_order)

    def all_outcomes(self) -> Iterator[TestPointOutcome]:
        if isinstance(self.document, ExamReport):
            yield from self.document.outcomes

    # -- flips --------------------------------------------------------------------------------------------

    def flips(self) -> tuple[list[Flip], str]:
        """The flipped test points and what they are against: the second document given, else the kept report
        the session compared with (its flips section); an empty list with the reason when there are none."""
        d = self.document
        if self.reference is not None:
            ref = self.reference.document
            if isinstance(ref, ExamReport) and isinstance(d, ExamReport):
                return flips(ref, d), f"against {self.reference.name}"
            return [], (f"{self.reference.name} and {self.opened.name}: flips need two exam reports (an evaluation "
                        "document holds no test point outcomes); the leaderboard shows both documents' scores")
        from exam_harness.features.flips.section import Flips

        content = d.sections.get("flips")
        if isinstance(content, Flips):
            return content.found(), f"against {content.reference} (the session's)"
        return [], ("no reference: the session compared with no kept report (--exam-compare); give a second "
                    "document (exam-harness view REPORT.json KEPT.json) or --compare REF")

    # -- flaky cases --------------------------------------------------------------------------------------

    @functools.cached_property
    def flaky(self) -> frozenset[tuple[str, str]] | None:
        """(run, test point id) of the cases whose verdict flips across a judge's K samples, at the report's
        tau; None when the document holds no judge variance (no repeats)."""
        from exam_harness.features.judge_variance.section import JudgeVariances

        content = self.document.sections.get("judge-variance")
        if not isinstance(content, JudgeVariances) or not content.per_tau:
            return None
        tau = self.document.settings.min_grade if isinstance(self.document, ExamReport) else None
        chosen = content.at(tau) if tau is not None else None
        chosen = chosen or content.per_tau[0]
        return frozenset((c.run, c.test_point_id) for c in chosen.cases if c.flaky)

    # -- sections -----------------------------------------------------------------------------------------

    def sections(self) -> list[ShownSection]:
        """Every section the document holds: a registered one as its terminal rendering shows it, in registry
        order; one no registered section names (a plugin's not loaded, a newer tool's) generically, after."""
        held = dict(self.document.sections)
        registry = active_sections()
        shown: list[ShownSection] = []
        for name in registry:
            content = held.pop(name, None)
            if content is None:
                continue
            section: Section = registry.get(name)
            if isinstance(content, BaseModel) and isinstance(content, section.model):
                shown.append(ShownSection(name, section.title, content, section))
            else:
                shown.append(ShownSection(name, section.title, content, None))
        shown += [ShownSection(name, name, content, None) for name, content in held.items()]
        return shown


def _corrected_value(found: CorrectedRun | None) -> str:
    if found is None or found.corrected is None:
        return "none for this run"
    interval = ("" if found.low is None or found.high is None else
                f", 95% interval [{found.low:.4f}, {found.high:.4f}]")
    return f"{found.corrected:.4f}{interval}"


def _point_order(o: TestPointOutcome) -> tuple[int, str]:
    rank = 0 if o.outcome == "required-missed" else 1 if o.outcome in MISSED else 2 if o.outcome != "answered" else 3
    return rank, o.test_point_id


@dataclass(frozen=True)
class QueryRow:
    """One query of a run: its per-query scores (None without them) and its test points' outcomes."""

    run: str
    query_id: str
    scores: QueryScore | None
    outcomes: Sequence[TestPointOutcome]

    @property
    def missed(self) -> int:
        return sum(o.outcome in MISSED for o in self.outcomes)

    @property
    def required_missed(self) -> int:
        return sum(o.outcome == "required-missed" for o in self.outcomes)

    @property
    def covered(self) -> str:
        if self.scores is not None:
            return f"{self.scores.covered}/{self.scores.test_points}"
        answered = sum(o.outcome == "answered" for o in self.outcomes)
        return f"{answered}/{len(self.outcomes)}"


@dataclass(frozen=True)
class ShownSection:
    """A section of the document; ``section`` None: no registered section names it (shown generically)."""

    name: str
    title: str
    content: Any
    section: Section | None

    def generic_text(self) -> str:
        """The content as indented JSON: what any section holds, shown without knowing its model."""
        data = self.content.model_dump(mode="json") if isinstance(self.content, BaseModel) else self.content
        return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def point_lines(o: TestPointOutcome, flaky: bool | None = None) -> list[str]:
    """A test point's outcome as the document holds it: what it asks, the verdict, the best passage with its
    grade, the grade's reason and the passage's text."""
    lines = [f"{o.test_point_id} ({o.kind}{', required' if o.required else ''}) · run {o.run} · query {o.query_id}",
             f"asks: {o.text if o.text is not None else '(a secret bank: its text is not in the document)'}",
             f"outcome: {o.outcome}" + ("" if flaky is None else f"; {'flaky' if flaky else 'not flaky'} across the "
                                        "judge's samples")]
    if o.best_passage is None:
        lines.append("best passage: none graded")
    else:
        lines.append(f"best passage: {o.best_passage}, grade {o.best_grade}")
        if o.reason:
            lines.append(f"reason: {o.reason}")
        if o.best_passage_text:
            lines.append(f"text: {o.best_passage_text}")
    return lines


def flip_sides(f: Flip, before: str, after: str) -> tuple[list[str], list[str]]:
    """Both sides of a flip: the verdict, best passage, grade, reason and text of each."""
    def side(name: str, o: TestPointOutcome) -> list[str]:
        lines = [f"{name}: {o.outcome}", f"best passage: {o.best_passage or 'none graded'}"
                 + (f", grade {o.best_grade}" if o.best_grade is not None else "")]
        if o.reason:
            lines.append(f"reason: {o.reason}")
        if o.best_passage_text:
            lines.append(f"text: {o.best_passage_text}")
        return lines

    return side(before, f.before), side(after, f.after)


def scores_by_measure(row: QueryScore, measures: Sequence[MeasureInfo], shown: Sequence[str]) -> Mapping[str, str]:
    """heading -> the query's value of each measure (``–`` where the measure leaves the query out)."""
    return {head: (f"{row.scores[m.name]:.3f}" if m.name in row.scores else "–") for m, head in zip(measures, shown)}
