"""``exam-harness label``: a team labels (test point, passage) pairs in the terminal, least sure first
(exam_harness/analysis/labels.py); answers are read from standard input, so it can be scripted."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from exam_harness.config.options import GRADING, SCORING, Argument, add_cli_options, integer, options_from_cli
from exam_harness.session.grades import add_input_arguments, obtain_grades

GROUPS = (GRADING, SCORING)
DEFAULTS = {"grader": "embedding"}


# This subcommand's own arguments (the shared ones are in exam_harness/config/options.py).
ARGUMENTS = (
    Argument("out", "The labels file; labels already in it are kept and their pairs not shown again (default: "
             "labels.jsonl).", Path, default=Path("labels.jsonl")),
    Argument("unsure", "Least sure pairs shown first (default: 30).", integer(0), default=30),
    Argument("confident", "Confident pairs sampled after them (default: 10).", integer(0), default=10),
    Argument("seed", "Seed of the confident sample (default: 0).", integer(), default=0),
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "label", help="Label (test point, passage) pairs yourself, least sure first: y/n/s(kip)/u(ndo)/q(uit).",
        description="Shows the pool's (test point, passage) pairs, those the grader is least sure of first, then a "
        "sample of confident ones, and records your y/n answers into a JSONL file (read from standard input when "
        "it is not a terminal). analyze agreement --team-labels FILE measures a grader against them.")
    add_input_arguments(parser)
    add_cli_options(parser, GROUPS, defaults=DEFAULTS)
    for argument in ARGUMENTS:
        argument.add_to(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exam_harness.analysis.labels import Label, label_loop, order_pairs, read_labels, write_labels

    options = options_from_cli(args, GROUPS, defaults=DEFAULTS)
    from exam_harness.extensions import cli_registries

    graded = obtain_grades(args, options, registries=cli_registries())
    outcome, view = graded.outcome, graded.view
    min_grade = graded.plan.min_grade
    cuts = graded.spec.options.get("cut_points")
    cut = float(cuts[min_grade - 1]) if isinstance(cuts, list) and len(cuts) >= min_grade >= 1 else None
    earlier = read_labels(args.out) if args.out.exists() else {}
    todo = {p: g for p, g in outcome.grades.items() if p not in earlier}
    pairs = order_pairs(todo, outcome.answers, min_grade, cut, args.unsure, args.confident, args.seed)
    query_of = view.query_of()
    passages = graded.inputs.data.passages

    def show(pair: tuple[str, str], index: int, total: int) -> None:
        passage_id, tp_id = pair
        text = " ".join(passages[passage_id].text.split()) if passage_id in passages else "(no text)"
        print(f"\n[{index}/{total}] test point {tp_id}: {view.text_of(tp_id)}\npassage {passage_id}: {text[:800]}\n"
              f"grader: {outcome.grades[pair]} ({(outcome.answers.get(pair) or '')[:160]})\n"
              "answers it? [y/n/s/u/q] ", end="", flush=True)

    def read() -> str | None:
        line = sys.stdin.readline()
        return line if line else None

    labels = label_loop(pairs, query_of, show, read, lambda text: print(text, flush=True))
    kept = [Label(query_of.get(tp_id, ""), tp_id, passage_id, value) for (passage_id, tp_id), value in earlier.items()]
    write_labels(args.out, [*kept, *labels])
    print(f"\nwrote {args.out}: {len(labels)} new labels, {len(kept) + len(labels)} in all")
    return 0
