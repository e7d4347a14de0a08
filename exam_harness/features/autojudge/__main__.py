"""``python -m exam_harness.features.autojudge``: files.py's ``main`` (also ``exam-harness autojudge``)."""

from __future__ import annotations

import sys

from exam_harness.features.autojudge.files import main

if __name__ == "__main__":
    sys.exit(main())
