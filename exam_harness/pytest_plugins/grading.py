"""The grading pass of a pytest session: once, before the first exam case runs.

The grader is created, the plan resolved (tau checked against the grader's scale), and every pair
the collected cases need is graded through the cache. Under pytest-xdist the controller grades every
requested bank before the workers start, so workers find every grade in the shared cache and one
process spends the grader's time.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from exam_harness.config.gates import check_samples
from exam_harness.core.errors import INFRASTRUCTURE_FAILED, ConfigError, ExamError, InfrastructureError
from exam_harness.core.models import Query, QueryBank
from exam_harness.core.progress import GradingProgress
from exam_harness.graders.base import GradingRequest
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import GradingOutcome, check_gradable, dry_run_summary, run_grading_pass
from exam_harness.grading.setup import GradingSetup, open_grading
from exam_harness.llm.cost import merged_cost
from exam_harness.pytest_plugins.collection import ExamCollector
from exam_harness.pytest_plugins.items import withheld
from exam_harness.pytest_plugins.state import GRADED_KEY, GradedExam, is_worker, is_xdist_controller, setup_of
from exam_harness.results.preflight import (
    check_covered,
    check_gate_runs,
    check_outputs,
    check_overlap,
    check_required_runs,
)


class ExamGrading:
    """Grades the collected banks (or, on the xdist controller, the requested ones) once per process."""

    def __init__(self, config: pytest.Config, collector: ExamCollector) -> None:
        self.config = config
        self.collector = collector
        self._cache: GradeCache | None = None
        self._worker_grading: GradingSetup | None = None  # an xdist worker's, made on first use
        self._worker_banks: set[str] = set()  # keys of the banks a worker has taken grades for
        self.dry_run_summary: str | None = None  # --exam-dry-run's figures, printed at the end
        self.infrastructure_failure: str | None = None  # why grading could not be done (a dead server)
        self.shard_incomplete = False  # --exam-shard: pairs of the shard got no grade

    @property
    def graded(self) -> GradedExam | None:
        return self.config.stash.get(GRADED_KEY, None)

    def cache(self) -> GradeCache:
        if self._cache is None:
            options = setup_of(self.config).options
            self._cache = GradeCache(options.cache, keep_text=options.cache_text == "keep")
        return self._cache

    def _prepared(self, banks: Sequence[QueryBank]) -> tuple[GradingSetup, list[GradingRequest]]:
        """The grading set-up and the pool pairs of ``banks``; the caller closes the set-up."""
        config = self.config
        setup = setup_of(config)
        options = setup.options
        inputs = setup.exam_inputs(config)
        data = inputs.load_runs(list(options.runs))
        # Everything that needs only the inputs is checked before a grader loads or a pair is graded.
        configured = [b for loaded in inputs.banks.values() for b in loaded] or list(banks)
        check_overlap(configured, data)
        if options.strict_queries:
            check_covered(configured, data)
        check_gate_runs(options, data.runs)
        check_required_runs(configured, options, data.runs)
        check_outputs(options, Path(config.rootpath), [*setup.bank_roots, *options.runs, *inputs.supplied_files])
        grading = open_grading(options, setup.registries(config), data)  # the plan's defaults are evaluate's
        try:
            check_gradable(grading.grader, banks)
            check_samples(options.fail_under, grading.grader.repeats)
            requests = grading.requests(data, banks)
            if not requests:
                raise ConfigError(
                    "nothing to grade: no run ranks a passage for the queries of the collected cases "
                    f"({', '.join(sorted({b.query.id for b in banks})[:6])}); check the run files and -k")
        except BaseException:
            grading.close()
            raise
        return grading, requests

    def dry_run(self, banks: Sequence[QueryBank]) -> str:
        """What grading ``banks`` would spend (``--exam-dry-run``), said without grading or sending anything."""
        grading, requests = self._prepared(banks)
        with grading:
            return dry_run_summary(grading.grader, requests, self.cache())

    def grade_shard(self, banks: Sequence[QueryBank], shard: tuple[int, int]) -> tuple[str, bool]:
        """Grade shard ``I/N`` of the pool of ``banks`` into the cache (``--exam-shard``), scoring nothing: what
        it did, and whether every pair of the shard got a grade."""
        options = setup_of(self.config).options
        grading, requests = self._prepared(banks)
        with grading, self._progress(options.grader) as progress:
            self.cache().record_shards(shard[1], [shard[0]])  # a session over the merge names a missing shard
            outcome = run_grading_pass(grading.grader, requests, self.cache(), chunk_size=grading.chunk_size,
                                       strict_fallbacks=options.strict_fallbacks, on_start=progress.start,
                                       on_progress=progress.advance, shard=shard, engine=grading.engine)
        failed = len(outcome.failures)
        summary = (f"exam shard {shard[0]}/{shard[1]}: {outcome.graded} pairs graded, {outcome.cache_hits} found in "
                   f"the cache, {outcome.other_shards} left to the other shards, {failed} pairs without a grade; "
                   "nothing was scored (merge the shards' caches with exam-harness cache merge, then run without "
                   "--exam-shard)")
        return summary, failed == 0

    def grade(self, banks: Sequence[QueryBank]) -> GradedExam:
        """Grade every pool pair of ``banks``; the result is stored for the cases (``GRADED_KEY``)."""
        config = self.config
        options = setup_of(config).options
        grading, requests = self._prepared(banks)
        plan = grading.plan
        with grading, self._progress(options.grader) as progress:
            outcome = run_grading_pass(grading.grader, requests, self.cache(), chunk_size=grading.chunk_size,
                                       strict_fallbacks=options.strict_fallbacks,
                                       on_start=progress.start, on_progress=progress.advance,
                                       engine=grading.engine, grade_missing=grading.grade_missing)
        graded = GradedExam(plan, outcome, tuple(banks))
        config.stash[GRADED_KEY] = graded
        config.hook.pytest_exam_grading_finished(plan=plan, outcome=outcome)
        return graded

    def graded_for(self, bank: QueryBank) -> GradedExam:
        """The grades a case of ``bank`` reads. A single process graded every collected bank before the
        first case; an xdist worker takes the grades of the banks of the cases it is given, one bank at a
        time, from the cache the controller filled (grading only what it finds missing), so a worker's
        time and memory follow its share of the cases."""
        graded = self.graded
        if is_worker(self.config) and (graded is None or bank.key not in self._worker_banks):
            graded = self._grade_on_worker(bank)
        if graded is None:
            raise ConfigError("exam cases ran before the grading pass; is another plugin reordering the session?")
        return graded

    def _grade_on_worker(self, bank: QueryBank) -> GradedExam:
        setup = setup_of(self.config)
        options = setup.options
        data = setup.exam_inputs(self.config).load_runs(list(options.runs))
        if self._worker_grading is None:
            self._worker_grading = open_grading(options, setup.registries(self.config), data)
            meter = self._worker_grading.grader.meter
            if meter is not None and meter.max_cost is not None:  # N workers must not spend N budgets
                meter.closed = ("max_cost bounds the controller's grading pass under pytest-xdist; a worker sends "
                                "nothing")
        grading = self._worker_grading
        plan = grading.plan
        # no engine: a worker grades only what the controller's pass left, in this process
        outcome = run_grading_pass(grading.grader, grading.requests(data, [bank]), self.cache(),
                                   chunk_size=grading.chunk_size, strict_fallbacks=options.strict_fallbacks,
                                   grade_missing=grading.grade_missing)
        before = self.graded
        if before is not None:
            outcome = merged(before.grading, outcome)
        self._worker_banks.add(bank.key)
        graded = GradedExam(plan, outcome, (*(before.banks if before else ()), bank))
        self.config.stash[GRADED_KEY] = graded
        return graded

    def _before_grading(self, banks: Sequence[QueryBank] | None = None) -> None:
        """The features' runs made before grading (a declared live system's answers, hook
        ``pytest_exam_before_grading``), for the queries of each run's collected cases, or every query of
        ``banks`` (the xdist controller, before the workers collect)."""
        asked: dict[str, dict[str, Query]] = {}
        every: dict[str, Query] = {}
        if banks is not None:
            for bank in banks:
                every.setdefault(bank.query.id, bank.query)
        else:
            for case in self.collector.cases:
                asked.setdefault(case.run, {}).setdefault(case.bank.query.id, case.bank.query)

        def queries(run: str) -> list[Query]:
            return list(every.values()) if banks is not None else list(asked.get(run, {}).values())

        self.config.hook.pytest_exam_before_grading(config=self.config, queries=queries)

    def _progress(self, grader: str) -> GradingProgress:
        capman = self.config.pluginmanager.getplugin("capturemanager")
        enabled = not setup_of(self.config).options.no_progress and self.config.get_verbosity() >= 0
        return GradingProgress(f"grading with {grader}", enabled, capman=capman)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Under pytest-xdist the controller grades every requested bank before the workers start.
        if not is_xdist_controller(self.config) or session.config.option.collectonly:
            return
        try:
            if setup_of(self.config).options.cache is None:
                raise ConfigError(
                    "parallel runs (pytest-xdist) share grades through the cache; give --exam-cache a file")
            inputs = setup_of(self.config).exam_inputs(self.config)
            banks = [b for path in self.collector.requested_bank_files() for b in inputs.load_bank_file(path)]
            if banks:
                self._before_grading(banks)  # before the workers start: they read the recordings
                self.grade(banks)
        except InfrastructureError as exc:
            # Before the workers start (they would only ask the dead server again): pytest.exit is the one
            # way to stop xdist's session here, so pytest words it as an "Exit: ERROR: ..." line.
            pytest.exit(f"ERROR: {exc}", returncode=INFRASTRUCTURE_FAILED)
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        # An xdist worker grades lazily, bank by bank, as its cases arrive (graded_for).
        if self.collector.cases and not session.config.option.collectonly:
            try:
                self._before_grading()  # declared systems answer (or are replayed) before grading
                if not is_worker(self.config):
                    if setup_of(self.config).options.dry_run:
                        self._dry_run(session)
                    elif (shard := setup_of(self.config).options.shard) is not None:
                        self.dry_run_summary, complete = self.grade_shard(self.collector.collected_banks(), shard)
                        self.shard_incomplete = not complete
                        self._deselect_all(session)
                    else:
                        self.grade(self.collector.collected_banks())
            except InfrastructureError as exc:
                # Not a usage error: said at the end, with its own exit status (pytest_sessionfinish);
                # no case runs, since none can be decided without its grades.
                self.infrastructure_failure = str(exc)
                session.items.clear()
            except ExamError as exc:
                raise pytest.UsageError(str(exc)) from None
            except Exception as exc:
                inputs = setup_of(self.config).exam_inputs(self.config)
                if not inputs.redacted:
                    raise
                raise pytest.UsageError(withheld(exc, inputs.redact, "grading")) from None
        return (yield)

    def _dry_run(self, session: pytest.Session) -> None:
        """Say what grading would spend, then run no case: they are deselected, so the session ends
        with pytest's own summary and exit status 0 (no ``pytest.exit`` traceback line)."""
        self.dry_run_summary = self.dry_run(self.collector.collected_banks())
        self._deselect_all(session)

    def _deselect_all(self, session: pytest.Session) -> None:
        items = list(session.items)
        session.items.clear()
        self.config.hook.pytest_deselected(items=items)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.infrastructure_failure is not None:
            session.exitstatus = INFRASTRUCTURE_FAILED
        elif self.shard_incomplete:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # pairs of the shard without a grade

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.dry_run_summary is not None:
            terminalreporter.write_line(self.dry_run_summary)
        if self.infrastructure_failure is not None:
            terminalreporter.write_line(f"ERROR: {self.infrastructure_failure}", red=True, bold=True)
            terminalreporter.write_line(
                f"exam-harness: the grading infrastructure failed, not the configuration: exit status "
                f"{INFRASTRUCTURE_FAILED} (retry once it is back; see docs/exit-status.md)", red=True)

    def scored_banks(self, seen_test_points: set[str] | None) -> tuple[QueryBank, ...]:
        """The banks to score: the graded ones, cut to the test points cases ran for on xdist workers."""
        graded = self.graded
        if graded is None:
            return ()
        if seen_test_points is None:
            return graded.banks
        banks = [replace_points(b, seen_test_points) for b in graded.banks]
        return tuple(b for b in banks if b.test_points)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._worker_grading is not None:
            self._worker_grading.close()
        if self._cache is not None:
            self._cache.close()


