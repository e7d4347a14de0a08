"""The Ray engine's options (the one schema: pytest ``--exam-NAME``, the grading subcommands ``--NAME``)."""

from __future__ import annotations

from exam_harness.api import choice, feature_option, integer, number

ENGINES = ("local", "ray")


def _address(raw: str) -> str:
    value = raw.strip()
    if not value or any(ch.isspace() for ch in value):
        raise ValueError("must be a Ray address without spaces (ray://HOST:10001, HOST:6379 or auto)")
    return value


def _gpus(raw: str) -> float | None:
    value = raw.strip().lower()
    return None if value == "auto" else number(0, 8)(value)


ENGINE = feature_option(
    "engine", "local", "Where the grading pass grades the pairs the grade cache lacks: local (this process) or ray "
    "(a Ray Dataset's map_batches over Ray workers, one grader each; grades stored by this process; install "
    "exam-harness[ray]; docs/shards.md)", choice(*ENGINES), group="grading", metavar="ENGINE")
# ``exam-harness grade --address`` as ``ray job submit --address``; pytest's name says whose address it is
ADDRESS = feature_option(
    "address", None, "With --engine ray: the Ray cluster to join: ray://HOST:10001 through Ray Client, HOST:6379 on "
    "a cluster's node, auto for the one running here (default: RAY_ADDRESS, else a local Ray runtime started for "
    "the pass)", _address, group="grading", fronts=("cli",), metavar="ADDR")
RAY_ADDRESS = feature_option(
    "ray-address", None, "With --exam-engine ray: the Ray cluster to join: ray://HOST:10001 through Ray Client, "
    "HOST:6379 on a cluster's node, auto for the one running here (default: RAY_ADDRESS, else a local Ray runtime "
    "started for the session)", _address, group="grading", fronts=("pytest",), metavar="ADDR")
WORKERS = feature_option(
    "ray-workers", None, "With the ray engine: Ray workers (actors), each with its own grader (default: one per GPU of "
    "the cluster for a grader that runs a model and a cluster with GPUs, else one per CPU)", integer(1, 4096),
    group="grading", metavar="N")
GPUS = feature_option(
    "ray-gpus", None, "With the ray engine: GPUs each worker holds, 0 for none (default: auto, 1 for a grader that "
    "runs a model on a cluster with GPUs unless --exam-device cpu, else 0)", _gpus, group="grading", metavar="N")
RETRIES = feature_option(
    "ray-retries", 3, "With the ray engine: how often a worker that died (killed, out of memory, its node lost) is "
    "restarted and its batch asked again before the pass stops (exit status 75; its grades so far are kept)",
    integer(0, 100), group="grading", metavar="N")

OPTIONS = (ENGINE, ADDRESS, RAY_ADDRESS, WORKERS, GPUS, RETRIES)
