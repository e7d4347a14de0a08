"""Reproducing the published evaluation and the human-in-the-loop analyses, as a library.

- :mod:`.pipeline` - load files, then replay recorded grades or grade with any grader (cached);
- :mod:`.leaderboards` - every leaderboard with intervals, correlations and baseline tests;
- :mod:`.agreement` - grade x judgment tables and Cohen's kappa;
- :mod:`.analyses`, :mod:`.edit_impact` - verify grading, grid, missing in bank, spurious test
  points, bank edit impact;
- :mod:`.statistics` - leaderboard-wide bootstrap intervals, baseline comparisons and the gate;
- :mod:`.sections` - report sections for the pytest plugin;
- :mod:`.workbench_export` - Workbench paragraph export and import into the grade cache;
- :mod:`.plots` (matplotlib, optional) and :mod:`.render` (rich tables).

Importing this package imports no model library (torch, transformers).
"""

from __future__ import annotations

from exam_harness.evaluation.agreement import agreement_tables
from exam_harness.evaluation.analyses import grade_grid, missing_in_bank, spurious_test_points, verify_grading
from exam_harness.evaluation.edit_impact import bank_diff, bank_edit_impact, impact_of
from exam_harness.evaluation.grades import GradeTable, GradingSummary, regrade, replay
from exam_harness.evaluation.inputs import ExamView, view_from_banks, view_from_recorded
from exam_harness.evaluation.leaderboards import EvaluationSettings, compute_leaderboards, write_qrels_files
from exam_harness.evaluation.pipeline import GradeSource, obtain_grades
from exam_harness.evaluation.results import EvaluationResult, Leaderboard
from exam_harness.evaluation.sections import analysis_sections, baseline_section
from exam_harness.evaluation.statistics import baseline_gate, bootstrap_cis, compare_runs
from exam_harness.evaluation.workbench_export import export_workbench, import_workbench_grades

__all__ = [
    "EvaluationResult",
    "EvaluationSettings",
    "ExamView",
    "GradeSource",
    "GradeTable",
    "GradingSummary",
    "Leaderboard",
    "agreement_tables",
    "analysis_sections",
    "bank_diff",
    "bank_edit_impact",
    "baseline_gate",
    "baseline_section",
    "bootstrap_cis",
    "compare_runs",
    "compute_leaderboards",
    "export_workbench",
    "grade_grid",
    "impact_of",
    "import_workbench_grades",
    "missing_in_bank",
    "obtain_grades",
    "regrade",
    "replay",
    "spurious_test_points",
    "verify_grading",
    "view_from_banks",
    "view_from_recorded",
    "write_qrels_files",
]
