"""Secret banks: nothing a system developer receives (terminal output, qrels, JSON report) may contain
a test point's text, a gold answer or an extracted answer."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SECRET_BANK = """\
secret: true
queries:
  - id: q1
    text: first query
    questions:
      - {id: q1/a, text: Which gas makes up most of the air, answers: [nitrogen gas]}
      - {id: q1/b, text: What colour is a clear daytime sky}
    nuggets:
      - {id: q1/n, text: plankton bloom, weight: 2}
  - id: q2
    text: second query
    questions:
      - {id: q2/c, text: Who wrote the secret exam}
"""
SECRETS = ["Which gas makes up most of the air", "nitrogen gas", "What colour is a clear daytime sky", "plankton bloom",
           "Who wrote the secret exam"]


def _outputs(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(errors="replace") for p in (root / "reports").rglob("*") if p.is_file()}


@pytest.mark.parametrize("flag", [[], ["--exam-redact"]])
def test_no_bank_text_in_any_output(project: pytest.Pytester, flag: list[str]) -> None:
    (project.path / "banks" / "exam.yaml").write_text(SECRET_BANK)
    result = project.runpytest("banks", "-v", "-rA", *flag)
    assert result.ret == 0
    outputs = _outputs(project.path)
    assert outputs, "the exam wrote no reports"
    outputs["terminal"] = result.stdout.str() + result.stderr.str()
    for name, text in outputs.items():
        for secret in SECRETS:
            assert secret.lower() not in text.lower(), f"{secret!r} leaked into {name}"


def test_grader_errors_echoing_the_prompt_are_redacted(project: pytest.Pytester) -> None:
    (project.path / "banks" / "exam.yaml").write_text(SECRET_BANK)
    conftest = project.path / "conftest.py"
    conftest.write_text(
        conftest.read_text().replace(
            'out.append(GradeFailure("model server said 500"))',
            'out.append(GradeFailure("server rejected prompt: " + r.test_point.text))',
        )
    )
    (project.path / "runs" / "collection.tsv").write_text(
        (project.path / "runs" / "collection.tsv").read_text().replace("another useless passage", "BROKEN")
    )
    result = project.runpytest("banks", "-rA")
    assert result.ret == 1  # the failed pair is an error
    result.stdout.fnmatch_lines(["*server rejected prompt: ?redacted?*"])
    assert "Who wrote the secret exam" not in result.stdout.str()
