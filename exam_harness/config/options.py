"""The one option schema, shared by the pytest plugin and the ``exam-harness`` subcommands.

Every option is declared once, as a field of :class:`ExamOptions` (its default), with a typed
converter and help text. The pytest plugin registers the options of the groups it uses as
``--exam-NAME`` plus the ini key ``exam_NAME`` (the command line wins over the ini file); a
subcommand registers the groups it uses as ``--NAME``. Both read raw strings and convert them here,
so a bad value gets the same message, naming where it came from, on either front end. An argument of
one subcommand alone is an :class:`Argument`, converted by the same converters.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, cast

from exam_harness.config.gates import Allowance, RequiredScope, Threshold, parse_allowance, parse_threshold
from exam_harness.core.display import is_hidden_char
from exam_harness.core.errors import ConfigError

Converter = Callable[[str], Any]
T = TypeVar("T")
Front = Literal["pytest", "cli"]

# Option groups; a front end registers the groups it uses (pytest-benchmark's add_*_options shape).
GRADING = "grading"
SCORING = "scoring"
SIGNIFICANCE = "significance"
GATES = "gates"
REPORTS = "reports"
INPUTS = "inputs"
SYSTEMS = "systems"  # the options of declared live systems (a feature declares them)
RECORDED = "recorded"
EVALUATE = "evaluate"
# The groups the pytest plugin registers (kept here so the README table needs no plugin import).
PYTEST_GROUPS = (INPUTS, SYSTEMS, GRADING, SCORING, SIGNIFICANCE, GATES, REPORTS)

LABEL_VARIANTS: tuple[str, ...] = ("max-grade", "count", "at-least-m")
TREC_MEASURES: tuple[str, ...] = ("P@20", "map", "ndcg@10", "ndcg@20", "rprec", "mrr")
POOLS: tuple[str, ...] = ("judged", "top-k")
SIGNIFICANCE_TESTS: tuple[str, ...] = ("permutation", "bootstrap", "t-test")
ANALYSES: tuple[str, ...] = ("verify", "missing", "spurious", "agreement")


# --- converters: str -> value, ValueError(reason) on bad input ---------------------------------


def text(raw: str) -> str:
    value = raw.strip()
    if not value:
        raise ValueError("must not be empty")
    return value


# Every numeric option is bounded (issue 31, finding 13): a value such as ``--k 10**30`` or
# ``--bootstrap 1e9`` is refused here, before it sizes an allocation or a loop. An integer option
# without its own maximum gets INTEGER_CEILING (the largest C long, so nothing downstream overflows);
# options whose value sizes memory or work declare a maximum of their own.
INTEGER_CEILING = 2**63 - 1


@dataclass(frozen=True)
class Integer:
    """The converter of an integer option: ``minimum..maximum`` (either end may be open in the
    declaration; an open maximum is :data:`INTEGER_CEILING`, an open minimum its negative)."""

    minimum: int | None = None
    maximum: int | None = None

    @property
    def bounds(self) -> tuple[int, int]:
        """The values accepted, both ends included."""
        return (-INTEGER_CEILING if self.minimum is None else self.minimum,
                INTEGER_CEILING if self.maximum is None else self.maximum)

    def expected(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return f"an integer in {self.minimum}..{self.maximum}"
        if self.minimum is not None:
            return f"an integer >= {self.minimum}"
        if self.maximum is not None:
            return f"an integer <= {self.maximum}"
        return "an integer"

    def __call__(self, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:  # also a number of over 4,300 digits, which int() refuses
            raise ValueError(f"must be {self.expected()}") from None
        low, high = self.bounds
        if (self.minimum is not None and value < low) or (self.maximum is not None and value > high):
            raise ValueError(f"must be {self.expected()}")
        if not low <= value <= high:
            raise ValueError(f"must be {self.expected()} of at most {INTEGER_CEILING:,} in size")
        return value


def integer(minimum: int | None = None, maximum: int | None = None) -> Converter:
    """An :class:`Integer` converter (its bounds readable by whoever builds arguments from the schema)."""
    return Integer(minimum, maximum)


@dataclass(frozen=True)
class Number:
    """The converter of a real-valued option: always finite, within ``low..high`` (ends open or closed)."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False

    def __call__(self, raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ValueError("must be a number") from None
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        low, high = self.low, self.high
        if low is not None and (value < low or (self.open_low and value == low)):
            raise ValueError(f"must be {'>' if self.open_low else '>='} {low:g}")
        if high is not None and (value > high or (self.open_high and value == high)):
            raise ValueError(f"must be {'<' if self.open_high else '<='} {high:g}")
        return value


def number(low: float | None = None, high: float | None = None, *, open_low: bool = False,
           open_high: bool = False) -> Converter:
    """A :class:`Number` converter."""
    return Number(low, high, open_low, open_high)


def significance_level(raw: str) -> float:
    """A significance level alpha in (0, 1) whose confidence 1 - alpha is not 1 in floating point (1e-300
    is > 0, yet a confidence interval at 1 - 1e-300 == 1.0 cannot be computed: found now, not after grading)."""
    value = float(number(0, 1, open_low=True, open_high=True)(raw))
    if 1.0 - value >= 1.0:
        raise ValueError(f"must be at least {MIN_ALPHA:g} (1 - alpha must differ from 1)")
    return value


MIN_ALPHA = 1e-15

# Maxima of the options whose value sizes memory or work (a rank cut-off builds k discounts, a
# resample count allocates resamples x queries); generous for any real exam.
MAX_RANK_CUTOFF = 100_000
MAX_BATCH_SIZE = 100_000
MAX_QRELS_M = 10_000
MAX_RELEVANCE_LEVEL = 100
MAX_RESAMPLES = 1_000_000
MAX_REPEATS = 100  # samples asked of a judge per pair (grader option repeats)
MAX_CONCURRENCY = 1_024
MAX_SECONDS = 86_400.0  # any wait, timeout or backoff: a day


def choice(*values: str) -> Converter:
    def convert(raw: str) -> str:
        value = raw.strip()
        if value not in values:
            import difflib

            close = difflib.get_close_matches(value, list(values), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"must be one of {', '.join(values)}{hint}")
        return value

    return convert


def boolean(raw: str) -> bool:
    """true/false (1/0, yes/no and on/off too)."""
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


@dataclass(frozen=True)
class Optional(Generic[T]):
    """``convert``, except that a blank value or one of ``unset`` (any case) means "not set": None,
    which lets the consumer choose (e.g. ``max_tokens=none``: as many as the prompt mode needs)."""

    convert: Callable[[str], T]
    unset: tuple[str, ...] = ("", "none")

    def __call__(self, raw: str) -> T | None:
        if raw.strip().lower() in self.unset:
            return None
        return self.convert(raw)


def optional(convert: Callable[[str], T], *, unset: tuple[str, ...] = ("", "none")) -> Callable[[str], T | None]:
    """An :class:`Optional` converter around ``convert`` (whose bounds stay readable)."""
    return Optional(convert, unset)


@dataclass(frozen=True)
class GraderOption:
    """One option a grader declares: ``exam-harness graders NAME`` lists them, and
    :func:`read_grader_options` converts the strings a user gives (``--exam-grader-option K=V``)."""

    name: str
    default: Any
    help: str
    convert: Callable[[str], Any] = str

    def value(self, raw: Any, grader: str) -> Any:
        if not isinstance(raw, str):
            return raw  # a native value from a library caller
        try:
            return self.convert(raw)
        except ValueError as exc:
            reason = str(exc) or "is invalid"
            raise ConfigError(f"grader {grader!r}: option {self.name}={raw!r} {reason}") from None


def read_grader_options(
    grader: str, declared: Sequence[GraderOption], given: Mapping[str, Any]
) -> dict[str, Any]:
    """Every declared option's value (given, converted, else its default); an undeclared key is a
    ConfigError that suggests the closest declared name."""
    from exam_harness.core.registry import unknown_name_message

    names = [option.name for option in declared]
    for key in given:
        if key not in names:
            raise ConfigError(f"grader {grader!r}: {unknown_name_message('option', key, sorted(names))}")
    return {o.name: (o.value(given[o.name], grader) if o.name in given else o.default) for o in declared}


_OPTION = "exam_harness.option"  # the dataclass field metadata key of a declared option


def option_field(default: Any, help: str, convert: Callable[[str], Any] = str) -> Any:
    """A dataclass field that is an option: its name, ``default``, ``help`` and ``convert`` (with its
    bounds) written once, for the constructor (the field), parsing and listings (:func:`options_of`)
    and the check of a library caller's values (:func:`check_options`)."""
    return field(default=default, metadata={_OPTION: (help, convert)})


def shared_option(option: GraderOption) -> Any:
    """:func:`option_field` of an option declared elsewhere (shared by several graders); the field
    must be named as the option."""
    return option_field(option.default, option.help, option.convert)


def options_of(settings: type[Any]) -> tuple[GraderOption, ...]:
    """The options a dataclass declares with :func:`option_field`, in field order."""
    return tuple(GraderOption(f.name, f.default, *f.metadata[_OPTION]) for f in fields(settings)
                 if _OPTION in f.metadata)


def check_options(instance: Any, what: str) -> None:
    """Check, and convert in place, every declared option of a dataclass instance by its converter:
    a library caller's native values (``concurrency=0``) meet the same bounds as a user's strings. None
    stands for "unset" where it is the default. ConfigError ``<what> option NAME: got VALUE, expected ...``."""
    for f in fields(instance):
        if _OPTION not in f.metadata:
            continue
        value = getattr(instance, f.name)
        if value is None and f.default is None:
            continue
        convert = f.metadata[_OPTION][1]
        try:
            converted = convert(value if isinstance(value, str) else str(value))
        except ValueError as exc:
            reason = str(exc) or "a valid value"
            expected = reason.removeprefix("must be ")
            raise ConfigError(f"{what} option {f.name}: got {value!r}, expected {expected}") from None
        object.__setattr__(instance, f.name, converted)


def declared_options(factory: object) -> tuple[GraderOption, ...]:
    """The options a grader factory (a Grader class, or a function with an ``options`` attribute) declares."""
    options = getattr(factory, "options", ())
    return tuple(o for o in options if isinstance(o, GraderOption))


def _word(raw: str) -> str:
    value = raw.strip()
    if not value or any(ch.isspace() or ch in "/\\" for ch in value):
        raise ValueError("must be a name without spaces or slashes")
    return value


MAX_SAVE_NAME_CHARS = 100


def check_save_name(name: str) -> str:
    """A kept report's name is a file name part: like a run name (no whitespace, control or invisible
    characters), without slashes or a leading dot, at most :data:`MAX_SAVE_NAME_CHARS` characters.
    Raises ValueError saying what a name must be."""
    if len(name) > MAX_SAVE_NAME_CHARS:
        raise ValueError(f"must be a name of at most {MAX_SAVE_NAME_CHARS} characters ({len(name)} given)")
    if not name or any(ch.isspace() or ch in "/\\" for ch in name) or name.startswith("."):
        raise ValueError("must be a name without spaces or slashes, and no leading dot")
    if any(is_hidden_char(ch) for ch in name):
        raise ValueError("must be a name without control or invisible characters")
    return name


def _save_name(raw: str) -> str:
    return check_save_name(raw.strip())


def path_or_none(raw: str) -> Path | None:
    value = raw.strip()
    if not value:
        raise ValueError("must be a path, or 'none'")
    return None if value.lower() == "none" else Path(value)


def shard(raw: str) -> tuple[int, int]:
    """``I/N`` with 1 <= I <= N."""
    index, _, count = raw.strip().partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise ValueError("must be I/N, e.g. 2/3 (shard 2 of 3)") from None
    if not 1 <= i <= n:
        raise ValueError(f"must be I/N with 1 <= I <= N, got {i}/{n}")
    return i, n


def key_value(raw: str) -> tuple[str, str]:
    key, sep, value = raw.partition("=")
    if not sep or not key.strip():
        raise ValueError("takes KEY=VALUE")
    return key.strip(), value.strip()


def parse_key_values(items: Iterable[str], where: str) -> dict[str, str]:
    """``["k=v", ...]`` -> dict (later keys win); a bad item is a ConfigError naming ``where``."""
    parsed: dict[str, str] = {}
    for item in items:
        try:
            key, value = key_value(item)
        except ValueError as exc:
            raise ConfigError(f"{where} {exc}, got {item!r}") from None
        parsed[key] = value
    return parsed


# --- the schema --------------------------------------------------------------------------------


@dataclass(frozen=True)
class OptionSpec:
    """How one field of :class:`ExamOptions` is given on the command line and in the ini file."""

    name: str  # command-line name without prefix: --NAME (subcommands), --exam-NAME (pytest)
    help: str
    convert: Converter
    group: str
    many: bool = False  # repeatable (pytest, CLI append) / a line list (ini)
    nargs: str | None = None  # subcommands: several values after one flag (e.g. --min-grade 3 4 5)
    flag: bool = False  # a switch without a value
    path: bool = False  # relative paths resolve against the invocation folder (or the rootdir for ini values)
    metavar: str | None = None
    ini: str | None = None  # ini key override (default exam_NAME with underscores)
    fronts: tuple[Front, ...] = ("pytest", "cli")
    cli_default: Any = None  # a subcommand's own default where it differs (see the field's help)
    const: str | None = None  # the value of the bare flag when the option's value is optional

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def ini_name(self) -> str:
        return self.ini or "exam_" + self.dest


def declare(
    name: str, default: Any, help: str, convert: Converter = text, *, group: str, **kwargs: Any
) -> Any:
    """A dataclass field of :class:`ExamOptions` carrying its :class:`OptionSpec`."""
    spec = OptionSpec(name=name, help=help, convert=convert, group=group, **kwargs)
    if isinstance(default, (list, dict)):
        raise TypeError("option defaults must be immutable (tuples)")
    return field(default=default, metadata={"option": spec})


@dataclass(frozen=True)
class ExamOptions:
    """Every option of exam-harness with its default. Fields are named like the options."""

    # grading
    grader: str = declare(
        "grader", "embedding", "Grader that grades passages; 'exam-harness graders' lists them, 'exam-harness "
        "graders NAME' its options (exam-harness evaluate/analyze replay recorded grades unless told otherwise)",
        group=GRADING, cli_default="recorded")
    model: str | None = declare("model", None, "Model name or local path for the grader (default: the grader's own)",
                                group=GRADING)
    grader_option: tuple[tuple[str, str], ...] = declare(
        "grader-option", (),
        "Grader option KEY=VALUE, repeatable; 'exam-harness graders NAME' lists a grader's options",
        key_value, group=GRADING, many=True, metavar="KEY=VALUE", ini="exam_grader_options")
    cache: Path | None = declare(
        "cache", Path(".exam-cache/grades.sqlite"), "SQLite grade cache file; 'none' keeps grades in memory only",
        path_or_none, group=GRADING, path=True, metavar="PATH")
    cache_text: str = declare(
        "cache-text", "keep", "What the grade cache keeps beside each grade: 'keep' (the grader's answer and the "
        "answer it extracted, each grade's reason in the reports) or 'none' (grades only: no answer text, which may "
        "quote the graded passage, is stored; a data policy that lets no report text leave the run)",
        choice("keep", "none"), group=GRADING, metavar="TEXT")
    batch_size: int | None = declare("batch-size", None, "Pairs per grading batch (default: the grader's)",
                                     integer(1, MAX_BATCH_SIZE), group=GRADING, metavar="N")
    device: str | None = declare("device", None, "Device for model graders, e.g. cpu or cuda:0 (default: automatic)",
                                 group=GRADING)
    no_progress: bool = declare("no-progress", False, "Do not draw the grading progress bar", group=GRADING, flag=True)

    # scoring
    min_grade: tuple[int, ...] = declare(
        "min-grade", (), "Minimum grade tau that counts a test point as answered; subcommands take several "
        "(default: the grader's own: 4 for 0..5 graders, 1 for binary ones)", integer(1, 5), group=SCORING,
        nargs="+", metavar="TAU")
    k: int = declare("k", 20, "Rank cut-off: only each run's top-k passages take the exam",
                     integer(1, MAX_RANK_CUTOFF), group=SCORING)
    qrels_m: int = declare("qrels-m", 2, "m of the 'at least m test points >= tau' qrels label",
                           integer(1, MAX_QRELS_M),
                           group=SCORING, metavar="M")
    pool: str = declare(
        "pool", "judged", "Pool of n-EXAM's normaliser and of the qrels: 'judged' (every run's top-k plus the judged "
        "and recorded-graded passages, as the method defines it) or 'top-k' (every run's top-k only)",
        choice(*POOLS), group=SCORING)
    tie_order: str = declare(
        "tie-order", "score", "Order of a run's passages for trec_eval measures: 'score' as trec_eval orders a run "
        "(score descending, ties by passage id descending; a run without distinct scores keeps its rank column), "
        "so the figures equal trec_eval's, or 'rank' (the rank column); EXAM-Cover always reads the rank column",
        choice("score", "rank"), group=SCORING, metavar="ORDER")
    n_exam_empty: str = declare(
        "n-exam-empty", "skip", "n-EXAM on a query whose pool covers no test point: 'skip' leaves the query out of "
        "the mean, 'zero' scores it 0 (as the reference implementation of the method does)",
        choice("skip", "zero"), group=SCORING, metavar="EMPTY")
    labels: tuple[str, ...] = declare(
        "labels", LABEL_VARIANTS, "EXAM-Qrels label variants", choice(*LABEL_VARIANTS), group=SCORING, nargs="+",
        many=True, metavar="VARIANT", ini="exam_labels")
    measures: tuple[str, ...] = declare(
        "measures", TREC_MEASURES, "Measures beside EXAM-Cover and n-EXAM, by name: any trec_eval measure over "
        "EXAM-Qrels as pytrec_eval takes it (ndcg_cut.5, recip_rank, P@10, success.10; computed per label "
        "variant), exam-cover@10, n-exam-cover(tau=3)@20, alpha-ndcg@10, or a plugin's measure; repeatable",
        group=SCORING, nargs="+", many=True, metavar="MEASURE")
    relevance_level: int = declare(
        "relevance-level", 2, "Judgment level counted relevant when grades meet human judgments: 2 for TREC DL, "
        "1 for CAR", integer(0, MAX_RELEVANCE_LEVEL), group=SCORING, metavar="LEVEL")

    # significance (the baseline gate in pytest, --baseline in evaluate)
    baseline: str | None = declare(
        "baseline", None, "Compare every run with this run by a paired test over queries; pytest fails a run that "
        "is significantly worse (default: no baseline)", group=SIGNIFICANCE, metavar="RUN")
    alpha: float = declare("alpha", 0.05, "Significance level of the baseline comparison",
                           significance_level, group=SIGNIFICANCE)
    significance: str = declare("significance", "permutation", "Paired test of the baseline comparison",
                                choice(*SIGNIFICANCE_TESTS), group=SIGNIFICANCE)
    resamples: int = declare("resamples", 10000, "Resamples of the paired tests", integer(1, MAX_RESAMPLES),
                             group=SIGNIFICANCE, metavar="N")

    # gates and reports of the pytest session
    fail_under: tuple[Threshold, ...] = declare(
        "fail-under", (), "Fail the session when a run's score is below a threshold: [RUN=][MEASURE:]VALUE, "
        "e.g. 0.5 (every run's EXAM-Cover), my-rag=0.6 (one run), nugget-f:0.3 or V_strict:0.4 (another measure; "
        "A ... W_strict with TREC RAG nuggets), 0.5@2of3 (EXAM-Cover of verdicts holding in 2 of the judge's 3 "
        "samples, grader option repeats=3), my-rag=latency-p95:2.5 (a live system's latency-p50 or latency-p95 in "
        "seconds, tokens or cost from its manifest: fails when ABOVE the limit), cascade-kept:0.95 (the cascade "
        "grader's 95% lower bound of the share of its decider's passes kept, for the session); repeatable, "
        "a run's own threshold replaces the default for that measure (default: no gate)",
        parse_threshold, group=GATES, metavar="[RUN=][MEASURE:]X[@MofK]", many=True)
    required_runs: tuple[str, ...] = declare(
        "required-runs", (), "Runs that test points marked 'required: true' are required of, by name or pattern "
        "(my-rag, rag-*); repeatable; a bank's 'required: [RUN, ...]' names its own; the --exam-baseline run is "
        "never required to answer (default: every run)", text, group=GATES, many=True, metavar="RUN")
    save: str | None = declare(
        "save", None, "Keep this session's report in the history folder as NNNN_NAME.json (default: not kept)",
        _save_name, group=GATES, fronts=("pytest",), metavar="NAME")
    autosave: bool = declare("autosave", False, "Keep every session's report in the history folder "
                             "(named by date and time)", group=GATES, flag=True, fronts=("pytest",))
    history_dir: Path = declare("history-dir", Path(".exam-history"), "Folder of kept reports (plain JSON, for git)",
                                Path, group=GATES, path=True, metavar="DIR")
    compare: str | None = declare(
        "compare", None, "Compare every run with a kept report: latest (the bare flag), a number NNNN, a name, or a "
        "report file (default: no comparison)", text, group=GATES, metavar="REF", const="latest")
    compare_required: bool = declare(
        "compare-required", False, "Make a missing kept report an error for --exam-compare (default: a first run "
        "with nothing kept warns and goes on without the comparison)", group=GATES, flag=True)
    compare_fail: tuple[Allowance, ...] = declare(
        "compare-fail", (), "Fail a run that dropped against the compared report: MEASURE:DROP (absolute) or "
        "MEASURE:PCT% (relative), e.g. exam-cover:0.05 or exam-cover:5%; repeatable (default: report only)",
        parse_allowance, group=GATES, metavar="MEASURE:DROP", many=True)
    markdown: Path | None = declare(
        "markdown", None, "Write a markdown summary (leaderboard, gates, regressions, missed required test points) "
        "here, e.g. for a PR comment; also appended to $GITHUB_STEP_SUMMARY when that is set (default: none)",
        Path, group=REPORTS, path=True, metavar="FILE")
    html: Path | None = declare(
        "html", None, "Write a self-contained HTML report (leaderboard, per-query heatmap, grade distributions, "
        "drill-down to missed test points) into this folder (default: none)", Path, group=REPORTS, path=True,
        metavar="DIR")
    report_dir: Path | None = declare(
        "report-dir", Path("reports"), "Folder for qrels and the JSON report; 'none' writes none", path_or_none,
        group=REPORTS, path=True, metavar="DIR")
    redact: bool = declare(
        "redact", False, "Treat every bank as secret: outputs carry no test point text, gold or extracted answer "
        "(default: only banks marked 'secret: true')", group=REPORTS, flag=True)
    analysis: tuple[str, ...] = declare(
        "analysis", (), "Print an analysis section after the leaderboard: verify, missing, spurious or agreement; "
        "repeatable (default: none)", choice(*ANALYSES), group=REPORTS, many=True, fronts=("pytest",))
    max_fallbacks: float = declare(
        "max-fallbacks", 0.05, "Largest share (0..1) of a run's grades that a fallback rule may read from answers "
        "holding no grade (an LLM's 'I cannot rate this.' read as grade 1); above it the run's scores are "
        "incomplete and the session fails", number(0, 1), group=GATES, metavar="SHARE")
    strict_fallbacks: bool = declare(
        "strict-fallbacks", False, "An answer holding no grade is a pair that could not be graded, never a grade "
        "read by a fallback rule", group=GRADING, flag=True, fronts=("pytest",))
    shard: tuple[int, int] | None = declare(
        "shard", None, "Grade only shard I of N of the pool (by passage: shards never overlap, reruns are "
        "stable) into the cache, then stop without scoring; merge the shards' caches with exam-harness cache "
        "merge (docs/shards.md)", shard, group=GRADING, fronts=("pytest",), metavar="I/N")
    grade_missing: bool = declare(
        "grade-missing", False, "Grade the pairs a sharded cache lacks (a shard whose cache was not merged) in this "
        "session instead of refusing them with the shard they are of (docs/shards.md)", group=GRADING, flag=True)
    dry_run: bool = declare(
        "dry-run", False, "Print how many grader calls and tokens (and, with prices, what cost) the session would "
        "spend, then stop without grading", group=GRADING, flag=True, fronts=("pytest",))
    cases: str = declare(
        "cases", "test-point", "One pytest case per test point and run ('test-point'), or per query and run "
        "('query': its outcome lists the test points answered and missed; for exams past ~100k cases); reports "
        "and scores are the same either way", choice("test-point", "query"), group=INPUTS, fronts=("pytest",),
        metavar="CASE")
    runs: tuple[Path, ...] = declare(
        "runs", (Path("runs"),), "Run file or folder of systems taking the exam; repeatable", Path, group=INPUTS,
        many=True, path=True, fronts=("pytest",), metavar="PATH")
    strict_queries: bool = declare(
        "strict-queries", False, "A query that a run ranks but no bank covers is a usage error naming the run file "
        "and line (default: a note naming its nearest bank query, e.g. 'sizng' ~ 'sizing')", group=INPUTS,
        flag=True, fronts=("pytest",))

    # evaluate
    official: Path | None = declare("official", None, "Official leaderboard {run: rank} to correlate with "
                                    "(default: none)", Path, group=EVALUATE, path=True, fronts=("cli",),
                                    metavar="LEADERBOARD_JSON")
    bootstrap: int = declare("bootstrap", 1000, "Bootstrap resamples for each score's confidence interval; 0 for none",
                             integer(0, MAX_RESAMPLES), group=EVALUATE, fronts=("cli",), metavar="N")
    confidence: float = declare("confidence", 0.95, "Confidence of the intervals",
                                number(0, 1, open_low=True, open_high=True), group=EVALUATE, fronts=("cli",))
    seed: int = declare("seed", 0, "Seed of every resampling", integer(), group=EVALUATE, fronts=("cli",))
    beta: float = declare("beta", 3.0, "beta of nugget F", number(0, open_low=True), group=EVALUATE, fronts=("cli",))
    redundancy_alpha: float = declare("redundancy-alpha", 0.5, "alpha of alpha-nDCG", number(0, 1), group=EVALUATE,
                                      fronts=("cli",))
    nugget_f: bool = declare("nugget-f", False, "Add the nugget F leaderboard also for question banks (default: for "
                             "nugget banks only)", group=EVALUATE, flag=True, fronts=("cli",))
    no_alpha_ndcg: bool = declare("no-alpha-ndcg", False, "Leave out alpha-nDCG@k (computed by default by pytest "
                                  "and evaluate alike)", group=SCORING, flag=True)
    per_query: bool = declare("per-query", False, "Write per-query values into the JSON", group=EVALUATE, flag=True,
                              fronts=("cli",))
    llm: str | None = declare("llm", None, "Recorded grades: the grading run's model (default: the only one in the "
                              "files)", group=RECORDED, fronts=("cli",))
    prompt_class: str | None = declare("prompt-class", None, "Recorded grades: the grading run's prompt class "
                                       "(default: the only one)", group=RECORDED, fronts=("cli",))

    # the values of the options features declare (pytest_exam_add_options): (name, value) pairs, read by
    # :meth:`feature`; not an option itself
    feature_values: tuple[tuple[str, Any], ...] = ()

    def feature(self, option: FeatureOption[T]) -> T:
        """The value of an option a feature declared (its default where the front end did not read it)."""
        for name, value in self.feature_values:
            if name == option.name:
                return cast(T, value)
        return option.default

    @property
    def grader_options(self) -> dict[str, str]:
        return dict(self.grader_option)

    @property
    def required_scope(self) -> RequiredScope:
        """The runs required test points apply to (``--exam-required-runs``) and the baseline run that never fails."""
        return RequiredScope(self.required_runs, (self.baseline,) if self.baseline else ())


def specs(groups: Iterable[str] | None = None, front: Front | None = None) -> list[tuple[str, OptionSpec]]:
    """``(field name, spec)`` of the options in ``groups`` (all if None) available on ``front``: the fields of
    :class:`ExamOptions`, then the options the front end's features declared (:func:`use_feature_options`)."""
    return _selected([*_core_specs(), *((o.name, o.spec) for o in _features.values())], groups, front)


def _core_specs() -> list[tuple[str, OptionSpec]]:
    """``(field name, spec)`` of every field of :class:`ExamOptions` (the features' options apart)."""
    return [(f.name, f.metadata["option"]) for f in fields(ExamOptions) if "option" in f.metadata]


def _selected(found: Iterable[tuple[str, OptionSpec]], groups: Iterable[str] | None,
              front: Front | None) -> list[tuple[str, OptionSpec]]:
    wanted = set(groups) if groups is not None else None
    return [(name, spec) for name, spec in found
            if (wanted is None or spec.group in wanted) and (front is None or front in spec.fronts)]


def in_tree_options() -> list[FeatureOption[Any]]:
    """The options the in-tree features declare (their ``pytest_exam_add_options`` alone, core/host.py), collected
    without making them this process's schema: docs/options.md lists them beside the fields'."""
    from exam_harness.core.host import in_tree_hook

    collected = FeatureOptions(schema=False)
    in_tree_hook().pytest_exam_add_options.call_historic(kwargs={"options": collected})
    return list(collected.declared.values())


def default_of(name: str, front: Front = "pytest") -> Any:
    """The default of field ``name`` on a front end (the one place defaults are read from)."""
    for f in fields(ExamOptions):
        if f.name == name and "option" in f.metadata:
            spec: OptionSpec = f.metadata["option"]
            if front == "cli" and spec.cli_default is not None:
                return spec.cli_default
            return f.default
    if name in _features:
        option = _features[name]
        return option.spec.cli_default if front == "cli" and option.spec.cli_default is not None else option.default
    raise KeyError(name)


# --- options a feature declares (hook pytest_exam_add_options) ------------------------------------


@dataclass(frozen=True)
class FeatureOption(Generic[T]):
    """An option a feature adds to the one schema (:func:`feature_option` makes it): ``--exam-NAME`` and the ini
    key ``exam_NAME`` in pytest, ``--NAME`` on the subcommands of its ``group`` (``fronts`` as for every option);
    its value is ``options.feature(OPTION)``. ``name`` is the option's name with underscores."""

    name: str
    default: T
    spec: OptionSpec


def feature_option(name: str, default: T, help: str, convert: Converter = text, *, group: str,
                   **kwargs: Any) -> FeatureOption[T]:
    """A feature's option, declared as an :class:`ExamOptions` field is (:func:`declare`'s arguments)."""
    spec = OptionSpec(name=name, help=help, convert=convert, group=group, **kwargs)
    if isinstance(default, (list, dict)):
        raise TypeError("option defaults must be immutable (tuples)")
    return FeatureOption(spec.dest, default, spec)


_FIELDS = frozenset(f.name for f in fields(ExamOptions))


class FeatureOptions:
    """What ``pytest_exam_add_options`` hands a feature: ``add(option)`` declares one. Made once per pytest session
    or command, it starts the features' part of the schema afresh (:func:`specs` and the readers see what was
    added since); ``on_add`` (pytest's) adds each option to the command line as it is declared (a conftest.py
    pytest loads later declares its own then). With ``schema=False`` it only collects them (the docs' table)."""

    def __init__(self, on_add: Callable[[FeatureOption[Any]], None] | None = None, *, schema: bool = True) -> None:
        self.declared: dict[str, FeatureOption[Any]] = {}
        self._on_add = on_add
        self._schema = schema
        if schema:
            _features.clear()

    def add(self, option: FeatureOption[Any]) -> None:
        taken = {spec.name for _, spec in (specs() if self._schema else _core_specs())}
        taken |= {o.spec.name for o in self.declared.values()}
        if option.name in _FIELDS or option.spec.name in taken:
            raise ConfigError(f"option --{option.spec.name} is declared twice (a feature's option must have a name of "
                              "its own)")
        self.declared[option.name] = option
        if self._schema:
            _features[option.name] = option  # the schema the front end reads: this command's or session's
        if self._on_add is not None:
            self._on_add(option)


_features: dict[str, FeatureOption[Any]] = {}


def reset_feature_options() -> None:
    """The schema without feature options (a session's or command's plugins end with it)."""
    _features.clear()


def _options(values: Mapping[str, Any]) -> ExamOptions:
    """:class:`ExamOptions` from field -> value, the features' values apart."""
    features = tuple((name, value) for name, value in values.items() if name not in _FIELDS)
    return ExamOptions(**{k: v for k, v in values.items() if k in _FIELDS}, feature_values=features)


def help_text(name: str, spec: OptionSpec, front: Front) -> str:
    default = default_of(name, front)
    if "(default:" in spec.help or spec.flag:
        return spec.help + "."
    if isinstance(default, tuple):
        shown = " ".join(str(v) for v in default) if default else "none"
    else:
        shown = "none" if default is None else str(default)
    return f"{spec.help} (default: {shown})."


def _convert(spec: OptionSpec, raw: str, where: str) -> Any:
    try:
        return spec.convert(raw)
    except ValueError as exc:
        from exam_harness.io.limits import quoted

        raise ConfigError(f"{where} {exc}, got {quoted(raw)}") from None  # cut: a value may be 10,000 characters


def _resolve(value: Any, spec: OptionSpec, base: Path) -> Any:
    if not spec.path:
        return value
    if isinstance(value, tuple):
        return tuple(_resolve(v, spec, base) for v in value)
    if isinstance(value, Path) and not value.is_absolute():
        return base / value
    return value


# --- pytest -------------------------------------------------------------------------------------


def argparse_help(text: str) -> str:
    """``text`` for argparse's help, which %-formats it (``%(default)s``): a literal ``%`` doubled."""
    return text.replace("%", "%%")


def add_pytest_options(parser: Any, groups: Iterable[str] | None = None) -> None:
    """Register ``--exam-NAME`` options and ``exam_NAME`` ini keys in pytest's ``parser``."""
    for name, spec in specs(groups, "pytest"):
        add_pytest_option(parser, name, spec)


def add_pytest_option(parser: Any, name: str, spec: OptionSpec) -> None:
    """Register one option (field ``name``) as ``--exam-NAME`` and ``exam_NAME`` in pytest's ``parser``."""
    if "pytest" not in spec.fronts:
        return
    group = parser.getgroup("exam", "exam-harness: exam-based evaluation of retrieval and RAG systems")
    help_ = help_text(name, spec, "pytest")
    # pytest prints ini help as it is; argparse formats option help with %.
    if spec.flag:
        group.addoption(f"--exam-{spec.name}", dest=f"exam_{spec.dest}", action="store_true", default=None,
                        help=argparse_help(help_))
        parser.addini(spec.ini_name, help_, type="bool", default=None)
    else:
        optional: dict[str, Any] = {"nargs": "?", "const": spec.const} if spec.const is not None else {}
        group.addoption(f"--exam-{spec.name}", dest=f"exam_{spec.dest}", action="append" if spec.many else None,
                        default=None, metavar=spec.metavar, help=argparse_help(help_), **optional)
        parser.addini(spec.ini_name, help_, type="linelist" if spec.many else "string", default=None)


def options_from_pytest(config: Any, groups: Iterable[str] | None = None) -> ExamOptions:
    """:class:`ExamOptions` from a pytest config: the command line, else the ini file, else the default.

    Relative paths resolve against the invocation folder (command line) or the rootdir (ini, default).
    """
    root = Path(config.rootpath)
    invocation = Path(config.invocation_params.dir)
    values: dict[str, Any] = {}
    for name, spec in specs(groups, "pytest"):
        cli = config.getoption(f"exam_{spec.dest}", default=None)
        if cli not in (None, []):
            where, base = f"--exam-{spec.name}", invocation
            raws: Any = cli
        else:
            ini = config.getini(spec.ini_name)
            if ini in (None, "", []):
                values[name] = _resolve(default_of(name), spec, root)
                continue
            where, base, raws = f"ini option {spec.ini_name!r}", root, ini
        values[name] = _resolve(_value(spec, raws, where), spec, base)
    return _options(values)


def _value(spec: OptionSpec, raws: Any, where: str) -> Any:
    if spec.flag:
        return bool(raws)
    items = [str(r) for r in raws] if isinstance(raws, list) else [str(raws)]
    converted = tuple(_convert(spec, item, where) for item in items)
    if spec.many or spec.nargs:
        return converted
    return converted[-1]


# --- subcommands --------------------------------------------------------------------------------


def add_cli_options(parser: argparse.ArgumentParser, groups: Iterable[str], *,
                    only: Sequence[str] | None = None, defaults: Mapping[str, Any] | None = None) -> None:
    """Register ``--NAME`` options of ``groups`` (``only`` these fields, if given) on a subcommand's
    parser; values stay raw strings until :func:`options_from_cli`. ``defaults`` are a subcommand's own
    defaults where its purpose needs another one (shown in the help)."""
    for name, spec in specs(groups, "cli"):
        if only is not None and name not in only:
            continue
        help_ = help_text(name, spec, "cli")
        if defaults and name in defaults:
            help_ = help_.split(" (default:")[0].rstrip(".") + f" (default: {defaults[name]})."
        help_ = argparse_help(help_)
        if spec.flag:
            parser.add_argument(f"--{spec.name}", dest=spec.dest, action="store_true", default=None, help=help_)
        elif spec.nargs:  # several values after one flag; a repeatable option's flags add theirs up
            parser.add_argument(f"--{spec.name}", dest=spec.dest, nargs=spec.nargs, default=None,
                                action="extend" if spec.many else "store", metavar=spec.metavar, help=help_)
        else:
            optional: dict[str, Any] = {"nargs": "?", "const": spec.const} if spec.const is not None else {}
            parser.add_argument(f"--{spec.name}", dest=spec.dest, action="append" if spec.many else "store",
                                default=None, metavar=spec.metavar, help=help_, **optional)


def options_from_cli(args: argparse.Namespace, groups: Iterable[str], *,
                     defaults: Mapping[str, Any] | None = None) -> ExamOptions:
    """:class:`ExamOptions` from a subcommand's parsed arguments (relative paths against the current folder)."""
    base = Path.cwd()
    values: dict[str, Any] = {}
    for name, spec in specs(groups, "cli"):
        raw = getattr(args, spec.dest, None)
        if raw in (None, []):
            default = defaults[name] if defaults and name in defaults else default_of(name, "cli")
            values[name] = _resolve(default, spec, base)
        else:
            values[name] = _resolve(_value(spec, raw, f"--{spec.name}"), spec, base)
    return _options(values)



# --- a subcommand's own arguments ------------------------------------------------------------------


@dataclass(frozen=True)
class Argument:
    """An argument of one or a few subcommands (not an option of both front ends, which is a field of
    :class:`ExamOptions`), declared once with the converters above: its bounds and messages are those of
    every option (``argument --limit: must be an integer >= 0``). ``convert`` None: a switch."""

    name: str  # --NAME; a positional argument's name when ``positional``
    help: str
    convert: Converter | None = text
    default: Any = None
    nargs: str | None = None
    many: bool = False  # repeatable (argparse's append; with nargs, extend)
    metavar: str | None = None
    required: bool = False
    positional: bool = False
    dest: str | None = None
    short: str | None = None  # a one-letter alias, e.g. "o" for -o

    def add_to(self, parser: argparse.ArgumentParser, **changes: Any) -> None:
        """Add this argument to a subcommand's ``parser`` (``changes``: fields that differ there)."""
        spec = replace(self, **changes) if changes else self
        kwargs: dict[str, Any] = {"help": argparse_help(spec.help)}
        if spec.convert is None:
            kwargs.update(action="store_true", default=bool(spec.default))
        else:
            kwargs.update(type=_argparse_type(spec.convert), default=spec.default, metavar=spec.metavar)
            if spec.nargs is not None:
                kwargs["nargs"] = spec.nargs
            if spec.many:  # repeatable: each time one value, or several after one flag (nargs)
                kwargs["action"] = "extend" if spec.nargs is not None else "append"
        if spec.positional:
            parser.add_argument(spec.name, **kwargs)
            return
        if spec.required:
            kwargs["required"] = True
        flags = ([f"-{spec.short}"] if spec.short else []) + [f"--{spec.name}"]
        parser.add_argument(*flags, dest=spec.dest or spec.name.replace("-", "_"), **kwargs)


def _argparse_type(convert: Converter) -> Converter:
    """``convert`` for argparse: its ValueError reason becomes the usage error's message."""

    def parse(raw: str) -> Any:
        try:
            return convert(raw)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc) or "is invalid") from None

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def output_path(raw: str) -> Path:
    """A file to write: any non-empty path."""
    return Path(text(raw))


