"""exam-harness: a pytest-native exam-based evaluation harness for retrieval and RAG systems."""

from __future__ import annotations

import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any

from exam_harness.core.version import __version__

if TYPE_CHECKING:
    from exam_harness.core.models import Query
    from exam_harness.features.live_systems.declare import (
        Answer,
        Passage,
        Secret,
        Sentence,
        command_system,
        http_system,
        system,
    )

# The package's public names, above every layer (ARCHITECTURE.md, Layers): nothing in the package imports them
# from here, and `import exam_harness` loads only core/version.py (the rest on first use, below); the live-system
# declarations are the live-systems feature's (exam_harness/features/live_systems). The declared plugin surface
# is exam_harness.api.
__all__ = ["Answer", "Passage", "Query", "Secret", "Sentence", "__version__", "command_system", "http_system", "system"]
_LAZY = {"Query": "exam_harness.core.models", **dict.fromkeys(
    ("Answer", "Passage", "Secret", "Sentence", "command_system", "http_system", "system"),
    "exam_harness.features.live_systems.declare")}

# Module paths that moved (issue 36), still importable with a DeprecationWarning: old -> new.
MOVED: dict[str, str] = {
    **{f"exam_harness.{old}": f"exam_harness.{new}" for old, new in {
        "version": "core.version", "paths": "core.paths", "errors": "core.errors", "display": "core.display",
        "redaction": "core.redaction", "registry": "core.registry", "parsing": "core.grade_parsing",
        "progress": "core.progress", "models": "core.models", "answers": "core.answers",
        "verdicts": "core.case_verdicts", "options": "config.options", "gates": "config.gates",
        "inputs": "exam.inputs", "plan": "exam.plan", "preflight": "results.preflight", "cache": "grading.cache",
        "grading_setup": "grading.setup", "batch_grading": "grading.batches", "cache_merge": "grading.merge",
        "results.writers": "report.writers", "sections.significance": "features.significance.section",
        # stage 2: the live-systems, cost and flips features
        "systems": "features.live_systems", **{f"systems.{name}": f"features.live_systems.{name}" for name in (
            "answers", "calling", "declare", "fingerprint", "forms", "health", "reads", "recording", "secrets",
            "session")},
        "sections.live_systems": "features.live_systems.section",
        "sections.system_costs": "features.live_systems.costs",
        "pytest_plugins.systems": "features.live_systems.pytest_session", "cli.record": "features.live_systems.record",
        "sections.cost": "features.cost.section", "results.flips": "features.flips.flips",
        "sections.flips": "features.flips.section",
    }.items()},
    # issue 36, stage 2: the features' modules into their folders (exam_harness/features/NAME)
    **{f"exam_harness.{old}": f"exam_harness.features.{new}" for old, new in {
        "io.trec_rag": "trec_rag.answers", "io.nuggetizer": "trec_rag.nuggets",
        "io.assignments": "trec_rag.assignments", "measures.trec_rag": "trec_rag.measures",
        "results.trec_rag": "trec_rag.document", "report.trec_rag": "trec_rag.writers",
        "sections.trec_rag": "trec_rag.section", "sections.trec_rag_agreement": "trec_rag.agreement_section",
        "analysis.trec_rag_agreement": "trec_rag.agreement", "cli.evaluate_assignments": "trec_rag.track_dir",
        "sections.external_qrels": "external_qrels.section",
        "generate": "generate.generation", "cli.generate": "generate.command",
        "sections.judge_variance": "judge_variance.section",
        "support": "citation_support.credits", "sections.agreement": "agreement.section",
        "workbench_grades": "workbench.grades", "cli.import_grades": "workbench.command",
    }.items()},
    "exam_harness.cli.grades": "exam_harness.session.grades",
    # AutoJudge: workflows name its judge class by module path, ``python -m`` runs its modules (docs/autojudge.md)
    **{f"exam_harness.autojudge{old}": f"exam_harness.features.autojudge{old}" for old in (
        "", ".judge", ".convert", ".offline", ".nltk_offline", ".__main__")},
}


def __getattr__(name: str) -> Any:
    # the declarations of live systems (docs/live-systems.md), imported on first use: `import exam_harness`
    # stays as light as the command line needs
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'exam_harness' has no attribute {name!r}")


class _MovedModules:
    """Finds a moved module's old name as its new module, with a DeprecationWarning that names the new path. First
    on ``sys.meta_path``, it claims the old names alone: no other finder (an editable install's of another checkout)
    answers them with a file of the old layout. ``python -m OLD`` runs the new module's code (``get_code``, as runpy
    asks). (A meta path finder and loader by their methods: importlib.abc would cost the command line's start ~25
    ms.)"""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}  # new module name -> its own spec

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        import importlib.util

        loader: Any = self  # a loader by its methods (see the class docstring)
        new = importlib.util.find_spec(MOVED[fullname])
        package = new is not None and new.submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, loader, is_package=package)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        import importlib

        new = MOVED[spec.name]
        _warn_moved(spec.name, new)
        module = importlib.import_module(new)
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the new module, already run; the import system gave it the old name's spec: its own back
        if module.__name__ in self._specs:
            module.__spec__ = self._specs.pop(module.__name__)

    def get_code(self, fullname: str) -> Any:
        """The new module's code, for ``python -m`` of the old name (runpy runs it as ``__main__``)."""
        import importlib.util

        new = MOVED[fullname]
        _warn_moved(fullname, new)
        spec = importlib.util.find_spec(new)
        loader: Any = spec.loader if spec is not None else None
        return loader.get_code(new) if loader is not None else None


def _warn_moved(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new} (import it from there, or a plugin's names from exam_harness.api)",
                  DeprecationWarning, stacklevel=3)


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())
