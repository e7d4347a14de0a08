"""The pytest side of exam-harness as small plugins, each registered only when it has work to do.

- :mod:`.state`: stash keys of the shared plain state (options, inputs, the graded exam);
- :mod:`.collection`: bank files become test modules, (test point, run) pairs become cases;
- :mod:`.grading`: the grading pass before the first case runs (and the xdist controller's pre-grading);
- :mod:`.outcomes`: a missed case inside pytest's contract (skipped + ``exam_outcome=missed``);
- :mod:`.reporting`: the report, its files, the ``pytest_exam_report`` hook and the leaderboard;
- :mod:`.gates`: ``--exam-fail-under`` and ``--exam-baseline`` (registered only when asked for);
- :mod:`.verdict`: each check of the session's verdict as a test case of its own (JUnit, the last line).
"""
