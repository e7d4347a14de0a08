"""The agreement feature's hook implementations: its section.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (see features/__init__.py). The
section keeps the place documents and views have always shown it in: after the built-in ones (the significance
feature places its section before it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    from exam_harness.api import Registry, Section


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    registry.register("agreement", "exam_harness.features.agreement.section:SECTION",
                      "grades against human judgments: Cohen's kappa, the min-answers views (--min-answers), direct "
                      "grades")
