"""The Ray engine: the grading pass's misses as a Ray Dataset, graded by ``map_batches`` over a pool of actors.

* **Where.** ``address`` joins a running cluster (``ray://HOST:10001``, ``HOST:6379``, ``auto``; ``RAY_ADDRESS``
  too); without one a local Ray runtime is started for the pass and shut down after it. A runtime the caller
  started already (``ray.init`` in a script or a test) is used as it is and left running.
* **Workers.** A fixed pool of ``workers`` actors (``ActorPoolStrategy``), each building the grader once from the
  driver's :class:`~exam_harness.api.GraderRecipe` (worker.py): a transformers grader loads its model once per
  worker, on the worker's GPU when it holds one (``gpus`` per worker: Ray makes that GPU the one ``cuda`` means);
  an OpenAI-compatible grader keeps its own async client pool of ``concurrency`` requests in flight.
* **Pacing** of an OpenAI-compatible grader is split, not shared: each of N workers paces to ``rpm / N`` and
  ``tpm / N`` (and adapts its concurrency to its own 429s), so together they stay within the server's limits with
  no coordinator in the path of every request (a pacing actor would cost a round trip per request and stop every
  worker when it stops). A worker that finishes early leaves its share unused.
* **Grades** come back to the driver batch by batch, in the order they finish; the grading pass records them and
  stores them in the grade cache (this process is its one writer: workers on other machines need no access to
  its file, and a killed run resumes from what was stored). A failed pair is a failure, never a grade.
* **Failures.** A worker that dies (killed, out of memory, its node lost) is restarted and its batch asked again,
  ``retries`` times at most (Ray's actor restarts and task retries); past that, or when the cluster goes away, the
  engine stops (:class:`~exam_harness.api.EngineStopped`): the pass keeps the grades it has and exits 75.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from exam_harness.api import ConfigError, Grade, Grader, GraderRecipe, GradingRequest
from exam_harness.core.models import GradeFailure
from exam_harness.features.ray_engine.worker import GradeWorker
from exam_harness.grading.batches import batch_of
from exam_harness.grading.engines import EngineBatch, EngineStopped
from exam_harness.llm.cost import TokenUsage

INSTALL_HINT = "install the Ray engine's extra: pip install -c constraints.txt 'exam-harness[ray]'"
PACED = ("rpm", "tpm")  # the OpenAI-compatible backend's rate limits (llm/openai.py): split among the workers


@dataclass(frozen=True)
class RaySettings:
    """The engine's options (options.py): None where the engine decides."""

    address: str | None = None
    workers: int | None = None
    gpus: float | None = None
    retries: int = 3
    cpu_only: bool = False  # --exam-device cpu: no GPU is asked for


