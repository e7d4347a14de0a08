"""``python -m exam_harness.features.autojudge.offline`` prints the folder of the NLTK data autojudge-base needs at
import (``export NLTK_DATA=$(python -m exam_harness.features.autojudge.offline)``); :data:`NLTK_DATA` and
:func:`use_offline_nltk_data` are :mod:`exam_harness.features.autojudge.nltk_offline`'s, which imports NLTK only
when it is called, so running this module as ``-m`` imports nothing but it."""

from __future__ import annotations

from exam_harness.features.autojudge.nltk_offline import NLTK_DATA, use_offline_nltk_data

__all__ = ["NLTK_DATA", "use_offline_nltk_data"]

if __name__ == "__main__":
    print(NLTK_DATA)
