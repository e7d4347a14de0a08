"""The ``hf`` grader: the method's prompts over a transformers model (:class:`~exam_harness.llm.hf.HFBackend`)."""

from __future__ import annotations

from exam_harness.graders.base import GraderConfig, read_grader_options
from exam_harness.graders.llm import LLM_OPTIONS, LLMGrader, cost_settings, resolve_mode
from exam_harness.llm.hf import HF_OPTIONS, backend_from_options


class HFGrader(LLMGrader):
    """Registry name ``hf``: an :class:`~exam_harness.graders.llm.LLMGrader` over an
    :class:`~exam_harness.llm.hf.HFBackend`. ``--exam-model``, ``--exam-device`` and
    ``--exam-batch-size`` win over the options ``model``, ``device`` and ``batch_size``."""

    name = "hf"
    options = (*HF_OPTIONS, *LLM_OPTIONS)

    def __init__(self, config: GraderConfig) -> None:
        # Reading again is a no-op for values the registry converted, and checks a direct caller's.
        values = read_grader_options(self.name, self.options, config.options)
        mode = resolve_mode(values["prompt"], values["custom_output"])  # a bad prompt fails before a model loads
        backend = backend_from_options(
            config.model,
            {option.name: values[option.name] for option in HF_OPTIONS},
            device=config.device,
            batch_size=config.batch_size,
        )
        super().__init__(backend, prompt=mode, name=self.name, max_new_tokens=values["max_new_tokens"],
                         nuggets_per_call=values["nuggets_per_call"], **cost_settings(self.name, values))
