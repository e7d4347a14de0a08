"""The static HTML report: structure, escaping, self-containment, atomic writing, and a headless browser."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from exam_harness.core.models import GraderSpec
from exam_harness.measures import Bindings, ExamCover, NExam, NuggetF, TrecMeasure
from exam_harness.report.html import render_html, write_html_report
from exam_harness.report.html_assets import JS
from exam_harness.results.schema import (
    CacheSummary,
    ExamReport,
    MeasureInfo,
    Outcomes,
    QueryScore,
    Score,
    Settings,
    SystemScore,
    TestPointOutcome,
)
from tests.report.support import Node, _browse, _chromium, parse

EVIL_RUN = "<script>alert(1)</script>"
EVIL_TEXT = "</details><img src=x onerror=alert(1)>"
QUERIES = ["q1", "q2", "q10"]  # natural order: q10 after q2
DRILLED = {"missed", "required-missed", "error"}


# --- a tiny DOM over html.parser -------------------------------------------------------------------

# --- a report with every feature -------------------------------------------------------------------

_BOUND = Bindings(k=10, min_grade=4, pool="top-k", qrels_m=2, label="max-grade", beta=3.0, redundancy_alpha=0.5,
                  empty="skip")
COVER, N_EXAM, NUGGET, MAP, NDCG, COUNT_MAP = (MeasureInfo.of(m.bind(_BOUND)) for m in (
    ExamCover(), NExam(), NuggetF(), TrecMeasure(name="map"), TrecMeasure(name="ndcg@10"),
    TrecMeasure(name="map", label="count")))
MEASURES = [COVER, N_EXAM, NUGGET, MAP, NDCG, COUNT_MAP]


def _system(run: str, cover: list[float], *, incomplete: list[str] | None = None, nugget: bool = True,
            outcomes: Outcomes | None = None, grades: dict[str, int] | None = None,
            generated: bool = False) -> SystemScore:
    mean = sum(cover) / len(cover)
    scores = {COVER.name: Score(mean=mean, stderr=0.05), N_EXAM.name: Score(mean=mean * 0.9, stderr=0.04),
              MAP.name: Score(mean=mean / 3, stderr=0.02), NDCG.name: Score(mean=0.4, stderr=0.1),
              COUNT_MAP.name: Score(mean=0.2, stderr=0.03)}
    if nugget:
        scores[NUGGET.name] = Score(mean=mean / 2, stderr=0.01)
    return SystemScore(
        run=run, generated=generated, queries=len(cover), scores=scores,
        outcomes=outcomes or Outcomes(), incomplete_queries=incomplete or [], grade_counts=grades or {},
    )


def make_report(*, partial: str | None = "deselected by -k bm25", outcomes: bool = True) -> ExamReport:
    covers = {"bm25": [0.5, 0.25, 0.75], "dense": [1.0, 0.5, 0.75], EVIL_RUN: [0.0, 0.5, 0.25],
              "rag": [0.25, 0.25, 0.0]}
    systems = [
        _system("bm25", covers["bm25"], outcomes=Outcomes(answered=6, missed=2, required_missed=1),
                grades={"0": 20, "1": 5, "3": 4, "4": 3, "5": 2}),
        _system("dense", covers["dense"], outcomes=Outcomes(answered=8, missed=1),
                grades={"0": 10, "2": 7, "4": 9, "5": 8}),
        _system(EVIL_RUN, covers[EVIL_RUN], incomplete=["q2"], outcomes=Outcomes(answered=3, missed=2, errors=1),
                grades={"0": 25, "4": 2, "failed": 3}),
        _system("rag", covers["rag"], nugget=False, generated=True, outcomes=Outcomes(answered=2, missed=1, skipped=1),
                grades={"0": 30, "5": 1}),
    ]
    per_query = [
        QueryScore(run=run, query_id=q, scores={COVER.name: c, N_EXAM.name: c}, covered=round(c * 4), test_points=4,
                   incomplete=(run == EVIL_RUN and q == "q2"))
        for run, cs in covers.items() for q, c in zip(QUERIES, cs)
    ]
    tp = [
        TestPointOutcome(run="bm25", query_id="q1", test_point_id="q1-a", kind="question", text="Who wrote it?",
                         outcome="missed", best_grade=2, best_passage="d1", reason="nobody"),
        TestPointOutcome(run="bm25", query_id="q10", test_point_id="q10-n", kind="nugget", required=True,
                         text=EVIL_TEXT, outcome="required-missed", best_grade=1, best_passage="d-evil",
                         reason=EVIL_TEXT),
        TestPointOutcome(run="bm25", query_id="q2", test_point_id="q2-s", kind="question", text=None,
                         outcome="missed", best_grade=0, best_passage="d-missing", reason=None),
        TestPointOutcome(run="bm25", query_id="q2", test_point_id="q2-b", kind="question", text="Where?",
                         outcome="answered", best_grade=5, best_passage="d2", reason="here"),
        TestPointOutcome(run="dense", query_id="q2", test_point_id="q2-s", kind="question", text=None,
                         outcome="missed", best_grade=3, best_passage="d2", reason=None),
        TestPointOutcome(run=EVIL_RUN, query_id="q1", test_point_id="q1-a", kind="question", text="Who wrote it?",
                         outcome="missed", best_grade=None, best_passage=None, reason=None),
        TestPointOutcome(run=EVIL_RUN, query_id="q2", test_point_id="q2-b", kind="question", text="Where?",
                         outcome="error", best_grade=None, best_passage=None, reason=None),
        TestPointOutcome(run=EVIL_RUN, query_id="q10", test_point_id="q10-n", kind="nugget", required=True,
                         text=EVIL_TEXT, outcome="missed", best_grade=3, best_passage="d1", reason="partly",
                         best_passage_text="Kept in the report: the text of d1, cut…"),
        TestPointOutcome(run="rag", query_id="q1", test_point_id="q1-a", kind="question", text="Who wrote it?",
                         outcome="skipped"),
        TestPointOutcome(run="rag", query_id="q10", test_point_id="q10-n", kind="nugget", required=True,
                         text=EVIL_TEXT, outcome="missed", best_grade=0, best_passage="d2", reason="no idea"),
    ] if outcomes else []
    return ExamReport(
        tool_version="9.9.9", created="2024-05-01T12:00:00+00:00",
        settings=Settings(grader=GraderSpec(name="llm", version="1", model="tiny-model"), k=10, min_grade=4,
                          qrels_m=2, pool="top-k", measures=["map", "ndcg@10"], label_variants=["max-grade", "count"],
                          banks=["bank.jsonl"], runs=list(covers)),
        cache=CacheSummary(path="cache.sqlite", pairs=120, unique_pairs=100, hits=60, misses=40, graded=37,
                           failures=3, grading_seconds=12.5),
        queries=3, test_points=12, measures=MEASURES, systems=systems, per_query=per_query, partial=partial,
        outcomes=tp,
    )


PASSAGES = {"d1": "Passage one says the author was Jane.", "d2": "Passage two: the place is here.",
            "d-evil": "<b>bold</b> & </blockquote><script>alert(2)</script>"}
LEADERBOARD_ORDER = ["dense", "bm25", EVIL_RUN, "rag"]  # by EXAM-Cover: 0.75, 0.5, 0.25, 0.1667


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(make_report(), PASSAGES)


@pytest.fixture(scope="module")
def dom(page: str) -> Node:
    return parse(page)


# --- structure ------------------------------------------------------------------------------------

def _column(dom: Node, row: Node, header: str) -> str:
    """The text of ``row``'s cell under the first leaderboard header reading ``header``."""
    head = dom.find("table", id="leaderboard-table").find("thead")
    col = next(th.attrs["data-col"] for th in head.find_all("th") if th.text() == header)
    return row.find("td", data_col=col or "").text()


