"""``exam-harness label``: a team labels a seeded, stratified sample of the pool's (test point, passage or
answer) pairs in the terminal, blind by default (docs/calibration.md). The sample and the label file are
exam_harness/analysis/ (label_sample.py, label_file.py); this module asks the pairs: on a terminal on a screen a
feature registers (hook ``pytest_exam_register_label_screens``, analysis/label_screens.py: the in-tree ``view``
feature's), else with answers read from standard input line by line, so it can be scripted. Both write the same
label file: the screen's writer calls ``finish`` and ``write_label_file`` after every key, as the line prompt does
once at the end; a screen only shows the pairs and takes the answers.

``--unsure``/``--confident`` keep issue 30's order (least sure first, then a few confident pairs): those labels
are no sample and weigh 1 each.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.config.options import GRADING, SCORING, Argument, add_cli_options, choice, integer, options_from_cli
from exam_harness.core.errors import ConfigError
from exam_harness.session.grades import add_input_arguments, obtain_grades

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from exam_harness.analysis.label_file import Pair
    from exam_harness.analysis.label_screens import LabelPair, LabelScreen
    from exam_harness.config.options import ExamOptions
    from exam_harness.core.registry import Registry
    from exam_harness.session.grades import Graded

GROUPS = (GRADING, SCORING)
DEFAULTS = {"grader": "embedding"}


# This subcommand's own arguments (the shared ones are in exam_harness/config/options.py).
ARGUMENTS = (
    Argument("out", "The labels file; labels already in it are kept and their pairs not asked again (default: "
             "labels.jsonl).", Path, default=Path("labels.jsonl")),
    Argument("size", "Units the sample holds when the session stops (default: 200); q stops sooner, and a later "
             "session with the same seed goes on where it stopped.", integer(1), default=200, metavar="N"),
    Argument("unit", "What one draw labels: 'pair' (a test point and one passage or answer; the default) or "
             "'test-point' (every pair of a test point's pool, so each run's answered indicator on it is known: what "
             "corrected scores need where runs rank several passages per test point).",
             choice("pair", "test-point"), default="pair"),
    Argument("seed", "Seed of the sample (default: 0).", integer(), default=0),
    Argument("show-judge", "Show the judge's grade and reason beside each pair, on the screen and the line prompt "
             "(default: hidden, blind).", None),
    Argument("screen", "The labelling screen (the [view] extra): on, off (the line prompt), or auto: on when standard "
             "input and output are a terminal and Textual is installed (default: auto).", choice("auto", "on", "off"),
             default="auto"),
    Argument("unsure", "Instead of a sample, issue 30's order: this many least sure pairs first (their labels are "
             "no sample and weigh 1 each).", integer(0), default=None),
    Argument("confident", "With --unsure: confident pairs sampled after them (default: 10).", integer(0),
             default=None),
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "label", help="Label a stratified sample of (test point, passage) pairs yourself, blind: "
        "y/n/s(kip)/u(ndo)/q(uit).",
        description="Draws a seeded sample of the pool's (test point, passage or answer) pairs, stratified by the "
        "grader's grade and by whether the judges the cache holds disagree, asks y/n for each (on a screen in a "
        "terminal with the [view] extra; read from standard input otherwise) and records the answers with each "
        "unit's inclusion probability into a JSONL file. analyze agreement --team-labels FILE, evaluate "
        "--team-labels FILE and pytest --exam-team-labels FILE calibrate the judges and correct the scores with "
        "them (docs/calibration.md).")
    add_input_arguments(parser)
    add_cli_options(parser, GROUPS, defaults=DEFAULTS)
    for argument in ARGUMENTS:
        argument.add_to(parser)
    parser.set_defaults(func=run)


def _read() -> str | None:
    line = sys.stdin.readline()
    return line if line else None


def _say(text: str) -> None:
    print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    from exam_harness.extensions import cli_registries

    options = options_from_cli(args, GROUPS, defaults=DEFAULTS)
    registries = cli_registries()
    screen = _screen(args.screen, registries.label_screens)  # before any grading: --screen on may be refused
    graded = obtain_grades(args, options, registries=registries)
    if args.unsure is not None or args.confident is not None:
        return _near_the_cut(args, graded, screen)
    return _sample(args, graded, options, screen)


def _ask(asked: Sequence[Pair], graded: Graded, screen: LabelScreen | None, show: Callable[[Pair, int, int], None],
         save: Callable[[Mapping[Pair, bool]], None], *, origin: Mapping[str, str], unit: str, blind: bool,
         earlier: int) -> dict[Pair, bool]:
    """The labels given to ``asked`` (pair -> label, in the order given), on ``screen`` or the line prompt, each
    saved by ``save``: after every key on a screen (a killed session keeps them), once at the end either way."""
    from exam_harness.analysis.label_screens import answers_given
    from exam_harness.analysis.labels import label_loop

    query_of = graded.view.query_of()
    if screen is None or not asked:
        given = {(lab.passage_id, lab.test_point_id): lab.label
                 for lab in label_loop(asked, query_of, show, _read, _say)}
    else:
        shown = _label_pairs(asked, graded, origin, unit)
        steps = screen.label(shown, lambda steps: save(answers_given(steps)), blind=blind, earlier=earlier)
        given = answers_given(steps)
    save(given)
    return given


def _label_pairs(asked: Sequence[Pair], graded: Graded, origin: Mapping[str, str], unit: str) -> list[LabelPair]:
    """The pairs as a screen shows them: the test point, the passage or run's answer (``origin``), the judge's
    grade and reason (a blind screen hides them) and, for units of a test point, the pair's place among the
    test point's pairs asked (its unit counts once they are all labelled)."""
    from exam_harness.analysis.label_screens import LabelPair

    outcome, view, passages = graded.outcome, graded.view, graded.inputs.data.passages
    query_of = view.query_of()
    per_point: dict[str, int] = {}
    for _, tp_id in asked:
        per_point[tp_id] = per_point.get(tp_id, 0) + 1
    place: dict[str, int] = {}
    shown = []
    for pair in asked:
        passage_id, tp_id = pair
        place[tp_id] = place.get(tp_id, 0) + 1
        text = " ".join(passages[passage_id].text.split()) if passage_id in passages else "(no text)"
        shown.append(LabelPair(query_of[tp_id], tp_id, view.text_of(tp_id), passage_id, text,
                               outcome.grades.get(pair), outcome.answers.get(pair), origin=origin.get(passage_id),
                               of_unit=(place[tp_id], per_point[tp_id]) if unit == "test-point" else None))
    return shown