def cosine_grid(raw: str) -> tuple[float, ...]:
    """``LOW:HIGH:STEP`` -> the values LOW, LOW+STEP, ..., HIGH (rounded to 6 decimals), within -1..1."""
    try:
        low, high, step = (float(x) for x in raw.split(":"))
    except ValueError:
        raise ValueError("must be LOW:HIGH:STEP, e.g. 0.30:0.80:0.01") from None
    if not (-1 <= low <= high <= 1 and step > 0):
        raise ValueError("needs -1 <= LOW <= HIGH <= 1 and STEP > 0")
    count = round((high - low) / step) + 1
    if count > 10_000:
        raise ValueError(f"has {count} points; at most 10000")
    return tuple(round(low + i * step, 6) for i in range(count))


# Arguments several subcommands share, each written once.
JSON_OUT = Argument("json", "Write the analysis as JSON.", output_path, metavar="OUT")
ROW_LIMIT = Argument("limit", "Rows shown per table; 0 for all (default: 20).", integer(0), default=20)
RUN_FILES = Argument("runs", "Workbench paragraph file(s) (.jsonl[.gz]), or TREC runs with a collection.", Path,
                     nargs="+", metavar="RUN_FILE", positional=True)
PYTEST_ARGS = Argument("pytest_args", "Arguments for pytest.", str, nargs=argparse.REMAINDER, positional=True)
BANK_FILES = Argument("bank", "Bank file of the test points, or a folder searched for bank files as pytest searches "
                      "banks/; repeatable (default: the test points of the recorded grades).", Path, default=[],
                      many=True, metavar="BANK")

