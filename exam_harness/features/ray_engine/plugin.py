"""The Ray engine's hook implementations: its options, and the engine for ``--exam-engine ray``.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (both front ends register the
features before any other plugin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import Engine, ExamOptions, FeatureOptions, Grader, GraderRecipe


@hookimpl(tryfirst=True)
def pytest_exam_add_options(options: FeatureOptions) -> None:
    from exam_harness.features.ray_engine.options import OPTIONS

    for option in OPTIONS:
        options.add(option)


@hookimpl(tryfirst=True)
def pytest_exam_grading_engine(options: ExamOptions, grader: Grader, recipe: GraderRecipe) -> Engine | None:
    from exam_harness.features.ray_engine.options import ADDRESS, ENGINE, GPUS, RAY_ADDRESS, RETRIES, WORKERS

    if options.feature(ENGINE) != "ray":
        return None
    from exam_harness.features.ray_engine.engine import RayEngine, RaySettings

    settings = RaySettings(address=options.feature(ADDRESS) or options.feature(RAY_ADDRESS),
                           workers=options.feature(WORKERS), gpus=options.feature(GPUS),
                           retries=options.feature(RETRIES), cpu_only=(options.device or "").strip().lower() == "cpu")
    return RayEngine(recipe, settings)
