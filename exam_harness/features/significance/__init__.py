"""The significance feature: every run against a baseline run, per measure, in ``exam-harness evaluate``'s
document (``--baseline``; the test is ``--significance``, ``--alpha``, ``--resamples``, ``--seed``).

The worked example of a feature as an in-tree plugin (docs/extending.md, "Features"): plugin.py adds its
section and the scoring input the section reads through the hooks ``exam_harness.api`` declares; baseline.py
declares that input, section.py computes and renders the section. The paired tests themselves
(measures/significance.py) and the ``exam-baseline`` gate a pytest session takes (results/verdict.py) are the
core's: the gates and ``exam-harness verdict`` decide by them, so their options stay in the one schema.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
