"""A team's own labels of (test point, passage) pairs (issue 30): which pairs to show first, the key loop that
records them, the JSONL they are kept in, and a grader's verdicts against them.

Pairs are shown least sure first (a grade's support nearest the support where its verdict changes; without a
support, a grade nearest the minimum grade), then a seeded sample of the confident ones. Keys: ``y`` (the
passage answers the test point), ``n`` (it does not), ``s`` (skip), ``u`` (undo the last step), ``q`` (quit,
keeping what was labelled). One label per line of the file: ``{"query_id", "test_point_id", "passage_id",
"label"}``.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from exam_harness.analysis.support_fit import Instances
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.graders.cascade_filter import wilson
from exam_harness.graders.support import Signals, SupportModel, signals_of_reason

Pair = tuple[str, str]  # (passage id, test point id)


@dataclass(frozen=True)
class Label:
    query_id: str
    test_point_id: str
    passage_id: str
    label: bool

    def to_json(self) -> dict[str, object]:
        return {"query_id": self.query_id, "test_point_id": self.test_point_id, "passage_id": self.passage_id,
                "label": self.label}


def uncertainty(grade: int, answer: str | None, min_grade: int, cut: float | None) -> float:
    """How far a grade is from changing its verdict: |support - cut| when its reason states a support and the
    cut point is known, else 1 + |grade - (min_grade - 0.5)| (smaller: less sure)."""
    found = signals_of_reason(answer) if answer else None
    if found is not None and cut is not None:
        return abs(found[0] - cut)
    return abs(grade - (min_grade - 0.5)) + 1.0  # after every pair a support places


def order_pairs(grades: Mapping[Pair, int], answers: Mapping[Pair, str | None], min_grade: int, cut: float | None,
                unsure: int, confident: int, seed: int = 0) -> list[Pair]:
    """The ``unsure`` least sure pairs, then a seeded sample of ``confident`` among the rest."""
    ranked = sorted(grades, key=lambda p: (uncertainty(grades[p], answers.get(p), min_grade, cut), p))
    first, rest = ranked[:unsure], ranked[unsure:]
    sample = random.Random(seed).sample(rest, min(confident, len(rest)))
    return first + sample


KEYS = {"y": True, "n": False}


def label_loop(pairs: Sequence[Pair], query_of: Mapping[str, str], show: Callable[[Pair, int, int], None],
               read: Callable[[], str | None], say: Callable[[str], None]) -> list[Label]:
    """Show each pair, read a key (y/n/m/s/u/q, the labelling screen's keys; None: the input ended, as q) and
    return the labels given. ``m`` (unsure) and ``s`` (skip) leave the pair unlabelled alike: the label file holds
    yes and no only."""
    labels: list[Label] = []
    given: list[int | None] = []  # per step taken: the index of its label in ``labels``, None for a skip
    position = 0
    while position < len(pairs):
        passage_id, tp_id = pairs[position]
        show(pairs[position], position + 1, len(pairs))
        key = read()
        if key is None or key.strip().lower() == "q":
            break
        choice = key.strip().lower()
        if choice == "u":
            if not given:
                say("nothing to undo")
                continue
            if given.pop() is not None:
                labels.pop()
            position -= 1
            continue
        if choice in ("m", "s"):
            given.append(None)
            position += 1
            continue
        if choice not in KEYS:
            say(f"{key.strip()!r}: answer y (answers), n (does not), m (unsure), s (skip), u (undo) or q (quit)")
            continue
        labels.append(Label(query_of[tp_id], tp_id, passage_id, KEYS[choice]))
        given.append(len(labels) - 1)
        position += 1
    return labels


def write_labels(path: Path, labels: Iterable[Label]) -> None:
    from exam_harness.io.textio import atomic_write_text

    atomic_write_text(path, "".join(json.dumps(label.to_json(), ensure_ascii=False) + "\n" for label in labels))


def read_labels(path: Path) -> dict[Pair, bool]:
    """(passage id, test point id) -> label; a bad line is an InputError naming the file, line and field."""
    # bounded lines and nesting, UTF-8 and a regular file only (a FIFO would block), as every JSON-lines input
    from exam_harness.io.textio import iter_json_lines

    out: dict[Pair, bool] = {}
    for number, row in iter_json_lines(path):
        where = f"{path}:{number}"
        for name, kind in (("test_point_id", str), ("passage_id", str), ("label", bool)):
            if not isinstance(row, dict) or not isinstance(row.get(name), kind):
                raise InputError(f"{where}: field {name!r} is missing or not a {kind.__name__}", field=name,
                                 value=str(row)[:80], expected=kind.__name__)
        out[(row["passage_id"], row["test_point_id"])] = row["label"]
    return out


@dataclass(frozen=True)
class LabelConcordance:
    """A grader's per-pair verdicts (grade >= min grade) against the labels, with 95% (Wilson) intervals."""

    pairs: int
    precision: float | None
    precision_interval: tuple[float, float]
    recall: float | None
    recall_interval: tuple[float, float]
    kappa: float | None


def label_concordance(grades: Mapping[Pair, int], labels: Mapping[Pair, bool], min_grade: int) -> LabelConcordance:
    """Precision, recall and Cohen's kappa of "grade >= min_grade" against the labels of the graded pairs."""
    both = [(grades[p] >= min_grade, label) for p, label in labels.items() if p in grades]
    tp = sum(v and t for v, t in both)
    fp = sum(v and not t for v, t in both)
    fn = sum(t and not v for v, t in both)
    tn = len(both) - tp - fp - fn
    n = len(both)
    kappa = None
    if n:
        observed = (tp + tn) / n
        expected = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n)
        kappa = (observed - expected) / (1 - expected) if not math.isclose(expected, 1.0) else None
    return LabelConcordance(
        pairs=n,
        precision=tp / (tp + fp) if tp + fp else None, precision_interval=wilson(tp, tp + fp),
        recall=tp / (tp + fn) if tp + fn else None, recall_interval=wilson(tp, tp + fn),
        kappa=kappa,
    )


