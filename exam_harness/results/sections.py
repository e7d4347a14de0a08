"""Sections: the optional parts of the result document, each one module and one registry line.

A :class:`Section` has a ``name`` (its key in the document's ``sections``), a ``title``, a pydantic
``model``, a ``compute(scored)`` that returns the model (or None where the section has nothing to say:
no LLM grader, no repeats) and its terminal, markdown and HTML renderings. Both front ends (the pytest
session and ``exam-harness evaluate``) compute every registered section from the same
:class:`~exam_harness.results.scored.Scored` and every view renders the sections a document holds in
registry order, so a new optional part of every output is a section module and a registry line, or,
for a plugin, a ``pytest_exam_register_sections`` hook (hookspecs.py).

Where a view shows a section: its optional ``placement`` (:data:`Placement`, relative to the
leaderboards; "after" when the section declares none) and ``brief`` (kept under ``evaluate --brief``;
False when it declares none), read by :func:`placement_of` and :func:`kept_brief`. A section's
``terminal`` gives lines or rich renderables (tables); the pytest summary writes them as text
(:func:`terminal_text`). A section kept under ``--brief`` may give a shorter rendering there
(``terminal_brief``, read by :func:`terminal_parts`).

The front end that fills the registry makes it the *active* one (:func:`use_sections`): documents read
back type their sections by it, and views render by it. A section a document holds but no registered
section names stays a plain JSON object; views leave it out, the JSON keeps it.

A section is plugin code, contained as the writers' errors are (issue 39, finding 9): what it declares is
checked where it is registered (:func:`section_problem`: a name of its own, not one of the report's
:data:`RESERVED_NAMES`; a title; a pydantic model; a placement of :data:`Placement`), and each of its calls
runs through :func:`contained`: one that raises or gives the wrong type (``compute`` a dict, ``terminal`` an
int, ``html`` bytes) leaves that section out of that output, named in a warning (results/left_out.py), and the
rest is written (an :class:`~exam_harness.core.errors.ExamError` it raises, bad input it names, is the usage error it
always was). Its terminal lines are shown escaped (display.visible): a section cannot clear the screen or
colour a fake verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, get_args, runtime_checkable

from pydantic import BaseModel

from exam_harness.core.display import TEXT_WIDTH, visible
from exam_harness.core.errors import ExamError
from exam_harness.core.registry import Registry
from exam_harness.results.left_out import leave_out, taken

if TYPE_CHECKING:
    from rich.console import RenderableType

    from exam_harness.results.scored import Scored

Escape = Callable[[str], str]
Placement = Literal["before", "after"]  # where views show a section: before or after the leaderboards
T = TypeVar("T")

# names a section may not take: the document's own fields (a section "verdict" would read as the verdict) and
# the HTML report's own parts (its navigation links to a section by its name)
RESERVED_NAMES = frozenset({
    "kind", "schema_version", "tool_version", "created", "settings", "cache", "grading", "collection", "queries",
    "test_points", "measures", "systems", "per_query", "qrels", "partial", "outcomes", "verdict", "sections",
    "leaderboard", "leaderboard-table", "heatmap", "heatmap-table", "heat-controls", "grades", "drilldown",
    "exam-data", "gates", "changes"})


@runtime_checkable
class Section(Protocol):
    """One optional part of the result document (see the module docstring)."""

    name: str  # the key in the document's ``sections``
    title: str  # heads it in markdown and HTML (and the HTML page's navigation)
    model: type[BaseModel]

    def compute(self, scored: Scored) -> BaseModel | None:
        """The section's content from what scoring returned; None leaves it out of the document."""

    def terminal(self, content: Any) -> Sequence[RenderableType]:
        """Lines (or rich tables) of the pytest terminal summary and of ``evaluate``'s output."""

    def markdown(self, content: Any, escape: Escape) -> str:
        """A markdown section (``escape`` makes a text safe in a table cell or a line)."""

    def html(self, content: Any) -> str:
        """An HTML ``<section>`` (its id is the section's name: the page's navigation links to it)."""


def section_problem(entry: object) -> str | None:
    """Why ``entry`` cannot serve as a section (checked where it is registered), or None."""
    name = getattr(entry, "name", None)
    if not isinstance(name, str) or not name:
        return "has no name (a text: its key in the document's sections)"
    if name in RESERVED_NAMES:
        return (f"the name {name!r} is the report's own (one of {', '.join(sorted(RESERVED_NAMES))}); give the "
                "section a name of its own")
    if not isinstance(getattr(entry, "title", None), str):
        return "has no title (a text)"
    model = getattr(entry, "model", None)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return "its model is not a pydantic model class"
    missing = [m for m in ("compute", "terminal", "markdown", "html") if not callable(getattr(entry, m, None))]
    if missing:
        return f"has no {', '.join(f'{m}()' for m in missing)}"
    placement = getattr(entry, "placement", "after")
    if placement not in get_args(Placement):
        return f"placement {placement!r} is none of {', '.join(get_args(Placement))}"
    return None


