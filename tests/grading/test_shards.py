"""Shards that merge: ``--exam-shard=I/N`` grades a deterministic 1/N of the pool into the cache and scores
nothing; ``exam-harness cache merge`` joins the shards' caches (refusing conflicting grades, both named);
a session over the merged cache grades nothing and reports what one whole session reports."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.core.models import Grade
from exam_harness.grading.cache import GradeCache
from exam_harness.grading.passes import shard_of

pytest_plugins = ["pytester"]


def graded(project: pytest.Pytester) -> list[str]:
    log = project.path / "graded.log"
    return log.read_text().splitlines() if log.exists() else []


def report(project: pytest.Pytester) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((project.path / "reports" / "exam-report.json").read_text())
    for volatile in ("created", "duration_s", "environment", "grading", "cache"):
        document.pop(volatile, None)
    return document


def test_three_shards_and_a_merge_give_the_report_of_one_session(project: pytest.Pytester) -> None:
    whole = project.runpytest("-p", "no:cacheprovider", "--exam-cache", "whole.sqlite")
    assert whole.ret == 0, whole.stdout.str()
    expected = report(project)
    pairs = graded(project)
    (project.path / "graded.log").unlink()
    for i in (1, 2, 3):
        shard = project.runpytest("-p", "no:cacheprovider", f"--exam-shard={i}/3", "--exam-cache", f"s{i}.sqlite")
        assert shard.ret == 0, shard.stdout.str()
        shard.stdout.fnmatch_lines([f"exam shard {i}/3: * pairs graded*left to the other shards*"])
    # the shards never overlap and together grade every pair once
    assert sorted(graded(project)) == sorted(pairs)
    assert main(["cache", "merge", *(str(project.path / f"s{i}.sqlite") for i in (1, 2, 3)), "-o",
                 str(project.path / "merged.sqlite")]) == 0
    before = len(graded(project))
    final = project.runpytest("-p", "no:cacheprovider", "--exam-cache", "merged.sqlite")
    assert final.ret == 0, final.stdout.str()
    assert len(graded(project)) == before  # the final session grades nothing
    assert report(project) == expected


def test_shards_split_passages_evenly_and_stably() -> None:
    texts = [f"passage {i} about the tides" for i in range(3000)]
    shards = [shard_of(text, 3) for text in texts]
    assert all(1 <= s <= 3 for s in shards) and min(shards.count(i) for i in (1, 2, 3)) > 900
    assert shards == [shard_of(text, 3) for text in texts]  # a rerun (another process, machine) splits alike
    assert shard_of("a lone surrogate \udc80", 2) in (1, 2)


def test_a_passage_s_pairs_are_graded_by_one_shard(project: pytest.Pytester) -> None:
    """Each passage's pairs in one shard: a grader that encodes each passage once encodes it in one shard only."""
    for i in (1, 2):
        shard = project.runpytest("-p", "no:cacheprovider", f"--exam-shard={i}/2", "--exam-cache", f"s{i}.sqlite")
        assert shard.ret == 0, shard.stdout.str()
        (project.path / f"graded-{i}.log").write_text("\n".join(graded(project)))
        (project.path / "graded.log").unlink(missing_ok=True)
    by_shard = [{line.split()[0] for line in (project.path / f"graded-{i}.log").read_text().splitlines() if line}
                for i in (1, 2)]
    assert by_shard[0] and by_shard[1] and not by_shard[0] & by_shard[1]


def test_a_bad_shard_is_refused(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "--exam-shard=4/3")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--exam-shard*1 <= I <= N*"])


def put(path: Path, key: str, grade: int) -> None:
    cache = GradeCache(path)
    try:
        assert cache.put_many({key: Grade(grade=grade, grader="marker", raw_response=str(grade))})
    finally:
        cache.close()


