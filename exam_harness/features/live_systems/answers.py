"""What a declared system answers: a generated :class:`Answer` (with its :class:`Sentence` citations) or
a ranking of :class:`Passage` values. Values only, so the call forms and the declarations both build on them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """One passage of a ranking system's answer, in rank order; ``id`` None: derived from the text."""

    id: str | None
    text: str
    score: float | None = None


@dataclass(frozen=True)
class Sentence:
    """A sentence of a generated answer and the references it cites (indices into ``Answer.references``
    or reference ids)."""

    text: str
    citations: tuple[int | str, ...] = ()


@dataclass(frozen=True)
class Answer:
    """A generated answer: its text, optionally the references it drew on, per-sentence citations, and
    the tokens and cost the call spent (kept in the manifest). With ``sentences`` and no ``text`` the
    text is the sentences joined by spaces."""

    text: str = ""
    references: tuple[str, ...] = ()
    sentences: tuple[Sentence, ...] = ()
    tokens: int | None = None
    cost: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "references", tuple(self.references))
        object.__setattr__(self, "sentences", tuple(
            s if isinstance(s, Sentence) else Sentence(str(s[0]), tuple(s[1])) for s in self.sentences))
        if not self.text and self.sentences:
            object.__setattr__(self, "text", " ".join(s.text for s in self.sentences))
