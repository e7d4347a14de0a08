"""Run names, ids and texts are data wherever they are printed: rich markup in a name is shown as
written, terminal escape sequences never reach the terminal, and ids with control or invisible
characters are refused with a message that shows them."""

from __future__ import annotations

import pytest

from exam_harness.core.display import shorten, visible
from exam_harness.core.models import Passage, Query, Run

pytest_plugins = ["pytester"]
ESC = "\x1b"


def test_markup_in_a_run_name_is_printed_as_written(project: pytest.Pytester) -> None:
    runs = project.path / "runs"
    (runs / "weak.run").write_text("".join(
        f"{q} Q0 {p} {r} 1.0 [bold]weak[black_on_black]\n" for q, p, r in (("q1", "p3", 1), ("q2", "p5", 1))))
    result = project.runpytest("banks", "--exam-markdown=summary.md")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "[bold]weak[black_on_black]" in result.stdout.str()
    assert "\\[bold\\]weak\\[black\\_on\\_black\\]" in (project.path / "summary.md").read_text()


def test_escape_sequences_in_texts_are_made_visible(project: pytest.Pytester) -> None:
    bank = project.path / "banks" / "exam.yaml"
    bank.write_text(bank.read_text().replace("text: question b", 'text: "question b\\e[2J\\e[8m hidden"'))
    result = project.runpytest("banks", "-rs", "-v")
    out = result.stdout.str() + result.stderr.str()
    assert ESC + "[2J" not in out and ESC + "[8m" not in out
    assert "question b\\x1b[2J\\x1b[8m hidden" in out  # the weak run misses q1/b: its message shows the text


@pytest.mark.parametrize(("make", "what"), [
    (lambda v: Run(name=v), "run name"),
    (lambda v: Query(id=v, text="t"), "query id"),
    (lambda v: Passage(id=v, text="t"), "passage id"),
])
@pytest.mark.parametrize("bad", ["run\x1b[31m", "q\u200b1", "a\u202eb", "x\x00"])
def test_ids_with_hidden_characters_are_refused_and_shown(make: object, what: str, bad: str) -> None:
    with pytest.raises(ValueError, match=rf"{what} must not contain a (control|format) character \(U\+") as info:
        make(bad)  # type: ignore[operator]
    assert ascii(bad) in str(info.value) and bad not in str(info.value)


def test_visible_and_shorten() -> None:
    assert visible("a\x1b[0mb\u200bc\td\n") == "a\\x1b[0mb\\u200bc\td\n"
    assert repr(shorten("one\ntwo\x07", 100)) == "'one two\\x07'"
    assert visible("plain text, ü and 日本") == "plain text, ü and 日本"


def test_lookalike_ids_are_explained() -> None:
    from exam_harness.results.preflight import near_match

    assert near_match("Ｑ１", ["q1", "q2"]) == "'q1' (they differ only in case or Unicode form: '\\uff31\\uff11' vs 'q1')"
    assert near_match("bm25", ["bm25\u00a0"]) is not None
    assert near_match("q19335", ["19335", "q1"]) == "'19335'"
    assert near_match("zzz", ["q1"]) is None
