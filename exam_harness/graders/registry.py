"""The grader registry: name -> grader factory, built-in ones as lazy ``"module:attr"`` entries.

Importing exam_harness never imports torch or openai: a built-in grader's module is imported only
when a session asks for it. Plugins add graders through the ``pytest_exam_register_graders`` hook
(a conftest.py, or a package's ``pytest11`` entry point), in pytest and in the command line alike.
A factory is a :class:`~exam_harness.graders.base.Grader` subclass (or any callable taking a
:class:`~exam_harness.graders.base.GraderConfig`); the options it declares are converted and checked
before it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from exam_harness.core.registry import Registry
from exam_harness.graders.base import Grader, GraderConfig, declared_options, read_grader_options

GraderFactory = Callable[[GraderConfig], Grader]

BUILTIN_GRADERS: dict[str, tuple[str, str]] = {
    "embedding": ("exam_harness.graders.embedding:EmbeddingGrader",
                  "offline default: all-MiniLM-L6-v2 cosine similarity cut into 0..5"),
    "answer-key": ("exam_harness.graders.answer_key:AnswerKeyGrader",
                   "gold answers matched in the passage by the method's answer check (1/0)"),
    "recorded": ("exam_harness.graders.recorded:RecordedGrader",
                 "replays published Workbench exam_grades"),
    "hf": ("exam_harness.graders.hf:HFGrader",
           "transformers LLM (FLAN-T5 or a causal LM) with the method's prompts"),
    "qa": ("exam_harness.graders.qa:QAGrader",
           "extractive question answering model (SQuAD2-style); no answer = 0"),
    "openai": ("exam_harness.graders.openai:OpenAIGrader",
               "any OpenAI-compatible server (OpenAI, vLLM, TGI, llama.cpp, Ollama) with the method's prompts"),
    "cross-encoder": ("exam_harness.graders.rerankers:CrossEncoderGrader",
                      "a sentence-transformers CrossEncoder reranker; its probability cut into 0..5"),
    "monot5": ("exam_harness.graders.rerankers:MonoT5Grader",
               "a monoT5 reranker (P(true) of 'Query: … Document: … Relevant:') cut into 0..5"),
    "cascade": ("exam_harness.graders.cascade:CascadeGrader",
                "a cheap first judge (embedding) filters, a deciding judge (openai, hf, ...) grades the rest; "
                "an audit sample bounds the passes kept"),
}


@dataclass(frozen=True)
class GraderRecipe:
    """How to build one grader again elsewhere (an engine's worker process): the factory the registry resolved and
    the config with its options already converted and checked. A worker calls :meth:`build`; the factory must be
    importable there (a built-in grader, an installed plugin's, a module on the worker's path)."""

    name: str
    factory: GraderFactory
    config: GraderConfig

    def build(self) -> Grader:
        return self.factory(self.config)


class GraderRegistry(Registry[GraderFactory]):
    def __init__(self) -> None:
        super().__init__("grader", install_hint="install exam-harness with its extras, e.g. pip install "
                         "'exam-harness[hf]'")

    def create(self, name: str, config: GraderConfig) -> Grader:
        """The grader ``name`` built from ``config``; declared options are converted and checked first."""
        return self.recipe(name, config).build()

    def recipe(self, name: str, config: GraderConfig) -> GraderRecipe:
        """What :meth:`create` builds, not built yet: the factory of ``name`` and ``config`` with its declared
        options converted and checked."""
        factory = self.get(name)
        declared = declared_options(factory)
        if declared:
            config = replace(config, options=read_grader_options(name, declared, config.options))
        if config.registry is None:  # a grader made of graders creates its parts from the same registry
            config = replace(config, registry=self)
        return GraderRecipe(name, factory, config)


def default_registry() -> GraderRegistry:
    """A registry of the built-in graders (plugins add theirs through the registration hook)."""
    registry = GraderRegistry()
    for name, (ref, description) in BUILTIN_GRADERS.items():
        registry.register(name, ref, description)
    return registry
