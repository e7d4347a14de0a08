"""The viewer as a user drives it (Textual's Pilot at 80×24, keys only), asserting what the screen shows against
the documents themselves (read here as plain JSON, apart from the viewer)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from exam_harness.results.schema import SCHEMA_VERSION
from tests.features.view.example import Example
from tests.features.view.support import MISSED_POINT, open_point, outcome_of
from tests.features.view.viewing import User, as_user, flat, viewer
from tests.paths import GOLDEN


def raw(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def top_k(run_file: Path, query: str, k: int) -> list[str]:
    rows = [line.split() for line in run_file.read_text().splitlines() if line.split()[0] == query]
    return [r[2] for r in sorted(rows, key=lambda r: int(r[3]))][:k]


def test_a_user_finds_why_weak_ranker_missed_a_test_point(example: Example) -> None:
    """Done when (issue 40): by keys only, the best passage of a missed point, its grade and reason, and every
    pair of the run's top-k with its grade, best first."""
    document = raw(example.report)
    missed = outcome_of(document, "weak-ranker", MISSED_POINT)
    assert missed["outcome"] == "missed"
    ranked = top_k(example.root / "runs" / "weak-ranker.run", "tides", document["settings"]["k"])

    async def scenario(user: User) -> None:
        board = user.screen
        assert "verdict: PASSED" in board and "weak-ranker" in board
        queries = await user.press(*["down"] * user.app.viewed.runs().index("weak-ranker"), "enter")
        assert "run weak-ranker · its queries" in queries and "tides" in queries
        await user.press("escape")
        shown = flat(await open_point(user, "weak-ranker", "tides", MISSED_POINT))
        assert f"{MISSED_POINT} (nugget) · run weak-ranker" in shown
        assert "outcome: missed" in shown
        assert f"best passage: {missed['best_passage']}, grade {missed['best_grade']}" in shown
        assert flat(missed["reason"])[:70] in shown
        rows = [line.split() for line in user.screen.splitlines() if line.split()[:2] and
                line.split()[0].isdigit() and line.split()[1] in (*ranked, "best")]
        ids = [r[2] if r[1] == "best" else r[1] for r in rows]
        assert sorted(ids) == sorted(ranked)  # every passage of the run's top-k, once
        assert rows[0][:3] == [str(ranked.index(missed["best_passage"]) + 1), "best", missed["best_passage"]]
        assert rows[0][3] == str(missed["best_grade"])  # the best passage first, with the report's grade
        grades = [int(r[3] if r[1] == "best" else r[2]) for r in rows]
        assert grades == sorted(grades, reverse=True)
        detail = flat(user.screen)  # the highlighted pair: the best one, whole
        assert f"rank {rows[0][0]}: {missed['best_passage']}, grade {missed['best_grade']}, decided by embedding" \
            in detail

    as_user(viewer(example.report), scenario)


def test_a_user_sees_what_flipped_against_the_kept_report(example: Example) -> None:
    """Done when (issue 40): the flips against the kept report, both sides' best passage and reason."""
    kept, now = raw(example.kept), raw(example.report)
    flipped = [(f["run"], f["test_point_id"]) for f in now["sections"]["flips"]["flips"]]
    assert flipped  # the fixture's earlier weak-ranker answered them

    async def scenario(user: User) -> None:
        screen = await user.press("f")
        assert "flipped test points against 0001_before.json" in screen
        assert screen.count("answered → missed") == len(flipped)
        run, point = flipped[0]
        before, after = outcome_of(kept, run, point), outcome_of(now, run, point)
        left, right = flat(user.region("#before")), flat(user.region("#after"))
        assert left.startswith("before: answered") and right.startswith("now: missed")
        assert f"best passage: {before['best_passage']}, grade {before['best_grade']}" in left
        assert f"best passage: {after['best_passage']}, grade {after['best_grade']}" in right
        assert f"reason: {flat(before['reason'])[:60]}" in left
        assert f"reason: {flat(after['reason'])[:60]}" in right
        point_screen = flat(await user.press("enter"))  # the flipped point as it is now: why it is missed
        assert f"{point} " in point_screen and "outcome: missed" in point_screen

    as_user(viewer(example.report), scenario)


