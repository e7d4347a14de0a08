"""The ``view`` subcommand through its entry point: its errors, Textual imported by it alone, and tmux's absence
said (skipped here, failed under CI=true)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from exam_harness.cli import main
from tests.features.view.example import Example
from tests.paths import REPO


@pytest.mark.slow
def test_no_other_subcommand_imports_textual() -> None:
    """``import exam_harness``, every subcommand's parser and the viewer's own modules without screens leave
    Textual unimported (it is an optional extra)."""
    code = ("import sys, exam_harness\n"
            "from exam_harness.cli import build_parser\n"
            "build_parser()\n"
            "import exam_harness.features.view.command, exam_harness.features.view.document\n"
            "import exam_harness.features.view.pairs, exam_harness.features.view.filters\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_view_is_the_feature_s_subcommand_and_is_built_alone() -> None:
    """The view feature registers ``view`` (pytest_exam_register_commands); named, it is built without importing a
    built-in subcommand's module; ``exam-harness --help`` lists it after the built-in ones."""
    code = ("import sys\n"
            "from exam_harness.cli import build_parser\n"
            "parser = build_parser(['view', 'report.json'])\n"
            "sub = next(a for a in parser._actions if a.dest == 'command')\n"
            "print(sorted(sub.choices), sorted(m for m in sys.modules if m.startswith('exam_harness.cli.')))\n"
            "sub = next(a for a in build_parser()._actions if a.dest == 'command')\n"
            "print(list(sub.choices)[-1])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['view'] []", "view"]


def test_the_pairs_are_looked_up_with_the_command_line_s_plugins(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The feature reads the front end's graders and formats through the active hook (core/host.py), not through
    extensions.py: while a subcommand runs, the folder's conftest.py's grader is there; after it, the in-tree
    defaults alone."""
    from exam_harness.cli import build_parser
    from exam_harness.features.view.pairs import host_lookups
    from exam_harness.results.sections import reset_sections
    from tests.helpers import KEYWORD_CONFTEST

    (tmp_path / "conftest.py").write_text(KEYWORD_CONFTEST)
    monkeypatch.chdir(tmp_path)
    try:
        build_parser(["view", "report.json"])  # what main() does before it runs the command
        lookups = host_lookups()
        assert "keyword" in lookups.graders and "embedding" in lookups.graders
        assert lookups.bank_formats.names() and lookups.run_formats.names()
    finally:
        reset_sections()  # what main() does when the command ends
    assert "keyword" not in host_lookups().graders


def test_view_without_textual_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, example: Example,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "textual", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "exam_harness.features.view.app", raising=False)
    monkeypatch.delitem(sys.modules, "exam_harness.features.view.screens", raising=False)
    assert main(["view", str(example.report)]) == 4
    assert "exam-harness view needs Textual: pip install 'exam-harness[view]'" in capsys.readouterr().err


def test_view_in_a_pipe_says_it_needs_a_terminal(example: Example) -> None:
    done = subprocess.run([sys.executable, "-c", "import sys; from exam_harness.cli import main; "
                           f"sys.exit(main(['view', {str(example.report)!r}]))"],
                          capture_output=True, text=True, stdin=subprocess.PIPE, timeout=120)
    assert done.returncode == 4
    assert "exam-harness view needs a terminal" in done.stderr


def test_a_bad_document_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "exam-report.json"
    bad.write_text('{"kind": "exam-report",\n "schema_version": 4.1')
    assert main(["view", str(bad)]) == 4
    err = capsys.readouterr().err
    assert f"{bad}:2: invalid JSON" in err


def test_a_reference_and_compare_together_are_refused(example: Example, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(example.report), str(example.kept), "--compare", "latest"]) == 4
    assert "not both" in capsys.readouterr().err


def test_label_on_the_screen_without_textual_is_refused(monkeypatch: pytest.MonkeyPatch, example: Example,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "textual" else real(name, *a))
    monkeypatch.chdir(example.root)
    assert main(["label", "runs", "--bank", "banks/example.yaml", "--screen", "on", "--out",
                 str(example.root / "unused.jsonl")]) == 4
    assert "the labelling screen needs Textual" in capsys.readouterr().err


@pytest.mark.parametrize("ci", ["true", ""])
def test_without_tmux_a_terminal_test_skips_or_fails_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              ci: str) -> None:
    from tests.features.view.support import tmux_binary

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected, match="tmux is not installed"):
        tmux_binary()


def test_compare_names_a_kept_report_of_the_history(monkeypatch: pytest.MonkeyPatch, example: Example) -> None:
    """``--compare latest`` reads the kept report the history holds, as ``--exam-compare`` does (the app's run is
    replaced here: a terminal test drives the real one, test_tmux.py)."""
    from exam_harness.features.view.app import ViewerApp

    seen: list[ViewerApp] = []
    monkeypatch.setattr(ViewerApp, "run", lambda self, *a, **k: seen.append(self))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.chdir(example.root)
    assert main(["view", "reports/exam-report.json", "--compare", "latest", "--search", "missed"]) == 0
    reference = seen[0].viewed.reference
    assert reference is not None and reference.name == "0001_before.json"
    assert seen[0].initial_search == "missed"
    assert main(["view", "reports/exam-report.json", "--compare", "nothing-of-that-name"]) == 4
