"""The content key of a grade: the hash of the grader's fingerprint and everything that shapes the grade.

The grade cache (grading/cache.py) stores grades under it; a grader of several parts (graders/cascade.py) keys
its own parts' requests by it, so it stands here, below both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def cache_key(grader_fingerprint: str, content: Mapping[str, Any]) -> str:
    body = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256()
    digest.update(grader_fingerprint.encode("ascii"))
    digest.update(b"\x00")
    digest.update(body.encode("utf-8"))
    return digest.hexdigest()
