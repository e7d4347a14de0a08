"""The judge-variance feature: an LLM judge asked K times per pair (grader option ``repeats``): each run's score
beside the judge's share of its variance, the flaky cases and every case's spread, in the ``judge-variance``
section (section.py; docs/judge-variance.md), and the gate figure a threshold's ``@MofK`` reads (figures.py:
``--exam-fail-under exam-cover:0.5@2of3``, ``exam-harness verdict --fail-under`` alike).

The samples themselves (graders/repeats.py: the grader that stands for one sample, the reducer) and the ``@MofK``
syntax of a threshold (config/gates.py, checked against ``repeats`` before grading) are the core's: the grading
pass asks every grader for its samples whether or not a document shows them. plugin.py registers the section and
the figure through the hooks ``exam_harness.api`` declares.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
