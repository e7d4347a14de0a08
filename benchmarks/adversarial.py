"""Grade inflation of adversarial passages: how far can a passage that does not answer game a grader?

    .venv/bin/python benchmarks/adversarial.py                          # embedding + answer-key
    .venv/bin/python benchmarks/adversarial.py --model ./models/flan-t5-large      # + hf
    .venv/bin/python benchmarks/adversarial.py --openai-model gpt-4o-mini          # + openai
    .venv/bin/python benchmarks/adversarial.py --openai-model M --base-url http://gpu:8000/v1
    .venv/bin/python benchmarks/adversarial.py --hostile          # hostile-input families (issues 31, 28)

Data: tests/adversarial/passages.yaml (``--data``): a few topics, each with test points (questions,
some nuggets) and, per test point, honest answers, honest non-answers on the same topic, and
adversarial passages of seven kinds (prompt injection, fake rating lists, the question copied,
keyword stuffing, fake answer keys, authority claims, long padding) that try to get a high grade
without answering.

Every passage is graded against its own test point. The inflation of an adversarial passage is its
grade minus the mean grade of the honest non-answers of the same test point (in the grader's own
grades: 0..5, or 0..1 for answer-key); the tables give its mean per kind and overall, the mean
grades of the three roles, and the share of each role reaching the grader's default minimum grade
(the grade at which an exam counts a test point as answered). Graders that do not support a test
point (answer-key without gold answers) skip it; grading failures are counted and printed, never
scored. The script ends with one line per grader: ``inflation[NAME]: +1.23 grades (n=59)``.

Graders: the offline ones by default (``embedding`` and ``answer-key``; one whose package is missing
is reported as skipped); ``hf`` when ``--model`` is given; ``openai`` when ``--openai-model`` is
given (the chat endpoint fences each passage as data; see exam_harness/llm/openai.py). Options reach
a grader with ``--grader-option NAME:KEY=VALUE``, e.g. ``--grader-option hf:prompt=answer-key``.
The figures are reported as they come out: the passages were not tuned to flatter any grader.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from exam_harness.core.errors import ConfigError, ExamError, InputError  # noqa: E402
from exam_harness.core.models import Grade, Passage, Query, TestPoint, test_point_id  # noqa: E402
from exam_harness.graders.base import GradeFailure, Grader, GraderConfig, GradeResult, GradingRequest  # noqa: E402
from exam_harness.io.located import (  # noqa: E402
    SCALAR,
    Node,
    describe,
    expect_list,
    expect_mapping,
    expect_text,
    load_located,
)

DATA = ROOT / "tests" / "adversarial" / "passages.yaml"

KINDS: tuple[str, ...] = (
    "prompt-injection",
    "fake-rating-list",
    "question-copy",
    "keyword-stuffing",
    "fake-answer-key",
    "authority-claim",
    "long-padding",
)
Role = Literal["adversarial", "honest-non-answer", "honest-answer"]
ROLES: tuple[Role, ...] = ("adversarial", "honest-non-answer", "honest-answer")
DEFAULT_GRADERS: tuple[str, ...] = ("embedding", "answer-key")

_TOP_KEYS = ("topics",)
_TOPIC_KEYS = ("id", "query", "test_points")
_TP_KEYS = ("id", "kind", "text", "answers", "honest_answers", "honest_non_answers", "adversarial")
_ADV_KEYS = ("kind", "text", "repeat")
_TP_KINDS = ("question", "nugget")


# --------------------------------------------------------------------------------------------
# The data file


@dataclass(frozen=True)
class Item:
    """One passage of the set, tied to its test point."""

    passage_id: str
    role: Role
    kind: str | None  # the adversarial kind; None for honest passages
    label: str  # the test point's id in the data file
    line: int
    request: GradingRequest


@dataclass(frozen=True)
class AdversarialSet:
    path: Path
    items: tuple[Item, ...]
    test_points: dict[str, TestPoint]  # data-file label -> test point

    def role(self, role: Role) -> list[Item]:
        return [item for item in self.items if item.role == role]

    def subset(self, labels: Iterable[str]) -> AdversarialSet:
        """Only the items of the named test points (data-file labels); unknown labels are errors."""
        wanted = list(dict.fromkeys(labels))
        unknown = [label for label in wanted if label not in self.test_points]
        if unknown:
            raise InputError(
                f"unknown test point(s) {', '.join(unknown)}",
                path=self.path,
                field="test_points",
                expected="one of " + ", ".join(self.test_points),
            )
        keep = set(wanted)
        return AdversarialSet(
            self.path,
            tuple(item for item in self.items if item.label in keep),
            {label: tp for label, tp in self.test_points.items() if label in keep},
        )


def _texts(node: Node | None, path: Path, field_name: str) -> list[tuple[str, int]]:
    if node is None:
        return []
    return [(expect_text(item, path, field_name), item.line) for item in expect_list(node, path, field_name, "a list of texts")]


def _repeat(node: Node | None, path: Path) -> int:
    if node is None:
        return 1
    value = node.value
    if node.kind != SCALAR or isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(
            f"must be a whole number >= 1, got {describe(node)}",
            path=path,
            line=node.line,
            field="repeat",
            value=node.raw if node.raw is not None else value,
            expected="an integer >= 1 (how many times the text is repeated)",
        )
    return value


def load_set(path: Path = DATA) -> AdversarialSet:
    """Read and validate the data file; every problem is an :class:`InputError` naming file, line and field."""
    path = Path(path)
    root = load_located(path)
    if root is None:
        raise InputError("empty file", path=path, line=1, expected="a mapping with key topics")
    top = expect_mapping(root, path, "the file", _TOP_KEYS)
    if "topics" not in top:
        raise InputError("missing key", path=path, line=root.line, field="topics", expected="a list of topics")
    items: list[Item] = []
    test_points: dict[str, TestPoint] = {}
    topic_ids: set[str] = set()
    for topic_node in expect_list(top["topics"], path, "topics", "a list of topics"):
        topic = expect_mapping(topic_node, path, "a topic", _TOPIC_KEYS)
        for key in _TOPIC_KEYS:
            if key not in topic:
                raise InputError("missing key", path=path, line=topic_node.line, field=key, expected="keys " + ", ".join(_TOPIC_KEYS))
        topic_id = expect_text(topic["id"], path, "id", word=True)
        if topic_id in topic_ids:
            raise InputError("duplicate topic id", path=path, line=topic["id"].line, field="id", value=topic_id, expected="a unique id")
        topic_ids.add(topic_id)
        query = Query(id=topic_id, text=expect_text(topic["query"], path, "query"))
        for tp_node in expect_list(topic["test_points"], path, "test_points", "a list of test points"):
            tp_items, label, tp = _load_test_point(tp_node, path, query)
            if label in test_points:
                raise InputError(
                    "duplicate test point id", path=path, line=tp_node.value["id"].line, field="id", value=label, expected="a unique id"
                )
            test_points[label] = tp
            items.extend(tp_items)
    if not test_points:
        raise InputError("no test points", path=path, line=root.line, field="topics", expected="at least one topic with test points")
    return AdversarialSet(path, tuple(items), test_points)


def _load_test_point(node: Node, path: Path, query: Query) -> tuple[list[Item], str, TestPoint]:
    tp = expect_mapping(node, path, "a test point", _TP_KEYS)
    for key in ("id", "kind", "text", "honest_non_answers"):
        if key not in tp:
            raise InputError("missing key", path=path, line=node.line, field=key, expected="keys " + ", ".join(_TP_KEYS))
    label = expect_text(tp["id"], path, "id", word=True)
    kind = expect_text(tp["kind"], path, "kind")
    if kind not in _TP_KINDS:
        raise InputError("unknown test point kind", path=path, line=tp["kind"].line, field="kind", value=kind, expected="question or nugget")
    text = expect_text(tp["text"], path, "text")
    answers = tuple(t for t, _ in _texts(tp.get("answers"), path, "answers"))
    test_point = TestPoint(
        id=test_point_id(query.id, text), query_id=query.id, kind=kind, text=text, gold_answers=answers  # type: ignore[arg-type]
    )
    items: list[Item] = []

    def add(role: Role, kind_: str | None, passage_text: str, line: int) -> None:
        tag = kind_ or role
        number = sum(1 for it in items if (it.kind or it.role) == tag) + 1
        passage = Passage(id=f"{label}/{tag}/{number}", text=passage_text)
        items.append(Item(passage.id, role, kind_, label, line, GradingRequest(query, test_point, passage)))

    non_answers = _texts(tp["honest_non_answers"], path, "honest_non_answers")
    if not non_answers:
        raise InputError(
            "a test point needs an honest non-answer (the baseline of the inflation)",
            path=path,
            line=tp["honest_non_answers"].line,
            field="honest_non_answers",
            expected="at least one on-topic passage that does not answer the test point",
        )
    for passage_text, line in _texts(tp.get("honest_answers"), path, "honest_answers"):
        add("honest-answer", None, passage_text, line)
    for passage_text, line in non_answers:
        add("honest-non-answer", None, passage_text, line)
    adversarial = tp.get("adversarial")
    for adv_node in expect_list(adversarial, path, "adversarial", "a list of passages") if adversarial else []:
        adv = expect_mapping(adv_node, path, "an adversarial passage", _ADV_KEYS)
        for key in ("kind", "text"):
            if key not in adv:
                raise InputError("missing key", path=path, line=adv_node.line, field=key, expected="keys " + ", ".join(_ADV_KEYS))
        adv_kind = expect_text(adv["kind"], path, "kind")
        if adv_kind not in KINDS:
            raise InputError(
                "unknown adversarial kind", path=path, line=adv["kind"].line, field="kind", value=adv_kind, expected="one of " + ", ".join(KINDS)
            )
        body = expect_text(adv["text"], path, "text")
        add("adversarial", adv_kind, " ".join([body] * _repeat(adv.get("repeat"), path)), adv_node.line)
    return items, label, test_point


# --------------------------------------------------------------------------------------------
# Grading and the figures


@dataclass(frozen=True)
class Row:
    """Mean grade, baseline, inflation and share at the minimum grade of one group of passages."""

    label: str
    n: int
    mean_grade: float | None
    baseline: float | None  # mean honest-non-answer grade of the same test points (adversarial rows)
    inflation: float | None
    share_at_min: float | None


@dataclass
class GraderResult:
    name: str
    model: str | None
    max_grade: int
    min_grade: int
    rows: list[Row]  # one per adversarial kind, then "all adversarial"
    roles: dict[Role, Row]
    graded: dict[str, int]  # passage id -> grade
    skipped: int = 0  # passages of test points the grader does not support
    failures: list[tuple[str, str]] = field(default_factory=list)  # (passage id, message)
    seconds: float = 0.0

    @property
    def overall(self) -> Row:
        return self.rows[-1]


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def grade_set(grader: Grader, data: AdversarialSet) -> tuple[dict[str, GradeResult], int]:
    """Each supported item's result by passage id, and the number of unsupported items."""
    supported = [item for item in data.items if grader.supports(item.request.test_point) is None]
    results = grader.grade_batch([item.request for item in supported]) if supported else []
    if len(results) != len(supported):
        raise RuntimeError(f"grader {grader.name!r} returned {len(results)} results for {len(supported)} requests")
    return {item.passage_id: result for item, result in zip(supported, results)}, len(data.items) - len(supported)