def documented_options(groups: Iterable[str] | None = None,
                       front: Front = "pytest") -> list[tuple[str, OptionSpec, Any]]:
    """``(name, spec, default)`` of every option docs/options.md lists: the fields of :class:`ExamOptions`, then
    the in-tree features' options (:func:`in_tree_options`), whatever plugins this process has loaded."""
    features = {o.name: o for o in in_tree_options()}
    found = _selected([*_core_specs(), *((o.name, o.spec) for o in features.values())], groups, front)
    return [(name, spec, default_of(name, front) if name not in features else features[name].default)
            for name, spec in found]


def readme_table(groups: Iterable[str] | None = None, front: Front = "pytest") -> str:
    """The option table of docs/options.md (markdown), made from the schema so the two cannot drift apart
    (``tests/project/test_docs.py`` compares them; ``python -m exam_harness.config.options`` prints it): the
    options :func:`documented_options` lists."""
    rows = ["| option | ini | default | meaning |", "| --- | --- | --- | --- |"]
    for _name, spec, value in documented_options(groups, front):
        # The = form: pytest may read a value given after a space as a test path (check_swallowed_values).
        flag = f"--exam-{spec.name}" + ("" if spec.flag else f"={spec.metavar or spec.dest.upper()}")
        if spec.const is not None:
            flag = f"--exam-{spec.name}[={spec.metavar or spec.dest.upper()}]"
        meaning, sep, shown = spec.help.rpartition(" (default: ")
        if sep:
            default = shown.removesuffix(")")
        else:
            meaning = spec.help
            if spec.flag:
                default = "off"
            elif isinstance(value, tuple):
                default = " ".join(str(v) for v in value) if value else "–"
            else:
                default = "–" if value is None else str(value)
        rows.append(f"| `{flag}` | `{spec.ini_name}` | {default} | {meaning.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(readme_table(PYTEST_GROUPS), end="")