def test_merge_refuses_conflicting_grades_naming_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key, other = "ab" * 32, "cd" * 32
    put(tmp_path / "a.sqlite", key, 5)
    put(tmp_path / "a.sqlite", other, 1)
    put(tmp_path / "b.sqlite", key, 2)
    put(tmp_path / "c.sqlite", other, 1)  # the same grade twice is no conflict
    out = tmp_path / "merged.sqlite"
    assert main(["cache", "merge", str(tmp_path / "a.sqlite"), str(tmp_path / "c.sqlite"), "-o", str(out)]) == 0
    cache = GradeCache(out)
    try:
        assert {k: g.grade for k, g in cache.get_many([key, other]).items()} == {key: 5, other: 1}
    finally:
        cache.close()
    refused = tmp_path / "refused.sqlite"
    assert main(["cache", "merge", str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite"), "-o", str(refused)]) == 4
    err = capsys.readouterr().err
    assert f"conflicting grades for key {key}" in err
    assert f"5 in {tmp_path / 'a.sqlite'}" in err and f"2 in {tmp_path / 'b.sqlite'}" in err
    assert not refused.exists()  # nothing was written


def test_merged_cache_is_a_cache_of_the_current_schema(tmp_path: Path) -> None:
    put(tmp_path / "a.sqlite", "ef" * 32, 3)
    assert main(["cache", "merge", str(tmp_path / "a.sqlite"), "-o", str(tmp_path / "m.sqlite")]) == 0
    with sqlite3.connect(tmp_path / "m.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM grades").fetchone()[0] == 1


def shard_caches(project: pytest.Pytester, count: int) -> None:
    for i in range(1, count + 1):
        shard = project.runpytest("-p", "no:cacheprovider", f"--exam-shard={i}/{count}", "--exam-cache", f"s{i}.sqlite")
        assert shard.ret == 0, shard.stdout.str()


def test_a_merge_missing_a_shard_names_it_and_grades_nothing_unless_told(project: pytest.Pytester) -> None:
    whole = project.runpytest("-p", "no:cacheprovider", "--exam-cache", "whole.sqlite")
    assert whole.ret == 0, whole.stdout.str()
    expected = report(project)
    shard_caches(project, 3)
    assert main(["cache", "merge", str(project.path / "s1.sqlite"), str(project.path / "s3.sqlite"), "-o",
                 str(project.path / "merged.sqlite")]) == 0
    before = len(graded(project))
    refused = project.runpytest("-p", "no:cacheprovider", "--exam-cache", "merged.sqlite")
    assert refused.ret == 4  # a usage error: nothing graded, nothing scored
    refused.stderr.fnmatch_lines(["*merged.sqlite holds shards 1/3, 3/3 of a pass graded in 3 shards and lacks * of "
                                  "the pairs this session needs: * of shard 2/3 (its cache is not merged)*merge the "
                                  "cache of shard 2/3*--exam-grade-missing*"])
    assert len(graded(project)) == before  # no pair graded
    told = project.runpytest("-p", "no:cacheprovider", "--exam-cache", "merged.sqlite", "--exam-grade-missing")
    assert told.ret == 0, told.stdout.str()
    assert report(project) == expected  # shard 2's pairs graded here: the report of one whole session
    assert len(graded(project)) > before


def test_a_shard_without_a_persistent_cache_is_refused_before_grading(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "--exam-shard=1/2", "--exam-cache=none")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--exam-shard=1/2 grades into the grade cache*--exam-cache=none*"])
    assert graded(project) == []


def test_merge_refuses_shards_of_different_splits(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    shard = project.runpytest("-p", "no:cacheprovider", "--exam-shard=1/2", "--exam-cache", "a.sqlite")
    assert shard.ret == 0, shard.stdout.str()
    shard = project.runpytest("-p", "no:cacheprovider", "--exam-shard=2/3", "--exam-cache", "b.sqlite")
    assert shard.ret == 0, shard.stdout.str()
    out = project.path / "m.sqlite"
    assert main(["cache", "merge", str(project.path / "a.sqlite"), str(project.path / "b.sqlite"), "-o", str(out)]) == 4
    assert "shards of passes split differently" in capsys.readouterr().err
    assert not out.exists()
    again = project.runpytest("-p", "no:cacheprovider", "--exam-shard=1/3", "--exam-cache", "a.sqlite")
    assert again.ret == 4  # a shard of another split into a cache of shards of 2
    again.stderr.fnmatch_lines(["*a.sqlite holds shards of a pass graded in 2 shards, not 3*"])
