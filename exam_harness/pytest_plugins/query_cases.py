"""One pytest case per query and run (``--exam-cases query``), for exams past ~100k test-point cases.

The case's verdict is its test points' verdicts taken together: an error when a pair could not be
graded, a failure when a required test point was missed, *missed* (reported like a skip, as a
test-point case is) when any test point was missed, passed when every one was answered. Its message
lists what was missed. Each run's tally still counts test points (the case carries the counts), so
reports and scores are the same as with one case per test point.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from exam_harness.core.case_verdicts import Verdict, describe, verdict
from exam_harness.core.display import shorten
from exam_harness.core.models import QueryBank, TestPoint, readable_id
from exam_harness.pytest_plugins.items import ExamItem, ExamMissed, ExamRequiredMissed, case_error, withheld
from exam_harness.pytest_plugins.state import setup_of

SHOWN = 5  # missed test points named in a message


class QueryCase(ExamItem):
    """Every test point of one query put to one run."""

    def __init__(self, *, bank: QueryBank, run: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bank = bank
        self.run = run
        self.user_properties.append(("exam_run", run))
        self.user_properties.append(("exam_query", bank.key))
        scope = setup_of(self.config).options.required_scope
        if any(scope.applies(tp, self.run) for tp in bank.test_points):
            self.add_marker("exam_required")
        self._verdicts: list[Verdict] | None = None

    def verdicts(self) -> list[Verdict]:
        if self._verdicts is None:
            grading: Any = self.config.pluginmanager.get_plugin("exam-grading")
            graded = grading.graded_for(self.bank)
            inputs = setup_of(self.config).exam_inputs(self.config)
            top = inputs.data.runs[self.run].top_k(self.bank.query.id, graded.plan.k)
            g = graded.grading
            self._verdicts = [verdict(tp, top, g.grades, g.failures, g.unsupported, min_grade=graded.plan.min_grade,
                                      k=graded.plan.k, required=graded.plan.required.applies(tp, self.run))
                              for tp in self.bank.test_points]
        return self._verdicts

    def _answers(self) -> Mapping[tuple[str, str], str | None]:
        grading: Any = self.config.pluginmanager.get_plugin("exam-grading")
        answers: Mapping[tuple[str, str], str | None] = grading.graded_for(self.bank).grading.answers
        return answers

    def _secret(self) -> bool:
        return self.bank.secret or setup_of(self.config).exam_inputs(self.config).redact_all

    def _shown(self, tp: TestPoint) -> str:
        """The test point's id as every output shows it (the test-point case's id, the JSON's)."""
        return readable_id(tp.id, tp.query_id, None if self._secret() else tp.text, tp.facet_id)

    def message(self, outcomes: tuple[str, ...]) -> str:
        """The counts, then the first test points with one of ``outcomes``, each as a test-point case says it."""
        inputs = setup_of(self.config).exam_inputs(self.config)
        results = list(zip(self.bank.test_points, self.verdicts()))
        counts = Counter(v.outcome for v in self.verdicts())
        head = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
        picked = [(tp, v) for tp, v in results if v.outcome in outcomes]
        lines = [f"{len(picked)} of {len(results)} test points {'/'.join(outcomes)} ({head})"]
        secret = self._secret()
        answers = self._answers()
        from exam_harness.graders.answer_key import naming_the_gold  # rapidfuzz: only for a message

        for tp, v in picked[:SHOWN]:
            reason = passage = None
            if v.best_passage is not None and not secret:
                best = inputs.data.passages.get(v.best_passage)
                passage = best.text if best is not None else None
                reason = naming_the_gold(answers.get((v.best_passage, tp.id)), tp.gold_answers, passage)
            said = describe(v, text=None if secret else tp.text, reason=reason, passage=passage)
            lines.append(f"  {self._shown(tp)}: {said}")
        if len(picked) > SHOWN:
            lines.append(f"  ... and {len(picked) - SHOWN} more (see the JSON report's outcomes)")
        return inputs.redact("\n".join(lines))

    def setup(self) -> None:
        case_error(self)
        counts = Counter(v.outcome for v in self.verdicts())
        self.user_properties.append(("exam_test_points", [self._shown(tp) for tp in self.bank.test_points]))
        self.user_properties.append(("exam_counts", dict(counts)))
        if counts["error"]:
            pytest.fail(self.message(("error",)), pytrace=False)

    def runtest(self) -> None:
        counts = Counter(v.outcome for v in self.verdicts())
        outcome = ("required-missed" if counts["required-missed"] else "missed" if counts["missed"] else "answered")
        self.user_properties.append(("exam_outcome", outcome))
        if outcome == "required-missed":
            raise ExamRequiredMissed(self.message(("required-missed",)))
        if outcome == "missed":
            raise ExamMissed(self.message(("missed",)))

    def teardown(self) -> None:
        self._verdicts = None  # its outcome is in user_properties; a 600k-case exam would keep them all

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: object = None) -> str:
        if isinstance(excinfo.value, (ExamMissed, ExamRequiredMissed)):
            return str(excinfo.value)
        if self._secret():
            inputs = setup_of(self.config).exam_inputs(self.config)
            return withheld(excinfo.value, inputs.redact, f"case {self.bank.key} [{self.run}]")
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return str(self.path), None, f"query {self.bank.key} [{self.run}]: {shorten(self.bank.query.text, 60)}"
