"""The view feature's hook implementations: the ``view`` subcommand and the labelling screen of ``label``.

Both entries are named by ``"module:attr"``, imported when the command line builds the subcommand's parser or
``label`` asks for a screen: every command's start (and every pytest session) registers this module, and it imports
nothing of the viewer. ``tryfirst``: an in-tree feature's entries come before a third-party plugin's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import Command, LabelScreen, Registry


@hookimpl(tryfirst=True)
def pytest_exam_register_commands(registry: Registry[Command]) -> None:
    registry.register("view", "exam_harness.features.view.command:COMMAND",
                      "a saved report or evaluation in the terminal (the [view] extra)")


@hookimpl(tryfirst=True)
def pytest_exam_register_label_screens(registry: Registry[LabelScreen]) -> None:
    registry.register("view", "exam_harness.features.view.label_screen:SCREEN",
                      "the blind labelling screen (Textual, the [view] extra)")
