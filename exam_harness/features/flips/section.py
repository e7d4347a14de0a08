"""The flips section: the test points whose verdict flipped against the kept report (``--exam-compare``),
answered before and missed now or the other way round, per run, with both sides' best passages and
reasons (flips.py, the pure function ``exam-harness compare`` shows too). A session that compares
with nothing, and ``exam-harness evaluate``, have no such section; a comparison with no flip has an
empty one (the reader learns nothing flipped)."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from exam_harness.results.schema import TestPointOutcome

if TYPE_CHECKING:
    from exam_harness.features.flips.flips import Flip
    from exam_harness.results.scored import Scored


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FlippedPoint(_Model):
    """One run's verdict on one test point, answered on one side and missed on the other."""

    run: str
    query_id: str
    test_point_id: str
    lost: bool  # answered in the reference, missed now
    required: bool
    before: TestPointOutcome
    after: TestPointOutcome


class Flips(_Model):
    reference: str  # the kept report's name
    flips: list[FlippedPoint] = Field(default_factory=list)

    def counts(self) -> str:
        from exam_harness.features.flips.flips import flip_counts

        counted = flip_counts(self.found())
        return ", ".join(f"{run} -{lost} +{gained}" for run, (lost, gained) in sorted(counted.items())) or "none"

    def found(self) -> list[Flip]:
        from exam_harness.features.flips.flips import Flip

        return [Flip(f.run, f.query_id, f.test_point_id, f.before, f.after) for f in self.flips]


def _side(o: TestPointOutcome) -> str:
    from exam_harness.features.flips.flips import side_text

    return side_text(o)


@dataclass(frozen=True)
class FlipsSection:
    name: str = "flips"
    title: str = "Flipped test points"
    model: type[BaseModel] = Flips

    def compute(self, scored: Scored) -> Flips | None:
        if scored.reference is None:
            return None
        from exam_harness.features.flips.flips import flipped_outcomes

        name, old = scored.reference
        return Flips(reference=name, flips=[
            FlippedPoint(run=f.run, query_id=f.query_id, test_point_id=f.test_point_id, lost=f.lost,
                         required=f.required, before=f.before, after=f.after)
            for f in flipped_outcomes(old.outcomes, scored.outcomes)])

    def terminal(self, content: Flips) -> list[str]:
        if not content.flips:
            return [f"flipped test points against {content.reference}: none"]
        from exam_harness.core.display import render_text
        from exam_harness.features.flips.flips import flips_table

        table = flips_table(content.found(), title_suffix=f"against {content.reference}")
        return render_text(table, 120).rstrip("\n").splitlines()

    def markdown(self, content: Flips, escape: Callable[[str], str]) -> str:
        head = f"flipped test points against {escape(content.reference)}: {escape(content.counts())}"
        if not content.flips:
            return head
        head = f"### Flipped test points\n\n{head}"
        rows = [f"| {escape(f.run)} | {escape(f.test_point_id)}{' (required)' if f.required else ''} | "
                f"{'answered → missed' if f.lost else 'missed → answered'} | {escape(_side(f.before))} | "
                f"{escape(_side(f.after))} |" for f in content.flips]
        return "\n".join([head, "", "| run | test point | | before | now |", "|---|---|---|---|---|", *rows])

    def html(self, content: Flips) -> str:
        e = html.escape
        rows = "".join(
            f"<tr><td>{e(f.run)}</td><td>{e(f.test_point_id)}{' (required)' if f.required else ''}</td>"
            f"<td>{'answered → missed' if f.lost else 'missed → answered'}</td><td>{e(_side(f.before))}</td>"
            f"<td>{e(_side(f.after))}</td></tr>" for f in content.flips)
        table = ('<div class="scroll"><table><thead><tr><th>run</th><th>test point</th><th></th><th>before</th>'
                 f"<th>now</th></tr></thead><tbody>{rows}</tbody></table></div>") if rows else ""
        return (f'<section id="flips"><h2>Flipped test points</h2><p class="note">against '
                f"{e(content.reference)}: {e(content.counts())}</p>{table}</section>")


SECTION = FlipsSection()