def test_leaderboard_rows_in_exam_cover_order(dom: Node) -> None:
    rows = dom.find("table", id="leaderboard-table").rows()
    assert [r.attrs["data-run"] for r in rows] == LEADERBOARD_ORDER
    assert [r.find_all("td")[0].text() for r in rows] == ["1", "2", "3", "4"]
    dense = rows[0]
    assert dense.find("th").text().strip() == "dense"
    assert "0.750 ± 0.050" in dense.find("td", data_col="0").text()
    counts = ["answered", "missed", "required missed", "errors"]
    assert [_column(dom, rows[0], name) for name in counts] == ["8", "1", "0", "0"]
    assert [_column(dom, rows[1], name) for name in counts] == ["6", "2", "1", "0"]
    assert [_column(dom, rows[2], name) for name in counts] == ["3", "2", "0", "1"]
    assert _column(dom, rows[1], "nDCG@10") == "0.400 ± 0.100"


def test_leaderboard_columns_name_label_and_measure(dom: Node) -> None:
    head = dom.find("table", id="leaderboard-table").find("thead")
    titles = [th.attrs.get("title") for th in head.find_all("th") if th.attrs.get("title")]
    assert titles == ["max-grade: MAP", "max-grade: nDCG@10", "count: MAP"]
    texts = [th.text() for th in head.find_all("th")]
    assert "nugget-F" in texts and "EXAM-Cover@10" in texts and "required missed" in texts
    rag = dom.find("tr", data_run="rag")
    assert _column(dom, rag, "nugget-F") == "–"
    assert "gen" in rag.find("th").text()