def test_flips_against_a_second_document_are_the_session_s(example: Example) -> None:
    """The same flips from the kept report given on the command line as from the session's flips section."""
    from exam_harness.features.view.document import Viewed, open_document

    session, _ = Viewed(open_document(example.report)).flips()
    given, against = Viewed(open_document(example.report), open_document(example.kept)).flips()
    assert against == "against 0001_before.json"
    assert [(f.run, f.test_point_id, f.lost) for f in given] == [(f.run, f.test_point_id, f.lost) for f in session]
    none, why = Viewed(open_document(example.kept)).flips()
    assert none == [] and "no reference" in why


def test_the_leaderboard_says_what_each_cell_holds(example: Example) -> None:
    """Every measure is a column; the highlighted cell's mean and standard error, and the reference's value."""
    now, kept = raw(example.report), raw(example.kept)
    first = now["measures"][0]["name"]

    async def scenario(user: User) -> None:
        viewed = user.app.viewed
        screen = await user.press(*["down"] * viewed.runs().index("weak-ranker"), "right")
        score = next(s for s in now["systems"] if s["run"] == "weak-ranker")["scores"][first]
        before = next(s for s in kept["systems"] if s["run"] == "weak-ranker")["scores"][first]["mean"]
        text = flat(screen)
        assert f"weak-ranker · {now['measures'][0]['title']} = {first}" in text
        assert f"mean {score['mean']:.4f}, standard error {score['stderr']:.4f}" in text
        assert f"in 0001_before.json: {before:.4f} ({score['mean'] - before:+.4f})" in text
        assert len(viewed.headings) == len(now["measures"])

    as_user(viewer(example.report, example.kept), scenario)


def test_search_finds_test_points_by_run_flag_and_words(example: Example) -> None:
    now = raw(example.report)
    expected = [o for o in now["outcomes"] if "weak" in o["run"] and o["outcome"] in ("missed", "required-missed")
                and "tide" in f"{o['test_point_id']} {o['text']}".lower()]
    assert expected

    async def scenario(user: User) -> None:
        await user.press("slash")
        screen = await user.type("run:weak missed tide")
        screen = await user.press("enter")
        assert f"{len(expected)} of {len(now['outcomes'])} test point outcomes match" in flat(screen)
        shown = await user.press("enter")  # the first result, why
        assert f"{expected[0]['test_point_id']} " in flat(shown)

    as_user(viewer(example.report), scenario)


def test_search_by_the_deciding_part(example: Example) -> None:
    """by:answer-key finds the outcomes the answer key decided: those whose reason names a found gold answer."""
    now = raw(example.report)
    expected = sorted((o["run"], o["test_point_id"]) for o in now["outcomes"]
                      if (o["reason"] or "").startswith("gold answer"))
    assert expected

    async def scenario(user: User) -> None:
        await user.press("slash")
        await user.type("by:answer-key")
        screen = flat(await user.press("enter"))
        assert f"{len(expected)} of {len(now['outcomes'])} test point outcomes match" in screen
        found = sorted((o.run, o.test_point_id) for o in user.app.screen.found)
        assert found == expected

    as_user(viewer(example.report), scenario)


def test_searching_flaky_cases_without_repeats_says_why_none_are(example: Example) -> None:
    async def scenario(user: User) -> None:
        await user.press("slash")
        await user.type("flaky")
        screen = flat(await user.press("enter"))
        assert "0 of" in screen and "no judge variance" in screen

    as_user(viewer(example.report), scenario)


def test_a_bad_filter_is_said(example: Example) -> None:
    async def scenario(user: User) -> None:
        await user.press("slash")
        await user.type("-tide")
        screen = flat(await user.press("enter"))
        assert "only a flag can be negated" in screen

    as_user(viewer(example.report), scenario)


def test_help_lists_the_keys_and_closes(example: Example) -> None:
    async def scenario(user: User) -> None:
        screen = await user.press("question_mark")
        assert "every key (no mouse needed)" in screen
        assert all(len(line.rstrip()) <= 80 for line in screen.splitlines())
        screen = await user.press("escape")
        assert "every key" not in screen and "verdict:" in screen

    as_user(viewer(example.report), scenario)


