"""What the report tests share among their modules and with the real-data tests: a section plugin,
a report built once, and the HTML report read back the way a browser shows it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

# A section of its own: per run, the passages of its top-k whose text holds a marker "[x]" (a table).
# Written without ``from __future__ import annotations``: the CLI's conftest import (extensions.py) does not
# put the module in sys.modules, so pydantic could not resolve postponed annotations there.
PLUGIN = '''
from pydantic import BaseModel


class MarkedPassages(BaseModel):
    per_run: dict[str, int]


class MarkedSection:
    name = "marked-passages"
    title = "Marked passages"
    model = MarkedPassages

    def compute(self, scored):
        k, passages = scored.plan.k, scored.view.data.passages
        return MarkedPassages(per_run={
            name: len({pid for bank in scored.banks for pid in run.top_k(bank.query.id, k)
                       if "[" in passages[pid].text})
            for name, run in sorted(scored.runs.items())})

    def terminal(self, content):
        return ["marked passages: " + ", ".join(f"{run} {n}" for run, n in content.per_run.items())]

    def markdown(self, content, escape):
        rows = "\\n".join(f"| {escape(run)} | {n} |" for run, n in content.per_run.items())
        return "### Marked passages\\n\\n| run | marked |\\n|:--|--:|\\n" + rows

    def html(self, content):
        rows = "".join(f"<tr><td>{run}</td><td>{n}</td></tr>" for run, n in content.per_run.items())
        return '<section id="marked-passages"><h2>Marked passages</h2><table>' + rows + "</table></section>"


def pytest_exam_register_sections(registry):
    registry.register("marked-passages", MarkedSection())
'''

SESSION_ONLY = ("outcomes", "grade_counts", "fallbacks")  # what a pytest session tallies per run

SESSION_SECTIONS = ("live-systems",)  # the declared systems' health: only a session declares systems

# from what only evaluate is given (--official, --baseline, the judgments' agreement, --qrels, --human-assignments):
# the evaluation envelope's own parts, sections since schema 4.1
EVALUATE_SECTIONS = ("correlations", "significance", "agreement", "external-qrels", "trec-rag-agreement")


def _core(document: dict[str, Any]) -> dict[str, Any]:
    """The document's results and sections, the envelope's own fields left out."""
    return {
        "measures": document["measures"],
        "systems": [{k: v for k, v in s.items() if k not in SESSION_ONLY} for s in document["systems"]],
        "per_query": document["per_query"],
        "sections": {k: v for k, v in document["sections"].items() if k not in (*SESSION_SECTIONS, *EVALUATE_SECTIONS)},
    }


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def attr(self, name: str) -> str:
        """The value of an attribute written with one (``<td title="...">``)."""
        value = self.attrs.get(name)
        assert value is not None, f"<{self.tag}> has no {name}=... ({self.attrs})"
        return value

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Iterator[Node]:
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        return [n for n in self.iter()
                if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)
                and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, cls, **attrs)
        assert found, f"no <{tag} class={cls} {attrs}>"
        return found[0]

    def rows(self) -> list[Node]:
        """The body rows of a table."""
        return [r for r in self.find("tbody").children if isinstance(r, Node) and r.tag == "tr"]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.current = Node("#root", {}, None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"stray </{tag}>"
        self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(text: str) -> Node:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root


def _on_ci() -> bool:
    """Whether a CI service runs the tests (GitHub, GitLab, Jenkins' plugins... set CI=true)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _chromium() -> str:
    """The browser; without it a browser test is skipped, but under CI=true it fails: there .ci/run
    installs it, so a missing browser means the HTML report was never shown in one."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "no chromium on PATH (the Debian package 'chromium' provides it)"
        if _on_ci():
            pytest.fail(message + "; under CI=true the browser tests must run (.ci/run installs it)")
        pytest.skip(message)
    return found


def _browse(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    # stderr carries dbus and GPU chatter in a container: only the return code and outputs matter
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    result = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", *args, url],
        capture_output=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    return result
