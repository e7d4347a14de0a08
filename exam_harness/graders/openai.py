"""The ``openai`` grader: the method's prompts over any OpenAI-compatible server
(:class:`~exam_harness.llm.openai.OpenAIBackend`): OpenAI, vLLM, TGI, llama.cpp server, Ollama."""

from __future__ import annotations

from dataclasses import replace

from exam_harness.core.errors import ConfigError
from exam_harness.graders.base import GraderConfig, read_grader_options
from exam_harness.graders.llm import LLM_OPTIONS, LLMGrader, cost_settings, resolve_mode
from exam_harness.graders.repeats import REPEAT_OPTIONS
from exam_harness.llm.batch import BATCH_OPTIONS, batch_settings
from exam_harness.llm.cost import Prices
from exam_harness.llm.openai import OPENAI_OPTIONS, backend_from_options, require_openai


class OpenAIGrader(LLMGrader):
    """Registry name ``openai``: an :class:`~exam_harness.graders.llm.LLMGrader` over an
    :class:`~exam_harness.llm.openai.OpenAIBackend`. The model is ``--exam-model``, or the option
    ``model``, which wins."""

    name = "openai"
    options = (*OPENAI_OPTIONS, *LLM_OPTIONS, *REPEAT_OPTIONS, *BATCH_OPTIONS)

    def __init__(self, config: GraderConfig) -> None:
        # Reading again is a no-op for values the registry converted, and checks a direct caller's.
        values = read_grader_options(self.name, self.options, config.options)
        require_openai()  # a dry run too: it would pass, and the real run fail, without the package (issue 28)
        mode = resolve_mode(values["prompt"], values["custom_output"])
        backend_values = {option.name: values[option.name] for option in OPENAI_OPTIONS}
        if backend_values["system_prompt"] is None and mode.system is not None and backend_values["endpoint"] == "chat":
            backend_values["system_prompt"] = mode.system  # the track's own system message; an explicit one wins
        if backend_values["fence_context"] is None and mode.track:
            backend_values["fence_context"] = False  # the track's tools send the passage as it is (fencing is opt-in)
        backend = backend_from_options(config.model, backend_values, need_key=not config.dry_run)
        super().__init__(backend, prompt=mode, name=self.name, max_new_tokens=values["max_new_tokens"],
                         nuggets_per_call=values["nuggets_per_call"], **cost_settings(self.name, values))
        self.batch = batch_settings(values, self.meter.prices)  # batch=true: batch jobs, no calls (docs/batch.md)
        if self.batch is not None and self.batch.prices is not None:  # batch grades cost the batch rate
            self.meter.prices = replace(self.meter.prices or Prices(), batch=self.batch.prices)
        # samples per pair (graders/repeats.py); not in the spec: each sample's cache key is the grader's own
        self.repeats: int = values["repeats"]
        self.reducer: str = values["reducer"]
        if self.repeats > 1 and values["temperature"] == 0:
            raise ConfigError(f"grader {self.name!r}: repeats={self.repeats} needs temperature > 0 (greedy decoding "
                              "gives every sample the same answer); set --exam-grader-option temperature=...")
