"""Name -> grader factory registry with lazy ``"module:attr"`` entries.

Importing exam_harness never imports torch or openai: built-in graders are registered as strings
and imported only when a session asks for them. Plugins add graders through the
``pytest_exam_register_graders`` hook (or :meth:`GraderRegistry.register` when used as a library).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import Union

from exam_harness.errors import ConfigError
from exam_harness.graders.base import Grader, GraderConfig

GraderFactory = Callable[[GraderConfig], Grader]
FactoryRef = Union[str, GraderFactory]

BUILTIN_GRADERS: dict[str, tuple[str, str]] = {
    "embedding": ("exam_harness.graders.embedding:EmbeddingGrader",
                  "offline default: all-MiniLM-L6-v2 cosine similarity cut into 0..5"),
    "answer-key": ("exam_harness.graders.answer_key:AnswerKeyGrader",
                   "gold answers matched in the passage by the METHOD's answer check (1/0)"),
    "recorded": ("exam_harness.graders.recorded:RecordedGrader",
                 "replays published Workbench exam_grades"),
    "hf": ("exam_harness.graders.hf:create_hf_grader",
           "transformers LLM (FLAN-T5 or a causal LM) with the method's prompts"),
    "qa": ("exam_harness.graders.qa:create_qa_grader",
           "extractive question answering model (SQuAD2-style); no answer = 0"),
    "openai": ("exam_harness.graders.openai_backend:create_openai_grader",
               "any OpenAI-compatible server (OpenAI, vLLM, TGI, llama.cpp, Ollama) with the method's prompts"),
}


class GraderRegistry:
    def __init__(self) -> None:
        self._entries: dict[str, FactoryRef] = {}
        self._descriptions: dict[str, str] = {}

    def register(self, name: str, factory: FactoryRef, description: str = "", *, replace: bool = False) -> None:
        if not name or any(ch.isspace() for ch in name):
            raise ConfigError(f"grader name must be a non-empty word, got {name!r}")
        if name in self._entries and not replace:
            raise ConfigError(f"grader {name!r} is registered twice; pass replace=True to override it")
        self._entries[name] = factory
        self._descriptions[name] = description

    def names(self) -> list[str]:
        return sorted(self._entries)

    def describe(self) -> dict[str, str]:
        return {name: self._descriptions.get(name, "") for name in self.names()}

    def resolve(self, name: str) -> GraderFactory:
        try:
            ref = self._entries[name]
        except KeyError:
            raise ConfigError(unknown_name_message("grader", name, self.names())) from None
        if isinstance(ref, str):
            module_name, _, attr = ref.partition(":")
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise ConfigError(
                    f"grader {name!r} needs a package that is not installed ({exc.name or exc}); "
                    f"install exam-harness with its extras, e.g. pip install 'exam-harness[hf]'"
                ) from exc
            ref = getattr(module, attr)
            self._entries[name] = ref
        return ref

    def create(self, name: str, config: GraderConfig) -> Grader:
        return self.resolve(name)(config)


def unknown_name_message(what: str, name: str, available: list[str]) -> str:
    close = difflib.get_close_matches(name, available, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown {what} {name!r}.{hint} Available: {', '.join(available) or '(none)'}"


def default_registry() -> GraderRegistry:
    registry = GraderRegistry()
    for name, (ref, description) in BUILTIN_GRADERS.items():
        registry.register(name, ref, description)
    return registry