def _origins(graded: Graded, answers: set[str]) -> dict[str, str]:
    """answer passage id -> "answer of run r" (the runs of generated answers that gave it)."""
    runs_of: dict[str, set[str]] = {}
    for run in graded.inputs.data.runs.values():
        if run.generated:
            for ranked in run.rankings.values():
                for entry in ranked:
                    if entry.passage_id in answers:
                        runs_of.setdefault(entry.passage_id, set()).add(run.name)
    return {pid: f"answer of run {', '.join(sorted(names))}" for pid, names in runs_of.items()}


def _sample(args: argparse.Namespace, graded: Graded, options: ExamOptions, screen: LabelScreen | None) -> int:
    from exam_harness.analysis.label_file import TeamLabel, labels_of, read_label_file, write_label_file
    from exam_harness.analysis.label_graders import labelled_requests
    from exam_harness.analysis.label_judges import cached_judges, session_judge
    from exam_harness.analysis.label_sample import answer_passages, draw, finish
    from exam_harness.graders.base import GraderConfig

    outcome, view = graded.outcome, graded.view
    earlier = read_label_file(args.out) if args.out.exists() else []
    query_of = view.query_of()
    pairs = [p for p in (*outcome.grades, *outcome.failures) if p[1] in query_of]
    first = session_judge(graded.spec, outcome.grades, graded.plan.min_grade)
    banks = [bank for file_banks in graded.inputs.banks.values() for bank in file_banks]
    judges = cached_judges(options.cache if outcome.source != "recorded" else None, graded.registries.graders,
                           labelled_requests(pairs, banks, graded.inputs.data), first=first, session=graded.spec,
                           config=GraderConfig(model=options.model, options=options.grader_options),
                           data=graded.inputs.data)
    found = draw(pairs, args.unit, args.seed, first, judges.others, earlier, args.size)
    answers = answer_passages(graded.inputs.data.runs.values())
    origin = _origins(graded, answers)
    passages = graded.inputs.data.passages
    judged_by = [judge.name for judge in judges.all]
    print(f"sample {found.sample}: {len(found.drawn)} {args.unit}s drawn ({len(found.adopted)} labelled already), "
          f"{len(found.asked)} pairs to ask; strata by {judges.first.name}'s grade"
          + (f" and whether {' and '.join(judged_by)} disagree" if len(judged_by) > 1 else "")
          + ("" if args.show_judge else "; blind (--show-judge shows the judge's grade)"), flush=True)

    def show(pair: Pair, index: int, total: int) -> None:
        passage_id, tp_id = pair
        text = " ".join(passages[passage_id].text.split()) if passage_id in passages else "(no text)"
        head = origin.get(passage_id, f"passage {passage_id}")
        judge = ""
        if args.show_judge:
            grade = outcome.grades.get(pair)
            judge = (f"grader: {grade if grade is not None else 'no grade'} "
                     f"({(outcome.answers.get(pair) or '')[:160]})\n")
        print(f"\n[{index}/{total}] test point {tp_id}: {view.text_of(tp_id)}\n{head}: {text[:800]}\n{judge}"
              "answers it? [y/n/m/s/u/q] ", end="", flush=True)

    lines: list[TeamLabel] = list(earlier)

    def save(given: Mapping[Pair, bool]) -> None:  # the whole file from the session's start and the labels given
        nonlocal lines
        lines = finish(found, earlier, given, query_of=query_of.__getitem__,
                       source_of=lambda pid: "answer" if pid in answers else "passage", shown=bool(args.show_judge))
        write_label_file(args.out, lines)

    given = _ask(found.asked, graded, screen, show, save, origin=origin, unit=args.unit, blind=not args.show_judge,
                 earlier=len(labels_of(earlier)))
    held = sum(1 for line in lines if line.sample == found.sample and line.inclusion is not None)
    units = len({line.unit_id for line in lines if line.sample == found.sample and line.inclusion is not None})
    print(f"\nwrote {args.out}: {len(given)} new labels, {len(labels_of(lines))} pairs labelled in all; sample "
          f"{found.sample} holds {units} of {len(found.units)} {args.unit}s ({held} labels)")
    return 0


