"""Issue 31, finding 22: what the docs promise is what happens.

* a user's own ``reports/exam-report.json`` (one the harness did not write) is refused before any pair
  is graded, not after grading (docs/trust.md: outputs are checked before grading);
* a 2024 TREC RAG citation by segment id is refused (docs/trec-rag.md: that is the 2025 form);
* trec_eval's printed spellings (``success_10``, ``iprec_at_recall_0.10``) name their measures;
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam_harness.config.gates import parse_threshold
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.io.runs import load_runs
from exam_harness.measures.parsing import parse_measure

pytest_plugins = ["pytester"]


def test_a_users_own_report_file_is_refused_before_grading(project: pytest.Pytester) -> None:
    own = project.path / "reports" / "exam-report.json"
    own.parent.mkdir()
    own.write_text('{"mine": true}\n')
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*ERROR: reports/exam-report.json: a file the harness did not write*move it away*"])
    assert str(project.path) not in result.stderr.str()  # the path as the user knows it, not absolute
    assert not (project.path / "graded.log").exists()  # nothing was graded
    assert own.read_text() == '{"mine": true}\n'


def _answer_line(**extra: object) -> str:
    record = {"topic_id": "t1", "topic": "tides", "references": ["msmarco_v2.1_doc_00#1", "msmarco_v2.1_doc_00#2"],
              "answer": [{"text": "The moon pulls the sea.", "citations": ["msmarco_v2.1_doc_00#2"]}], **extra}
    return json.dumps(record) + "\n"


def test_a_2024_citation_by_segment_id_is_refused(tmp_path: Path) -> None:
    """docs/trec-rag.md: a citation is an index into references (2024 and 2025) or one of its segment ids
    (2025 only)."""
    path = tmp_path / "run.jsonl"
    path.write_text(_answer_line(run_id="r24", response_length=5))
    with pytest.raises(InputError) as caught:
        load_runs([path])
    message = str(caught.value)
    assert "run.jsonl:1" in message and "answer[0].citations[0]" in message
    assert "a 2024 citation is an index into references (a segment id is the 2025 form)" in message
    metadata = {"team_id": "t", "run_id": "r25", "type": "automatic", "narrative_id": "t1", "narrative": "tides"}
    path.write_text(_answer_line(metadata=metadata))
    answers = load_runs([path]).answers
    assert [s.citations for per_query in answers.values() for a in per_query.values() for s in a.sentences] == [(1,)]


@pytest.mark.parametrize(("printed", "name"), [("iprec_at_recall_0.10", "iprec_at_recall.0.10"),
                                                ("success_10", "success.10"), ("set_F_0.5", "set_F.0.5")])
def test_trec_eval_s_printed_spelling_names_the_measure(printed: str, name: str) -> None:
    """trec_eval prints success_10 and iprec_at_recall_0.10; the measures error lists 'any trec_eval measure',
    so that spelling is taken, for --exam-measures and gates alike."""
    assert str(parse_measure(printed)) == str(parse_measure(name))
    assert parse_threshold(f"{printed}:0.5").measure == str(parse_measure(name))
    with pytest.raises(ConfigError, match=r"measure 'success_x': pytrec_eval does not take 'success\.x'"):
        parse_measure("success_x")
    with pytest.raises(ConfigError, match="unknown measure 'bogus_10'"):
        parse_measure("bogus_10")


def test_an_output_that_is_a_folder_is_named_as_the_user_wrote_it(project: pytest.Pytester) -> None:
    (project.path / "summary.md").mkdir()
    result = project.runpytest("banks", "--exam-markdown=summary.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: summary.md: is a folder; give the name of a file to write"])
    assert str(project.path) not in result.stderr.str()
