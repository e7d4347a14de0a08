"""What tests elsewhere share with the measures' tests: a hits measure and the plugin that declares it."""

from __future__ import annotations

# A plugin measure in a conftest: the share of a run's top-k passages that cover some test point.
HITS_PLUGIN = '''
from dataclasses import dataclass
from typing import ClassVar
from exam_harness.measures.base import Measure
from exam_harness.measures.exam import bound

@dataclass(frozen=True)
class Hits(Measure):
    family: ClassVar[str] = "hits"
    k: int | None = None
    min_grade: int | None = None

    @property
    def title(self):
        return f"Hits@{self.k}"

    def compute(self, ctx):
        k, tau = bound(self, "k"), bound(self, "min_grade")
        top = ctx.top_k(k)
        out = {}
        for run in ctx.runs:
            out[run] = {}
            for q in ctx.queries:
                covers = ctx.coverage(q, tau, top[run][q])
                out[run][q] = sum(1 for p in top[run][q] if covers[p]) / k
        return out

def pytest_exam_register_measures(registry):
    registry.register("hits", Hits, "share of the top-k passages that cover a test point")
'''

# good: q1 [p1 p2] both cover, q2 [p4] covers -> (2/2 + 1/2) / 2; weak: q1 [p3 p1] one, q2 [p5] none
HITS = {"good": 0.75, "weak": 0.25}