def test_incomplete_runs_are_flagged_with_a_note(dom: Node) -> None:
    evil = dom.find("tr", data_run=EVIL_RUN)
    assert "incomplete" in evil.classes
    assert "lower bounds" in evil.find("span", cls="flag").attr("title")
    note = dom.find("p", cls="incomplete-note").text()
    assert EVIL_RUN in note and "lower bounds" in note and "3 pairs" in note
    assert "incomplete" not in dom.find("tr", data_run="dense").classes


def test_partial_banner(dom: Node) -> None:
    assert dom.find("div", cls="banner").text() == "partial exam: deselected by -k bm25"
    assert not parse(render_html(make_report(partial=None))).find_all("div", cls="banner")


def test_heatmap_has_a_cell_per_query_and_run(dom: Node) -> None:
    table = dom.find("table", id="heatmap-table")
    heads = [th.text() for th in table.find("thead").find_all("th")]
    assert heads == ["query", *LEADERBOARD_ORDER]
    rows = table.rows()
    assert [r.find("th").text() for r in rows] == QUERIES
    report = make_report()
    by_pair = {(q.run, q.query_id): q for q in report.per_query}
    for row, qid in zip(rows, QUERIES):
        cells = row.find_all("td", cls="cell")
        assert len(cells) == len(LEADERBOARD_ORDER)
        for cell, run in zip(cells, LEADERBOARD_ORDER):
            q = by_pair[(run, qid)]
            assert cell.text().rstrip("!") == f"{q.scores[COVER.name]:.2f}"
            assert f"{q.covered}/{q.test_points}" in cell.attr("title")
            assert ("inc" in cell.classes) == q.incomplete == cell.text().endswith("!")
            assert "background-color:#" in cell.attr("style")
    # the scale is sequential: a higher cover is a darker cell
    shade = {float(c.attr("data-v")): c.attr("style") for c in table.find_all("td", cls="cell")}
    assert shade[0.0] != shade[1.0] and "color:#ffffff" in shade[1.0] and "color:#1d2330" in shade[0.0]


def test_grade_distributions_per_run(dom: Node) -> None:
    report = make_report()
    charts = dom.find("section", id="grades").find_all("div", cls="grade-chart")
    assert [c.attrs["data-run"] for c in charts] == LEADERBOARD_ORDER
    for chart in charts:
        counts = next(s.grade_counts for s in report.systems if s.run == chart.attrs["data-run"])
        bars = chart.find_all("rect", cls="bar")
        # the whole 0..5 scale for every run, and "failed" because one run has failures
        assert [b.attrs["data-grade"] for b in bars] == ["0", "1", "2", "3", "4", "5", "failed"]
        assert {b.attrs["data-grade"]: int(b.attrs["data-n"] or 0) for b in bars if b.attrs["data-n"] != "0"} == counts
    tallest = max(int(b.attrs["height"] or 0) for b in dom.find_all("rect", cls="bar"))
    assert tallest == 90  # the largest count over all runs fills the chart


def test_drilldown_lists_exactly_the_missed_outcomes(dom: Node) -> None:
    report = make_report()
    drills = dom.find_all("details", cls="run-drill")
    assert [d.attrs["data-run"] for d in drills] == LEADERBOARD_ORDER
    for details in drills:
        run = details.attrs["data-run"]
        expected = sorted((o.query_id, o.test_point_id, o.outcome) for o in report.outcomes
                          if o.run == run and o.outcome in DRILLED)
        rows = details.find_all("tr", cls="tp")
        shown = sorted((r.find_all("td")[0].text(), r.find("code", cls="tp-id").text(), r.attrs["data-outcome"])
                       for r in rows)
        assert shown == expected
    # worst first: required-missed before missed
    assert [r.attrs["data-outcome"] for r in drills[1].find_all("tr", cls="tp")] == [
        "required-missed", "missed", "missed"]