def test_escape_goes_back_and_l_to_the_leaderboard(example: Example) -> None:
    async def scenario(user: User) -> None:
        await open_point(user, "weak-ranker", "tides", MISSED_POINT)
        screen = await user.press("escape")
        assert "query tides · test points" in screen
        screen = await user.press("l")
        assert "verdict:" in screen and "EXAM-Cover@20" in screen
        screen = await user.press("escape")  # the leaderboard stays
        assert "verdict:" in screen

    as_user(viewer(example.report), scenario)


def test_a_section_no_registered_section_names_is_shown_generically(example: Example, tmp_path: Path) -> None:
    """A plugin's section the viewer does not know (or a newer tool's) is still shown: as its JSON."""
    document = raw(example.report)
    document["sections"]["team-dashboard"] = {"owner": "[team] search", "rows": [{"run": "weak-ranker", "n": 3}]}
    copy = tmp_path / "exam-report.json"
    copy.write_text(json.dumps(document))

    async def scenario(user: User) -> None:
        screen = flat(await user.press("s"))
        assert "Decided by [decided-by] grades decided by" in screen  # a registered one, as the terminal draws it
        assert "The judge [judge-notes]" in screen
        await user.press("end")
        screen = flat(user.screen)
        assert "team-dashboard [team-dashboard]" in screen
        assert "no registered section renders this one" in screen
        assert '"owner": "[team] search"' in screen  # as written: not read as markup

    as_user(viewer(copy, root=example.root), scenario)


def test_the_verdict_shows_failed_checks_first(example: Example, tmp_path: Path) -> None:
    document = raw(example.report)
    document["verdict"] = {"passed": False, "gates": [
        {"gate": "exam-fail-under", "run": "strong-ranker", "measure": "exam-cover", "value": 1.0, "limit": 0.5,
         "passed": True, "message": "PASS strong-ranker reached 0.5"},
        {"gate": "exam-fail-under", "run": "weak-ranker", "measure": "exam-cover", "value": 0.14, "limit": 0.5,
         "passed": False, "message": "FAIL weak-ranker missed 0.5"}]}
    copy = tmp_path / "exam-report.json"
    copy.write_text(json.dumps(document))

    async def scenario(user: User) -> None:
        lines = [line.strip() for line in user.screen.splitlines()]
        head = next(i for i, line in enumerate(lines) if line.startswith("verdict: FAILED (2 checks, 1 failed"))
        assert lines[head + 1] == "FAIL weak-ranker missed 0.5"
        screen = await user.press("v")
        assert screen.index("FAIL weak-ranker") < screen.index("PASS strong-ranker")

    as_user(viewer(copy, root=example.root), scenario)


def test_pairs_that_cannot_be_looked_up_say_why(example: Example, tmp_path: Path) -> None:
    """A report away from its inputs and cache still shows its own best passage, and says why no other pair."""
    copy = tmp_path / "reports" / "exam-report.json"
    copy.parent.mkdir()
    shutil.copy(example.report, copy)
    missed = outcome_of(raw(example.report), "weak-ranker", MISSED_POINT)

    async def scenario(user: User) -> None:
        shown = flat(await open_point(user, "weak-ranker", "tides", MISSED_POINT))
        assert f"best passage: {missed['best_passage']}, grade {missed['best_grade']}" in shown
        assert "the run's other pairs are not shown: the report's inputs are not under" in shown

    as_user(viewer(copy, root=tmp_path), scenario)


def test_a_kept_report_of_schema_2_is_read_through_the_migration() -> None:
    kept = raw(GOLDEN / "exam-report-2.0.json")
    first = kept["outcomes"][0]

    async def scenario(user: User) -> None:
        assert f"schema {SCHEMA_VERSION}" in user.screen  # read as today's
        runs = user.app.viewed.runs()
        await user.press(*["down"] * runs.index(first["run"]), "enter")
        queries = [row.query_id for row in user.app.viewed.queries(first["run"])]
        await user.press(*["down"] * queries.index(first["query_id"]), "enter")
        points = user.app.viewed.points(first["run"], first["query_id"])
        index = next(i for i, o in enumerate(points) if o.text == first["text"])
        shown = flat(await user.press(*["down"] * index, "enter"))
        assert f"asks: {first['text']}" in shown and f"outcome: {first['outcome']}" in shown

    as_user(viewer(GOLDEN / "exam-report-2.0.json"), scenario)


