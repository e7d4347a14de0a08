"""The TREC RAG feature: the track's files and scores (docs/trec-rag.md).

- inputs: nuggetizer nugget files as banks (nuggets.py), TREC RAG answer files (2024/2025, the track checkers'
  rules, ``--trec-rag-fix``, ``--trec-rag-topics``; answers.py) and nugget assignment files (assignments.py:
  among the runs, or named by ``--assignments`` / ``--exam-assignments``, track_dir.py) as run-side files
  (formats.py);
- scores: A, V, W and their strict forms, and the answers' length (measures.py), planned where nuggets carry an
  importance and the grades are nugget assignments;
- the document: the ``trec-rag`` section (each answer's nugget assignments, section.py, document.py) and, under
  ``evaluate --human-assignments``, ``trec-rag-agreement`` (agreement.py, agreement_section.py);
- files: nuggetizer's metrics and assignment shapes, the 2025 relevance judgments and answer files (writers.py),
  ``evaluate --trec-rag-dir`` (track_dir.py).

plugin.py registers them through the hooks ``exam_harness.api`` declares; options.py declares its options.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