def test_leaderboard_links_to_drilldowns(dom: Node) -> None:
    ids = {d.attrs["data-run"]: d.attr("id") for d in dom.find_all("details", cls="run-drill")}
    assert len(set(ids.values())) == len(ids)
    for row in dom.find("table", id="leaderboard-table").rows():
        assert row.find("a").attrs["href"] == "#" + ids[row.attrs["data-run"]]
        assert re.fullmatch(r"run-\d+(-[A-Za-z0-9_-]+)?", ids[row.attrs["data-run"]])


def test_secret_test_points_show_the_id_only(dom: Node) -> None:
    secret = [r for r in dom.find_all("tr", cls="tp") if r.find("code", cls="tp-id").text() == "q2-s"]
    assert len(secret) == 2
    for row in secret:
        cell = row.find("td", cls="text")
        assert cell.text() == "q2-s" and not cell.find_all(cls="tp-text")
        assert row.find("td", cls="reason").text() == "–"


def _passage_id(row: Node) -> str:
    cell = row.find_all("td")[5]
    codes = cell.find_all("code")
    return codes[0].text() if codes else cell.text()


def test_best_passage_with_its_text_when_known(dom: Node) -> None:
    bm25 = dom.find("details", data_run="bm25")
    first = bm25.find_all("tr", cls="tp")[1]  # q1-a, missed, best passage d1
    assert first.find("code", cls="tp-id").text() == "q1-a"
    assert first.find_all("td")[4].text() == "2"
    assert first.find("details", cls="passage").find("blockquote").text() == PASSAGES["d1"]
    assert first.find("td", cls="reason").text() == "nobody"
    unknown = bm25.find_all("tr", cls="tp")[2]  # q2-s: d-missing has no text
    assert unknown.find_all("td")[5].text() == "d-missing" and not unknown.find_all("details")
    evil = dom.find("details", data_run=EVIL_RUN).find_all("tr", cls="tp")
    assert [_passage_id(r) for r in evil] == ["–", "–", "d1"]  # no best passage: a dash


def test_best_passage_text_beside_its_id(dom: Node) -> None:
    """The passage's text, cut, beside its id: the report's own cut text, else the session's text cut; never
    for a secret bank's test point (an answering passage would tell its answer)."""
    bm25 = dom.find("details", data_run="bm25").find_all("tr", cls="tp")
    assert bm25[1].find("summary").find("span", cls="passage-text").text() == PASSAGES["d1"]
    assert not bm25[2].find_all("span", cls="passage-text")  # q2-s: a secret bank's, and no text known
    secret = dom.find("details", data_run="dense").find_all("tr", cls="tp")
    assert secret[0].find("code", cls="tp-id").text() == "q2-s" and not secret[0].find_all("span", cls="passage-text")
    evil = dom.find("details", data_run=EVIL_RUN).find_all("tr", cls="tp")[2]
    assert evil.find("span", cls="passage-text").text() == "Kept in the report: the text of d1, cut…"
    assert evil.find("td", cls="reason").text() == "partly"


def test_long_passages_are_cut() -> None:
    long = "word " * 1000
    dom = parse(render_html(make_report(), {"d1": long}))
    quote = dom.find("details", data_run="bm25").find("blockquote").text()
    assert len(quote) < 1300 and quote.endswith("(5000 characters)")


def test_report_without_outcomes() -> None:
    dom = parse(render_html(make_report(outcomes=False)))
    assert "no per-test-point outcomes" in dom.find("section", id="drilldown").text()
    assert not dom.find_all("tr", cls="tp")


