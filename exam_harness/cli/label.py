"""``exam-harness label``: a team labels (test point, passage) pairs in the terminal, least sure first
(exam_harness/analysis/labels.py); on a terminal in a screen (exam_harness/features/view/labelling.py, blind:
no grade shown), else answers read from standard input line by line, so it can be scripted; both write the
same labels file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from exam_harness.cli.grades import add_input_arguments, obtain_grades
from exam_harness.errors import ConfigError
from exam_harness.options import GRADING, SCORING, Argument, add_cli_options, choice, integer, options_from_cli

GROUPS = (GRADING, SCORING)
DEFAULTS = {"grader": "embedding"}


# This subcommand's own arguments (the shared ones are in exam_harness/options.py).
ARGUMENTS = (
    Argument("out", "The labels file; labels already in it are kept and their pairs not shown again (default: "
             "labels.jsonl).", Path, default=Path("labels.jsonl")),
    Argument("unsure", "Least sure pairs shown first (default: 30).", integer(0), default=30),
    Argument("confident", "Confident pairs sampled after them (default: 10).", integer(0), default=10),
    Argument("seed", "Seed of the confident sample (default: 0).", integer(), default=0),
    Argument("screen", "The labelling screen (the [view] extra): on, off (the line prompt), or auto: on when standard "
             "input and output are a terminal and Textual is installed (default: auto).", choice("auto", "on", "off"),
             default="auto"),
    Argument("show-grade", "Show the judge's grade and reason on the screen (default: blind, hidden).", None),
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
    graded = obtain_grades(args, options)
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

    kept = [Label(query_of.get(tp_id, ""), tp_id, passage_id, value) for (passage_id, tp_id), value in earlier.items()]
    if _on_screen(args.screen):
        from exam_harness.features.view.labelling import LabelApp, LabelPair, Step

        def labels_of(steps: list[Step]) -> list[Label]:
            # the file holds yes and no; an unsure answer, like a skip, leaves the pair unlabelled
            return [Label(s.pair.query_id, s.pair.test_point_id, s.pair.passage_id, s.answer == "answers")
                    for s in steps if s.answer in ("answers", "does-not-answer")]

        shown = [LabelPair(query_of[tp_id], tp_id, view.text_of(tp_id), passage_id,
                           " ".join(passages[passage_id].text.split()) if passage_id in passages else "(no text)",
                           outcome.grades[(passage_id, tp_id)], outcome.answers.get((passage_id, tp_id)))
                 for passage_id, tp_id in pairs]
        steps = LabelApp(shown, lambda steps: write_labels(args.out, [*kept, *labels_of(list(steps))]),
                         blind=not args.show_grade, earlier=len(kept)).run() or []
        labels = labels_of(steps)
    else:
        labels = label_loop(pairs, query_of, show, read, lambda text: print(text, flush=True))
    write_labels(args.out, [*kept, *labels])
    print(f"\nwrote {args.out}: {len(labels)} new labels, {len(kept) + len(labels)} in all")
    return 0


def _on_screen(asked: str) -> bool:
    """Whether to label on the screen: ``on``; ``auto`` on a terminal with Textual installed; never ``off``."""
    if asked == "off" or (asked == "auto" and not (sys.stdin.isatty() and sys.stdout.isatty())):
        return False
    import importlib.util

    if importlib.util.find_spec("textual") is not None:
        return True
    if asked == "on":
        raise ConfigError("the labelling screen needs Textual: pip install 'exam-harness[view]' (or --screen off)")
    print("exam-harness label: the line prompt (the labelling screen needs Textual: pip install "
          "'exam-harness[view]')", file=sys.stderr)
    return False
