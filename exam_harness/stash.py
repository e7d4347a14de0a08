"""The typed stash key under which the plugin keeps its per-session state in ``config.stash``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from exam_harness.session import ExamSession

SESSION_KEY: pytest.StashKey[ExamSession] = pytest.StashKey()
