"""What the offline grader's per-test-point verdicts are worth (docs/graders.md, "What the bundled model can
and cannot do"), stated beside every embedding-graded session's results.

Pure functions of the grader's spec and the session's test points: the precision and recall of a verdict
("grade >= tau") measured where they were measured, named, and a warning for ``required`` test points that
only the embedding grader judged, naming the cascade grader as the remedy. The figures are the shipped
support model's; another support model (a refit file) has no measured figures here, which is said.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from exam_harness.core.models import GraderSpec
from exam_harness.exam.inputs import Pair


@dataclass(frozen=True)
class VerdictWorth:
    """Precision and recall of "grade >= min_grade" against people's labels, and where they were measured."""

    precision: float
    recall: float
    min_grade: int
    measured_on: str


# The shipped support model at grade >= 4 against tests/data/sourdough_bank.json's own labels of every (question,
# passage) pair: 1,260 pairs, 30 answering; 18 passed of them (13 of 15 stated word for word, 5 of 15 in other
# words) and 13 of the 1,230 others (4 of the 240 distractor pairs), so precision 18/31, recall 18/30
# (benchmarks/cascade.py prints them again).
SHIPPED_WORTH = VerdictWorth(
    precision=18 / 31,
    recall=18 / 30,
    min_grade=4,
    measured_on="a user-style bank's own labels (tests/data/sourdough_bank.json, 1,260 pairs)",
)


def worth_of(spec: GraderSpec, shipped_fingerprint: str) -> VerdictWorth | None:
    """The measured worth of the embedding grader's verdicts under ``spec``: the shipped figures when it grades
    with the shipped support model (``shipped_fingerprint``) and its cut points; None otherwise (not measured)."""
    if spec.name != "embedding" or spec.options.get("support_model") != shipped_fingerprint:
        return None
    return SHIPPED_WORTH


def worth_line(spec: GraderSpec, min_grade: int, worth: VerdictWorth | None) -> str | None:
    """The note every output of an embedding-graded session states; None for another grader."""
    if spec.name != "embedding":
        return None
    if worth is None:
        return (f"note: the embedding grader's verdicts per test point (grade >= {min_grade}) have no measured "
                "precision or recall for this support model; it ranks systems, it does not judge single test points")
    at = "" if worth.min_grade == min_grade else f" (measured at grade >= {worth.min_grade}, not {min_grade})"
    return (f"note: the embedding grader's verdict on one test point is weak: precision {worth.precision:.2f}, "
            f"recall {worth.recall:.2f} on {worth.measured_on}{at}; it ranks systems, it does not judge single "
            "test points (docs/graders.md)")


def required_warning(spec: GraderSpec, required: Iterable[str], worth: VerdictWorth | None) -> str | None:
    """The warning for ``required`` test points that only the embedding grader judged; None when there are none
    or another grader judged them."""
    ids = sorted(set(required))
    if spec.name != "embedding" or not ids:
        return None
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    figures = (f" (precision {worth.precision:.2f}, recall {worth.recall:.2f} on {worth.measured_on})"
               if worth is not None else " (no measured precision or recall)")
    return (f"WARNING: {len(ids)} required test points ({shown}) are judged only by the embedding grader{figures}; "
            "a required point fails a run on that verdict alone. Let an LLM decide them: --exam-grader cascade "
            "--exam-grader-option decider=openai sends it only the pairs its filter cannot rule out, on a small pool "
            "all of them (docs/graders.md, Cascade grading)")


def grader_notes(spec: GraderSpec, min_grade: int, required: Iterable[str], answers: Mapping[Pair, str | None],
                 grades: Mapping[Pair, int]) -> list[str]:
    """The lines a session's summary states about its judge: a cascade's calls and kept share
    (:func:`exam_harness.graders.cascade.statement`); an embedding grader's verdict worth and the warning for
    required test points it alone judged."""
    from exam_harness.graders.cascade import statement
    from exam_harness.graders.support import shipped_model

    lines = [line] if (line := statement(answers, grades, min_grade, spec)) is not None else []
    worth = worth_of(spec, shipped_model().fingerprint())
    lines += [found for found in (worth_line(spec, min_grade, worth), required_warning(spec, required, worth))
              if found is not None]
    return lines
