"""The AutoJudge feature's hook implementations: the ``exam-harness autojudge`` subcommand (files.py). The judge
itself (judge.py) is named by an ``auto-judge run`` workflow's ``judge_class``; autojudge-base makes it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import Command, Registry


@hookimpl(tryfirst=True)
def pytest_exam_register_commands(registry: Registry[Command]) -> None:
    registry.register("autojudge", "exam_harness.features.autojudge.files:COMMAND",
                      "the files auto-judge run reads, from an exam's runs and banks (docs/autojudge.md)")
