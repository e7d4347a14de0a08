"""The judge-variance section: how much of a run's score is the judge's noise, the figures of a grader
asked K times per pair (grader option ``repeats``; definitions in docs/judge-variance.md).

For run r over the n scored queries, with ``x[q][s]`` the EXAM-Cover of query q when every pair takes its
grade of sample s alone:

* the sample scores ``S[s] = mean_q x[q][s]``; the *judge variance* is their variance over the K samples
  (``ddof=1``): how far the score of one sampled judge moves when the judge is asked again, the queries fixed;
* the *query variance* is the squared standard error of the report's score over its queries (``Var_q / n``,
  ``ddof=1``, the report's ``stderr`` squared): how far it moves with another draw of queries;
* the *judge share* is ``judge / (judge + query)`` (None when both are 0).

A *case* (a run on a test point, one pytest case) answers in sample s when some passage of the run's top-k
has a grade >= tau in sample s; it is *flaky* when it answers in some samples and not in others. A run's
``cover_at_least[m - 1]`` is its EXAM-Cover counting a test point as covered only when its case answers
in at least m of the K samples (the ``@MofK`` form of ``--exam-fail-under`` gates on it).

The section holds these figures once per tau scored (the pytest session's one, each of ``evaluate
--min-grade``'s) and renders them as terminal lines, a markdown section and an HTML section: each run's
score with the judge's share of its variance, the cases whose verdict flips across samples (``flaky``)
and every case whose best grade varies (its spread). Cases that agree in every sample are counted, not
listed; the JSON document holds every case.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, with_config

from exam_harness.core.models import QueryBank
from exam_harness.graders.repeats import case_samples

if TYPE_CHECKING:
    from exam_harness.measures.context import ScoringContext
    from exam_harness.results.scored import Scored


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


@with_config(ConfigDict(extra="forbid"))
@dataclass(slots=True, kw_only=True)
class CaseSpread:
    """One case (a run on a test point) over the judge's K samples: the best grade of the run's top-k in
    each sample (None: no graded passage), how many samples answer it, and whether its verdict flips."""

    run: str
    query_id: str
    test_point_id: str
    best_grades: list[int | None]
    answered_in: int
    flaky: bool


class RunJudgeVariance(_Model):
    """One run's score beside the judge's share of its variance (definitions: docs/judge-variance.md)."""

    run: str
    score: float  # the report's EXAM-Cover (the reducer's grades)
    sample_scores: list[float]  # EXAM-Cover of each sample's grades alone
    judge_variance: float  # variance of sample_scores (ddof=1)
    query_variance: float  # squared standard error of score over the queries
    judge_share: float | None  # judge / (judge + query); None when both are 0
    cases: int
    flaky: int  # cases answered in some samples and not in others
    cover_at_least: list[float]  # [m - 1]: EXAM-Cover counting test points answered in >= m of the K samples


class JudgeVariance(_Model):
    repeats: int
    reducer: str
    measure: str  # the measure the figures are of (EXAM-Cover at the report's k and tau)
    min_grade: int
    k: int
    runs: list[RunJudgeVariance] = Field(default_factory=list)
    cases: list[CaseSpread] = Field(default_factory=list)

    def run(self, name: str) -> RunJudgeVariance | None:
        return next((r for r in self.runs if r.run == name), None)


class JudgeVariances(_Model):
    """The section: the figures at each tau scored (one in a pytest report)."""

    per_tau: list[JudgeVariance]

    def at(self, min_grade: int) -> JudgeVariance | None:
        return next((jv for jv in self.per_tau if jv.min_grade == min_grade), None)


Pair = tuple[str, str]


def _variance(values: Sequence[float]) -> float:
    return statistics.variance(values) if len(values) > 1 else 0.0


def judge_share(judge: float, query: float) -> float | None:
    """The judge's share of the two variances (None when the score varies with neither)."""
    total = judge + query
    return judge / total if total > 0 else None


