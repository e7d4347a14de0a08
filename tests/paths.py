"""Where the test suite's files are. The test modules live one folder below tests/ (mirroring the
package), so they find the repository, the golden files and the data here instead of counting parents."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
GOLDEN = TESTS / "golden"
DATA = TESTS / "data"
SHARED_DATA = REPO / ".." / "shared" / "data"