def _near_the_cut(args: argparse.Namespace, graded: Graded, screen: LabelScreen | None) -> int:
    """Issue 30's order: the least sure pairs first, then a seeded sample of confident ones; labels of no sample."""
    from exam_harness.analysis.label_file import TeamLabel, read_label_file, write_label_file
    from exam_harness.analysis.labels import order_pairs

    outcome, view = graded.outcome, graded.view
    min_grade = graded.plan.min_grade
    cuts = graded.spec.options.get("cut_points")
    cut = float(cuts[min_grade - 1]) if isinstance(cuts, list) and len(cuts) >= min_grade >= 1 else None
    earlier: list[TeamLabel] = read_label_file(args.out) if args.out.exists() else []
    known = {label.pair for label in earlier}
    todo = {p: g for p, g in outcome.grades.items() if p not in known}
    unsure = args.unsure if args.unsure is not None else 30
    confident = args.confident if args.confident is not None else 10
    pairs = order_pairs(todo, outcome.answers, min_grade, cut, unsure, confident, args.seed)
    query_of = view.query_of()
    passages = graded.inputs.data.passages

    def show(pair: tuple[str, str], index: int, total: int) -> None:
        passage_id, tp_id = pair
        text = " ".join(passages[passage_id].text.split()) if passage_id in passages else "(no text)"
        judge = "" if not args.show_judge else \
            f"grader: {outcome.grades[pair]} ({(outcome.answers.get(pair) or '')[:160]})\n"
        print(f"\n[{index}/{total}] test point {tp_id}: {view.text_of(tp_id)}\npassage {passage_id}: {text[:800]}\n"
              f"{judge}answers it? [y/n/m/s/u/q] ", end="", flush=True)

    def save(given: Mapping[Pair, bool]) -> None:
        write_label_file(args.out, [*earlier, *(TeamLabel(query_of[tp], tp, passage, label, shown=bool(args.show_judge))
                                                for (passage, tp), label in given.items())])

    labels = _ask(pairs, graded, screen, show, save, origin={}, unit="pair", blind=not args.show_judge,
                  earlier=len(known))
    print(f"\nwrote {args.out}: {len(labels)} new labels, {len(earlier) + len(labels)} in all (near the cut: no "
          "sample, each label weighs 1)")
    return 0


def _screen(asked: str, screens: Registry[LabelScreen]) -> LabelScreen | None:
    """The screen to label on: under ``on`` the first registered one that can run here (else a ConfigError saying
    why none can: a terminal screen says it needs a terminal), under ``auto`` the same on a terminal (else the line
    prompt, saying why on standard error), never under ``off``."""
    if asked == "off" or (asked == "auto" and not (sys.stdin.isatty() and sys.stdout.isatty())):
        return None
    reasons: list[str] = []
    for name in screens:
        screen = screens.get(name)
        reason = screen.unavailable()
        if reason is None:
            return screen
        reasons.append(reason)
    why = "; ".join(reasons) or "no labelling screen is registered (the view feature registers one)"
    if asked == "on":
        raise ConfigError(f"{why} (or --screen off)")
    print(f"exam-harness label: the line prompt ({why})", file=sys.stderr)
    return None
