"""What runs on a Ray worker: one grader per actor, built once from the driver's recipe, grading the batches
``map_batches`` hands it.

A batch is ``{"key": cache keys, "request": pickled GradingRequests}``; the answer has one row per pair: the grade
as JSON (empty for a failure), the failure's message (empty for a grade), and on the batch's first row what the
batch spent and why grading must stop, if it must. A grader that raises fails the batch's pairs (never a grade), as
the local pass does; a ConfigError or InputError (a bad option, a model that is not there) is ``fatal``: the driver
stops with it. Nothing here imports ray: the actor is Ray's, the class is plain.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from exam_harness.api import ConfigError, Grade, GraderRecipe, GradingRequest, InputError
from exam_harness.llm.cost import TokenUsage, grade_tokens


class GradeWorker:
    """The callable class ``map_batches`` runs in each actor."""

    def __init__(self, recipe: GraderRecipe) -> None:
        self.grader = recipe.build()

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np  # the batch's columns are numpy arrays (batch_format="numpy")

        keys = [str(key) for key in batch["key"]]
        requests: list[GradingRequest] = [pickle.loads(raw) for raw in batch["request"]]
        before = self._used()
        grader = self.grader
        fatal = ""
        try:
            results: Sequence[Any] = grader.grade_batch(requests)
            if len(results) != len(requests):
                fatal = f"grader {grader.name!r} returned {len(results)} results for a batch of {len(requests)}"
        except (ConfigError, InputError) as exc:
            fatal = str(exc)
        except Exception as exc:  # a crash of one batch is reported per pair, never a grade
            results = [None] * len(requests)
            failed = f"grader {grader.name!r} raised {type(exc).__name__}: {exc}"
        else:
            failed = ""
        if fatal:
            results = [None] * len(requests)
            failed = fatal
        grades = [r.model_dump_json() if isinstance(r, Grade) else "" for r in results]
        failures = ["" if isinstance(r, Grade) else (failed or str(getattr(r, "message", r))) for r in results]
        spent = self._used(results) - before
        stop = grader.stop_reason() or ""
        first = [True] + [False] * (len(keys) - 1)
        return {
            "key": np.array(keys, dtype=object),
            "grade": np.array(grades, dtype=object),
            "failure": np.array(failures, dtype=object),
            "stop": np.array([stop if f else "" for f in first], dtype=object),
            "fatal": np.array([fatal if f else "" for f in first], dtype=object),
            "prompt_tokens": np.array([spent.prompt_tokens if f else 0.0 for f in first]),
            "completion_tokens": np.array([spent.completion_tokens if f else 0.0 for f in first]),
            "calls": np.array([spent.calls if f else 0 for f in first]),
        }

    def _used(self, results: Sequence[Any] = ()) -> TokenUsage:
        """What this worker's grader has spent: its backend's counters (retries included), else the tokens its grades
        record (a backend without counters); nothing for a grader that sends no prompts."""
        meter = self.grader.meter
        if meter is None:
            return TokenUsage()
        if meter.counts:
            return meter.used()
        for result in results:
            tokens = grade_tokens(result.details) if isinstance(result, Grade) else None
            if tokens is not None:
                meter.note(tokens)
        return meter.used()
