"""The citation-support feature: ``evaluate --support`` grades every (answer sentence, cited document) pair of the
cited answers among the runs (TREC RAG answer files, a live system's answers) with the grader's ``support`` prompt
and hands the citation measures (citation precision, recall and F1, measures/citations.py) each sentence's
credits.

credits.py makes the pairs and turns their grades into credits; grading.py grades them through the cache; options.py
declares ``--support``; plugin.py registers the option and answers ``pytest_exam_extra_grading``. The citation
measures and the shape of their input (``ScoringInput.support``) are the core's: they score any cited answers whose
credits a plugin gives. Named ``citation_support``, not ``support``: graders/support.py is the embedding grader's
support model, another thing.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
