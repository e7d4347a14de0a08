"""The Ray engine: a grading pass's cache misses graded by a Ray Dataset's ``map_batches`` on a local Ray runtime
or a cluster (``--exam-engine ray``, ``exam-harness grade --engine ray [--address ADDR]``; docs/shards.md).

options.py declares its options, plugin.py answers the hook ``pytest_exam_grading_engine`` for ``--exam-engine ray``,
engine.py builds the dataset and reads its results (ray imported there, on first use), worker.py is what runs on a
Ray worker: one grader per actor, built from the driver's recipe. Needs the optional extra ``[ray]``.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