def merged(first: GradingOutcome, second: GradingOutcome) -> GradingOutcome:
    """Two grading passes over different pairs as one outcome (an xdist worker's banks)."""
    out = GradingOutcome(
        grades={**first.grades, **second.grades}, answers={**first.answers, **second.answers},
        failures={**first.failures, **second.failures}, unsupported={**first.unsupported, **second.unsupported},
        pairs=first.pairs + second.pairs, unique=first.unique + second.unique,
        cache_hits=first.cache_hits + second.cache_hits, graded=first.graded + second.graded,
        seconds=first.seconds + second.seconds, source=second.source,
        cache_damaged=first.cache_damaged + second.cache_damaged,
        cache_notices=list(dict.fromkeys([*first.cache_notices, *second.cache_notices])),
        fallbacks={**first.fallbacks, **second.fallbacks}, cost=merged_cost(first.cost, second.cost),
        repeats=second.repeats, reducer=second.reducer, samples={**first.samples, **second.samples},
        judge_figures=merged_figures(first.judge_figures, second.judge_figures),
    )
    for part, n in second.decided_by.items():
        out.decided_by[part] = first.decided_by.get(part, 0) + n
    for part, n in first.decided_by.items():
        out.decided_by.setdefault(part, n)
    return out


def merged_figures(first: dict[str, float] | None, second: dict[str, float] | None) -> dict[str, float] | None:
    """Two passes' judge figures (seconds and counts) summed."""
    if first is None or second is None:
        return first or second
    return {key: first.get(key, 0.0) + second.get(key, 0.0) for key in {*first, *second}}


def replace_points(bank: QueryBank, keep: set[str]) -> QueryBank:
    return bank.model_copy(update={"test_points": tuple(tp for tp in bank.test_points if tp.id in keep)})



