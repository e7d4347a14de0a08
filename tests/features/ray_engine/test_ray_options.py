"""The Ray engine's options and checks, without a Ray runtime: ``--exam-engine ray`` and its settings reach the
engine, the local engine answers no engine, a server's rpm/tpm are split among the workers, and what the engine
cannot do (max_cost, repeats, batch jobs) is refused before anything is graded."""

from __future__ import annotations

from dataclasses import replace

import pytest

from exam_harness.config.options import ExamOptions
from exam_harness.core.errors import ConfigError
from exam_harness.features.ray_engine import plugin
from exam_harness.features.ray_engine.engine import RayEngine, RaySettings
from exam_harness.graders.base import GraderConfig
from exam_harness.graders.registry import default_registry
from exam_harness.llm.openai import OpenAIBackend
from tests.features.ray_engine.graders import CountingGrader

pytest.importorskip("ray")


def engine_of(values: dict[str, object], device: str | None = None) -> object:
    recipe = default_registry().recipe("answer-key", GraderConfig())
    options = ExamOptions(feature_values=tuple(values.items()), device=device)
    return plugin.pytest_exam_grading_engine(options=options, grader=recipe.build(), recipe=recipe)


def test_the_engine_option_chooses_the_engine_and_its_settings() -> None:
    assert engine_of({}) is None and engine_of({"engine": "local"}) is None
    engine = engine_of({"engine": "ray", "address": "ray://head:10001", "ray_workers": 3, "ray_gpus": 0.5,
                        "ray_retries": 1}, device="cpu")
    assert isinstance(engine, RayEngine)
    assert engine.settings == RaySettings(address="ray://head:10001", workers=3, gpus=0.5, retries=1, cpu_only=True)
    assert engine.recipe.config.data is None  # the exam's data stays on the driver
    pytest_named = engine_of({"engine": "ray", "ray_address": "auto"})
    assert isinstance(pytest_named, RayEngine) and pytest_named.settings.address == "auto"


def test_a_servers_rate_limits_are_split_among_the_workers() -> None:
    recipe = default_registry().recipe("openai", GraderConfig(options={"model": "m", "base_url": "http://h:1/v1",
                                                                       "rpm": "600", "tpm": "90000"}))
    engine = RayEngine(recipe, RaySettings())
    paced = engine._paced(4).config.options
    assert (paced["rpm"], paced["tpm"]) == (150.0, 22500.0)
    backend = vars(engine._paced(4).build())["backend"]  # a worker's grader, built from the split options
    assert isinstance(backend, OpenAIBackend) and (backend.rpm, backend.tpm) == (150.0, 22500.0)
    unpaced = RayEngine(default_registry().recipe("openai", GraderConfig(options={"model": "m"})), RaySettings())
    assert unpaced._paced(4).config.options["rpm"] is None


@pytest.mark.parametrize(("options", "refused"), [
    ({"model": "m", "base_url": "http://h:1/v1", "max_cost": "1", "price_prompt": "1"}, "max_cost"),
    ({"model": "m", "base_url": "http://h:1/v1", "repeats": "3"}, "repeats"),
    ({"model": "m", "base_url": "http://h:1/v1", "batch": "true"}, "batch=true"),
])
def test_what_the_engine_cannot_do_is_refused_before_grading(options: dict[str, str], refused: str) -> None:
    recipe = default_registry().recipe("openai", GraderConfig(options=options))
    with pytest.raises(ConfigError, match=refused):
        RayEngine(recipe, RaySettings()).check(recipe.build())
    counting = replace(recipe, name="counting", factory=CountingGrader)
    RayEngine(counting, RaySettings()).check(counting.build())  # a plain grader passes
