"""The stateful exam session: loads banks and runs, grades once, answers cases, scores and reports.

One instance lives in ``config.stash[SESSION_KEY]`` and is registered as a plugin so that its hook
implementations run at the right moments of the pytest session:

* collection  -> bank files become cases (collect.py); input errors become one usage error;
* run loop    -> the grading pass over every pair the collected cases need, before any case runs;
* each case   -> reads its outcome (answered / missed / required missed / grading error);
* finish      -> scores, built-in and plugin reporters (``pytest_exam_report``), CI gates.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cache import GradeCache
from exam_harness.collect import ExamCase, ExamMissed
from exam_harness.errors import ConfigError, ExamError
from exam_harness.graders.base import Grader, GraderConfig
from exam_harness.graders.registry import GraderRegistry, default_registry
from exam_harness.grading import GradingOutcome, group_by_key, pending_requests, pool_pairs, run_grading_pass
from exam_harness.models import ExamData, GraderSpec, QueryBank
from exam_harness.progress import GradingProgress
from exam_harness.report.schema import Outcomes
from exam_harness.settings import ExamSettings, bank_paths

MISSED = "missed"


@dataclass(frozen=True)
class CaseResult:
    answered: bool
    best_grade: int | None
    best_passage: str | None
    min_grade: int
    k: int
    retrieved: int

    def describe(self) -> str:
        if self.retrieved == 0:
            return "missed: the run returned no passage for this query"
        return (
            f"missed: best grade {self.best_grade} (passage {self.best_passage}) < min grade {self.min_grade} "
            f"in the run's top {self.k}"
        )


class ExamSession:
    def __init__(self, config: pytest.Config, settings: ExamSettings) -> None:
        self.config = config
        self.settings = settings
        self.input_errors: list[str] = []
        self.banks: dict[Path, list[QueryBank]] = {}
        self._data: ExamData | None = None
        self._responses: dict[str, dict[str, str]] = {}
        self.grader: Grader | None = None
        self.grader_spec: GraderSpec | None = None
        self.outcome: GradingOutcome | None = None
        self.report: Any = None
        self.gate_failures: list[str] = []
        self.cases: list[ExamCase] = []
        self.started = time.time()
        self._cache: GradeCache | None = None
        self.graded_banks: list[QueryBank] = []
        self.qrels: dict[str, dict[str, dict[str, int]]] = {}
        self.outcomes: dict[str, Outcomes] = {}
        self.seen_test_points: set[str] = set()
        self._test_point_sources: dict[str, tuple[str, Path]] = {}
        self.ignored_queries: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ loading
    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def load_bank_file(self, path: Path) -> list[QueryBank]:
        if path not in self.banks:
            banks = self.config.hook.pytest_exam_load_bank(path=path, config=self.config)
            if banks is None:
                from exam_harness.io import load_bank

                banks = load_bank(path)
            self._check_unique_ids(path, banks)
            self.banks[path] = list(banks)
        return self.banks[path]

    def _check_unique_ids(self, path: Path, banks: list[QueryBank]) -> None:
        """One test point id, one text: grades are looked up by id, so a second text would silently
        read the first one's grades."""
        from exam_harness.errors import InputError

        for bank in banks:
            for tp in bank.test_points:
                known = self._test_point_sources.setdefault(tp.id, (tp.text, path))
                if known[0] != tp.text:
                    raise InputError(
                        f"test point id {tp.id!r} is also defined in {_shown(known[1])} with another text",
                        path=path, line=_line_of(path, tp.id) or _line_of(path, tp.text), field="id", value=tp.id,
                        expected="an id used by one test point text across all bank files",
                    )

    @property
    def data(self) -> ExamData:
        if self._data is None:
            paths = list(self.settings.runs)
            loaded = self.config.hook.pytest_exam_load_runs(paths=paths, config=self.config)
            if loaded is None:
                from exam_harness.io import load_runs

                result = load_runs(paths)
                loaded = getattr(result, "data", result)
                self._responses = dict(getattr(result, "responses", {}) or {})
            self._data = loaded
        return self._data

    @property
    def responses(self) -> dict[str, dict[str, str]]:
        _ = self.data
        return self._responses

    def run_names(self) -> list[str]:
        names = sorted(self.data.runs)
        if not names:
            where = ", ".join(str(p) for p in self.settings.runs) or "(no runs folder)"
            raise ConfigError(
                f"no runs to examine in {where}; put TREC run files, *.responses.jsonl or Workbench files "
                "there, or pass --exam-runs PATH"
            )
        return names

    def all_banks(self) -> list[QueryBank]:
        """Every bank under the configured bank paths (for users' tests when no exam case was collected)."""
        from exam_harness.io import iter_bank_files

        banks: list[QueryBank] = []
        for path in iter_bank_files(bank_paths(self.config)):
            banks.extend(self.load_bank_file(path))
        return banks

    @property
    def redacted(self) -> bool:
        """Whether outputs must hide bank text: --exam-redact, or any loaded bank marked secret."""
        return self.settings.redact or any(b.secret for banks in self.banks.values() for b in banks)

    def redact(self, text: str) -> str:
        """``text`` with every secret test point text and gold answer replaced (e.g. an echoed prompt)."""
        if not self.redacted:
            return text
        for banks in self.banks.values():
            for bank in banks:
                for tp in bank.test_points:
                    for secret in (tp.text, *tp.gold_answers, *tp.choices):
                        if secret.strip():
                            text = text.replace(secret, "[redacted]")
        return text

    def collected_banks(self) -> list[QueryBank]:
        """Banks of the collected (and not deselected) cases, each query's test points in bank order."""
        wanted: dict[str, set[str]] = {}
        banks: dict[str, QueryBank] = {}
        for case in self.cases:
            wanted.setdefault(case.bank.key, set()).add(case.test_point.id)
            banks.setdefault(case.bank.key, case.bank)
        result = []
        for key, bank in banks.items():
            points = tuple(tp for tp in bank.test_points if tp.id in wanted[key])
            result.append(bank.model_copy(update={"test_points": points}))
        return result

    # ------------------------------------------------------------------ grading
    def registry(self) -> GraderRegistry:
        registry = default_registry()
        self.config.hook.pytest_exam_register_graders(registry=registry)
        return registry

    def create_grader(self) -> Grader:
        config = GraderConfig(
            model=self.settings.model,
            options=dict(self.settings.grader_options),
            data=self.data,
            batch_size=self.settings.batch_size,
            device=self.settings.device,
        )
        return self.registry().create(self.settings.grader, config)

    @property
    def min_grade(self) -> int:
        spec = self.grader_spec
        assert spec is not None, "min_grade is known once the grader exists"
        tau = self.settings.min_grade if self.settings.min_grade is not None else spec.default_min_grade
        if tau > spec.max_grade:
            raise ConfigError(
                f"--exam-min-grade {tau} is above grader {spec.name!r}'s scale 0..{spec.max_grade}; "
                f"use a value in 0..{spec.max_grade}"
            )
        return tau

    def cache(self) -> GradeCache:
        if self._cache is None:
            self._cache = GradeCache(self.settings.cache)
        return self._cache

    def grade(self, banks: list[QueryBank]) -> GradingOutcome:
        self.graded_banks = banks
        grader = self.create_grader()
        self.grader = grader
        self.grader_spec = grader.spec()
        _ = self.min_grade  # validate tau against the grader's scale before spending time
        requests = pool_pairs(banks, self.data.runs.values(), self.data.passages, k=self.settings.k)
        if self.settings.dry_run:
            grader.close()
            pytest.exit(self.dry_run_summary(grader, requests), returncode=0)
        try:
            with self._progress() as progress:
                outcome = run_grading_pass(
                    grader,
                    requests,
                    self.cache(),
                    chunk_size=int(self.settings.batch_size or getattr(grader, "chunk_size", 256)),
                    on_start=progress.start,
                    on_progress=progress.advance,
                )
        finally:
            grader.close()
        self.outcome = outcome
        self.config.hook.pytest_exam_grading_finished(session=self, outcome=outcome)
        return outcome

    def dry_run_summary(self, grader: Grader, requests: list[Any]) -> str:
        """What grading would spend, computed without calling the grader."""
        pending = pending_requests(grader, requests, self.cache())
        cached = len(group_by_key(grader, requests, {})) - len(pending)
        text = f"exam dry run: {len(requests)} pairs, {cached} cached; grader {grader.name!r} would be asked "
        try:
            from exam_harness.graders.openai_backend import estimate_requests

            calls, tokens = estimate_requests(grader, pending)
            return text + f"{len(pending)} pairs in {calls} calls with about {tokens} prompt tokens; nothing was sent"
        except ConfigError:  # not an LLM grader: no prompts, so no tokens to count
            return text + f"{len(pending)} pairs (no prompts: not an LLM grader); nothing was graded"

    def _progress(self) -> GradingProgress:
        capman = self.config.pluginmanager.getplugin("capturemanager")
        enabled = self.settings.progress and self.config.get_verbosity() >= 0
        return GradingProgress(f"grading with {self.settings.grader}", enabled, capman=capman)

    # ------------------------------------------------------------------ cases
    def case_problem(self, case: ExamCase) -> tuple[str, str] | None:
        if self.outcome is None:
            raise ConfigError("exam cases ran before the grading pass; is another plugin reordering the session?")
        reason = self.outcome.unsupported.get(case.test_point.id)
        if reason is not None:
            return "skip", f"grader {self.settings.grader!r} cannot grade this test point: {reason}"
        run = self.data.runs[case.run]
        errors = [
            f"{pid}: {self.outcome.failures[(pid, case.test_point.id)]}"
            for pid in run.top_k(case.bank.query.id, self.settings.k)
            if (pid, case.test_point.id) in self.outcome.failures
        ]
        if errors:
            shown = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
            return "error", self.redact(f"grading failed for {len(errors)} passage(s) of this run: {shown}")
        return None

    def case_result(self, case: ExamCase) -> CaseResult:
        assert self.outcome is not None
        top = self.data.runs[case.run].top_k(case.bank.query.id, self.settings.k)
        best_grade: int | None = None
        best_passage: str | None = None
        for pid in top:
            grade = self.outcome.grades.get((pid, case.test_point.id))
            if grade is not None and (best_grade is None or grade.grade > best_grade):
                best_grade, best_passage = grade.grade, pid
        tau = self.min_grade
        return CaseResult(
            answered=best_grade is not None and best_grade >= tau,
            best_grade=best_grade,
            best_passage=best_passage,
            min_grade=tau,
            k=self.settings.k,
            retrieved=len(top),
        )

    # ------------------------------------------------------------------ pytest hooks
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.cases = [item for item in items if isinstance(item, ExamCase)]

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        gone = {id(item) for item in items}
        self.cases = [case for case in self.cases if id(case) not in gone]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.input_errors:
            raise pytest.UsageError("\n".join(self.input_errors))

    @property
    def is_xdist_controller(self) -> bool:
        return self.config.pluginmanager.hasplugin("dsession")

    def requested_bank_files(self) -> list[Path]:
        """Bank files the command line asks for, found the way the collector finds them."""
        from exam_harness.collect import is_bank_path

        roots = [p.resolve() for p in bank_paths(self.config)]
        found: dict[Path, None] = {}
        for arg in self.config.args:
            path = Path(self.config.invocation_params.dir, arg.split("::")[0]).resolve()
            if path.is_file() and is_bank_path(path.name):
                found[path] = None
            elif path.is_dir():
                for file in sorted(path.rglob("*")):
                    if file.is_file() and is_bank_path(file.name) and any(r == file or r in file.parents for r in roots):
                        found[file.resolve()] = None
        return list(found)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Under pytest-xdist the controller grades every requested bank before the workers start, so
        # workers only read the shared cache and one process spends the grader's time.
        if not self.is_xdist_controller or session.config.option.collectonly:
            return
        try:
            if self.settings.cache is None:
                raise ConfigError("parallel runs (pytest-xdist) share grades through the cache; give --exam-cache a file")
            banks = [bank for path in self.requested_bank_files() for bank in self.load_bank_file(path)]
            if banks:
                self.grade(banks)
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        if self.cases and not session.config.option.collectonly:
            try:
                self.grade(self.collected_banks())
            except ExamError as exc:
                raise pytest.UsageError(str(exc)) from None
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if isinstance(item, ExamCase) and call.when == "call" and call.excinfo is not None:
            if call.excinfo.errisinstance(ExamMissed):
                report.outcome = MISSED  # type: ignore[assignment]  # custom category, not a failure
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        run = properties.get("exam_run")
        if run is None:
            return
        self.seen_test_points.add(str(properties.get("exam_test_point")))
        tally = self.outcomes.setdefault(str(run), Outcomes())
        if report.when == "call":
            if report.outcome == MISSED:
                tally.missed += 1
            elif report.passed:
                tally.answered += 1
            elif report.failed:
                tally.required_missed += 1
        elif report.failed:
            tally.errors += 1
        elif report.skipped and report.when == "setup":
            tally.skipped += 1

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        if report.when == "call" and report.outcome == MISSED:
            return MISSED, "m", ("MISSED", {"yellow": True})
        return None

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.is_worker or self.outcome is None:
            return
        from exam_harness.scoring import build_report

        if self.is_xdist_controller:  # score what the workers ran, not every bank the controller graded
            self.graded_banks = [
                b.model_copy(update={"test_points": tuple(tp for tp in b.test_points if tp.id in self.seen_test_points)})
                for b in self.graded_banks
            ]
            self.graded_banks = [b for b in self.graded_banks if b.test_points]

        try:
            self.report = build_report(self)
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.config.hook.pytest_exam_report(session=self, report=self.report)
        examined = {b.query.id for b in self.graded_banks}
        for name, run in sorted(self.data.runs.items()):
            extra = sorted(set(run.rankings) - examined)
            if extra:
                self.ignored_queries[name] = extra
        try:
            self.gate_failures = self.check_gates()
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None
        if self.gate_failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def check_gates(self) -> list[str]:
        failures = self.baseline_failures()
        limit = self.settings.fail_under
        if limit is not None and self.report is not None:
            for system in self.report.systems:
                if system.exam_cover < limit:
                    failures.append(
                        f"FAIL Required EXAM-Cover@{self.settings.k} of {limit:g} not reached by run "
                        f"{system.run!r}: {system.exam_cover:.4f}"
                    )
        return failures

    def per_query_cover(self) -> dict[str, dict[str, float]]:
        scores: dict[str, dict[str, float]] = {}
        for row in self.report.per_query:
            scores.setdefault(row.run, {})[row.query_id] = row.exam_cover
        return scores

    def baseline_failures(self) -> list[str]:
        if self.settings.baseline is None or self.report is None:
            return []
        from exam_harness.evaluation.statistics import baseline_gate

        return baseline_gate(
            self.per_query_cover(), self.settings.baseline, self.settings.alpha, self.settings.significance,
            measure=f"EXAM-Cover@{self.settings.k}",
        )

    def analysis_sections(self, width: int) -> list[tuple[str, str]]:
        if not self.settings.analyses or self.outcome is None:
            return []
        if self.redacted:  # the analyses quote test points and extracted answers
            return [("exam analyses", "not shown: the bank is secret (secret: true or --exam-redact)")]
        from exam_harness.evaluation.sections import analysis_sections

        sections = analysis_sections(
            self.data, self.graded_banks, self.outcome.grades, names=self.settings.analyses,
            min_grade=self.min_grade, width=width,
        )
        return [(title, self.redact(text)) for title, text in sections]

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.report is None:
            return
        from exam_harness.report.terminal import render_summary

        render_summary(terminalreporter, self)
        for title, text in self.analysis_sections(getattr(terminalreporter, "_tw").fullwidth):
            terminalreporter.write_sep("-", title)
            terminalreporter.write(text if text.endswith("\n") else text + "\n")
        for run, queries in self.ignored_queries.items():
            shown = ", ".join(queries[:5]) + (f" and {len(queries) - 5} more" if len(queries) > 5 else "")
            terminalreporter.write_line(
                f"note: run {run!r} ranks {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} that no "
                f"examined bank covers (ignored): {shown}"
            )
        for line in self.gate_failures:
            terminalreporter.write_line(line, red=True, bold=True)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._cache is not None:
            self._cache.close()


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _line_of(path: Path, needle: str) -> int | None:
    """The first line of a text bank file that contains ``needle`` (for pointing at a duplicate)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                if needle in line:
                    return lineno
    except OSError:
        return None
    return None
