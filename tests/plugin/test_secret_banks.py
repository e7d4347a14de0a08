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


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s.lower() in text.lower()]


@pytest.mark.parametrize("echo", [
    'json.dumps({"error": {"message": "bad prompt: " + r.test_point.text + " \\u00e9"}})',  # JSON-escaped
    'repr(r.test_point.text + "\\n")',  # a Python repr of it
    '"prompt " + html.escape(r.test_point.text) + "!"',  # an HTML error page
    '"prompt: " + r.test_point.text.upper()[:20] + "..."',  # shouted and cut short
    '"q=" + urllib.parse.quote(r.test_point.text)',  # in a URL
])
def test_reencoded_echoes_are_redacted_everywhere(project: pytest.Pytester, echo: str) -> None:
    (project.path / "banks" / "exam.yaml").write_text(SECRET_BANK)
    conftest = project.path / "conftest.py"
    conftest.write_text("import html, json, urllib.parse\n" + conftest.read_text().replace(
        'out.append(GradeFailure("model server said 500"))', f"out.append(GradeFailure({echo}))"))
    (project.path / "runs" / "collection.tsv").write_text(
        (project.path / "runs" / "collection.tsv").read_text().replace("another useless passage", "BROKEN"))
    result = project.runpytest("banks", "-rA", "-vv", "--junitxml=junit.xml")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*pairs that could not be graded*"])
    everything = result.stdout.str() + result.stderr.str() + (project.path / "junit.xml").read_text()
    assert "redacted" in everything
    assert not _leaks(everything)


BROKEN_RUN_FORMAT = """

class Exploding:
    collection = False
    def claims(self, path):
        return path.name.endswith(".boom")
    def read(self, path, keep=None):
        secret_bank_text = "Who wrote the secret exam"  # a local a traceback would show with -l
        raise RuntimeError("reader bug near " + secret_bank_text)

def pytest_exam_register_run_formats(registry):
    registry.register("exploding", Exploding())
"""


def test_a_crash_while_collecting_a_secret_exam_shows_no_locals(project: pytest.Pytester) -> None:
    """A system developer controls the run files; a reader crash there must not print the secret bank
    through pytest's traceback and ``-l`` locals."""
    (project.path / "banks" / "exam.yaml").write_text(SECRET_BANK)
    conftest = project.path / "conftest.py"
    conftest.write_text(conftest.read_text() + BROKEN_RUN_FORMAT)
    (project.path / "runs" / "x.boom").write_text("anything")
    result = project.runpytest("banks", "-l", "-vv", "--full-trace")
    everything = result.stdout.str() + result.stderr.str()
    assert result.ret != 0
    assert "traceback withheld" in everything, everything
    assert not _leaks(everything)


def test_analyze_shows_secret_test_points_by_id_unless_revealed(project: pytest.Pytester,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.cli import main

    bank = project.path / "banks" / "exam.yaml"
    bank.write_text(SECRET_BANK.replace("secret: true\n", "secret: true\n"))
    args = ["analyze", "verify", "--bank", str(bank), "--grader", "embedding", "--cache", "none", "--no-progress",
            str(project.path / "runs")]
    main(args)
    hidden = capsys.readouterr()
    assert "q1/a" in hidden.out and not _leaks(hidden.out + hidden.err)
    assert "shown by id only" in hidden.err
    main([*args, "--reveal"])
    assert "Which gas makes up most of the air" in capsys.readouterr().out
