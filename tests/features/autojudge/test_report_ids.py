"""AutoJudge Reports' ids by the one id rule (issue 39, findings 2 and 11; issue 37, item 9): a run id that is
a path writes nothing outside, an id with a terminal escape is a clean InputError naming the report and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness.core.errors import InputError
from tests.helpers import files_under, outside
from tests.trec_rag_data import NUGGETS, write_lines

pytest.importorskip("nltk", reason="the [autojudge] extra is not installed (pip install 'exam-harness[autojudge]')")

from exam_harness.features.autojudge.offline import use_offline_nltk_data

use_offline_nltk_data()  # before autojudge-base is first imported: it would download NLTK data otherwise
pytest.importorskip("autojudge_base", reason="the [autojudge] extra is not installed")

from autojudge_base import Report  # noqa: E402

from exam_harness.features.autojudge.convert import reports_to_answers  # noqa: E402


def test_a_hostile_run_id_in_an_autojudge_report_writes_nothing_outside(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge writes the Reports as answer files into a temporary folder: ``../../x`` wrote two folders up."""
    import tempfile

    from autojudge_base import Request

    from exam_harness.features.autojudge.judge import ExamJudge

    scratch = tmp_path / "a" / "b"
    scratch.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    bank = write_lines(tmp_path / "nuggets.jsonl", NUGGETS)
    report = Report.model_validate({"metadata": {"team_id": "t", "run_id": "../../x", "topic_id": "t1"},
                                    "responses": [{"text": "Moon gravity.", "citations": ["d1"]}]})
    before = files_under(tmp_path)
    with pytest.raises(InputError, match=r"report 1 .*run_id must not contain a path separator.*metadata\.run_id"):
        ExamJudge().judge(rag_responses=[report], rag_topics=[Request(request_id="t1", title="tides")],
                          llm_config=None, bank=str(bank), grader="answer-key")
    assert outside(tmp_path, before) == {}


@pytest.mark.parametrize(("field", "run_id", "topic_id"), [("metadata.run_id", "r\x1b[2J", "t1"),
                                                           ("metadata.topic_id", "r", "t\x1b]0;x\x07")])
def test_an_autojudge_report_id_with_an_escape_is_refused_cleanly(field: str, run_id: str, topic_id: str) -> None:
    """Issue 39, finding 11's last sentence: a raw traceback before."""
    report = Report.model_validate({"metadata": {"team_id": "t", "run_id": run_id, "topic_id": topic_id},
                                    "responses": [{"text": "A.", "citations": []}]})
    with pytest.raises(InputError, match=r"must not contain a control character \(U\+001B\)") as info:
        reports_to_answers([report], {})
    assert info.value.field == field and "\x1b" not in str(info.value)
