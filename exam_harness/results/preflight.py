"""Checks of everything that needs only the inputs, run before any grading is spent (pytest and the CLI).

A misspelt baseline or threshold run, a run that shares no query with the banks, a reference report
that cannot be found: each is a usage error now rather than after an hour of grading.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

from exam_harness.config.options import ExamOptions
from exam_harness.core.display import is_hidden_char
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import ExamData, QueryBank
from exam_harness.results.schema import ExamReport


def folded(name: str) -> str:
    """``name`` as a reader sees it: Unicode compatibility form (fullwidth 'Ｑ１' is 'Q1'), case folded,
    invisible characters dropped. Two ids with the same folded form look alike on screen."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", name).casefold() if not is_hidden_char(ch))


def near_match(name: str, known: Sequence[str]) -> str | None:
    """The known id ``name`` was probably meant as, explained: a look-alike (same folded form), else the
    closest spelling; None when nothing is close."""
    alike = [k for k in known if k != name and folded(k) == folded(name)]
    if alike:
        return f"{alike[0]!r} (they differ only in case or Unicode form: {name!a} vs {alike[0]!a})"
    by_fold = {folded(k): k for k in known}
    close = difflib.get_close_matches(folded(name), list(by_fold), n=1, cutoff=0.6)
    return repr(by_fold[close[0]]) if close else None


def check_run_name(name: str, runs: Iterable[str], option: str) -> None:
    known = sorted(runs)
    if name not in known:
        close = near_match(name, known)
        hint = f" Did you mean {close}?" if close else ""
        raise ConfigError(f"{option}: no run named {name!r}.{hint} Runs: {', '.join(known)}")


def check_overlap(banks: Sequence[QueryBank], data: ExamData) -> None:
    """Every run answers some query of the banks; an exam where a run shares none is a usage error
    that shows the ids on both sides and the nearest matches (ids that differ in form, e.g. 19335 vs q19335)."""
    asked = sorted({b.query.id for b in banks})
    strangers = [name for name, run in sorted(data.runs.items()) if not set(run.rankings) & set(asked)]
    if not strangers:
        return
    lines = []
    for name in strangers:
        answered = sorted(data.runs[name].rankings)
        hints = [f"{q!r} ~ {m}" for q in answered if (m := near_match(q, asked))]
        lines.append(f"run {name!r} answers {_listed(answered)}" + (f" (near matches: {', '.join(hints[:3])})"
                                                                   if hints else ""))
    raise ConfigError(
        f"{len(strangers)} of {len(data.runs)} runs share no query with the banks, so their exam would be empty: "
        + "; ".join(lines) + f". The banks ask {_listed(asked)}."
    )


def uncovered_queries(asked: Iterable[str], data: ExamData) -> dict[str, list[tuple[str, str | None]]]:
    """run -> every query it ranks that no bank asks, with the bank query it was probably meant as
    (``near_match``'s explanation) or None; runs without such queries are left out."""
    known = sorted(set(asked))
    found: dict[str, list[tuple[str, str | None]]] = {}
    for name, run in sorted(data.runs.items()):
        extra = sorted(set(run.rankings) - set(known))
        if extra:
            found[name] = [(q, near_match(q, known)) for q in extra]
    return found


def shown_uncovered(queries: Sequence[tuple[str, str | None]], limit: int = 5) -> str:
    """``'sizng' ~ 'sizing', 'extra'``: the ids, each with its near match where there is one."""
    shown = ", ".join(f"{q!r} ~ {m}" if m else repr(q) for q, m in queries[:limit])
    return shown + (f" and {len(queries) - limit} more" if len(queries) > limit else "")


def check_covered(banks: Sequence[QueryBank], data: ExamData) -> None:
    """``--exam-strict-queries``: a query a run ranks that no bank covers is an error naming the run
    file and, for a TREC run, the line of its first passage for that query."""
    from exam_harness.core.errors import InputError
    from exam_harness.io.trec import find_run_line

    uncovered = uncovered_queries((b.query.id for b in banks), data)
    if not uncovered:
        return
    name, queries = next(iter(uncovered.items()))
    qid, match = queries[0]
    run = data.runs[name]
    path = Path(run.source) if run.source else None
    first = run.rankings[qid][0].passage_id if run.rankings[qid] else None
    line = find_run_line(path, name, qid, first) if path is not None and path.is_file() and first else None
    more = sum(len(q) for q in uncovered.values()) - 1
    raise InputError(
        f"run {name!r} ranks query {qid!r}, which no bank covers" + (f" (did you mean {match}?)" if match else "")
        + (f"; {more} more uncovered: {', '.join(f'{r}: {shown_uncovered(q)}' for r, q in uncovered.items())}"
           if more else "") + " (--exam-strict-queries)",
        path=path, line=line, field="query_id", value=qid, expected="a query id of a bank, or no --exam-strict-queries")