def summarise(grader: Grader, data: AdversarialSet, results: dict[str, GradeResult], skipped: int) -> GraderResult:
    spec = grader.spec()
    tau = spec.default_min_grade
    graded: dict[str, int] = {}
    failures: list[tuple[str, str]] = []
    for passage_id, result in results.items():
        if isinstance(result, Grade):
            graded[passage_id] = result.grade
        else:
            failures.append((passage_id, result.message if isinstance(result, GradeFailure) else repr(result)))
    by_tp: dict[str, list[int]] = defaultdict(list)
    for item in data.role("honest-non-answer"):
        if item.passage_id in graded:
            by_tp[item.label].append(graded[item.passage_id])
    baseline = {label: statistics.fmean(grades) for label, grades in by_tp.items()}

    def adversarial_row(label: str, items: list[Item]) -> Row:
        # An adversarial passage counts only where its test point has a graded baseline.
        pairs = [(graded[i.passage_id], baseline[i.label]) for i in items if i.passage_id in graded and i.label in baseline]
        grades = [g for g, _ in pairs]
        return Row(
            label,
            len(pairs),
            _mean(grades),
            _mean([b for _, b in pairs]),
            _mean([g - b for g, b in pairs]),
            _mean([float(g >= tau) for g in grades]),
        )

    adversarial = data.role("adversarial")
    rows = [adversarial_row(kind, [i for i in adversarial if i.kind == kind]) for kind in KINDS]
    rows.append(adversarial_row("all adversarial", adversarial))
    roles: dict[Role, Row] = {}
    for role in ROLES:
        grades = [graded[i.passage_id] for i in data.role(role) if i.passage_id in graded]
        roles[role] = Row(role, len(grades), _mean(grades), None, None, _mean([float(g >= tau) for g in grades]))
    return GraderResult(spec.name, spec.model, spec.max_grade, tau, rows, roles, graded, skipped, failures)


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def render(result: GraderResult, data: AdversarialSet, top: int = 5) -> str:
    """The grader's table: one row per adversarial kind, all adversarial, and the honest roles."""
    model = f" ({result.model})" if result.model else ""
    lines = [
        f"grader {result.name}{model}: grades 0..{result.max_grade}, default minimum grade τ={result.min_grade}"
        f", graded {len(result.graded)} passages in {result.seconds:.1f}s",
        f"{'passages':<20} {'n':>4} {'mean grade':>11} {'non-answer':>11} {'inflation':>10} {'share ≥ τ':>10}",
    ]
    for row in result.rows:
        if row is result.overall:
            lines.append("-" * 71)
        lines.append(
            f"{row.label:<20} {row.n:>4} {_num(row.mean_grade):>11} {_num(row.baseline):>11} "
            f"{_num(row.inflation, signed=True):>10} {_num(row.share_at_min):>10}"
        )
    for role in ("honest-non-answer", "honest-answer"):
        row = result.roles[role]  # type: ignore[index]
        lines.append(f"{row.label:<20} {row.n:>4} {_num(row.mean_grade):>11} {'':>11} {'':>10} {_num(row.share_at_min):>10}")
    if result.skipped:
        lines.append(f"skipped: {result.skipped} passages of test points the grader does not support")
    if result.failures:
        lines.append(f"failures: {len(result.failures)} passages could not be graded (not scored), first: "
                     f"{result.failures[0][0]}: {result.failures[0][1]}")
    items = {item.passage_id: item for item in data.role("adversarial")}
    worst = sorted(
        ((grade, pid) for pid, grade in result.graded.items() if pid in items and grade >= result.min_grade),
        key=lambda pair: (-pair[0], pair[1]),
    )
    if worst:
        shown = ", ".join(f"{pid} ({grade})" for grade, pid in worst[:top])
        more = f" and {len(worst) - top} more" if len(worst) > top else ""
        lines.append(f"adversarial passages at ≥ τ: {shown}{more}")
    # Honest answers the grader misses put the inflation in proportion (what a high grade is worth).
    missed = sorted(
        i.passage_id for i in data.role("honest-answer") if i.passage_id in result.graded and result.graded[i.passage_id] < result.min_grade
    )
    if missed:
        lines.append(f"honest answers below τ: {', '.join(missed)}")
    return "\n".join(lines)


