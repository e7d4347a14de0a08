"""The calibration feature (issue 35, docs/calibration.md): judges a team can calibrate against its own labels.

plugin.py adds, through the hooks ``exam_harness.api`` declares, the option ``--exam-team-labels`` (``evaluate
--team-labels``), the scoring input it reads (inputs.py), the ``calibration`` section of every output
(section.py, model.py, compute.py: each judge's figures with intervals, the judges against each other, the
corrected scores), the gate figures ``exam-cover.corrected`` and the like, and the ``panel`` grader (panel.py).
The statistics are small pure modules: estimators.py (Horvitz–Thompson estimates and their intervals),
judges.py (a judge's figures), ppi.py (the rectifier), corrected.py (the measures' totals). The sample
``exam-harness label`` draws and the label file are the core's (analysis/label_sample.py, label_file.py): the
``label`` and ``analyze`` subcommands read and write them without this feature.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