@dataclass(frozen=True)
class LabelFit:
    """A support model refit on a team's labels, and what was said of each of its two parts."""

    model: SupportModel
    lines: list[str]


def _instances(signals: Mapping[Pair, Signals], labels: Mapping[Pair, bool], names: Sequence[str]) -> Instances | None:
    """One instance per labelled pair with the signals ``names`` (its test point is its 'query', so folds deal
    test points); None when no labelled pair has them."""
    import numpy as np

    keys, matrices, relevant = [], [], []
    for (passage_id, tp_id), label in sorted(labels.items()):
        found = signals.get((passage_id, tp_id))
        if found is None:
            continue
        try:
            row = found.vector(names)
        except ConfigError:  # a signal this part does not read for the pair (the answer signals of a question)
            continue
        keys.append((tp_id, passage_id))
        matrices.append(np.asarray([row], dtype=float))
        relevant.append(label)
    return Instances(keys, matrices, np.asarray(relevant, dtype=bool), tuple(names)) if keys else None


def fit_on_labels(answers: Mapping[Pair, str | None], labels: Mapping[Pair, bool], with_gold: Collection[str],
                  base: SupportModel, *, folds: int, seed: int, min_grade: int, source: str) -> LabelFit:
    """The support model refit on the labels, cross-validated by test point: the model of test points without
    gold answers on their labels, the answer model (``with_answers``) on the labels of those with gold answers;
    a part with labels of fewer than ``folds`` test points, or of one kind only, is kept as it was, and said so."""
    from exam_harness.analysis.calibration import query_folds
    from exam_harness.analysis.support_fit import fit_support, stored_signals

    signals = stored_signals({p: a for p, a in answers.items() if p in labels})
    parts: dict[str, SupportModel] = {}
    lines: list[str] = []
    answer_model = base.with_answers or base
    for part, model, chosen in (
            ("questions without gold answers", base, {p: v for p, v in labels.items() if p[1] not in with_gold}),
            ("questions with gold answers", answer_model, {p: v for p, v in labels.items() if p[1] in with_gold})):
        data = _instances(signals, chosen, model.signals)
        points = sorted({k[0] for k in data.keys}) if data is not None else []
        if data is None or len(points) < folds or data.relevant.all() or not data.relevant.any():
            lines.append(f"{part}: kept as it was ({len(chosen)} labels of {len(points)} test points: too few, or of "
                         "one kind only)")
            parts[part] = model
            continue
        fit = fit_support(data, query_folds(points, folds, seed))
        refit = fit.model(f"{source}: {len(data.keys)} labelled pairs of {len(points)} test points, {folds} folds of "
                          "test points", min_grade, model.answer_key_floor)
        held = "–" if fit.held_out.mean is None else f"{fit.held_out.mean:.3f} ± {fit.held_out.sd or 0:.3f}"
        lines.append(f"{part}: refit on {len(data.keys)} labelled pairs of {len(points)} test points: held-out kappa "
                     f"{held} (in-sample {fit.in_sample_kappa:.3f}), cut points "
                     + ",".join(f"{c:g}" for c in refit.cut_points))
        parts[part] = refit
    questions = parts["questions without gold answers"]
    model = SupportModel(questions.signals, questions.weights, questions.intercept, questions.cut_points,
                         questions.fitted_on, questions.answer_key_floor, questions.notes,
                         with_answers=parts["questions with gold answers"])
    return LabelFit(model, lines)