def test_undefined_scores_rank_last_and_keep_the_script_data_valid() -> None:
    report = make_report()
    nan = float("nan")
    zero = _system("zero", [0.0, 0.0, 0.0])
    undefined = _system("undefined", [0.0])
    undefined.scores[COVER.name] = Score(mean=nan, stderr=nan)
    per_query = [*report.per_query, QueryScore(run="undefined", query_id="q1", scores={COVER.name: nan},
                                               covered=0, test_points=0)]
    page = render_html(report.model_copy(update={"systems": [undefined, *report.systems, zero],
                                                 "per_query": per_query}))
    dom = parse(page)
    rows = dom.find("table", id="leaderboard-table").rows()
    assert [r.attrs["data-run"] for r in rows] == [*LEADERBOARD_ORDER, "zero", "undefined"]
    assert _column(dom, rows[-1], "EXAM-Cover@10") == "–"
    data = dom.find("script", id="exam-data").text()
    assert "NaN" not in data and json.loads(data)["cover"][0][-1] is None
    assert dom.find("table", id="heatmap-table").rows()[0].find_all("td")[-1].text() == "–"


def test_a_report_without_runs_renders() -> None:
    report = make_report().model_copy(update={"systems": [], "per_query": [], "outcomes": []})
    dom = parse(render_html(report))
    assert not dom.find("table", id="leaderboard-table").rows()
    assert not dom.find("table", id="heatmap-table").rows()


def test_settings_summary(dom: Node) -> None:
    settings = {dt.text(): dd.text() for dt, dd in zip(dom.find("dl").find_all("dt"), dom.find("dl").find_all("dd"))}
    assert settings["grader"] == "llm 1 · model tiny-model"
    assert settings["min grade τ"].startswith("4")
    assert settings["k (top passages graded)"] == "10"
    assert settings["cache"].startswith("cache.sqlite: 60 hits, 40 misses") and "3 failures" in settings["cache"]
    assert settings["tool version"] == "9.9.9" and settings["created"] == "2024-05-01T12:00:00+00:00"


def test_header_counts_runs_taken_not_run_files() -> None:
    """One run folder can hold many runs: the header counts the runs that took the exam."""
    report = make_report()
    report = report.model_copy(update={"settings": report.settings.model_copy(update={"runs": ["runs"]})})
    assert f"{len(report.systems)} runs · " in render_html(report)


def test_self_contained(page: str, dom: Node) -> None:
    for node in dom.iter():
        for name in ("src", "href", "action", "data", "xlink:href"):
            value = node.attrs.get(name)
            assert value is None or value.startswith("#"), (node.tag, name, value)
    assert not dom.find_all("link") and not dom.find_all("img") and not dom.find_all("iframe")
    assert not re.search(r"https?://|@import|url\(", page)
    assert len(dom.find_all("script")) == 2 and len(dom.find_all("style")) == 1


def test_deterministic() -> None:
    assert render_html(make_report(), PASSAGES) == render_html(make_report(), PASSAGES)


# --- escaping -------------------------------------------------------------------------------------

def test_user_data_is_escaped(page: str, dom: Node) -> None:
    assert "<script>alert" not in page and "<img" not in page and "</blockquote><script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;/details&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    # the parsed page holds the names as text: exactly the user's strings, nothing more
    assert dom.find("tr", data_run=EVIL_RUN).find("a").text() == EVIL_RUN
    texts = {d.text() for d in dom.find_all("div", cls="tp-text")}
    assert texts == {"Who wrote it?", "Where?", EVIL_TEXT}
    assert dom.find("details", data_run="bm25").find_all("details", cls="passage")[0].text().endswith(
        PASSAGES["d-evil"])
    # each drill-down is still one element: no text closed a <details> early
    assert len(dom.find_all("details", cls="run-drill")) == 4


def test_script_data_cannot_break_out(page: str) -> None:
    data = re.search(r'<script type="application/json" id="exam-data">(.*?)</script>', page, re.DOTALL)
    assert data is not None
    assert "<" not in data.group(1) and ">" not in data.group(1) and "&" not in data.group(1)
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in data.group(1)
    assert page.count("<script") == 2 and page.count("</script>") == 2


