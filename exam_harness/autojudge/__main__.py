"""``python -m exam_harness.autojudge``: the inputs ``auto-judge run`` reads, from an exam's files.

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


def main(argv: Sequence[str] | None = None) -> int:
    from autojudge_base.nugget_data import write_nugget_banks_generic

    from exam_harness.autojudge.convert import KINDS, answers_to_reports, responses_to_answers
    from exam_harness.core.errors import ExamError
    from exam_harness.exam.inputs import ExamInputs
    from exam_harness.extensions import cli_registries
    from exam_harness.features.trec_rag.answers import rag_answer_files
    from exam_harness.io.textio import atomic_write_text

    parser = argparse.ArgumentParser(prog="python -m exam_harness.autojudge", description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("reports", "topics", "nuggets"))
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--bank", nargs="+", type=Path, default=[], help="reports: the banks naming the query texts")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kind", choices=tuple(KINDS), default="nugget-banks",
                        help="nuggets: the kind of nugget banks written (default: nugget-banks, AutoArgue's v3)")
    args = parser.parse_args(argv)
    registries = cli_registries()
    inputs = ExamInputs(registries.bank_formats, registries.run_formats)
    try:
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
    except (ExamError, ValueError) as exc:  # a ValueError: a bank the kind asked for cannot hold
        print(f"python -m exam_harness.autojudge: error: {exc}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