def judge_variance(
    ctx: ScoringContext,
    banks: Sequence[QueryBank],
    samples: Mapping[Pair, tuple[int, ...]],
    *,
    repeats: int,
    reducer: str,
    k: int,
    min_grade: int,
    measure: str,
    cover: Mapping[str, Mapping[str, float]],
    shown_id: Callable[[QueryBank, str], str] = lambda bank, tid: tid,
) -> JudgeVariance:
    """The judge-variance figures of every run of ``ctx``: ``samples`` are each pair's K sample grades,
    ``cover`` the report's per-query EXAM-Cover (run -> query -> value) at ``k`` and ``min_grade``;
    ``shown_id`` gives the id a case shows (its pytest id)."""
    tops = ctx.top_k(k)
    scored = {q for q in ctx.queries if ctx.bank(q)}
    by_query = {b.query.id: b for b in banks}
    runs: list[RunJudgeVariance] = []
    cases: list[CaseSpread] = []
    for run in ctx.runs:
        # per query: covered test points per sample, and per test point the samples it answers in
        per_sample: dict[str, list[int]] = {}
        holds: dict[str, list[int]] = {}
        flaky = 0
        for q in ctx.queries:
            if q not in scored:
                continue
            points = ctx.bank(q)
            top = tops[run][q]
            covered = [0] * repeats
            answered_in: list[int] = []
            for tid in points:
                best, answered = case_samples(tid, top, samples, repeats, min_grade)
                count = sum(answered)
                answered_in.append(count)
                for s, yes in enumerate(answered):
                    covered[s] += yes
                is_flaky = 0 < count < repeats
                flaky += is_flaky
                bank = by_query.get(q)
                cases.append(CaseSpread(run=run, query_id=q, test_point_id=shown_id(bank, tid) if bank else tid,
                                        best_grades=best, answered_in=count, flaky=is_flaky))
            per_sample[q] = covered
            holds[q] = answered_in
        n = len(per_sample)
        sample_scores = [sum(per_sample[q][s] / len(ctx.bank(q)) for q in per_sample) / n if n else 0.0
                         for s in range(repeats)]
        at_least = [sum(sum(c >= m for c in holds[q]) / len(ctx.bank(q)) for q in holds) / n if n else 0.0
                    for m in range(1, repeats + 1)]
        values = [v for q, v in cover.get(run, {}).items() if q in scored]
        query = _variance(values) / len(values) if values else 0.0
        judge = _variance(sample_scores)
        runs.append(RunJudgeVariance(
            run=run, score=sum(values) / len(values) if values else 0.0, sample_scores=sample_scores,
            judge_variance=judge, query_variance=query, judge_share=judge_share(judge, query),
            cases=sum(len(h) for h in holds.values()), flaky=flaky, cover_at_least=at_least))
    return JudgeVariance(repeats=repeats, reducer=reducer, measure=measure, min_grade=min_grade, k=k, runs=runs,
                         cases=cases)


# --- the section ----------------------------------------------------------------------------------------


CASES_SHOWN = 20  # varying cases listed per output; the JSON report has them all


def share_text(run: RunJudgeVariance) -> str:
    return f"{run.judge_share:.0%}" if run.judge_share is not None else "–"


def samples_text(run: RunJudgeVariance) -> str:
    return ", ".join(f"{s:.4f}" for s in run.sample_scores)


def grades_text(case: CaseSpread) -> str:
    return ", ".join("–" if g is None else str(g) for g in case.best_grades)


def varying(jv: JudgeVariance) -> list[CaseSpread]:
    """Cases whose best grade differs across samples, the flaky ones first."""
    cases = [c for c in jv.cases if len(set(c.best_grades)) > 1]
    return sorted(cases, key=lambda c: (not c.flaky, c.run, c.query_id, c.test_point_id))


def summary(jv: JudgeVariance, *, several: bool = False) -> str:
    at = f" at tau={jv.min_grade}" if several else ""  # evaluate scores several taus
    return (f"judge variance{at}: {jv.repeats} samples per pair, reduced by {jv.reducer}; "
            + "; ".join(f"{r.run!r} {r.score:.4f} (samples {', '.join(f'{s:.4f}' for s in r.sample_scores)}), "
                        f"judge share {share_text(r)}, {r.flaky} of {r.cases} cases flaky" for r in jv.runs))


# Said beside every judge-variance figure: a judge can agree with itself and be wrong (issue 35).
NOT_THE_TRUTH = ("samples that agree are not verdicts that are right: a judge wrong the same way every time shows no "
                 "flaky case and no judge share; only labels tell (exam-harness analyze agreement --team-labels)")


def terminal_lines(jv: JudgeVariance, *, several: bool = False) -> list[str]:
    """The summary line and each flaky case (at most :data:`CASES_SHOWN`)."""
    return [summary(jv, several=several), *flaky_lines(jv)]


def flaky_lines(jv: JudgeVariance) -> list[str]:
    """Each flaky case (at most :data:`CASES_SHOWN`), as the terminal shows it (``evaluate``'s too)."""
    flaky = [c for c in varying(jv) if c.flaky]
    lines = [f"  flaky {c.run} {c.test_point_id}: answered in {c.answered_in} of {jv.repeats} samples "
              f"(best grades {grades_text(c)})" for c in flaky[:CASES_SHOWN]]
    if len(flaky) > CASES_SHOWN:
        lines.append(f"  ... and {len(flaky) - CASES_SHOWN} more flaky cases (the JSON report lists them all)")
    return lines


def at_least_text(run: RunJudgeVariance) -> str:
    return " / ".join(f"{v:.4f}" for v in run.cover_at_least)


