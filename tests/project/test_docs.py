"""The documents' option, extension-point and limit tables stay in step with the code, and their links resolve."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness import hookspecs
from exam_harness.config.options import PYTEST_GROUPS, OptionSpec, documented_options, readme_table
from tests.paths import REPO

ROOT = REPO
README = (ROOT / "README.md").read_text()
OPTIONS = (ROOT / "docs" / "options.md").read_text()
EXTENDING = (ROOT / "docs" / "extending.md").read_text()
TRUST = (ROOT / "docs" / "trust.md").read_text()


# the schema's fields and the in-tree features' options (the features' as declared, whatever this process's
# sessions declared since)
DOCUMENTED = documented_options(PYTEST_GROUPS, "pytest")


@pytest.mark.parametrize(("name", "option", "default"), DOCUMENTED, ids=[name for name, _, _ in DOCUMENTED])
def test_every_pytest_option_is_in_the_readme_table(name: str, option: OptionSpec, default: object) -> None:
    flag = f"--exam-{option.name}"
    rows = [line for line in OPTIONS.splitlines() if line.startswith(f"| `{flag}")]
    assert rows, f"docs/options.md's option table lacks {flag}"
    assert f"`{option.ini_name}`" in rows[0]
    if isinstance(default, (int, float, str)) and not isinstance(default, bool) and default != "":
        assert str(default) in rows[0], f"docs/options.md shows another default for {flag}"


def test_readme_option_table_is_the_schema_s() -> None:
    """The whole table, row for row (regenerate with ``python -m exam_harness.config.options``)."""
    assert readme_table(PYTEST_GROUPS) in OPTIONS, "docs/options.md's option table differs: python -m exam_harness.config.options"


def hook_table_rows() -> list[str]:
    """The first cell of each row of docs/extending.md's hook table, e.g. ``pytest_exam_report(report, plan)``."""
    return [line.split("|")[1].strip(" `") for line in EXTENDING.splitlines() if line.startswith("| `pytest_exam_")]


def hook_signatures() -> list[str]:
    """Each hook specification of hookspecs.py as the table writes it, in the order the module declares them."""
    import inspect

    specs = [(name, fn) for name, fn in vars(hookspecs).items() if name.startswith("pytest_exam_")]
    return [f"{name}({', '.join(inspect.signature(fn).parameters)})" for name, fn in specs]


def test_every_hook_is_documented() -> None:
    """docs/extending.md's hook table is the specifications': every hook, in order, with its arguments."""
    assert len(hook_signatures()) == 25
    assert hook_table_rows() == hook_signatures()


def test_readme_limit_table_is_the_code_s() -> None:
    """Every limit of exam_harness/io/limits.py is in docs/trust.md's table with its value."""
    from exam_harness.io import limits

    declared = {name: getattr(limits, name) for name in dir(limits)
                if name.startswith(("MAX_", "YAML_")) and name != "MAX_QUOTED_CHARS"}
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2].strip() for line in TRUST.splitlines()
            if line.startswith(("| `MAX_", "| `YAML_"))}
    assert set(rows) == set(declared)
    for name, value in declared.items():
        bytes_limit = name.endswith("_BYTES")
        shown = limits.size_text(value) if bytes_limit else str(value) if isinstance(value, bool) else f"{value:,}"
        assert rows[name] == shown, name


DOCUMENTS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(document: Path) -> None:
    """A link to a file of the repository (README -> docs/ci.md, docs -> ../README.md) names a file that exists."""
    import re

    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", document.read_text()):
        if "://" in target:
            continue
        assert (document.parent / target).exists(), f"{document.name} links to {target}, which does not exist"


def test_every_document_is_listed_in_the_index() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    for document in (ROOT / "docs").glob("*.md"):
        if document.name != "index.md":
            assert f"]({document.name})" in index, f"docs/index.md does not list {document.name}"


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a document's headings (lowercased, punctuation dropped, spaces to '-', a
    repeated heading suffixed -1, -2, ...) and its explicit ``<a id=...>`` / ``<a name=...>`` anchors."""
    import re

    anchors = set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or heading is None:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))  # a link in a heading: its text
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        repeat = seen.get(slug, 0)
        seen[slug] = repeat + 1
        anchors.add(slug if repeat == 0 else f"{slug}-{repeat}")
    return anchors


def test_heading_anchors_follow_github_s_rule() -> None:
    text = "# Writers: one registry for both front ends\n```\n# not a heading\n```\n## 4. CI replays it\n## Sections\n" \
           "## Sections\n### `--exam-stale` and [the verdict](ci.md)\n"
    assert heading_anchors(text) == {"writers-one-registry-for-both-front-ends", "4-ci-replays-it", "sections",
                                     "sections-1", "--exam-stale-and-the-verdict"}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_link_to_a_section_and_every_named_readme_section_exists(document: Path) -> None:
    """``other.md#anchor`` and ``#anchor`` links name a heading of that document, and a section of the
    README named in prose (the README's "Some heading") is one of its headings."""
    import re

    text = document.read_text()
    for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", text):
        if "://" in target:
            continue
        linked = document.parent / target if target else document
        assert anchor in heading_anchors(linked.read_text()), (
            f"{document.name} links to {target or document.name}#{anchor}, which names no heading of it")
    readme = heading_anchors(README)
    for named in re.findall(r"README's [\"“]([^\"”]+)[\"”]", text):
        assert heading_anchors(f"# {named}") <= readme, f"{document.name} names the README's {named!r}, no heading of it"
