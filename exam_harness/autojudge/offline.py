"""``python -m exam_harness.autojudge.offline`` prints the folder of the NLTK data autojudge-base needs at
import (``export NLTK_DATA=$(python -m exam_harness.autojudge.offline)``); :data:`NLTK_DATA` and
:func:`use_offline_nltk_data` are :mod:`exam_harness.autojudge.nltk_offline`'s. The package's ``__init__``
imports that module, not this one, so running this one as ``-m`` warns of nothing."""

from __future__ import annotations

from exam_harness.autojudge.nltk_offline import NLTK_DATA, use_offline_nltk_data

__all__ = ["NLTK_DATA", "use_offline_nltk_data"]

if __name__ == "__main__":
    print(NLTK_DATA)
