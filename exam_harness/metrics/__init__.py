"""The scoring library: plain functions over plain mappings, shared by the pytest plugin, the CLI
and the benchmarks (no pydantic models, no pytest).

Conventions:
- ``grades``: (passage_id, test_point_id) -> grade 0..5;
- ``test_points``: query_id -> test point ids of its bank (facets merged);
- ``ranking``: query_id -> passage ids, best first, of one run; ``rankings``: run -> ranking.
"""

from __future__ import annotations

from exam_harness.metrics.agreement import (
    LENIENT_MIN_GRADE,
    STRICT_MIN_GRADE,
    binarised,
    cohen_kappa,
    grade_judgment_table,
)
from exam_harness.metrics.correlation import Correlation, leaderboard_correlation
from exam_harness.metrics.cover import (
    RunCover,
    cover_scores,
    covered_test_points,
    exam_cover,
    n_exam_cover,
    overall_cover,
    passage_coverage,
)
from exam_harness.metrics.intent_aware import alpha_ndcg, alpha_ndcg_runs, ideal_dcg
from exam_harness.metrics.nuggets import NuggetScore, matched_nuggets, nugget_f, pyramid_weights, response_length
from exam_harness.metrics.qrels import (
    DEFAULT_MEASURES,
    VARIANTS,
    Measure,
    evaluate,
    mean_over_queries,
    measure_per_query,
    parse_measure,
    qrels_labels,
    read_qrels,
    relevance_level,
    write_qrels,
)
from exam_harness.metrics.significance import (
    BootstrapResult,
    Comparison,
    bootstrap_ci,
    compare_to_baseline,
    paired_bootstrap,
    paired_permutation_test,
    paired_t_test,
)
from exam_harness.metrics.stats import mean_stderr

__all__ = [
    "DEFAULT_MEASURES",
    "LENIENT_MIN_GRADE",
    "STRICT_MIN_GRADE",
    "VARIANTS",
    "BootstrapResult",
    "Comparison",
    "Correlation",
    "Measure",
    "NuggetScore",
    "RunCover",
    "alpha_ndcg",
    "alpha_ndcg_runs",
    "binarised",
    "bootstrap_ci",
    "cohen_kappa",
    "compare_to_baseline",
    "cover_scores",
    "covered_test_points",
    "evaluate",
    "exam_cover",
    "grade_judgment_table",
    "ideal_dcg",
    "leaderboard_correlation",
    "matched_nuggets",
    "mean_over_queries",
    "mean_stderr",
    "measure_per_query",
    "n_exam_cover",
    "nugget_f",
    "overall_cover",
    "paired_bootstrap",
    "paired_permutation_test",
    "paired_t_test",
    "parse_measure",
    "passage_coverage",
    "pyramid_weights",
    "qrels_labels",
    "read_qrels",
    "relevance_level",
    "response_length",
    "write_qrels",
]
