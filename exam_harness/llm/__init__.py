"""The language-model layer shared by the LLM graders and bank generation.

:mod:`~exam_harness.llm.backend` defines the :class:`~exam_harness.llm.backend.TextBackend` protocol;
:mod:`~exam_harness.llm.hf` (transformers) and :mod:`~exam_harness.llm.openai` (OpenAI-compatible
servers) implement it, each with the options it declares; :mod:`~exam_harness.llm.prompts` and
:mod:`~exam_harness.llm.fewshot` hold the method's prompts. Importing this package imports no model
library: torch, transformers and openai load when a backend is first built.
"""
