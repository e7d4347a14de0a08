"""``exam-harness autojudge`` (``python -m exam_harness.features.autojudge``): the inputs ``auto-judge run`` reads,
from an exam's files.

- ``reports RUN_PATH... --out DIR``: each run's answers (TREC RAG answer files, ``*.responses.jsonl``) as
  autojudge-base Reports, one ``<run>.jsonl`` per run (``--rag-responses DIR``);
- ``topics BANK... --out FILE``: the banks' queries as the topics file (``--rag-topics FILE``);
- ``nuggets BANK... --out FILE [--kind KIND]``: the banks as nugget banks of one of autojudge-base's kinds
  (``nugget-banks``, ``nuggetizer``, ``ragtime26``) for ``--nugget-banks FILE``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from exam_harness.core.errors import ConfigError

KIND_NAMES = ("nugget-banks", "nuggetizer", "ragtime26")  # convert.KINDS' keys, named without importing autojudge-base
DESCRIPTION = __doc__.splitlines()[0] if __doc__ else ""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", choices=("reports", "topics", "nuggets"))
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--bank", nargs="+", type=Path, default=[], help="reports: the banks naming the query texts")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kind", choices=KIND_NAMES, default="nugget-banks",
                        help="nuggets: the kind of nugget banks written (default: nugget-banks, AutoArgue's v3)")


def write_files(args: argparse.Namespace) -> None:
    """Write what ``args`` asks for; an ``ExamError`` or ``ValueError`` (a bank the kind asked for cannot hold)
    says what is wrong."""
    try:
        from exam_harness.features.autojudge.convert import KINDS, answers_to_reports, responses_to_answers
    except ImportError as exc:
        raise ConfigError(f"exam-harness autojudge needs the [autojudge] extra (pip install "
                          f"'exam-harness[autojudge]'): {exc}") from None
    from autojudge_base.nugget_data import write_nugget_banks_generic

    from exam_harness.core.host import command_line_hook
    from exam_harness.exam.inputs import ExamInputs
    from exam_harness.features.trec_rag.answers import rag_answer_files
    from exam_harness.io.textio import atomic_write_text
    from exam_harness.session.registries import Registries

    registries = Registries.from_hook(command_line_hook())
    inputs = ExamInputs(registries.bank_formats, registries.run_formats)
    if args.what == "reports":
        inputs.load_runs(args.paths)
        queries = {b.query.id: b.query.text for p in args.bank for b in inputs.load_bank_file(p)}
        answers = [a for by_query in inputs.answers.values() for a in by_query.values()]
        # a TREC RAG answer file's answers are among the responses too: each answer is written once
        plain = {run: {q: text for q, text in by_query.items() if q not in inputs.answers.get(run, {})}
                 for run, by_query in inputs.responses.items()}
        answers += responses_to_answers(plain, queries)
        args.out.mkdir(parents=True, exist_ok=True)
        answers_to_reports(answers)  # each must be a Report autojudge-base reads
        for name, text in sorted(rag_answer_files(answers, "2025").items()):  # the track's 2025 lines
            atomic_write_text(args.out / name, text)
    elif args.what == "topics":
        queries = {b.query.id: b.query.text for p in args.paths for b in inputs.load_bank_file(p)}
        atomic_write_text(args.out, "".join(json.dumps({"request_id": q, "title": t}) + "\n"
                                            for q, t in queries.items()))
    else:
        banks = [b for p in args.paths for b in inputs.load_bank_file(p)]
        # autojudge-base's JSONL, one bank a line, of the kind asked for
        write_nugget_banks_generic(KINDS[args.kind](banks), args.out)


class FilesCommand:
    """``exam-harness autojudge``: :func:`write_files` as a subcommand (registered by plugin.py)."""

    help = "Write the files auto-judge run reads (reports, topics, nugget banks) from an exam's runs and banks."
    description = DESCRIPTION

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        try:
            write_files(args)
        except ValueError as exc:  # a bank the kind asked for cannot hold
            raise ConfigError(str(exc)) from None
        return 0


COMMAND = FilesCommand()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m exam_harness.features.autojudge``: the same as ``exam-harness autojudge``."""
    from exam_harness.core.errors import ExamError

    parser = argparse.ArgumentParser(prog="python -m exam_harness.features.autojudge", description=DESCRIPTION)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        write_files(args)
    except (ExamError, ValueError) as exc:  # a ValueError: a bank the kind asked for cannot hold
        print(f"python -m exam_harness.features.autojudge: error: {exc}", file=sys.stderr)
        return 4
    return 0
