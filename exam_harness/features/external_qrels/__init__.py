"""The external qrels feature: every run scored over given trec_eval qrels files in ``exam-harness evaluate``'s
document (``--qrels``, ``--qrels-level``, ``--official-qrels``, ``--trec-rag-2025-relevance``): one leaderboard per
file, relevance level and measure, correlated with the official leaderboard, and with official qrels the per-query
correlations, drawn under ``--plot`` (docs/reproduction.md, docs/trec-rag.md).

plugin.py adds its options, the scoring input its section reads and the section through the hooks
``exam_harness.api`` declares; options.py declares the options, inputs.py reads the qrels files before any
grading, compute.py scores the runs over them (trec_eval), model.py is the section's content, section.py renders
it and plots.py draws it.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
