"""Collection: a bank file is a test module, a query a class, (test point, run) a case.

Node ids read like ``banks/example.yaml::q1::q1/3f2a...[bm25]``. A file under a bank folder (or
named on the command line) is a bank when a registered bank format claims it, so a plugin's format
is asked before any file is dismissed. Cases grade nothing: the grading plugin grades every pair
before the first case runs, and a case reads its verdict from the graded exam.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.case_verdicts import Verdict, describe, verdict
from exam_harness.core.errors import ExamError, InputError
from exam_harness.core.models import QueryBank, TestPoint, readable_id
from exam_harness.io.formats import claiming
from exam_harness.io.textio import is_hidden
from exam_harness.pytest_plugins.items import ExamItem, ExamMissed, ExamRequiredMissed, case_error, withheld
from exam_harness.pytest_plugins.query_cases import QueryCase
from exam_harness.pytest_plugins.state import GradedExam, setup_of


def bank_paths(config: pytest.Config) -> list[Path]:
    """The configured bank folders and files (ini ``exam_banks``), else ``banks/`` when it exists.

    A configured path that does not exist is a usage error naming it (a typo would otherwise collect
    nothing and end in a bare "no tests ran")."""
    configured = [Path(p) for p in config.getini("exam_banks")]
    missing = [p for p in configured if not p.exists()]
    if missing and not (config.option.help or config.option.version):
        root = Path(config.rootpath)
        shown = ", ".join(_shown(p, root) for p in missing)
        near = [d.name for d in sorted(root.iterdir()) if d.is_dir() and not d.name.startswith(".")] \
            if root.is_dir() else []
        import difflib

        close = difflib.get_close_matches(missing[0].name, near, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        base = f"the folder of {config.inipath.name}" if config.inipath else str(root)
        raise pytest.UsageError(f"exam_banks: {shown} does not exist (paths are relative to {base}).{hint}")
    if configured:
        return configured
    default = Path(config.rootpath) / "banks"
    return [default] if default.is_dir() else []


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


class BankFile(pytest.File):
    def banks(self) -> list[QueryBank]:
        """The file's banks, less the topics that files a feature supplied bring banks of (TREC RAG's
        --exam-assignments: the nuggets the files assigned; :class:`SuppliedBanks`), said once per file."""
        inputs = setup_of(self.config).exam_inputs(self.config)
        banks = inputs.load_bank_file(self.path)
        covered = {bank.query.id for bank in inputs.supplied_banks()}
        left_out = [bank.query.id for bank in banks if bank.query.id in covered]
        if left_out:
            from exam_harness.core.display import collecting_notices, print_notice
            from exam_harness.core.paths import shown_path

            shown = ", ".join(dict.fromkeys(left_out[:10])) + (" ..." if len(left_out) > 10 else "")
            with collecting_notices(inputs.notices):
                print_notice(f"{shown_path(self.path)}: {len(set(left_out))} topic(s) ({shown}) are scored on "
                             f"{inputs.supplied_what()}, not on this file's")
        return [bank for bank in banks if bank.query.id not in covered]

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        setup = setup_of(self.config)
        inputs = setup.exam_inputs(self.config)
        try:
            banks = self.banks()
            runs = inputs.run_names(list(setup.options.runs))
        except ExamError as exc:
            # Collected into one usage error after collection: no traceback, exit code 4.
            if isinstance(exc, InputError):
                exc = exc.relative_to(self.config.invocation_params.dir)
            setup.input_errors.append(str(exc))
            return
        except Exception as exc:
            if not inputs.redacted:
                raise  # a bug: the traceback helps, and no bank is secret
            setup.input_errors.append(withheld(exc, inputs.redact, f"collecting {self.path.name}"))
            return
        if setup.options.cases == "query":
            for bank in banks:
                for run in runs:
                    name = f"{bank.key}[{run}]"
                    yield QueryCase.from_parent(self, name=name, nodeid=f"{self.nodeid}::{name}", bank=bank, run=run)
            return
        for bank in banks:
            yield QueryNode.from_parent(self, name=bank.key, bank=bank, runs=runs,
                                        secret=bank.secret or inputs.redact_all)


class SuppliedBanks(BankFile):
    """The banks every file a feature supplied brings (TREC RAG's --exam-assignments: the nuggets they assigned,
    one bank per topic), collected under the first file (the others add no collector): the session scores what
    ``evaluate`` given the same files scores."""

    def banks(self) -> list[QueryBank]:
        return setup_of(self.config).exam_inputs(self.config).supplied_banks()


class QueryNode(pytest.Collector):
    def __init__(self, *, bank: QueryBank, runs: list[str], secret: bool, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.bank = bank
        self.runs = runs
        self.secret = secret

    def collect(self) -> Iterator[pytest.Item]:
        for test_point in self.bank.test_points:
            for run in self.runs:
                name = f"{point_label(test_point, self.secret)}[{run}]"
                # The id given as a string is parsed the way pytest parses ids it reads back (--lf, -k
                # node ids): the run is the parameter, as for a parametrized test.
                yield ExamCase.from_parent(self, name=name, nodeid=f"{self.nodeid}::{name}", bank=self.bank,
                                           test_point=test_point, run=run)


def point_label(test_point: TestPoint, secret: bool) -> str:
    """How a test point reads in node ids: :func:`exam_harness.core.models.readable_id`, the id every output
    uses. Secret banks show generated ids only."""
    return readable_id(test_point.id, test_point.query_id, None if secret else test_point.text, test_point.facet_id)


class ExamCase(ExamItem):
    """One test point put to one run."""

    def __init__(self, *, bank: QueryBank, test_point: TestPoint, run: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.bank = bank
        self.test_point = test_point
        self.run = run
        setup = setup_of(self.config)
        self.user_properties.append(setup.user_property("exam_run", run))
        self.user_properties.append(setup.user_property("exam_test_point", test_point.id))
        if setup.options.required_scope.applies(test_point, run):
            self.add_marker("exam_required")
        self._verdict: Verdict | None = None

    def _graded(self) -> GradedExam:
        grading: Any = self.config.pluginmanager.get_plugin("exam-grading")
        graded: GradedExam = grading.graded_for(self.bank)
        return graded

    def verdict(self) -> Verdict:
        if self._verdict is None:
            graded = self._graded()
            inputs = setup_of(self.config).exam_inputs(self.config)
            top = graded.top_k(inputs, self.run, self.bank.query.id)
            outcome = graded.grading
            self._verdict = verdict(self.test_point, top, outcome.grades, outcome.failures, outcome.unsupported,
                                    min_grade=graded.plan.min_grade, k=graded.plan.k,
                                    required=graded.plan.required.applies(self.test_point, self.run))
        return self._verdict

    def message(self, result: Verdict) -> str:
        """The verdict in words; a secret bank's text and the answers graded on it stay out."""
        inputs = setup_of(self.config).exam_inputs(self.config)
        secret = self.bank.secret or inputs.redact_all
        reason = passage = None
        if result.best_passage is not None and not secret:
            from exam_harness.graders.answer_key import naming_the_gold  # rapidfuzz: only for a message

            best = inputs.data.passages.get(result.best_passage)
            passage = best.text if best is not None else None
            reason = naming_the_gold(self._graded().grading.answers.get((result.best_passage, self.test_point.id)),
                                     self.test_point.gold_answers, passage)
        text = None if secret else self.test_point.text
        held = self.judge_samples()
        flaky = f"; flaky: answered in {held[0]} of {held[1]} judge samples" if held and 0 < held[0] < held[1] else ""
        return inputs.redact(describe(result, text=text, reason=reason, passage=passage) + flaky)

    def judge_samples(self) -> tuple[int, int] | None:
        """(samples that answer this case, K) for a judge asked K times per pair (grader option repeats)."""
        graded = self._graded()
        grading = graded.grading
        if grading.repeats <= 1:
            return None
        from exam_harness.graders.repeats import case_samples

        top = graded.top_k(setup_of(self.config).exam_inputs(self.config), self.run, self.bank.query.id)
        _, answered = case_samples(self.test_point.id, top, grading.samples, grading.repeats, graded.plan.min_grade)
        return sum(answered), grading.repeats

    def setup(self) -> None:
        case_error(self)
        result = self.verdict()
        if result.outcome == "skipped":
            pytest.skip(self.message(result))
        if result.outcome == "error":
            # No traceback: formatting one per case would cost minutes when a server is down.
            pytest.fail(self.message(result), pytrace=False)

    def teardown(self) -> None:
        self._verdict = None  # its outcome is in user_properties; items live to the session's end

    def runtest(self) -> None:
        result = self.verdict()
        prop = setup_of(self.config).user_property
        self.user_properties += (prop("exam_best_grade", result.best_grade), prop("exam_passage", result.best_passage),
                                 prop("exam_min_grade", result.min_grade), prop("exam_outcome", result.outcome))
        held = self.judge_samples()
        if held is not None:  # a judge asked K times: in how many samples the case is answered, and if it flips
            self.user_properties += (prop("exam_judge_samples", f"{held[0]}/{held[1]}"),
                                     prop("exam_flaky", 0 < held[0] < held[1]))
        if result.outcome == "missed":
            raise ExamMissed(self.message(result))
        if result.outcome == "required-missed":
            raise ExamRequiredMissed(self.message(result))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: object = None) -> str:
        if isinstance(excinfo.value, (ExamMissed, ExamRequiredMissed)):
            return str(excinfo.value)
        inputs = setup_of(self.config).exam_inputs(self.config)
        if self.bank.secret or inputs.redact_all:
            # a traceback (with -l, its locals) would show the secret test point
            return withheld(excinfo.value, inputs.redact, f"case {self.test_point.id} [{self.run}]")
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return str(self.path), None, f"{self.test_point.kind} {self.test_point.id} [{self.run}]"


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _absolute(path: Path) -> Path:
    """The path found, made absolute without following symlinks."""
    return Path(os.path.normpath(Path(path).absolute()))


