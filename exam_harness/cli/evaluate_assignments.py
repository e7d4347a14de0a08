"""``exam-harness evaluate --assignments FILE ...``: the TREC RAG track's scores of recorded nugget
assignments (nuggetizer's assign output, assessors' files of its shape), with no grader and no run files."""

from __future__ import annotations

import argparse
import json
import sys

from exam_harness.config.options import ExamOptions
from exam_harness.core.errors import ConfigError


def score_assignments(args: argparse.Namespace, options: ExamOptions) -> int:
    """Print each run's six scores (means over its topics); write --json and --trec-rag-dir files."""
    from exam_harness.core.display import print_notice
    from exam_harness.io.assignments import LABELS, read_assignment_files
    from exam_harness.io.textio import atomic_write_text
    from exam_harness.measures.trec_rag import TRACK_KEYS, per_topic_scores, run_means
    from exam_harness.report.trec_rag import per_run_files, per_topic_table

    if args.runs:
        raise ConfigError("--assignments scores the assignment files alone; leave out the run files "
                          f"({', '.join(map(str, args.runs))}) or --assignments")
    human = None
    if options.human_assignments:
        from exam_harness.analysis.trec_rag_agreement import load_human_assignments

        human = load_human_assignments(options.human_assignments)
    found = read_assignment_files(args.assignments)
    for warning in found.warnings:
        print_notice(f"warning: {warning}")
    per_topic = per_topic_scores(found.importance_labels())
    means = run_means(per_topic)
    width = max(len("run"), *(len(run) for run in means))
    print(f"{'run':<{width}}  topics  " + "  ".join(f"{key:>8}" for key in TRACK_KEYS))
    for run in sorted(means):
        print(f"{run:<{width}}  {len(per_topic[run]):>6}  " + "  ".join(f"{means[run][k]:>8.4f}" for k in TRACK_KEYS))
    doc: dict[str, object] = {"runs": {run: {"topics": len(per_topic[run]), **means[run]} for run in sorted(means)},
                              "per_topic": per_topic}
    if human is not None:
        from exam_harness.analysis.trec_rag_agreement import assignment_agreement

        agreement = assignment_agreement((row for row in found.machine_rows() if row[3] in LABELS), human)
        doc["agreement"] = agreement.model_dump()
        kappa = "n/a" if agreement.kappa is None else f"{agreement.kappa:.4f}"
        print(f"agreement with {options.human_assignments}: {agreement.pairs} pairs, kappa {kappa}, "
              f"{agreement.unmatched} of theirs unmatched")
    written = []
    if args.json:
        atomic_write_text(args.json, json.dumps(doc, indent=1, allow_nan=False) + "\n")
        written.append(args.json)
    if args.trec_rag_dir:
        assigned: dict[str, list[dict[str, object]]] = {run: [{"qid": q, "run_id": run,
            "nuggets": [{"text": t, "importance": i, "assignment": a} for t, i, a in nuggets]}
            for q, nuggets in by_topic.items()] for run, by_topic in found.labels.items()}
        for name, text in {**per_run_files(per_topic, assigned), **per_topic_table(per_topic)}.items():
            atomic_write_text(args.trec_rag_dir / name, text)
            written.append(args.trec_rag_dir / name)
    for path in written:
        print(f"wrote {path}", file=sys.stdout)
    return 0
