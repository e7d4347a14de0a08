"""The agreement feature: the grades against the human judgments the run files hold.

``evaluate``'s ``agreement`` section (section.py: the max-grade table with Cohen's kappa of each cut, the "min
answers = m" views of ``--min-answers``, each recorded direct grading run's table; kept under ``--brief``) and the
``agreement`` analysis (analysis.py: ``analyze agreement``, with ``--grades A --grades B`` two graders against each
other, graders.py, and ``--team-labels``; pytest's ``--exam-analysis agreement``), over their computation
(compute.py), document parts (model.py) and tables (tables.py). The labels of judged passages and the merged
3-way table it reads are the core's (analysis/judged_labels.py), as ``calibrate`` uses them too. plugin.py
registers the section and the analysis through the hooks ``exam_harness.api`` declares.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
