"""Issue 31, finding 22: a session incomplete only because too many grades were read by a fallback rule
says so; it used to blame "systems failed on some queries" though no system was declared."""

from __future__ import annotations

import pytest

from tests.fake_openai_server import FakeOpenAIServer
from tests.graders.support import _answer, _systems, llm_project, server  # noqa: F401  (fixtures)
from tests.plugin.support import openai_args

pytest_plugins = ["pytester"]
pytest.importorskip("openai")


def test_a_fallback_only_incomplete_session_says_why(llm_project: pytest.Pytester,  # noqa: F811
                                                     server: FakeOpenAIServer) -> None:  # noqa: F811
    assert _answer("GRADE=2") == "banana"  # the weak run's passage gets an answer holding no grade
    result = llm_project.runpytest(*openai_args(server), "--exam-markdown=summary.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _systems(llm_project)["weak"]["incomplete_queries"] == ["q1"]
    out = result.stdout.str()
    assert "systems failed" not in out, out
    result.stdout.fnmatch_lines(["! incomplete: 2 grades were read by a fallback rule, more than --exam-max-fallbacks "
                                 "allows; the scores of 'weak' (1 of 2 queries) rest on them (not scores)"])
    markdown = (llm_project.path / "summary.md").read_text()
    assert "systems failed" not in markdown and "more grades than --exam-max-fallbacks allows" in markdown
