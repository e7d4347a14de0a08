"""Exam settings: one validated object built from command-line options and ini values.

Every option has an ini equivalent (``--exam-min-grade`` <-> ``exam_min_grade``) so that CI
configuration lives in pyproject.toml; the command line wins over the ini file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from exam_harness.errors import ConfigError

DEFAULT_GRADER = "embedding"
DEFAULT_K = 20
DEFAULT_CACHE = ".exam-cache/grades.sqlite"
LABEL_VARIANTS = ("max-grade", "count", "at-least-m")
MEASURES = ("P@20", "map", "ndcg@10", "ndcg@20", "rprec", "mrr")


class ExamSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    grader: str = DEFAULT_GRADER
    model: str | None = None
    grader_options: dict[str, str] = Field(default_factory=dict)
    min_grade: int | None = Field(default=None, ge=1, le=5)
    k: int = Field(default=DEFAULT_K, ge=1)
    qrels_m: int = Field(default=2, ge=1)
    report_dir: Path | None = Path("reports")
    cache: Path | None = Path(DEFAULT_CACHE)
    fail_under: float | None = None
    batch_size: int | None = Field(default=None, ge=1)
    device: str | None = None
    runs: list[Path] = Field(default_factory=list)
    progress: bool = True
    dry_run: bool = False
    redact: bool = False
    baseline: str | None = None
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    significance: str = "permutation"
    analyses: list[str] = Field(default_factory=list)


# (option name, ini name, help, extra argparse kwargs)
OPTIONS: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("--exam-grader", "exam_grader", f"Grader that grades passages (default: {DEFAULT_GRADER}). "
     "List them with 'exam-harness graders'.", {}),
    ("--exam-model", "exam_model", "Model name or local path for the grader (default: the grader's own).", {}),
    ("--exam-grader-option", "exam_grader_options", "Grader option KEY=VALUE; repeat for several "
     "(default: none).", {"action": "append", "default": None}),
    ("--exam-min-grade", "exam_min_grade", "Minimum grade tau that counts a test point as answered "
     "(default: the grader's, 4 for 0..5 self-ratings, 3 for embedding, 1 for binary graders).", {}),
    ("--exam-k", "exam_k", f"Cut-off: only each run's top-k passages take the exam (default: {DEFAULT_K}).", {}),
    ("--exam-qrels-m", "exam_qrels_m", "m of the 'at least m test points >= tau' qrels label (default: 2).", {}),
    ("--exam-report-dir", "exam_report_dir", "Folder for qrels and the JSON report; 'none' writes none "
     "(default: reports).", {}),
    ("--exam-cache", "exam_cache", f"SQLite grade cache file; 'none' keeps grades in memory only "
     f"(default: {DEFAULT_CACHE}).", {}),
    ("--exam-fail-under", "exam_fail_under", "Fail the session when any run's EXAM-Cover is below this "
     "value (default: no gate).", {}),
    ("--exam-baseline", "exam_baseline", "Fail the session when a run's EXAM-Cover is significantly worse than "
     "this run's (paired test over queries; default: no baseline gate).", {}),
    ("--exam-alpha", "exam_alpha", "Significance level of the baseline gate (default: 0.05).", {}),
    ("--exam-significance", "exam_significance", "Paired test of the baseline gate: permutation, bootstrap or "
     "t-test (default: permutation).", {}),
    ("--exam-analysis", "exam_analysis", "Print an analysis section after the leaderboard: verify, missing, "
     "spurious or agreement; repeat for several (default: none).", {"action": "append", "default": None}),
    ("--exam-batch-size", "exam_batch_size", "Pairs per grading batch (default: the grader's).", {}),
    ("--exam-device", "exam_device", "Device for model graders, e.g. cpu or cuda:0 (default: automatic).", {}),
    ("--exam-runs", "exam_runs", "Run file or folder of systems taking the exam; repeat for several "
     "(default: the ini value, else runs/).", {"action": "append", "default": None}),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("exam", "exam-harness: exam-based evaluation of retrieval and RAG systems")
    for option, ini, help_text, kwargs in OPTIONS:
        dest = ini if ini != "exam_grader_options" else "exam_grader_option"
        group.addoption(option, dest=dest, help=help_text, **kwargs)
        if ini in ("exam_grader_options", "exam_analysis"):
            parser.addini(ini, help_text, type="linelist", default=[])
        elif ini == "exam_runs":
            parser.addini(ini, help_text, type="paths", default=[])
        else:
            parser.addini(ini, help_text, default=None)
    parser.addini("exam_banks", "Bank files or folders collected as exams (default: banks/ when it exists).",
                  type="paths", default=[])
    group.addoption("--exam-dry-run", action="store_true", default=False,
                    help="Print how many grader calls and prompt tokens the session would spend, then stop "
                    "without grading (default: grade).")
    group.addoption("--exam-redact", action="store_true", default=None,
                    help="Treat every bank as secret: outputs carry no test point text, gold or extracted "
                    "answer (default: only banks marked 'secret: true').")
    parser.addini("exam_redact", "Treat every bank as secret (default: false).", type="bool", default=False)
    group.addoption("--exam-no-progress", action="store_true", default=False,
                    help="Do not draw the grading progress bar (default: drawn on a terminal).")


def _value(config: pytest.Config, ini: str, dest: str | None = None) -> Any:
    cli = config.getoption(dest or ini, default=None)
    if cli is not None:
        return cli, f"--{(dest or ini).replace('_', '-')}"
    return config.getini(ini), f"ini option {ini!r}"


def _number(raw: Any, where: str, kind: type, low: float | None = None) -> Any:
    if raw in (None, ""):
        return None
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} must be {'an integer' if kind is int else 'a number'}, got {raw!r}") from None
    if low is not None and value < low:
        raise ConfigError(f"{where} must be >= {low}, got {raw!r}")
    return value


def _path_or_none(raw: Any, default: Path | None, root: Path) -> Path | None:
    if raw in (None, ""):
        return default if default is None or default.is_absolute() else root / default
    if str(raw).lower() == "none":
        return None
    path = Path(str(raw))
    return path if path.is_absolute() else root / path


ANALYSES = ("verify", "missing", "spurious", "agreement")


def _choice(raw: Any, where: str, valid: tuple[str, ...]) -> str:
    value = str(raw or valid[0])
    if value not in valid:
        raise ConfigError(f"{where} must be one of {', '.join(valid)}, got {raw!r}")
    return value


def parse_key_values(items: list[str], where: str) -> dict[str, str]:
    """``["k=v", ...]`` -> dict, shared by the plugin's and the CLI's option parsing."""
    parsed: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{where} takes KEY=VALUE, got {item!r}")
        parsed[key.strip()] = value.strip()
    return parsed


def settings_from_config(config: pytest.Config) -> ExamSettings:
    root = Path(config.rootpath)
    invocation = Path(config.invocation_params.dir)
    grader, _ = _value(config, "exam_grader")
    model, _ = _value(config, "exam_model")
    min_raw, min_where = _value(config, "exam_min_grade")
    min_grade = _number(min_raw, min_where, int)
    if min_grade is not None and not 1 <= min_grade <= 5:
        raise ConfigError(f"{min_where} must be a grade in 1..5, got {min_raw!r}")
    k_raw, k_where = _value(config, "exam_k")
    m_raw, m_where = _value(config, "exam_qrels_m")
    fail_raw, fail_where = _value(config, "exam_fail_under")
    batch_raw, batch_where = _value(config, "exam_batch_size")
    device, _ = _value(config, "exam_device")
    report_raw, _ = _value(config, "exam_report_dir")
    cache_raw, _ = _value(config, "exam_cache")

    baseline, _ = _value(config, "exam_baseline")
    alpha_raw, alpha_where = _value(config, "exam_alpha")
    alpha = _number(alpha_raw, alpha_where, float)
    if alpha is not None and not 0 < alpha < 1:
        raise ConfigError(f"{alpha_where} must be between 0 and 1, got {alpha_raw!r}")
    significance, sig_where = _value(config, "exam_significance")
    analyses = config.getoption("exam_analysis") or list(config.getini("exam_analysis"))

    options = parse_key_values(list(config.getini("exam_grader_options")), "ini option 'exam_grader_options'")
    options.update(parse_key_values(config.getoption("exam_grader_option") or [], "--exam-grader-option"))

    cli_runs = config.getoption("exam_runs") or []
    if cli_runs:
        runs = [Path(p) if Path(p).is_absolute() else invocation / p for p in cli_runs]
    else:
        runs = [Path(p) for p in config.getini("exam_runs")] or ([root / "runs"] if (root / "runs").is_dir() else [])

    report_dir = _path_or_none(report_raw, Path("reports"), root)
    cache = _path_or_none(cache_raw, Path(DEFAULT_CACHE), root)
    return ExamSettings(
        grader=str(grader or DEFAULT_GRADER),
        model=str(model) if model else None,
        grader_options=options,
        min_grade=min_grade,
        k=_number(k_raw, k_where, int, 1) or DEFAULT_K,
        qrels_m=_number(m_raw, m_where, int, 1) or 2,
        report_dir=report_dir,
        cache=cache,
        fail_under=_number(fail_raw, fail_where, float),
        batch_size=_number(batch_raw, batch_where, int, 1),
        device=str(device) if device else None,
        runs=runs,
        progress=not config.getoption("exam_no_progress"),
        dry_run=bool(config.getoption("exam_dry_run")),
        redact=bool(config.getoption("exam_redact") or config.getini("exam_redact")),
        baseline=str(baseline) if baseline else None,
        alpha=_number(alpha_raw, alpha_where, float) or 0.05,
        significance=_choice(significance, sig_where, ("permutation", "bootstrap", "t-test")),
        analyses=[_choice(a, "--exam-analysis", ANALYSES) for a in analyses],
    )


def bank_paths(config: pytest.Config) -> list[Path]:
    configured = [Path(p) for p in config.getini("exam_banks")]
    if configured:
        return configured
    default = Path(config.rootpath) / "banks"
    return [default] if default.is_dir() else []
