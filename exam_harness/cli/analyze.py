"""``exam-harness analyze ANALYSIS RUN_FILES``: the human-in-the-loop analyses of a graded exam.

Each analysis is registered by name (session/analyses.py: the built-in ones, session/builtin_analyses.py, then the
features' and plugins' through ``pytest_exam_register_analyses``): it adds its arguments, prints rich tables and
writes ``--json``. Grading and scoring options come from the one schema (``exam_harness/config/options.py``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from exam_harness.core.registry import Registry
    from exam_harness.session.analyses import Analysis


def _registry(hook: Any = None) -> Registry[Analysis]:
    from exam_harness.session.builtin_analyses import analysis_registry

    if hook is None:
        from exam_harness.extensions import cli_plugin_manager

        hook = cli_plugin_manager().hook
    return analysis_registry(hook)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    registry = _registry()
    parser = subparsers.add_parser(
        "analyze",
        help=f"Human-in-the-loop analyses: {', '.join(registry.describe().values())}.",
        description="Analyses that show which grades to check and which test points to add, fix or drop.",
    )
    inner = parser.add_subparsers(dest="analysis", metavar="ANALYSIS")
    inner.required = True
    for name in registry:
        analysis = registry.get(name)
        sub = inner.add_parser(name, help=analysis.help,
                               description=getattr(analysis, "description", None) or analysis.help)
        analysis.add_arguments(sub)
        sub.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exam_harness.extensions import cli_registries
    from exam_harness.session.analyses import AnalysisSession

    registries = cli_registries()
    return _registry(registries.hook).get(args.analysis).run(args, AnalysisSession(args, registries))
