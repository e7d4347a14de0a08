"""The decided-by section: a grader of several parts (the embedding grader: its answer key, its
embedding) counts the graded pairs each part decided, so a reader knows why a passage stating the
answer got the top grade. Other graders decide by one part and the document has no such section."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from exam_harness.results.scored import Scored


class DecidedBy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    parts: dict[str, int]  # part -> graded pairs it decided (answer-key, embedding)

    def text(self) -> str:
        return ", ".join(f"{part} {n}" for part, n in self.parts.items())


@dataclass(frozen=True)
class DecidedBySection:
    name: str = "decided-by"
    title: str = "Decided by"
    model: type[BaseModel] = DecidedBy

    def compute(self, scored: Scored) -> DecidedBy | None:
        parts = scored.grading.decided_by
        return DecidedBy(parts=dict(parts)) if parts else None

    def terminal(self, content: DecidedBy) -> list[str]:
        return [f"grades decided by {content.text()}"]

    def markdown(self, content: DecidedBy, escape: Callable[[str], str]) -> str:
        return "grades decided by " + ", ".join(f"{escape(part)} {n}" for part, n in content.parts.items())

    def html(self, content: DecidedBy) -> str:
        return (f'<section id="decided-by"><h2>Decided by</h2><p class="note">graded pairs per deciding part of '
                f"the grader: {html.escape(content.text())}</p></section>")


SECTION = DecidedBySection()