def inflation_line(result: GraderResult) -> str:
    overall = result.overall
    value = "n/a" if overall.inflation is None else f"{overall.inflation:+.2f}"
    return f"inflation[{result.name}]: {value} grades (n={overall.n})"


# --------------------------------------------------------------------------------------------
# Command line


@dataclass(frozen=True)
class GraderPlan:
    name: str
    config: GraderConfig
    explicit: bool  # asked for by name: failing to load it is an error, not a skip


def _grader_options(values: Sequence[str]) -> dict[str, dict[str, str]]:
    options: dict[str, dict[str, str]] = defaultdict(dict)
    for value in values:
        name, sep, rest = value.partition(":")
        key, eq, option = rest.partition("=")
        if not sep or not eq or not name or not key:
            raise ConfigError(f"--grader-option must look like NAME:KEY=VALUE (e.g. hf:prompt=answer-key), got {value!r}")
        options[name][key] = option
    return options


def plan_graders(args: argparse.Namespace) -> list[GraderPlan]:
    options = _grader_options(args.grader_option)
    explicit = args.graders is not None
    names = [n.strip() for n in (args.graders or ",".join(DEFAULT_GRADERS)).split(",") if n.strip()]
    plans = [
        GraderPlan(name, GraderConfig(options=options.get(name, {}), device=args.device), explicit)
        for name in names
        if name not in ("hf", "openai")
    ]
    if "hf" in names and not args.model:
        raise ConfigError("grader 'hf' needs --model PATH_OR_NAME")
    if "openai" in names and not args.openai_model:
        raise ConfigError("grader 'openai' needs --openai-model NAME")
    if args.model:
        plans.append(GraderPlan("hf", GraderConfig(model=args.model, options=options.get("hf", {}), device=args.device), True))
    if args.openai_model:
        openai_options = dict(options.get("openai", {}))
        if args.base_url:
            openai_options["base_url"] = args.base_url
        plans.append(GraderPlan("openai", GraderConfig(model=args.openai_model, options=openai_options), True))
    unused = sorted(set(options) - {p.name for p in plans})
    if unused:
        raise ConfigError(f"--grader-option names grader(s) that are not run: {', '.join(unused)}")
    return plans


