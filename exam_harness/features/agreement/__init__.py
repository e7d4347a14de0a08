"""The agreement feature: ``evaluate``'s ``agreement`` section, the grades against the human judgments the run
files hold (section.py: the max-grade table with Cohen's kappa of each cut, the "min answers = m" views of
``--min-answers``, each recorded direct grading run's table; kept under ``--brief``).

The computation it shows (analysis/agreement.py, the document's tables results/agreement.py, their tables in the
terminal report/analysis_tables.py and report/evaluation_tables.py) stays the core's for now: ``analyze agreement``,
pytest's ``--exam-analysis agreement`` and ``calibrate`` (its labels and merged table) use it too. plugin.py
registers the section through the hooks ``exam_harness.api`` declares.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
