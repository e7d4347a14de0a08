"""docs/own-project.md end to end: the harness built as a wheel, installed into a scratch virtual
environment and run on a scratch project, as another project would use it.

Offline and quick enough for the suite: the wheel is built with ``--no-build-isolation`` (setuptools
from this environment, no download), and the scratch environment gets the wheel alone (``--no-deps``)
while it sees this environment's packages (pytest, pydantic, ...) through a ``.pth`` file, instead
of installing torch again. ``PYTHONPATH`` is dropped, so the scratch environment imports the wheel's
copy of exam_harness (checked), not this checkout. The exam uses the ``answer-key`` grader (no model
to load); the embedding grader's install is the same wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tests.paths import REPO

BANK = """\
queries:
  - id: tides
    text: what causes ocean tides
    questions:
      - id: tides/force
        text: What force pulls the oceans into tidal bulges?
        answers: [gravity, gravitational pull]
"""


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def scratch_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("own-project")
    source = root / "src"
    source.mkdir()
    shutil.copy(REPO / "pyproject.toml", source)
    shutil.copy(REPO / "README.md", source)
    shutil.copytree(REPO / "exam_harness", source / "exam_harness", ignore=shutil.ignore_patterns("__pycache__"))
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                  str(root / "dist"), str(source)], root)
    assert built.returncode == 0, built.stderr
    wheels = list((root / "dist").glob("exam_harness-*.whl"))
    assert len(wheels) == 1, wheels

    venv = root / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root)
    # this environment's packages, after the scratch environment's own (where the wheel goes)
    (Path(purelib.stdout.strip()) / "outer-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                      str(wheels[0])], root)
    assert installed.returncode == 0, installed.stderr
    return venv


@pytest.fixture
def scratch_project(tmp_path: Path) -> Path:
    project = tmp_path / "my-rag"
    (project / "banks").mkdir(parents=True)
    (project / "runs").mkdir()
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.pytest.ini_options]
        testpaths = ["banks"]
        exam_banks = ["banks"]
        exam_runs = ["runs"]
        exam_report_dir = "reports"
        exam_cache = ".exam-cache/grades.sqlite"
        exam_grader = "answer-key"
        """))
    (project / "banks" / "tides.yaml").write_text(BANK)
    (project / "runs" / "collection.tsv").write_text(
        "id\ttext\np1\tThe gravitational pull of the Moon raises tidal bulges.\np2\tBananas are rich in potassium.\n")
    (project / "runs" / "good.run").write_text("tides Q0 p1 1 2.0 good\ntides Q0 p2 2 1.0 good\n")
    (project / "runs" / "weak.run").write_text("tides Q0 p2 1 2.0 weak\n")
    return project


@pytest.mark.slow
def test_a_wheel_installed_into_another_project_runs_its_exam(scratch_venv: Path, scratch_project: Path) -> None:
    python = str(scratch_venv / "bin" / "python")
    where = _run([python, "-c", "import exam_harness; print(exam_harness.__file__)"], scratch_project)
    assert Path(where.stdout.strip()).is_relative_to(scratch_venv), where.stdout + where.stderr

    result = _run([python, "-m", "pytest", "-p", "no:cacheprovider"], scratch_project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "exam leaderboard" in result.stdout
    rows = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("│ ") and "/" in line}
    assert "1/1" in rows["good"] and "0/1" in rows["weak"], result.stdout
    assert "1 passed, 1 missed" in result.stdout
    report = json.loads((scratch_project / "reports" / "exam-report.json").read_text())
    cover = report["measures"][0]["name"]  # the leading measure: EXAM-Cover
    assert cover.startswith("exam-cover")
    assert {s["run"]: s["scores"][cover]["mean"] for s in report["systems"]} == {"good": 1.0, "weak": 0.0}

    # the wheel's console script, with a CI gate that the weak run fails
    gated = _run([str(scratch_venv / "bin" / "exam-harness"), "exam", "-q", "--exam-fail-under=0.5"], scratch_project)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "not reached by run 'weak'" in gated.stdout
