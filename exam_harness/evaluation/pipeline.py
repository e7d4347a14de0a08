"""From files to grades: load runs and banks, then replay recorded grades or grade with a grader.

Shared by ``exam-harness evaluate`` and ``exam-harness analyze``; usable as a library::

    loaded = load_runs([Path("dl19-graded.jsonl.gz")])
    view, table = obtain_grades(loaded.data, GradeSource())  # replay the recorded grades
    result = compute_leaderboards(view, table, EvaluationSettings(min_grades=[3, 4, 5]), official=...)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exam_harness.errors import ConfigError
from exam_harness.evaluation.grades import GradeTable, ProgressFactory, regrade, replay
from exam_harness.evaluation.inputs import ExamView
from exam_harness.graders.base import GraderConfig
from exam_harness.graders.registry import GraderRegistry, default_registry
from exam_harness.models import ExamData, QueryBank
from exam_harness.settings import parse_key_values

DEFAULT_CACHE = Path(".exam-cache/grades.sqlite")


@dataclass
class GradeSource:
    """Where grades come from. Without ``grader``: the recorded grading run chosen by ``llm`` /
    ``prompt_class`` (test points from ``banks`` when given). With ``grader``: that grader grades
    every pool pair of ``banks`` through the cache at ``cache`` (None keeps grades in memory)."""

    banks: list[QueryBank] = field(default_factory=list)
    grader: str | None = None
    grader_options: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    cache: Path | None = DEFAULT_CACHE
    llm: str | None = None
    prompt_class: str | None = None
    batch_size: int | None = None
    device: str | None = None
    k: int = 20


def grader_registry() -> GraderRegistry:
    """Built-in graders plus those installed plugins (``pytest11`` entry points) register through
    ``pytest_exam_register_graders``.

    The hook is called directly on each plugin module: a bare pluggy manager does not recognise
    the un-decorated hook specs, and a full pytest plugin manager is not needed outside pytest.
    """
    from importlib.metadata import entry_points

    registry = default_registry()
    for entry in entry_points(group="pytest11"):
        try:
            plugin = entry.load()
        except ImportError as exc:
            raise ConfigError(f"pytest plugin {entry.name!r} ({entry.value}) cannot be imported: {exc}") from exc
        hook = getattr(plugin, "pytest_exam_register_graders", None)
        if callable(hook):
            hook(registry=registry)
    return registry


def load_banks(paths: Sequence[Path]) -> list[QueryBank]:
    from exam_harness.io import load_bank

    banks: list[QueryBank] = []
    for path in paths:
        banks.extend(load_bank(Path(path)))
    return banks


def obtain_grades(
    data: ExamData,
    source: GradeSource,
    *,
    progress: ProgressFactory | None = None,
    registry: Callable[[], GraderRegistry] | None = None,
    only_queries: set[str] | None = None,
) -> tuple[ExamView, GradeTable]:
    """The exam view and its grades, replayed or graded as ``source`` says."""
    if source.grader is None:
        if source.grader_options or source.model:
            raise ConfigError("--grader-option and --model need --grader NAME (without it the recorded grades are replayed)")
        return replay(data, llm=source.llm, prompt_class=source.prompt_class, banks=source.banks or None)
    if not source.banks:
        raise ConfigError(f"--grader {source.grader} needs --bank BANK_FILE: the test points to grade the passages on")
    if source.llm is not None or source.prompt_class is not None:
        raise ConfigError("--llm/--prompt-class choose recorded grades; with --grader use --grader-option instead")
    from exam_harness.cache import GradeCache

    config = GraderConfig(
        model=source.model,
        options=dict(source.grader_options),
        data=data,
        batch_size=source.batch_size,
        device=source.device,
    )
    grader = (registry or grader_registry)().create(source.grader, config)
    cache = GradeCache(source.cache)
    try:
        return regrade(
            data, source.banks, grader, cache, k=source.k, chunk_size=source.batch_size, progress=progress,
            only_queries=only_queries,
        )
    finally:
        grader.close()
        cache.close()


def parse_options(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> dict; a pair without ``=`` is a ConfigError naming it."""
    return parse_key_values(list(pairs), "--grader-option")
