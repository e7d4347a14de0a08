"""autojudge-base offline: its ``document/text_chunker.py`` looks for NLTK's Punkt and English stop words when
it is imported and downloads them when they are missing. The folder shipped beside this module holds what
that import needs (``nltk_data/README``), so nothing reaches the network.

``auto-judge`` imports autojudge-base before it loads a judge class, so its users point ``NLTK_DATA`` at
:data:`NLTK_DATA` (``python -m exam_harness.features.autojudge.offline`` prints it, :mod:`.offline`); in-process,
:func:`use_offline_nltk_data` adds it to NLTK's search path before autojudge-base is first imported.
"""

from __future__ import annotations

import os
from pathlib import Path

NLTK_DATA = Path(__file__).resolve().parent / "nltk_data"


def use_offline_nltk_data() -> None:
    """Let NLTK find the shipped data (after any folder the user configured)."""
    existing = os.environ.get("NLTK_DATA", "")
    if str(NLTK_DATA) not in existing.split(os.pathsep):
        os.environ["NLTK_DATA"] = f"{existing}{os.pathsep}{NLTK_DATA}" if existing else str(NLTK_DATA)
    import nltk.data  # read NLTK_DATA when first imported; if it already was, the path list is extended

    if str(NLTK_DATA) not in nltk.data.path:
        nltk.data.path.append(str(NLTK_DATA))