class RayEngine:
    """Grades the misses on Ray (see the module docstring)."""

    name = "ray"

    def __init__(self, recipe: GraderRecipe, settings: RaySettings) -> None:
        # The exam's data stays on the driver: a grader of the misses reads its requests, never the whole exam.
        self.recipe = replace(recipe, config=replace(recipe.config, data=None))
        self.settings = settings
        self._started = False  # whether this engine started the runtime (and so shuts it down)
        self._server = False  # whether the grader talks to a server (no GPU wanted)

    def check(self, grader: Grader) -> None:
        """ConfigError, before anything is graded, for what the engine cannot do as the local pass would."""
        if not grader.uses_cache():
            raise ConfigError(f"--exam-engine ray grades the pairs the grade cache lacks; grader {grader.name!r} "
                              "keeps no grades in the cache: use the local engine")
        if grader.repeats > 1:
            raise ConfigError("--exam-engine ray does not take a grader with repeats > 1; use the local engine")
        meter = grader.meter
        if meter is not None and meter.max_cost is not None:
            raise ConfigError("max_cost bounds what one process sends; with --exam-engine ray every worker sends at "
                              "once: use the local engine, or the provider's own spending limit")
        if batch_of(grader) is not None:
            raise ConfigError("batch=true grades through the provider's batch jobs, not synchronously: use the "
                              "local engine with it (docs/batch.md)")
        try:
            import ray
            import ray.data  # noqa: F401
        except ImportError as exc:
            raise ConfigError(f"--exam-engine ray needs Ray ({exc.name or exc} is not installed); {INSTALL_HINT}") \
                from None
        self._server = hasattr(getattr(grader, "backend", None), "base_url")

    def grade(self, todo: Sequence[tuple[str, GradingRequest]], *, chunk_size: int) -> Iterator[EngineBatch]:
        if not todo:
            return
        ray = self._runtime()  # ray and ray.data, imported
        gpus = self._gpus(ray)
        workers = self._workers(ray, gpus, len(todo), chunk_size)
        recipe = self._paced(workers)
        rows = [{"key": key, "request": pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)}
                for key, request in todo]
        # one block per batch: a batch is one task, so a restarted worker asks again one batch, not a whole block
        blocks = max(1, math.ceil(len(rows) / chunk_size))
        with warnings.catch_warnings():
            # Ray 2.60 names no parameter for max_restarts / max_task_retries yet and warns of passing them as
            # remote args; without them a worker that always dies (out of memory) is restarted forever
            warnings.filterwarnings("ignore", message=".*ray_remote_args.*is deprecated")
            dataset = ray.data.from_items(rows, override_num_blocks=blocks).map_batches(
                GradeWorker, fn_constructor_args=(recipe,), batch_size=chunk_size, batch_format="numpy",
                compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=1, num_gpus=gpus,
                max_restarts=self.settings.retries, max_task_retries=self.settings.retries)
        try:
            for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
                yield self._results(batch)
        except ConfigError:
            raise
        except Exception as exc:  # the cluster went away, a worker kept dying, a worker could not start
            raise EngineStopped(_cause(exc)) from exc

    def close(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False

    # -- the runtime ----------------------------------------------------------------------------

    def _runtime(self) -> Any:
        import ray
        import ray.data

        if ray.is_initialized():
            return ray
        address = self.settings.address or os.environ.get("RAY_ADDRESS") or None
        kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                                  "log_to_driver": False, "configure_logging": True}
        if address is None:
            # a local runtime: its workers import what this process imports (a conftest's grader included)
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": os.pathsep.join(_import_path())}}
        try:
            ray.init(address=address, **kwargs)
        except Exception as exc:
            where = f"the Ray cluster at {address}" if address else "a local Ray runtime"
            raise ConfigError(f"--exam-engine ray could not start or join {where}: {_cause(exc)}") from None
        self._started = True
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # the pass draws its own
        logging.getLogger("ray.data").setLevel(logging.ERROR)  # its notices of each execution and of the bars
        return ray

    def _gpus(self, ray: Any) -> float:
        if self.settings.gpus is not None:
            return self.settings.gpus
        if self._server or self.settings.cpu_only:
            return 0.0
        return 1.0 if ray.cluster_resources().get("GPU", 0) >= 1 else 0.0

    def _workers(self, ray: Any, gpus: float, pairs: int, chunk_size: int) -> int:
        if self.settings.workers is not None:
            return self.settings.workers
        resources = ray.cluster_resources()
        fit = resources.get("GPU", 0) / gpus if gpus else resources.get("CPU", 1)
        batches = math.ceil(pairs / chunk_size)  # no worker that would never get a batch
        return max(1, min(int(fit), batches))

    def _paced(self, workers: int) -> GraderRecipe:
        """The recipe with a server's rate limits split among ``workers`` (see the module docstring)."""
        options = dict(self.recipe.config.options)
        for name in PACED:
            value = options.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                options[name] = value / workers
        return replace(self.recipe, config=replace(self.recipe.config, options=options))

    # -- results --------------------------------------------------------------------------------

    @staticmethod
    def _results(batch: dict[str, Any]) -> EngineBatch:
        fatal = next((str(f) for f in batch["fatal"] if f), "")
        if fatal:
            raise ConfigError(f"a Ray worker's grader: {fatal}")
        results: list[tuple[str, Grade | GradeFailure]] = []
        for key, grade, failure in zip(batch["key"], batch["grade"], batch["failure"]):
            results.append((str(key), Grade.model_validate_json(grade) if grade else GradeFailure(str(failure))))
        usage = TokenUsage(float(sum(batch["prompt_tokens"])), float(sum(batch["completion_tokens"])),
                           int(sum(batch["calls"])))
        stop = next((str(s) for s in batch["stop"] if s), None)
        return EngineBatch(results, usage, stop)


def _import_path() -> list[str]:
    """The folders this process imports from, for a local runtime's workers (PYTHONPATH first, as Python reads it)."""
    found = [p for p in (os.environ.get("PYTHONPATH") or "").split(os.pathsep) if p]
    found += [p for p in sys.path if p and os.path.isdir(p)]
    return list(dict.fromkeys(os.path.abspath(p) for p in found))


def _cause(exc: BaseException) -> str:
    """Ray's error in a line: its type and first line (a worker's traceback stays in Ray's logs)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
