"""exam-harness: a pytest-native exam-based evaluation harness for retrieval and RAG systems."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from exam_harness.core.version import __version__

if TYPE_CHECKING:
    from exam_harness.core.models import Query
    from exam_harness.systems.declare import Answer, Passage, Secret, Sentence, command_system, http_system, system

# The package's public names, above every layer (ARCHITECTURE.md, Layers): nothing in the package imports them
# from here, and `import exam_harness` loads only core/version.py (the rest on first use, below).
__all__ = ["Answer", "Passage", "Query", "Secret", "Sentence", "__version__", "command_system", "http_system", "system"]
_LAZY = {"Query": "exam_harness.core.models", **dict.fromkeys(
    ("Answer", "Passage", "Secret", "Sentence", "command_system", "http_system", "system"),
    "exam_harness.systems.declare")}


def __getattr__(name: str) -> Any:
    # the declarations of live systems (docs/live-systems.md), imported on first use: `import exam_harness`
    # stays as light as the command line needs
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'exam_harness' has no attribute {name!r}")