def markdown_section(jv: JudgeVariance, escape: Callable[[str], str], *, several: bool = False) -> str:
    at = f" at tau={jv.min_grade}" if several else ""  # evaluate scores several taus
    head = (f"### Judge variance{at}: {jv.repeats} samples per pair, reduced by {escape(jv.reducer)}\n\n"
            f"| run | score | sample scores | judge variance | query variance | judge share | flaky cases | "
            f"cover in ≥ 1…{jv.repeats} of {jv.repeats} |\n|:--|--:|--:|--:|--:|--:|--:|--:|")
    rows = [f"| {escape(r.run)} | {r.score:.4f} | {', '.join(f'{s:.4f}' for s in r.sample_scores)} | "
            f"{r.judge_variance:.5f} | {r.query_variance:.5f} | {share_text(r)} | {r.flaky} of {r.cases} | "
            f"{at_least_text(r)} |" for r in jv.runs]
    parts = [head + "\n" + "\n".join(rows)]
    cases = varying(jv)
    if cases:
        lines = [f"- {'**flaky** ' if c.flaky else ''}{escape(c.run)} {escape(c.test_point_id)}: answered in "
                 f"{c.answered_in} of {jv.repeats}, best grades {grades_text(c)}" for c in cases[:CASES_SHOWN]]
        more = len(cases) - CASES_SHOWN
        if more > 0:
            lines.append(f"- … and {more} more (the JSON report lists every case)")
        same = len(jv.cases) - len(cases)
        parts.append(f"Cases whose best grade varies across samples ({len(cases)}; {same} agree in every "
                     "sample):\n\n" + "\n".join(lines))
    return "\n\n".join(parts)


def _html_tables(jv: JudgeVariance) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(r.run)}</td><td>{r.score:.4f}</td><td>{e(', '.join(f'{s:.4f}' for s in r.sample_scores))}</td>"
        f"<td>{r.judge_variance:.5f}</td><td>{r.query_variance:.5f}</td><td>{e(share_text(r))}</td>"
        f"<td>{r.flaky} of {r.cases}</td><td>{e(at_least_text(r))}</td></tr>" for r in jv.runs)
    table = ("<div class=\"scroll\"><table><thead><tr><th>run</th><th>score</th><th>sample scores</th>"
             "<th>judge variance</th><th>query variance</th><th>judge share</th><th>flaky cases</th>"
             f"<th>cover in ≥ 1…{jv.repeats} of {jv.repeats}</th></tr></thead><tbody>{rows}</tbody></table></div>")
    cases = varying(jv)
    listed = "".join(
        f'<tr class="{"flaky" if c.flaky else "spread"}"><td>{e(c.run)}</td><td>{e(c.test_point_id)}</td>'
        f"<td>{'flaky' if c.flaky else ''}</td><td>{c.answered_in} of {jv.repeats}</td>"
        f"<td>{e(grades_text(c))}</td></tr>"
        for c in cases[:CASES_SHOWN])
    spread = (f'<p class="note">Cases whose best grade varies across samples: {len(cases)} '
              f"({len(jv.cases) - len(cases)} agree in every sample)"
              + (f"; the first {CASES_SHOWN} shown, the JSON report lists every case" if len(cases) > CASES_SHOWN
                 else "") + "</p>")
    if listed:
        spread += ("<div class=\"scroll\"><table><thead><tr><th>run</th><th>test point</th><th>verdict</th>"
                   f"<th>answered</th><th>best grade per sample</th></tr></thead><tbody>{listed}</tbody></table></div>")
    return table + spread


def html_section(content: JudgeVariances) -> str:
    """The HTML section: per tau scored, the runs' figures and the cases whose best grade varies."""
    several = len(content.per_tau) > 1
    parts = []
    for jv in content.per_tau:
        at = f"at tau={jv.min_grade}: " if several else ""
        parts.append(f'<p class="note">{at}{jv.repeats} samples per pair, reduced by {html.escape(jv.reducer)}; '
                     "judge share = judge variance / (judge + query variance), see docs/judge-variance.md</p>"
                     + _html_tables(jv))
    return ('<section id="judge-variance"><h2>Judge variance</h2>' + "".join(parts)
            + f'<p class="note">{html.escape(NOT_THE_TRUTH)}.</p></section>')


@dataclass(frozen=True)
class JudgeVarianceSection:
    name: str = "judge-variance"
    title: str = "Judge variance"
    model: type[BaseModel] = JudgeVariances

    def compute(self, scored: Scored) -> JudgeVariances | None:
        grading = scored.grading
        if grading.repeats <= 1:
            return None
        from exam_harness.measures.exam import ExamCover

        k = scored.plan.k
        return JudgeVariances(per_tau=[
            judge_variance(scored.ctx, scored.banks, grading.samples, repeats=grading.repeats,
                           reducer=grading.reducer or "mean", k=k, min_grade=tau,
                           measure=str(ExamCover(k=k, min_grade=tau)), cover=scored.cover(tau),
                           shown_id=scored.shown_id)
            for tau in scored.taus])

    def terminal(self, content: JudgeVariances) -> list[str]:
        several = len(content.per_tau) > 1
        return [*(line for jv in content.per_tau for line in terminal_lines(jv, several=several)),
                f"  note: {NOT_THE_TRUTH}"]

    def markdown(self, content: JudgeVariances, escape: Callable[[str], str]) -> str:
        return "\n\n".join([*(markdown_section(jv, escape, several=len(content.per_tau) > 1) for jv in content.per_tau),
                            f"Note: {escape(NOT_THE_TRUTH)}."])

    def html(self, content: JudgeVariances) -> str:
        return html_section(content)


SECTION = JudgeVarianceSection()
