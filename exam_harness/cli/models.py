"""``exam-harness models pull NAME…``: fetch models into the Hugging Face cache, so that CI can grade offline
(``HF_HUB_OFFLINE=1``) with the ``hf``, ``qa``, ``cross-encoder`` and ``monot5`` graders."""

from __future__ import annotations

import argparse

from exam_harness.config.options import Argument
from exam_harness.core.errors import ConfigError


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("models", help="Fetch models into the Hugging Face cache for offline grading.",
                                   description="Fetch models into the Hugging Face cache (HF_HOME) for offline runs.")
    inner = parser.add_subparsers(dest="models_command", metavar="COMMAND")
    inner.required = True
    pull = inner.add_parser("pull", help="Download models by hub name (e.g. castorini/monot5-base-msmarco).",
                            description="Download each model's files into the Hugging Face cache; with "
                            "HF_HUB_OFFLINE=1 later runs read them from there.")
    Argument("names", "Hub model names.", nargs="+", metavar="NAME", positional=True).add_to(pull)
    Argument("revision", "A branch, tag or commit (default: the main branch).").add_to(pull)
    pull.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise ConfigError("exam-harness models pull needs huggingface_hub: pip install 'exam-harness[hf]'") from exc
    for name in args.names:
        try:
            path = snapshot_download(repo_id=name, revision=args.revision)
        except Exception as exc:  # the hub's errors (offline, unknown name, no access): said per model, then stop
            raise ConfigError(f"cannot fetch {name!r}: {type(exc).__name__}: {exc}") from exc
        print(f"{name}: {path}")
    return 0