def test_an_evaluation_document_of_schema_4_0_shows_its_leaderboards_and_per_query_scores() -> None:
    """evaluate's document (a kept 4.0 one, migrated): every measure, the bootstrap interval of a cell, each run's
    per-query scores; no test points (it holds none), said so."""
    path = GOLDEN / "evaluate-4.0" / "hand-made.json"
    document = raw(path)
    first = document["measures"][0]["name"]
    stats = next(s for s in document["leaderboards"] if s["measure"] == first)

    async def scenario(user: User) -> None:
        viewed = user.app.viewed
        assert "evaluation of recorded grades" in user.screen or "evaluation of grader grades" in user.screen
        run = viewed.runs()[0]
        screen = flat(await user.press("right"))
        low, high = stats["ci"][run]
        assert f"bootstrap interval [{low:.4f}, {high:.4f}]" in screen
        screen = await user.press("enter")
        rows = [r for r in document["per_query"] if r["run"] == run]
        assert f"run {run} · its queries" in screen
        for row in rows:
            assert row["query_id"] in screen
        value = rows[0]["scores"][first]
        assert f"{value:.3f}" in screen
        screen = await user.press("slash")
        assert "holds no test point outcomes" in flat(screen)

    as_user(viewer(path), scenario)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_every_main_screen_fits_the_terminal(example: Example, size: tuple[int, int]) -> None:
    """No screen draws past the terminal's width, and each keeps its key bar on the last line."""
    async def scenario(user: User) -> None:
        for keys in ((), ("f",), ("escape", "s"), ("escape", "v"), ("escape", "slash")):
            screen = await user.press(*keys) if keys else user.screen
            lines = screen.rstrip("\n").split("\n")
            assert len(lines) == size[1] and all(len(line) <= size[0] for line in lines)
            assert "esc back" in lines[-1] or "? help" in lines[-1]

    as_user(viewer(example.report), scenario, size=size)


def test_flaky_cases_are_found_and_said(example: Example, tmp_path: Path) -> None:
    """A document with judge variance (a judge asked K times per pair): ``flaky`` finds the cases whose verdict
    flips across the samples, and the why screen says so."""
    document = raw(example.report)
    flaky = [("weak-ranker", MISSED_POINT), ("strong-ranker", "tides/two-tidal-bulges-5fe1fe")]
    steady = ("weak-ranker", "tides/spring-and-neap-tides-6b7b25")
    cases = [{"run": run, "query_id": "tides", "test_point_id": point, "best_grades": [2, 4, 4], "answered_in": 2,
              "flaky": True} for run, point in flaky]
    cases.append({"run": steady[0], "query_id": "tides", "test_point_id": steady[1], "best_grades": [3, 3, 3],
                  "answered_in": 0, "flaky": False})
    runs = [{"run": run, "score": 0.5, "sample_scores": [0.4, 0.5, 0.6], "judge_variance": 0.01,
             "query_variance": 0.02, "judge_share": 0.33, "cases": 3, "flaky": 1, "cover_at_least": [0.6, 0.5, 0.4]}
            for run in ("weak-ranker", "strong-ranker")]
    document["sections"]["judge-variance"] = {"per_tau": [{
        "repeats": 3, "reducer": "mean", "measure": document["measures"][0]["name"], "min_grade": 4, "k": 20,
        "runs": runs, "cases": cases}]}
    copy = tmp_path / "exam-report.json"
    copy.write_text(json.dumps(document))

    async def scenario(user: User) -> None:
        await user.press("slash")
        await user.type("flaky")
        screen = flat(await user.press("enter"))
        assert f"{len(flaky)} of {len(document['outcomes'])} test point outcomes match" in screen
        assert sorted((o.run, o.test_point_id) for o in user.app.screen.found) == sorted(flaky)
        await user.press("escape", "l")
        shown = flat(await open_point(user, "weak-ranker", "tides", MISSED_POINT))
        assert "outcome: missed; flaky across the judge's samples" in shown
        await user.press("escape")
        points = [o.test_point_id for o in user.app.viewed.points("weak-ranker", "tides")]
        await user.press("home", *["down"] * points.index(steady[1]), "enter")
        assert "outcome: missed; not flaky across the judge's samples" in flat(user.screen)

    as_user(viewer(copy, root=example.root), scenario)