def builtin_sections() -> Registry[Section]:
    """The built-in sections, imported on first use, in the order documents and views show them."""
    registry: Registry[Section] = Registry("section", problem=section_problem)
    for name, ref, description in (
        ("decided-by", "exam_harness.sections.decided_by:SECTION",
         "graded pairs per deciding part of a grader of several parts (the embedding grader)"),
        ("judge-notes", "exam_harness.sections.judge_notes:SECTION",
         "a cascade's kept share (95% lower bound), what embedding verdicts are worth, circular judging, a leaked "
         "bank"),
        ("correlations", "exam_harness.sections.correlations:SECTION",
         "every leaderboard's Spearman rho and Kendall tau against the official leaderboard (--official)"),
    ):
        registry.register(name, ref, description)
    return registry


# --- plugin code, contained ---------------------------------------------------------------------


class _Failed:
    """What :func:`contained` gives for a call that failed (None is a section's answer: nothing to say)."""


FAILED = _Failed()


def contained(section: Section, part: str, call: Callable[[], T], expected: str,
              accepts: Callable[[Any], bool]) -> T | _Failed:
    """``call()``, a part of ``section``'s code (its compute or a rendering), or :data:`FAILED` when it raised
    or gave what ``accepts`` refuses (``expected`` says what it should give): the section is then left out of
    that output, named in a warning, and the caller writes the rest."""
    name = getattr(section, "name", repr(section))
    try:
        result = call()
    except ExamError:
        raise  # a section saying its input is bad (bad qrels): the input's error, a usage error as any other
    except Exception as exc:  # plugin code: any other failure leaves its section out, said
        leave_out(f"section {name!r} left out of {part}: its {_callable(part)} raised {type(exc).__name__}: "
                  f"{visible(str(exc))[:200]}")
        return FAILED
    if not accepts(result):
        leave_out(f"section {name!r} left out of {part}: its {_callable(part)} gave {type(result).__name__}, "
                  f"expected {expected}")
        return FAILED
    return result


def _callable(part: str) -> str:
    return {"the document": "compute()", "the terminal": "terminal()", "markdown": "markdown()",
            "HTML": "html()", "the plots": "images()"}.get(part, part)


def _renderable(part: object) -> bool:
    return isinstance(part, str) or hasattr(part, "__rich_console__") or hasattr(part, "__rich__")


def placement_of(section: Section) -> Placement | None:
    """Where views show ``section``: its ``placement`` if it declares one, else after the leaderboards; None
    for any other (the registry refuses one; a placement that changed since leaves the section out, said)."""
    placement = getattr(section, "placement", "after")  # optional: sections written before it existed lack it
    if placement not in get_args(Placement):
        leave_out(f"section {getattr(section, 'name', '?')!r} left out of the views: placement {placement!r} is "
                  f"none of {', '.join(get_args(Placement))}")
        return None
    return cast(Placement, placement)


def section_lines(section: Section, content: Any, width: int, *, brief: bool = False) -> list[str]:
    """``section``'s terminal lines at ``width`` (tables drawn as text), escaped (display.visible); none when
    its code fails (contained)."""
    parts = contained(section, "the terminal", lambda: terminal_parts(section, content, brief=brief),
                      "a list of lines or rich renderables",
                      lambda p: isinstance(p, (list, tuple)) and all(_renderable(x) for x in p))
    if isinstance(parts, _Failed):
        return []
    lines = contained(section, "the terminal", lambda: terminal_text(parts, width), "lines", lambda _: True)
    return [] if isinstance(lines, _Failed) else [visible(line) for line in lines]


def section_markdown(section: Section, content: Any, escape: Escape) -> str | None:
    """``section``'s markdown, or None when its code fails (contained)."""
    found = contained(section, "markdown", lambda: section.markdown(content, escape), "a text (str)",
                      lambda m: isinstance(m, str))
    return None if isinstance(found, _Failed) else found


def section_html(section: Section, content: Any) -> str | None:
    """``section``'s HTML, or None when its code fails (contained)."""
    found = contained(section, "HTML", lambda: section.html(content), "a text (str)", lambda h: isinstance(h, str))
    return None if isinstance(found, _Failed) else found


def section_images(sections: Mapping[str, Any], registry: Registry[Section] | None = None) -> dict[str, bytes]:
    """The figures of the sections a document holds that draw their own (an optional ``images(content)``: file
    name -> bytes, written under ``evaluate --plot``), in registry order; a section whose code fails draws none
    (contained)."""
    images: dict[str, bytes] = {}
    for section, content in shown_sections(sections, registry):
        draw = getattr(section, "images", None)
        if not callable(draw):
            continue
        found = contained(section, "the plots", lambda: draw(content),  # noqa: B023 (called at once)
                          "a dict of file names to bytes",
                          lambda i: isinstance(i, dict) and all(isinstance(k, str) and isinstance(v, bytes)
                                                                for k, v in i.items()))
        if not isinstance(found, _Failed):
            images.update(found)
    return images