class ExamCollector:
    """Finds bank files, turns input errors into one usage error, and keeps the collected cases."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.cases: list[ExamItem] = []  # ExamCase, or QueryCase with --exam-cases query
        self._files: set[Path] = set()  # resolved paths of the bank files collected
        self._contents: dict[tuple[int, str], Path] = {}  # (size, digest) -> the bank file first holding it

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        # pytest's own walk passes over a dangling symlink without a word; a bank that drops out of the
        # exam that way would let it pass without its questions, so the bank folders are checked first.
        from exam_harness.io.banks import walk_bank_folder

        setup = setup_of(self.config)
        try:
            formats = setup.exam_inputs(self.config).bank_formats  # reads --exam-trec-rag-topics
            for root in setup.bank_roots:
                if root.is_dir():
                    walk_bank_folder(root, formats)
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None
        supplied = setup.exam_inputs(self.config).supplied_files
        if supplied:
            try:
                setup.exam_inputs(self.config).supplied_banks()  # each file checked: a bad one stops here
            except InputError as exc:
                raise pytest.UsageError(str(exc.relative_to(self.config.invocation_params.dir))) from None
        if supplied and not any(_absolute(Path(self.config.invocation_params.dir, a.split("::")[0])) ==
                                _absolute(supplied[0]) for a in session.config.args):
            session.config.args.append(str(_absolute(supplied[0])))  # collected as SuppliedBanks

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """A folder under a bank folder that is a symlink back up its own path is a loop: walked once."""
        if not collection_path.is_dir() or not collection_path.is_symlink():
            return None
        roots = [_absolute(p) for p in setup_of(config).bank_roots]
        path = _absolute(collection_path)
        if not _under(path, roots):
            return None
        real = path.resolve()
        return True if any(real == parent.resolve() for parent in path.parents) else None

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        config = self.config
        setup = setup_of(config)
        found = _absolute(file_path)
        resolved = found.resolve()
        supplied = [Path(p).resolve() for p in setup.exam_inputs(config).supplied_files]
        if resolved in supplied:  # read as the banks of the files a feature supplied, whichever folder holds it
            if resolved != supplied[0] or resolved in self._files:
                return None
            self._files.add(resolved)
            return SuppliedBanks.from_parent(parent, path=file_path)
        named = [Path(config.invocation_params.dir, a.split("::")[0]).resolve() for a in config.args]
        # A bank file is collected when the path found lies in a configured bank folder (a symlink there
        # may point anywhere) or the file is named on the command line.
        if not (_under(found, [_absolute(p) for p in setup.bank_roots]) or resolved in named):
            return None
        if is_hidden(file_path) or claiming(setup.exam_inputs(config).bank_formats, file_path) is None:
            return None
        if resolved in self._files:
            return None  # the same file reached by a second path (a symlink): one bank file, collected once
        self._files.add(resolved)
        first = self._copy_of(resolved)
        if first is not None:  # a second copy (exam.yml beside exam.yaml) would run every case twice
            from exam_harness.core.paths import shown_path

            setup.input_errors.append(
                f"{shown_path(file_path)}: a copy of the bank {shown_path(first)} (the same bytes); every one of its "
                "cases would run twice: remove one of the two files")
            return None
        return BankFile.from_parent(parent, path=file_path)

    def _copy_of(self, path: Path) -> Path | None:
        """The bank file collected earlier with the same content as ``path`` (None: none, or unreadable: the
        bank's own reader says why)."""
        import hashlib
        import stat

        try:
            status = path.stat()
            if not stat.S_ISREG(status.st_mode) or status.st_size > 64 * 1024 * 1024:
                return None  # a FIFO is never read here, a huge bank not hashed: their reader checks them
            key = (status.st_size, hashlib.sha256(path.read_bytes()).hexdigest())
        except OSError:
            return None
        first = self._contents.get(key)
        if first is None:
            self._contents[key] = path
        return first

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.cases = [item for item in items if isinstance(item, ExamItem)]

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        gone = {id(item) for item in items}
        self.cases = [case for case in self.cases if id(case) not in gone]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        errors = setup_of(self.config).input_errors
        if errors:
            raise pytest.UsageError("\n".join(errors))

    def collected_banks(self) -> list[QueryBank]:
        """Banks of the collected (and not deselected) cases, each query's test points in bank order.

        A query whose test points are spread over several bank files is one bank here: its test points
        are gathered from each file in collection order (the first file's query text and secrecy lead,
        and a test point shared by two files counts once).
        """
        points: dict[str, dict[str, TestPoint]] = {}
        banks: dict[str, QueryBank] = {}
        secret: dict[str, bool] = {}
        for case in self.cases:
            bank = case.bank
            key = bank.key
            banks.setdefault(key, bank)
            secret[key] = secret.get(key, False) or bank.secret
            own = points.setdefault(key, {})
            for tp in (case.test_point,) if isinstance(case, ExamCase) else bank.test_points:
                own.setdefault(tp.id, tp)
        return [bank.model_copy(update={"test_points": tuple(points[key].values()), "secret": secret[key]})
                for key, bank in banks.items()]

    def requested_bank_files(self) -> list[Path]:
        """Bank files the command line asks for, found the way the collector finds them (for the xdist
        controller, which grades before the workers collect)."""
        setup = setup_of(self.config)
        formats = setup.exam_inputs(self.config).bank_formats
        from exam_harness.io.banks import walk_bank_folder

        roots = [_absolute(p) for p in setup.bank_roots]
        found: dict[Path, None] = {}
        for arg in self.config.args:
            path = _absolute(Path(self.config.invocation_params.dir, arg.split("::")[0]))
            if path.is_file() and claiming(formats, path) is not None:
                found[path.resolve()] = None
            elif path.is_dir():
                for file in walk_bank_folder(path, formats):
                    if _under(_absolute(file), roots):
                        found[file.resolve()] = None
        return list(found)
