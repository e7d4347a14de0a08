"""The AutoJudge feature: exam-harness as a TREC AutoJudge judge (the optional ``[autojudge]`` extra;
docs/autojudge.md).

:class:`exam_harness.features.autojudge.judge.ExamJudge` implements autojudge-base's three protocols on top of the
exam (``judge_class`` of an ``auto-judge run`` workflow); :mod:`.convert` turns banks into NuggetBanks and back, and
reports into runs and back; ``exam-harness autojudge`` (plugin.py; ``python -m exam_harness.features.autojudge``)
writes the files ``auto-judge run`` reads from an exam's. The modules that import autojudge-base make it importable
offline first (:mod:`.nltk_offline`); importing this package imports neither.
"""

REQUIRES: tuple[str, ...] = ("trec_rag",)  # the TREC RAG answer files reports travel as, the nuggetizer nugget rules