def _listed(ids: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(repr(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "") if ids else "no query"


def check_gate_runs(options: ExamOptions, runs: Iterable[str]) -> None:
    names = list(runs)
    if options.baseline is not None:
        check_run_name(options.baseline, names, "--exam-baseline")
    for threshold in options.fail_under:
        if threshold.run is not None:
            check_run_name(threshold.run, names, f"--exam-fail-under {threshold}")


def check_required_runs(banks: Iterable[QueryBank], options: ExamOptions, runs: Iterable[str]) -> None:
    """A run name or pattern of ``--exam-required-runs`` or of a bank's ``required: [...]`` that names no run
    is a usage error: a typo would silently require nothing of the run meant."""
    names = sorted(runs)
    named = (r for bank in banks for tp in bank.test_points for r in tp.required_runs)
    unmatched = options.required_scope.unmatched(named, names)
    if unmatched:
        raise ConfigError(f"required test points name runs that are not examined: {', '.join(map(repr, unmatched))} "
                          f"(--exam-required-runs or a bank's 'required: [...]'); runs: {', '.join(names)}")


def load_reference(options: ExamOptions, base: Path) -> tuple[str, ExamReport] | None:
    """The report ``--exam-compare`` names, read now (a bad reference stops the session before grading).
    A history with nothing kept raises :class:`exam_harness.results.history.NothingKept`: the caller decides
    whether a first run goes on (``--exam-compare-required`` says it does not)."""
    if options.compare is None:
        if options.compare_fail:
            raise ConfigError("--exam-compare-fail needs --exam-compare [REF]: the report to compare with")
        return None
    from exam_harness.results import history

    path = history.resolve(options.history_dir, options.compare, base)
    return path.name, history.load(path)


def check_writable(targets: Sequence[tuple[str, Path | None, bool]]) -> None:
    """Each ``(option, path, is_folder)`` can be written, checked before grading: a folder is created
    when missing and a probe file is made and removed in it; a file's folder is checked the same way.
    A path that is the wrong kind (a file where a folder is wanted, or the other way round) is an error."""
    import tempfile

    from exam_harness.core.paths import shown_path

    for option, path, is_folder in targets:
        if path is None:
            continue
        folder = path if is_folder else path.parent
        shown = shown_path(path)  # options hold absolute paths; the user wrote them relative to here
        if is_folder and path.exists() and not path.is_dir():
            raise ConfigError(f"{option} {shown}: exists and is not a folder")
        if not is_folder and path.is_dir():
            raise ConfigError(f"{option} {shown}: is a folder; give a file name")
        if not is_folder and path.is_char_device():
            continue  # written in place, never replaced (--exam-markdown=/dev/null)
        if not is_folder and path.exists() and not path.is_file():
            # a FIFO would be written only after grading, by then perhaps with nobody reading it
            raise ConfigError(f"{option} {shown}: is not a regular file (a FIFO, socket or device); give a file name")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder, prefix=".exam-harness-probe-"):
                pass
        except OSError as exc:
            raise ConfigError(f"{option} {shown}: cannot write there ({exc.strerror or exc}); nothing was graded "
                              "yet") from None


def check_outputs(options: ExamOptions, rootdir: Path, inputs: Sequence[Path]) -> None:
    """Every output of the session can be written and is the harness's to write, checked before grading:
    the report folder is not the project folder, a version-control folder or a folder of the inputs;
    a summary path is not a folder, socket or block device (a symlink is written at its target)."""
    from exam_harness.io.report_set import check_names, check_owned_folder
    from exam_harness.io.textio import output_target
    from exam_harness.results.json_writer import REPORT_NAME

    if options.report_dir is not None:
        check_owned_folder(options.report_dir, rootdir=rootdir, inputs=inputs, label="--exam-report-dir")
        check_names(options.report_dir, [REPORT_NAME])  # a user's own exam-report.json: refused before grading
    if options.markdown is not None:
        output_target(options.markdown)
    check_writable(output_targets(options))


def output_targets(options: ExamOptions) -> list[tuple[str, Path | None, bool]]:
    """The pytest session's outputs: report folder, summaries and the history folder when reports are kept."""
    keep = options.save is not None or options.autosave
    return [
        ("--exam-report-dir", options.report_dir, True),
        ("--exam-markdown", options.markdown, False),
        ("--exam-html", options.html, True),
        ("--exam-history-dir", options.history_dir if keep else None, True),
    ]
