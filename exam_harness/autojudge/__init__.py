"""exam-harness as a TREC AutoJudge judge (the optional ``[autojudge]`` extra; docs/autojudge.md).

:class:`exam_harness.autojudge.judge.ExamJudge` implements autojudge-base's three protocols on top of the
exam; :mod:`exam_harness.autojudge.convert` turns banks into NuggetBanks and back, and reports into runs
and back. Importing this package makes autojudge-base importable offline (:mod:`.nltk_offline`).
"""

from __future__ import annotations

from exam_harness.autojudge.nltk_offline import use_offline_nltk_data

use_offline_nltk_data()
