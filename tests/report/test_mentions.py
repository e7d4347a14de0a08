"""The markdown summary is posted as a PR comment: names and texts from inputs (run names, test point
text, a partial exam's reason) must not ping anyone (``@user``, ``@org/team``, ``@everyone``) nor turn
into links (a bare ``https://`` URL, ``www.``, an e-mail address), while reading as they were."""

from __future__ import annotations

import json
import re

import pytest

import tests.paths as tests_paths
from exam_harness.report.markdown import escape, render_markdown
from exam_harness.results.schema import ExamReport

GOLDEN = tests_paths.GOLDEN / "exam-report.json"
# GitHub's mention and autolink patterns, as far as a summary can trigger them
MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9][\w-]*(/[\w-]+)?")
AUTOLINK = re.compile(r"(?i)\b(https?://|www\.)[^\s<]+")


@pytest.mark.parametrize("text", [
    "@user", "@org/team", "@everyone", "cc @octocat please", "mail root@example.com",
    "https://evil.example/x", "HTTP://EVIL.EXAMPLE", "see www.evil.example now",
    "@user https://evil.example/@other",
])
def test_escape_breaks_mentions_and_bare_urls(text: str) -> None:
    shown = escape(text)
    assert not MENTION.search(shown) and not AUTOLINK.search(shown), shown
    assert shown.replace("&#8203;", "") == text  # reads the same once rendered


def test_the_summary_from_hostile_names_pings_no_one() -> None:
    raw = json.loads(GOLDEN.read_text())
    raw.update(tool_version="0", created="2026-01-01T00:00:00Z", partial="-k @everyone www.evil.example")
    renames = {"good": "@everyone", "weak": "@org/team"}
    for system in raw["systems"]:
        system["run"] = renames.get(system["run"], system["run"])
    for row in [*raw["per_query"], *raw["outcomes"]]:
        row["run"] = renames.get(row["run"], row["run"])
    for outcome in raw["outcomes"]:
        outcome["text"] = "ask @maintainer at https://evil.example/ping"
    text = render_markdown(ExamReport.model_validate(raw))
    assert "@&#8203;everyone" in text and "@&#8203;org/team" in text and "https:&#8203;//evil.example" in text
    without_code = re.sub(r"`[^`]*`", "", text)
    assert not MENTION.search(without_code) and not AUTOLINK.search(without_code)
