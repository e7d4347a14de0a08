"""The verdict's ``exam-max-cost`` check, from the document's cost section alone (``exam-harness verdict`` on a
saved document decides it as the session did)."""

from __future__ import annotations

from exam_harness.api import GateResult
from exam_harness.core.display import money
from exam_harness.features.cost.section import CostSummary


def budget_results(cost: object) -> list[GateResult]:
    """A failed ``exam-max-cost`` check when the session spent more than the grader's ``max_cost`` (a server
    reporting more tokens than the estimate, calls in flight at the stop): the budget was not held."""
    if (not isinstance(cost, CostSummary) or cost.max_cost is None or cost.session.cost is None
            or cost.session.cost <= cost.max_cost):
        return []
    return [GateResult(gate="exam-max-cost", value=cost.session.cost, limit=cost.max_cost, passed=False,
                       message=f"FAIL grading spent {money(cost.session.cost)}, more than max_cost "
                               f"{money(cost.max_cost)}: the server's usage exceeded the estimate that bounds each "
                               "batch (the grades made are cached)")]
