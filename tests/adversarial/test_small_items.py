"""Issue 28, item 8 (the smaller items outside live systems):

* a second copy of a bank (``exam.yml`` beside ``exam.yaml``) would double every case: a usage error naming
  both files, before grading;
* ``--exam-compare-fail=cover:0.05`` names the measures there are, ``exam-cover`` first, and suggests it;
* ``exam-harness record`` ends as a session does, without pytest.exit's crash-looking banner.
"""

from __future__ import annotations

import sys

import pytest

from exam_harness.config.gates import check_measures
from exam_harness.core.errors import ConfigError
from tests.features.live_systems.support import QUERIES, RANKING_SYSTEM, calls, conftest, example  # noqa: F401  (fixture)

pytest_plugins = ["pytester"]


def test_a_copied_bank_is_a_usage_error_naming_both_files(project: pytest.Pytester) -> None:
    bank = project.path / "banks" / "exam.yaml"
    (project.path / "banks" / "exam.yml").write_bytes(bank.read_bytes())
    result = project.runpytest("banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*banks/exam.yml: a copy of the bank banks/exam.yaml (the same bytes); every one of "
                                 "its cases would run twice: remove one of the two files*"])
    assert not (project.path / "graded.log").exists()


def test_a_bank_spread_over_two_files_is_still_one_exam(project: pytest.Pytester) -> None:
    bank = project.path / "banks" / "exam.yaml"
    (project.path / "banks" / "more.yml").write_text(bank.read_text() + "\n# a different file\n")
    assert project.runpytest("banks").ret != pytest.ExitCode.USAGE_ERROR  # only byte-identical copies are refused


def test_an_unknown_gate_measure_names_the_harness_own_measures() -> None:
    with pytest.raises(ConfigError) as caught:
        check_measures(["cover"], None, "--exam-compare-fail")
    message = str(caught.value)
    assert "Did you mean 'exam-cover'?" in message
    assert "Available: exam-cover, n-exam-cover" in message and "nugget-f" in message and "ndcg@k" in message


@pytest.mark.slow
def test_record_ends_without_an_exit_banner(example: pytest.Pytester) -> None:  # noqa: F811
    """``exam-harness record`` at exit status 0 ended with pytest.exit's "!!! _pytest.outcomes.Exit" banner."""
    example.makeconftest(conftest(extra=RANKING_SYSTEM))
    code = f"import sys; from exam_harness.cli import main; sys.exit(main({['record', '--system', 'dict-rag']!r}))"
    recorded = example.run(sys.executable, "-c", code)
    assert recorded.ret == 0, recorded.stderr.str()
    recorded.stdout.fnmatch_lines(["dict-rag: 4 queries recorded", "recorded, not graded"])
    printed = recorded.stdout.str() + recorded.stderr.str()
    assert "_pytest.outcomes.Exit" not in printed and "!!!" not in printed, printed
    assert sorted(calls(example)) == sorted(QUERIES)
    assert not (example.path / "reports").exists()  # nothing graded


def test_a_dry_run_of_the_openai_grader_needs_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's [embedding] install let a dry run of the openai grader pass and the real run fail."""
    from exam_harness.graders.base import GraderConfig
    from exam_harness.graders.registry import default_registry

    monkeypatch.setitem(sys.modules, "openai", None)  # as if the extra were not installed
    with pytest.raises(ConfigError, match=r"needs the 'openai' package: pip install 'exam-harness\[openai\]'"):
        default_registry().create("openai", GraderConfig(model="m", dry_run=True,
                                                         options={"base_url": "http://127.0.0.1:9/v1"}))
