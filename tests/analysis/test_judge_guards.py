"""The guards of issue 30: circular judging (a system of the judge's model family) and a leaked bank."""

from __future__ import annotations

import json

import pytest

from exam_harness.graders.judge_guards import (
    circular_systems,
    circularity_warning,
    family_of,
    leak_warning,
    leaked_runs,
    verbatim_shares,
)

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(("model", "family"), [
    ("gpt-4o-mini", "gpt"), ("openai/gpt-4.1", "gpt"), ("meta-llama/Llama-3.1-8B-Instruct", "llama"),
    ("google/flan-t5-large", "t5"), ("castorini/monot5-base-msmarco", "t5"), ("Qwen/Qwen2.5-7B", "qwen"),
    ("claude-3-5-sonnet", "claude"), ("all-MiniLM-L6-v2", None), (None, None),
])
def test_model_families(model: str | None, family: str | None) -> None:
    assert family_of(model) == family


def test_a_system_whose_manifest_names_the_judges_family_is_circular() -> None:
    manifests = {"rag-gpt": {"fingerprint": "abc", "declared": {"model": "gpt-4o"}},
                 "rag-llama": {"notes": ["generator meta-llama/Llama-3.1-8B"]},
                 "bm25": {"fingerprint": "def"}}
    assert circular_systems(manifests, "gpt-4o-mini") == {"rag-gpt": "gpt-4o"}
    assert circular_systems(manifests, "Llama-3.3-70B") == {"rag-llama": "meta-llama/Llama-3.1-8B"}
    assert circular_systems(manifests, "all-MiniLM-L6-v2") == {}
    warning = circularity_warning(manifests, "gpt-4o-mini")
    assert warning is not None and "'rag-gpt' (gpt-4o)" in warning


def test_a_run_holding_the_banks_texts_far_more_often_than_the_others_is_flagged() -> None:
    bank = {"q1": ["twice a day", "equal parts by weight", "hooch"], "q2": ["stretch and folds", "autolyse"]}
    outputs = {
        "leaky": {"q1": "Feed it twice a day with equal parts by weight; pour off the hooch.",
                  "q2": "Use stretch and folds after the autolyse."},
        "honest": {"q1": "Feed it every twelve hours.", "q2": "Fold the dough a few times during the rise."},
        "partly": {"q1": "Feed twice a day.", "q2": "Knead it."},
    }
    shares = verbatim_shares(outputs, bank)
    assert shares == {"leaky": 1.0, "honest": 0.0, "partly": pytest.approx(1 / 5)}
    leaked = leaked_runs(shares)
    assert list(leaked) == ["leaky"] and leaked["leaky"][0] == 1.0 and leaked["leaky"][1] == pytest.approx(0.1)
    warning = leak_warning(shares)
    assert warning is not None and "'leaky' 100%" in warning
    assert leak_warning({"a": 0.5, "b": 0.4, "c": 0.45}) is None  # all alike: nothing stands out


def test_the_session_warns_of_a_circular_system_named_in_a_manifest(project: pytest.Pytester) -> None:
    (project.path / "runs" / "good.system.json").write_text(json.dumps({"declared": {"model": "marker-7b"}}))
    out = project.runpytest("banks").stdout.str()
    assert "circular judging" not in out  # the marker grader names no model of a known family
    (project.path / "runs" / "good.system.json").write_text(json.dumps({"declared": {"model": "gpt-4o"}}))
    result = project.runpytest("banks", "--exam-model", "gpt-4o-mini")
    result.stdout.fnmatch_lines(["WARNING: circular judging: the judge 'gpt-4o-mini' *'good' (gpt-4o)*"])
    guards = json.loads((project.path / "reports" / "exam-report.json").read_text())["sections"]["judge-notes"]["guards"]
    assert any(g.startswith("WARNING: circular judging: the judge 'gpt-4o-mini'") for g in guards)