def test_content_security_policy_pins_the_script(page: str, dom: Node) -> None:
    csp = dom.find("meta", http_equiv="Content-Security-Policy").attrs["content"] or ""
    digest = base64.b64encode(hashlib.sha256(JS.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp
    assert f"<script>{JS}</script>" in page


# --- writing --------------------------------------------------------------------------------------

def test_write_html_report_creates_the_directory(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    path = write_html_report(make_report(), target, PASSAGES)
    assert path == target / "index.html"
    assert os.listdir(target) == ["index.html"]  # no temp file left behind
    assert path.read_text(encoding="utf-8") == render_html(make_report(), PASSAGES)


def test_write_html_report_replaces_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "index.html").write_text("old", encoding="utf-8")
    replaced: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        replaced.append((str(src), str(dst)))
        assert Path(dst).read_text(encoding="utf-8") == "old"  # the old page stays whole until the swap
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    path = write_html_report(make_report(), tmp_path)
    assert len(replaced) == 1 and Path(replaced[0][0]).parent == tmp_path and replaced[0][1] == str(path)
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(os.listdir(tmp_path)) == ["index.html"]


# --- a headless browser ---------------------------------------------------------------------------

@pytest.mark.parametrize(("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_a_missing_browser_fails_on_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, ci: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="no chromium on PATH"):
        _chromium()


def _png_pixels(path: Path) -> tuple[int, int, bytes]:
    """Width, height and the inflated IDAT data of a PNG (filter bytes included)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", (0, 0)
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            size = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    return size[0], size[1], zlib.decompress(idat)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_html_report(make_report(), tmp_path_factory.mktemp("html"), PASSAGES)


def test_browser_renders_the_report(written: Path, tmp_path: Path) -> None:
    dumped = _browse(tmp_path, written.as_uri(), "--dump-dom").stdout.decode("utf-8")
    dom = parse(dumped)
    # the leaderboard comes first, then the heatmap
    sections = [n.attrs["id"] for n in dom.find_all("section")]
    assert sections == ["leaderboard", "heatmap", "grades", "drilldown", "settings"]
    assert [r.attrs["data-run"] for r in dom.find("table", id="leaderboard-table").rows()] == LEADERBOARD_ORDER
    # the script ran (the policy let it) and built the heatmap's ordering control
    select = dom.find("select", id="heat-sort")
    assert [o.text() for o in select.find_all("option")][:2] == ["query id", "mean EXAM-Cover over runs (lowest first)"]
    assert [o.text() for o in select.find_all("option")][2:] == [f"{r} (lowest first)" for r in LEADERBOARD_ORDER]
    assert "sortable" in dom.find("th", data_col="0").classes
    # no user text became markup
    assert not dom.find_all("img") and len(dom.find_all("script")) == 2
    assert len(dom.find_all("details", cls="run-drill")) == 4
    assert all("open" not in d.attrs for d in dom.find_all("details", cls="run-drill"))


def test_browser_opens_the_linked_drilldown(written: Path, tmp_path: Path) -> None:
    anchor = parse(written.read_text(encoding="utf-8")).find("details", data_run="bm25").attrs["id"]
    dom = parse(_browse(tmp_path, f"{written.as_uri()}#{anchor}", "--dump-dom").stdout.decode("utf-8"))
    opened = [d.attrs["data-run"] for d in dom.find_all("details", cls="run-drill") if "open" in d.attrs]
    assert opened == ["bm25"]
    # why it was missed, as the browser shows it: the best passage's text beside its id, the grade's reason
    row = dom.find("details", data_run="bm25").find_all("tr", cls="tp")[1]
    assert row.find("span", cls="passage-text").text() == PASSAGES["d1"]
    assert row.find("td", cls="reason").text() == "nobody"


def test_browser_screenshot_is_not_blank(written: Path, tmp_path: Path) -> None:
    shot, blank_shot = tmp_path / "report.png", tmp_path / "blank.png"
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>", encoding="utf-8")
    for page, png in ((written, shot), (blank, blank_shot)):
        _browse(tmp_path, page.as_uri(), f"--screenshot={png}", "--window-size=1280,2000")
    width, height, pixels = _png_pixels(shot)
    assert (width, height) == (1280, 2000)
    # a blank page inflates to a handful of byte values; text, colours and anti-aliasing to very many
    distinct, blank_distinct = len(set(pixels)), len(set(_png_pixels(blank_shot)[2]))
    assert blank_distinct < 16 and distinct > 128, (distinct, blank_distinct)
    # and the page is not one colour with noise: most rows differ from the first
    stride = len(pixels) // height
    rows = {pixels[i * stride:(i + 1) * stride] for i in range(height)}
    assert len(rows) > height // 10
    if os.environ.get("EXAM_HTML_SCREENSHOT"):
        shutil.copy(shot, os.environ["EXAM_HTML_SCREENSHOT"])
