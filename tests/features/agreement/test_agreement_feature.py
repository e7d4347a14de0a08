"""The agreement feature (exam_harness/features/agreement): evaluate's ``agreement`` section comes through the
feature's hook, in its old place (last of the built-in ones, after the significance section), computed from
evaluate's ``--min-answers`` (``Scored.min_answers``), and a manager without the feature has no such section."""

from __future__ import annotations

import json
from pathlib import Path

import pluggy

from exam_harness.cli import main
from tests.helpers import write_exam


def test_evaluate_s_document_holds_the_section_with_the_min_answers_views(tmp_path: Path) -> None:
    path, official = write_exam(tmp_path / "data")
    out = tmp_path / "ev.json"
    assert main(["evaluate", str(path), "--official", str(official), "--min-answers", "1", "2", "--bootstrap", "0",
                 "--no-progress", "--json", str(out)]) == 0
    sections = json.loads(out.read_text())["sections"]
    assert list(sections) == ["correlations", "agreement"]
    assert [view["min_answers"] for view in sections["agreement"]["min_answers"]] == [1, 2]
    assert sections["agreement"]["tables"]["passages"] > 0


def test_the_section_is_the_feature_s_alone() -> None:
    from exam_harness import hookspecs
    from exam_harness.features import plugin_modules
    from exam_harness.results.sections import builtin_sections

    def sections(without: str | None) -> list[str]:
        manager = pluggy.PluginManager("pytest")
        manager.add_hookspecs(hookspecs)
        for name, module in reversed(plugin_modules()):  # as register_features: the hooks run in FEATURES order
            if name != without:
                manager.register(module, name)
        registry = builtin_sections()
        manager.hook.pytest_exam_register_sections(registry=registry)
        return registry.names()

    assert "agreement" not in builtin_sections()
    every = sections(None)
    assert every.index("correlations") < every.index("significance") < every.index("agreement")
    assert "agreement" not in sections("exam-feature-agreement")