def kept_brief(section: Section) -> bool:
    """Whether ``evaluate --brief`` keeps ``section`` (its ``brief``; False if it declares none)."""
    return bool(getattr(section, "brief", False))


def terminal_parts(section: Section, content: Any, *, brief: bool = False) -> Sequence[RenderableType]:
    """What the terminal shows of ``section``: under ``--brief`` its ``terminal_brief`` if it has one."""
    shorter = getattr(section, "terminal_brief", None) if brief else None
    parts: Sequence[RenderableType] = shorter(content) if callable(shorter) else section.terminal(content)
    return parts


def terminal_text(parts: Sequence[RenderableType], width: int) -> list[str]:
    """A section's terminal parts as lines of text (a table drawn at ``width``), for the pytest summary."""
    lines: list[str] = []
    for part in parts:
        if isinstance(part, str):
            lines.append(part)
            continue
        import io

        from rich.console import Console

        buffer = io.StringIO()
        Console(file=buffer, width=width, color_system=None, highlight=False, markup=False).print(part)
        lines += buffer.getvalue().rstrip("\n").split("\n")
    return lines


def preformatted_markdown(parts: Sequence[RenderableType]) -> str:
    """A section's terminal tables as a fenced text block: markdown of a section that draws tables."""
    text = "\n".join(terminal_text(parts, TEXT_WIDTH))
    fence = "````" if "```" in text else "```"
    return f"{fence}text\n{text}\n{fence}"


def preformatted_html(name: str, title: str, parts: Sequence[RenderableType]) -> str:
    """A section's terminal tables as preformatted text in its ``<section>`` (id ``name``, heading ``title``)."""
    import html

    text = html.escape("\n".join(terminal_text(parts, TEXT_WIDTH)))
    return f'<section id="{html.escape(name)}"><h2>{html.escape(title)}</h2><pre>{text}</pre></section>'



def shown_at(sections: Mapping[str, Any], placement: Placement, *, brief: bool = False,
             registry: Registry[Section] | None = None) -> Iterator[tuple[Section, BaseModel]]:
    """The sections a view shows at ``placement`` (under ``brief``, only those kept under --brief)."""
    for section, content in shown_sections(sections, registry):
        if placement_of(section) == placement and (not brief or kept_brief(section)):
            yield section, content


_active: list[Registry[Section]] = []


def use_sections(registry: Registry[Section]) -> None:
    """Make ``registry`` (built-ins plus what plugins registered) the one documents and views use."""
    _active[:] = [registry]
    taken()  # a new session: what an earlier one left out was said by it


def reset_sections() -> None:
    """Back to the built-in and in-tree sections, and the in-tree features' hooks (core/host.py): a pytest
    session's or command's plugins end with it."""
    from exam_harness.core.host import reset_hook

    _active.clear()
    reset_hook()


def active_sections() -> Registry[Section]:
    """The registry the front end filled (:func:`use_sections`), else the built-in sections and those the active
    hook's features register (the in-tree features' with no front end: core/host.py)."""
    if not _active:
        from exam_harness.core.host import active_hook

        registry = builtin_sections()
        active_hook().pytest_exam_register_sections(registry=registry)
        _active.append(registry)
    return _active[0]


def compute_sections(scored: Scored, registry: Registry[Section] | None = None) -> dict[str, BaseModel]:
    """Every registered section's content from ``scored``, by name, in registry order (those with none left out)."""
    found: dict[str, BaseModel] = {}
    for section in (registry or active_sections()).values():
        content = contained(section, "the document", lambda: section.compute(scored),  # noqa: B023 (called at once)
                            f"an instance of its model {section.model.__name__} or None",
                            lambda c: c is None or isinstance(c, section.model))  # noqa: B023
        if content is not None and not isinstance(content, _Failed):
            found[section.name] = content
    return found


def typed_sections(raw: Mapping[str, Any], registry: Registry[Section] | None = None) -> dict[str, Any]:
    """A document's sections with each registered one validated into its model (others kept as read)."""
    registry = registry or active_sections()
    typed: dict[str, Any] = {}
    for name, content in raw.items():
        if name in registry and not isinstance(content, BaseModel):
            content = registry.get(name).model.model_validate(content)
        typed[name] = content
    return typed


def shown_sections(sections: Mapping[str, Any],
                   registry: Registry[Section] | None = None) -> Iterator[tuple[Section, BaseModel]]:
    """The sections a document holds that a registered section renders, in registry order."""
    registry = registry or active_sections()
    for name in registry:
        content = sections.get(name)
        if isinstance(content, BaseModel):
            section = registry.get(name)
            if isinstance(content, section.model):
                yield section, content