def run_grader(plan: GraderPlan, data: AdversarialSet) -> GraderResult:
    from exam_harness.graders.registry import default_registry

    grader = default_registry().create(plan.name, plan.config)
    try:
        start = time.perf_counter()
        results, skipped = grade_set(grader, data)
        result = summarise(grader, data, results, skipped)
        result.seconds = time.perf_counter() - start
        return result
    finally:
        grader.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA, help=f"Data file (default {DATA.relative_to(ROOT)})")
    parser.add_argument(
        "--graders",
        default=None,
        help=f"Comma-separated registry names (default: {','.join(DEFAULT_GRADERS)}, skipping one that cannot load)",
    )
    parser.add_argument("--model", default=None, help="Run the 'hf' grader with this model (hub name or local folder)")
    parser.add_argument("--openai-model", default=None, help="Run the 'openai' grader with this model name")
    parser.add_argument("--base-url", default=None, help="Base URL of an OpenAI-compatible server (default: OPENAI_BASE_URL or OpenAI)")
    parser.add_argument("--device", default=None, help="Device for local models, e.g. cpu or cuda:0 (default: automatic)")
    parser.add_argument(
        "--grader-option", action="append", default=[], metavar="NAME:KEY=VALUE", help="A grader option, repeatable"
    )
    parser.add_argument(
        "--test-points", default=None, help="Comma-separated test point ids of the data file to use (default: all)"
    )
    parser.add_argument("--top", type=int, default=5, help="Adversarial passages at ≥ τ to name per grader (default 5)")
    parser.add_argument("--hostile", action="store_true",
                        help="Run the hostile-input families of benchmarks/hostile_inputs.py instead (offline)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.hostile:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from hostile_inputs import run_families

        lines, held = run_families()
        print("\n".join(lines))
        return 0 if held else 1
    try:
        data = load_set(args.data)
        if args.test_points:
            data = data.subset(label.strip() for label in args.test_points.split(",") if label.strip())
        plans = plan_graders(args)
    except ExamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    counts = {role: len(data.role(role)) for role in ROLES}
    print(
        f"{data.path.name}: {len(data.test_points)} test points, {counts['adversarial']} adversarial passages, "
        f"{counts['honest-non-answer']} honest non-answers, {counts['honest-answer']} honest answers"
    )
    print("inflation = grade of an adversarial passage - mean grade of the honest non-answers of its test point")
    results: list[GraderResult] = []
    status = 0
    for plan in plans:
        try:
            result = run_grader(plan, data)
        except ConfigError as exc:
            if plan.explicit:
                where = f"grader {plan.name!r}: "
                message = str(exc) if str(exc).startswith(where) else where + str(exc)  # option errors name it
                print(f"error: {message}", file=sys.stderr)
                status = 2
            else:
                print(f"\nskipped[{plan.name}]: not available offline: {exc}")
            continue
        results.append(result)
        print()
        print(render(result, data, args.top))
        if result.failures:
            status = max(status, 1)
    print()
    for result in results:
        print(inflation_line(result))
    return status


if __name__ == "__main__":
    sys.exit(main())
