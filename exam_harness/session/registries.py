"""The registries of one front end's session, one per extension point, and how a hook relay fills them.

Under pytest the hooks are pytest's; the command line's are its own plugin manager's (extensions.py); a caller with
no front end fills them through the in-tree features' (core/host.py). Each registry starts with the built-in
entries; the features and plugins add theirs through the registration hooks (hookspecs.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from exam_harness.analysis.label_screens import LabelScreen
from exam_harness.config.commands import Command
from exam_harness.config.gates import GateFigure
from exam_harness.core.host import use_hook
from exam_harness.core.registry import Registry
from exam_harness.graders.registry import GraderRegistry, default_registry
from exam_harness.io.formats import BankFormat, RunFormat, builtin_bank_formats, builtin_run_formats, use_formats
from exam_harness.measures.base import Measure
from exam_harness.measures.registry import builtin_measures, use_measures
from exam_harness.report.writers import Writer, builtin_writers
from exam_harness.results.sections import Section, builtin_sections, use_sections


@dataclass(frozen=True)
class Registries:
    """One registry per extension point."""

    graders: GraderRegistry
    bank_formats: Registry[BankFormat]
    run_formats: Registry[RunFormat]
    measures: Registry[type[Measure]]
    writers: Registry[Writer]  # filled by pytest_exam_register_reporters
    sections: Registry[Section]
    gate_figures: Registry[GateFigure]
    commands: Registry[Command]  # the features' and plugins' subcommands (the built-in ones are cli/'s modules)
    label_screens: Registry[LabelScreen]  # the screens ``exam-harness label`` may label on (a feature's)
    hook: Any = None  # the hook relay they were filled through: the event hooks and scoring inputs are called on it

    @classmethod
    def builtin(cls) -> Registries:
        return cls(default_registry(), builtin_bank_formats(), builtin_run_formats(), builtin_measures(),
                   builtin_writers(), builtin_sections(),
                   Registry("gate figure", problem=_not_a(GateFigure, "name, title, section, lower_is_better, value")),
                   Registry("subcommand", problem=_not_a(Command, "help, description, add_arguments, run")),
                   Registry("labelling screen", problem=_not_a(LabelScreen, "unavailable, label")))

    @classmethod
    def from_hook(cls, hook: Any) -> Registries:
        """Built-in entries plus what plugins register through ``hook`` (pytest's or the CLI's)."""
        registries = replace(cls.builtin(), hook=hook)
        hook.pytest_exam_register_graders(registry=registries.graders)
        hook.pytest_exam_register_bank_formats(registry=registries.bank_formats)
        hook.pytest_exam_register_run_formats(registry=registries.run_formats)
        hook.pytest_exam_register_measures(registry=registries.measures)
        hook.pytest_exam_register_reporters(registry=registries.writers)
        hook.pytest_exam_register_sections(registry=registries.sections)
        hook.pytest_exam_register_gate_figures(registry=registries.gate_figures)
        hook.pytest_exam_register_commands(registry=registries.commands)
        hook.pytest_exam_register_label_screens(registry=registries.label_screens)
        use_sections(registries.sections)  # the sections documents are built, read and shown with
        use_measures(hook, registries.measures)  # and the measures and formats of a caller given no registry
        use_formats(hook, registries.bank_formats, registries.run_formats)
        use_hook(hook)  # the hooks scoring calls (core/host.py)
        return registries


def _not_a(kind: type, members: str) -> Any:
    def problem(entry: object) -> str | None:
        return None if isinstance(entry, kind) else f"{entry!r} is not a {kind.__name__} (it needs {members})"

    return problem
