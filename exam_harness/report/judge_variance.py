"""The judge-variance figures of a report (a grader with ``repeats=K``) as terminal lines, a markdown
section and an HTML section: each run's score with the judge's share of its variance, the cases whose
verdict flips across samples (``flaky``) and every case whose best grade varies (its spread).
Cases that agree in every sample are counted, not listed; the JSON report holds every case."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

from exam_harness.report.schema import CaseSpread, JudgeVariance, RunJudgeVariance

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


def summary(jv: JudgeVariance) -> str:
    return (f"judge variance: {jv.repeats} samples per pair, reduced by {jv.reducer}; "
            + "; ".join(f"{r.run!r} {r.score:.4f} (samples {', '.join(f'{s:.4f}' for s in r.sample_scores)}), "
                        f"judge share {share_text(r)}, {r.flaky} of {r.cases} cases flaky" for r in jv.runs))


def terminal_lines(jv: JudgeVariance) -> list[str]:
    """The summary line and each flaky case (at most :data:`CASES_SHOWN`)."""
    return [summary(jv), *flaky_lines(jv)]


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


def markdown_section(jv: JudgeVariance, escape: Callable[[str], str]) -> str:
    head = (f"### Judge variance: {jv.repeats} samples per pair, reduced by {escape(jv.reducer)}\n\n"
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


def html_section(jv: JudgeVariance, runs: Sequence[str] | None = None) -> str:
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
    return (f'<section id="judge-variance"><h2>Judge variance</h2><p class="note">{jv.repeats} samples per pair, '
            f"reduced by {e(jv.reducer)}; judge share = judge variance / (judge + query variance), "
            "see docs/judge-variance.md</p>" + table + spread + "</section>")
