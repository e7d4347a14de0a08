"""The bank generation feature's hook implementations: the ``generate`` subcommand, named by ``"module:attr"``
(imported when the command line builds its parser). ``tryfirst``: an in-tree feature's entries come before a
third-party plugin's (see features/__init__.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import Command, Registry


@hookimpl(tryfirst=True)
def pytest_exam_register_commands(registry: Registry[Command]) -> None:
    registry.register("generate", "exam_harness.features.generate.command:COMMAND",
                      "question or nugget banks for queries, generated with an LLM")
