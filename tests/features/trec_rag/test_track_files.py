"""Realistic TREC RAG track files, written here the way real runs and nuggetizer write them, read with the
track's own rules: errors refuse the file naming line and field, warnings never do (one line per kind and
file), ``--trec-rag-fix`` applies the 2024 checker's fixes and its output passes the checker's rules."""

from __future__ import annotations

import copy
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import InputError
from exam_harness.features.trec_rag.answers import check_rag_answers, fix_rag_file
from exam_harness.features.trec_rag.nuggets import read_nuggetizer_bank
from exam_harness.io.banks import load_bank
from exam_harness.io.runs import load_runs
from tests.trec_rag_data import write_lines

pytest_plugins = ["pytester"]

SEG = "msmarco_v2.1_doc_{}_{}#{}_{}"


def segment(i: int) -> str:
    return SEG.format(29, 1000 + i, i % 7, 2000 + i)


def long_answer(words: int, per_sentence: int = 37) -> list[dict[str, Any]]:
    """Sentences of ``per_sentence`` words (the last shorter) citing the first references."""
    out, left, n = [], words, 0
    while left > 0:
        size = min(per_sentence, left)
        out.append({"text": " ".join(f"w{n}x{i}" for i in range(size - 1)) + " end.", "citations": [n % 3]})
        left -= size
        n += 1
    return out


def run_2024() -> list[dict[str, Any]]:
    """Three topics of one 2024 run: a 503-word answer, a usual one, one with a duplicated citation."""
    rows: list[dict[str, Any]] = []
    for t, words in (("2024-105741", 503), ("2024-127266", 120), ("2024-96359", 60)):
        answer = long_answer(words)
        rows.append({"run_id": "team-rag", "topic_id": t, "topic": f"topic {t}",
                     "references": [segment(i) for i in range(5)], "response_length": words, "answer": answer})
    rows[2]["answer"][0]["citations"] = [1, 1, 2]
    return rows


def checker_2024(rows: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The 2024 checker's rules (ragnarok scripts/rag24_validation.py, check_rag24_run) without a topic file,
    stated again here from the reference, independently of the harness's code: (errors, warnings)."""
    errors: list[str] = []
    warnings: list[str] = []
    tag = None
    for n, obj in enumerate(rows, 1):
        missing = [f for f in ("run_id", "topic_id", "topic", "references", "response_length", "answer")
                   if f not in obj]
        if missing:
            errors.append(f"{n}: missing {missing[0]}")
            continue
        tag = tag or obj["run_id"]
        if obj["run_id"] != tag:
            errors.append(f"{n}: run tag")
        if len(set(obj["references"])) != len(obj["references"]):
            errors.append(f"{n}: duplicate reference")
        if len(obj["references"]) > 20:
            errors.append(f"{n}: too many references")
        if obj["response_length"] > 400:
            warnings.append(f"{n}: reported length")
        length = 0
        for sent in obj["answer"]:
            length += len(unicodedata.normalize("NFKC", sent["text"].strip()).split())
            if "citations" not in sent:  # a KeyError in the checker, reported as an error
                errors.append(f"{n}: no citations")
                break
            cites = sent["citations"]
            if any(c < 0 or c >= len(obj["references"]) for c in cites):
                errors.append(f"{n}: invalid citation")
            if len(cites) != len(set(cites)):
                warnings.append(f"{n}: duplicate citation")
        if length > 400:  # fix_rag24_answer trims it and sets response_length: nothing left to compare
            warnings.append(f"{n}: too long")
        elif length != obj["response_length"]:
            warnings.append(f"{n}: length differs")
    return errors, warnings


def test_a_real_2024_run_loads_with_the_checkers_warnings(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "runs" / "team-rag", run_2024())  # any file name: a track submission has none
    said: list[str] = []
    loaded = load_runs([path.parent], notify=said.append)
    assert sorted(loaded.answers["team-rag"]) == ["2024-105741", "2024-127266", "2024-96359"]
    assert len(said) == 3
    part, check = check_rag_answers(path)
    answers = part.answers["team-rag"]
    assert answers["2024-105741"].words == 503  # read whole: a warning never refuses or changes an answer
    assert answers["2024-96359"].sentences[0].citations == (1, 2)  # a repeated citation read once
    assert sorted(check.warned) == ["dup_citation", "long", "long_reported"]
    assert check.warned["long"] == [1] and check.warned["dup_citation"] == [3]
    assert len(part.warnings) == 3 and all(str(path) in line for line in part.warnings)
    assert checker_2024(run_2024())[0] == []  # the checker agrees: no error, only warnings


@pytest.mark.parametrize(("change", "line", "field", "message"), [
    (lambda rows: rows[1].update(references=[segment(i) for i in range(25)]), 2, "references",
     "25 references, more than 20"),
    (lambda rows: rows[1]["references"].append(segment(0)), 2, "references", "duplicate reference"),
    (lambda rows: rows[2]["answer"][1].update(citations=[7]), 3, "answer[1].citations[0]",
     "citation index 7 is out of range"),
    (lambda rows: rows[2].update(run_id="other"), 3, "run_id", "differs from the file's first"),
    (lambda rows: rows[0]["answer"][2].pop("citations"), 1, "answer[2].citations", "a sentence without citations"),
    (lambda rows: rows[0].pop("response_length"), 1, "response_length", 'lacks "response_length"'),
])
def test_the_checkers_errors_refuse_the_file_naming_line_and_field(tmp_path: Path, change: Any, line: int,
                                                                   field: str, message: str) -> None:
    rows = run_2024()
    change(rows)
    assert checker_2024(rows)[0]  # the reference calls it an error too
    path = write_lines(tmp_path / "run.txt", rows)
    with pytest.raises(InputError) as caught:
        check_rag_answers(path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), line, field)
    assert message in str(caught.value)


def test_trec_rag_fix_output_passes_the_2024_checker(tmp_path: Path) -> None:
    rows = run_2024()
    rows[1]["references"] = [segment(0), segment(1), segment(0), segment(2)]  # a duplicate: error
    rows[1]["answer"][0]["citations"] = [2, 3]  # the duplicate's index and the one after it
    rows[2]["answer"][1]["citations"] = [0, 9]  # out of range: error
    rows[1]["response_length"] = 99  # misreported: warning
    errors, _ = checker_2024(rows)
    assert len(errors) == 2
    path = write_lines(tmp_path / "team-rag.jsonl", rows)
    text, account = fix_rag_file(path)
    fixed = [json.loads(line) for line in text.splitlines()]
    errors, warnings = checker_2024(fixed)
    assert errors == [] and not [w for w in warnings if "long" in w or "length" in w]
    assert fixed[1]["references"] == [segment(0), segment(1), segment(2)]
    assert fixed[1]["answer"][0]["citations"] == [0, 2]  # the duplicate's citation follows its first place
    assert fixed[2]["answer"][1]["citations"] == [0]
    assert sum(len(s["text"].split()) for s in fixed[0]["answer"]) <= 400 and fixed[0]["response_length"] <= 400
    assert fixed[0]["answer"] == rows[0]["answer"][:len(fixed[0]["answer"])]  # trimmed from the end only
    assert [line.split(": ", 1)[0] for line in account] == [f"{path}:{n}" for n in (1, 1, 2, 2, 3)]
    assert "removed 4 sentence(s) from the end (503 -> 370 words)" in account[0]
    assert "removed 1 duplicate reference(s)" in account[2] and "dropped out-of-range citation(s) [9]" in account[4]
    # read with the fixes, the run is the fixed file's
    part, _ = check_rag_answers(path, fix=True)
    assert part.answers["team-rag"]["2024-105741"].words == 370


def test_under_trec_rag_fix_the_warnings_say_what_the_fix_did(tmp_path: Path) -> None:
    """The trimmed answer is said trimmed (not 'read as given'), and its response_length is not reported as
    differing from the words it was trimmed to: the checker's fix sets it before it compares (issue 37,
    finding 10: a misleading warning under --trec-rag-fix)."""
    rows = run_2024()
    rows[1]["response_length"] = 99  # a usual answer misreported: the checker warns
    _errors, reference = checker_2024(rows)
    path = write_lines(tmp_path / "team-rag.jsonl", rows)
    for fix in (False, True):
        part, check = check_rag_answers(path, fix=fix)
        assert check.warned.get("length") == [2]  # line 1's long answer is not said to differ
        assert ("long_fixed" in check.warned) == fix and ("long" in check.warned) != fix
    said = "\n".join(part.warnings)
    assert "read as given" not in said and "trimmed from the end as its fix does (--trec-rag-fix)" in said
    assert sorted(w.split(": ", 1)[1] for w in reference) == ["duplicate citation", "length differs",
                                                              "reported length", "too long"]


def test_the_trec_rag_fix_option_reaches_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.cli import main

    rows = run_2024()
    rows[2]["answer"][1]["citations"] = [0, 9]
    runs = tmp_path / "runs"
    write_lines(runs / "team-rag.jsonl", rows)
    nuggets = [{"qid": r["topic_id"], "query": r["topic"], "nuggets": [{"text": "w0x1", "importance": "vital"}]}
               for r in rows]
    bank = write_lines(tmp_path / "nuggets.jsonl", nuggets)
    args = ["evaluate", str(runs), "--bank", str(bank), "--grader", "lexical", "--bootstrap", "0",
            "--cache", str(tmp_path / "c.sqlite")]
    assert main(args) == 4
    assert "citation index 9 is out of range" in capsys.readouterr().err
    code = main([*args, "--trec-rag-fix"])
    err = capsys.readouterr().err
    assert code in (0, 1), err
    assert "team-rag.jsonl:1: removed 4 sentence(s) from the end" in err
    assert "team-rag.jsonl:3: answer[1]: dropped out-of-range citation(s) [9]" in err


def test_2025_rules_are_the_validators(tmp_path: Path) -> None:
    row: dict[str, Any] = {"metadata": {"team_id": "t", "run_id": "r25", "narrative_id": "n1"},
           "references": [segment(0), segment(1), segment(0)],
           "answer": long_answer(450)}
    rows = [row, {**copy.deepcopy(row), "metadata": {**row["metadata"], "narrative_id": "n2", "type": "manual",
                                                      "narrative": "x", "prompt": "p"}}]
    path = write_lines(tmp_path / "r25.jsonl", rows)
    part, check = check_rag_answers(path)  # no length rule, duplicates allowed, missing type only a warning
    assert part.answers["r25"]["n1"].words == 450 and len(part.answers["r25"]["n1"].references) == 3
    assert check.warned == {"no_type": [1], "no_narrative": [1], "no_prompt": [1]}
    text, account = fix_rag_file(path)  # --fix-length and --fix-citations
    fixed = [json.loads(line) for line in text.splitlines()]
    assert all(len(r["references"]) == 2 for r in fixed)
    assert all(sum(len(s["text"].split()) for s in r["answer"]) <= 400 for r in fixed)
    assert len(account) == 4
    rows[1]["metadata"]["type"] = "semi"
    with pytest.raises(InputError, match="unknown run type"):
        check_rag_answers(write_lines(tmp_path / "bad.jsonl", rows))


def nugget_file() -> list[dict[str, Any]]:
    """nuggetizer's create output as real files hold it: scorer words besides vital/okay, a repeated text,
    a topic whose nugget list came back empty."""
    return [
        {"query": "q one", "qid": "2024-1", "nuggets": [
            {"text": "alpha", "importance": "vital"}, {"text": "beta", "importance": "okay"},
            {"text": "alpha", "importance": "vital"}, {"text": "gamma", "importance": "failed"},
            {"text": "delta", "importance": "not_relevant"}, {"text": "eps"},
            {"text": "eta", "importance": "active learning"}, {"text": "theta", "importance": ""},
            {"text": "iota", "importance": ""}]},
        {"query": "q two", "qid": "2024-2", "nuggets": []},
        {"query": "q three", "qid": 2024, "nuggets": [{"text": "zeta", "importance": "failed"}]},
    ]


def test_a_real_nugget_file_reads_as_nuggetizer_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "nuggets.jsonl", nugget_file())
    banks, warnings = read_nuggetizer_bank(path)
    assert [b.query.id for b in banks] == ["2024-1", "2024"]  # the topic without nuggets has nothing to assign
    points = banks[0].test_points
    assert [(p.text, p.importance, p.weight) for p in points] == [
        ("alpha", "vital", 1.0), ("beta", "okay", 0.0), ("alpha", "vital", 1.0), ("gamma", "failed", 0.0),
        ("delta", "not_relevant", 0.0), ("eps", "vital", 1.0), ("eta", "active learning", 0.0),
        ("theta", "", 0.0), ("iota", "", 0.0)]
    assert len({p.id for p in points}) == 9 and points[2].id == points[0].id + "~2"
    assert len(warnings) == 4  # one line per kind, however many nuggets each holds
    assert "3 nugget(s) of an importance other than vital/okay ('failed' x2, 'not_relevant' x1)" in warnings[0]
    assert "3 nugget(s) whose importance is no single word ('' x2, 'active learning' x1)" in warnings[1]
    assert "1 nugget text(s) repeated" in warnings[2] and "1 quer(y/ies) without nuggets (lines 2)" in warnings[3]
    load_bank(path)  # through the bank formats: the same four lines on stderr
    err = capsys.readouterr().err
    assert err.count("exam-harness: warning: ") == 4


def test_importances_of_any_string_score_as_nuggetizer_scores_them() -> None:
    """An empty or multi-word importance is no vital nugget and has no weight in W, but counts in A, as
    nuggetizer's calculate_nugget_scores reads ``importance == "vital"`` (every nugget in the all scores)."""
    from exam_harness.features.trec_rag.measures import nugget_scores

    labels = [("vital", "support"), ("", "support"), ("active learning", "partial_support"), ("okay", "support")]
    scores = nugget_scores(labels)
    assert scores["A"] == pytest.approx((1 + 1 + 0.5 + 1) / 4)
    assert scores["V"] == 1.0 and scores["W"] == pytest.approx((1 + 0.5) / 1.5)


def test_evaluate_names_the_answers_it_drops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.cli import main
    from tests.trec_rag_data import ANSWERS_2024, write_exam

    banks, runs = write_exam(tmp_path)
    extra = copy.deepcopy(ANSWERS_2024[0])
    extra.update(run_id="rag24b", topic_id="t9")  # a topic the nugget file does not hold
    write_lines(runs / "rag24b.jsonl", [{**ANSWERS_2024[0], "run_id": "rag24b"}, extra])
    assert main(["evaluate", str(runs), "--bank", str(banks / "nuggets.jsonl"), "--grader", "lexical",
                 "--cache", str(tmp_path / "c.sqlite"), "--bootstrap", "0"]) in (0, 1)
    err = capsys.readouterr().err
    assert "warning: 1 answer(s) for topics no bank holds are not scored: rag24b/t9" in err


def test_the_trec_rag_fix_option_reaches_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_runs = runs\nexam_grader = answer-key\n")
    rows = run_2024()
    rows[2]["answer"][1]["citations"] = [0, 9]
    write_lines(pytester.path / "runs" / "team-rag.jsonl", rows)
    write_lines(pytester.path / "banks" / "nuggets.jsonl",
                [{"qid": r["topic_id"], "query": r["topic"], "nuggets": [{"text": "w0x1", "importance": "vital"}]}
                 for r in rows])
    refused = pytester.runpytest("banks", "-p", "no:cacheprovider")
    assert refused.ret == 4
    refused.stderr.fnmatch_lines(["*team-rag.jsonl:3*citation index 9 is out of range*"])
    # collected only: the answer-key grader has nothing to grade in nuggets (a usage error of its own)
    fixed = pytester.runpytest("banks", "-p", "no:cacheprovider", "--exam-trec-rag-fix", "--collect-only")
    assert fixed.ret == 0, fixed.stdout.str() + fixed.stderr.str()
    said = fixed.stdout.str() + fixed.stderr.str()
    assert "team-rag.jsonl:3: answer[1]: dropped out-of-range citation(s) [9]" in said


def test_a_nugget_files_warnings_reach_the_pytest_user(pytester: pytest.Pytester) -> None:
    """Collection's output is hidden by pytest's capture: the nugget file's warning lines (one per kind) are
    said again in the session's summary (they were lost)."""
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_runs = runs\n")
    write_lines(pytester.path / "banks" / "nuggets.jsonl", nugget_file())
    write_lines(pytester.path / "runs" / "team-rag.jsonl", [
        {"run_id": "team-rag", "topic_id": "2024-1", "topic": "q one", "references": [segment(1)],
         "response_length": 2, "answer": [{"text": "alpha beta", "citations": [0]}]}])
    result = pytester.runpytest("banks", "-p", "no:cacheprovider", "--exam-grader", "answer-key", "--collect-only")
    said = result.stdout.str()
    assert said.count("nuggets.jsonl: ") >= 4, said  # the four kinds, each one line
    assert "whose importance is no single word ('' x2, 'active learning' x1)" in said


# --- the track's topic file: the checkers' topic rules and the segment-id pattern ------------------


def topics_2024(rows: list[dict[str, Any]], tmp_path: Path) -> Path:
    """The 2024 topic file as ragnarok's rag24_validation.py reads it: id<TAB>text lines."""
    path = tmp_path / "topics.rag24.test.txt"
    path.write_text("".join(f"{r['topic_id']}\t{r['topic']}\n" for r in rows) + "2024-999\tan unanswered topic\n")
    return path


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda rows: rows[1].update(topic="topic 2024-127266, reworded"), "topic",
     "the topic text is not the official one of topic '2024-127266'"),
    (lambda rows: rows[1]["references"].__setitem__(2, "clueweb22-en0001-23-45678"), "references[2]",
     "the reference is no MS MARCO v2.1 segment id"),
    (lambda rows: rows[1].update(topic_id="2024-1"), "topic_id", "unknown topic '2024-1'"),
])
def test_with_the_topic_file_the_2024_checkers_topic_rules_refuse(tmp_path: Path, change: Any, field: str,
                                                                   message: str) -> None:
    """ragnarok's check_trec_rag24_gen.py exits 255 on these (rag24_validation.py: 'Topic text does not
    match official topic', 'Invalid reference docno', 'Unknown topic'): an error naming line, field and source."""
    from exam_harness.features.trec_rag.answers import read_track_topics

    rows = run_2024()
    topics = read_track_topics(topics_2024(rows, tmp_path))
    change(rows)
    path = write_lines(tmp_path / "team-rag", rows)
    check_rag_answers(path)  # without the topic file these rules are not applied
    with pytest.raises(InputError) as caught:
        check_rag_answers(path, topics=topics)
    assert (caught.value.line, caught.value.field) == (2, field)
    assert message in str(caught.value) and "rag24_validation.py" in str(caught.value)


def test_with_the_topic_file_a_topic_without_answer_is_the_checkers_warning(tmp_path: Path) -> None:
    from exam_harness.features.trec_rag.answers import read_track_topics

    rows = run_2024()
    topics = read_track_topics(topics_2024(rows, tmp_path))
    part, _ = check_rag_answers(write_lines(tmp_path / "team-rag", rows), topics=topics)
    assert any("1 topic(s) of" in w and "have no answer" in w and w.endswith(": 2024-999") for w in part.warnings)


def test_with_the_topic_file_the_2025_validators_rules_apply(tmp_path: Path) -> None:
    """rag25_validation.py: a narrative_id not in the topic file is an error, a reference of another form than
    MS MARCO's a warning (the JSON-lines topic file, {id, title})."""
    from exam_harness.features.trec_rag.answers import read_track_topics

    line = {"metadata": {"team_id": "t", "run_id": "r25", "type": "automatic", "narrative_id": 7, "narrative": "n",
                         "prompt": ""}, "references": [segment(1), "shard_00459_61697"],
            "answer": [{"text": "a", "citations": [0, 1]}]}
    topics_file = tmp_path / "topics.jsonl"
    topics_file.write_text('{"id": 7, "title": "n"}\n')
    topics = read_track_topics(topics_file)
    part, check = check_rag_answers(write_lines(tmp_path / "r25.jsonl", [line]), topics=topics)
    assert check.warned == {"not_marcodoc": [1]} and "rag25_validation.py" in part.warnings[0]
    other = json.loads(json.dumps(line))
    other["metadata"]["narrative_id"] = 8
    with pytest.raises(InputError) as caught:
        check_rag_answers(write_lines(tmp_path / "r25b.jsonl", [other]), topics=topics)
    assert caught.value.field == "metadata.narrative_id" and "not in the topic file" in str(caught.value)


def changed_topic_exam(tmp_path: Path) -> tuple[Path, Path, Path, list[dict[str, Any]]]:
    """(topic file, runs folder, nugget file, rows) of a run whose first answer changed its topic text."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    rows = run_2024()
    topics = topics_2024(rows, tmp_path)
    rows[0]["topic"] = "a changed topic text"
    runs = tmp_path / "runs"
    write_lines(runs / "team-rag.jsonl", rows)
    bank = write_lines(tmp_path / "nuggets.jsonl", [
        {"qid": r["topic_id"], "query": r["topic"], "nuggets": [{"text": "w0x1", "importance": "vital"}]} for r in rows])
    return topics, runs, bank, rows


def test_the_topic_file_reaches_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.cli import main

    topics, runs, bank, _rows = changed_topic_exam(tmp_path)
    args = ["evaluate", str(runs), "--bank", str(bank), "--grader", "lexical", "--cache", "none", "--bootstrap", "0"]
    assert main(args) in (0, 1)
    assert main([*args, "--trec-rag-topics", str(topics)]) == 4  # ragnarok's checker exits 255
    err = capsys.readouterr().err
    assert "team-rag.jsonl:1" in err and "topic text is not the official one" in err


def test_the_topic_file_reaches_pytest(pytester: pytest.Pytester) -> None:
    topics, _runs, bank, rows = changed_topic_exam(pytester.path / "given")
    pytester.makeini("[pytest]\nexam_banks = banks\nexam_runs = runs\n")
    write_lines(pytester.path / "runs" / "team-rag.jsonl", rows)
    write_lines(pytester.path / "banks" / "nuggets.jsonl", [json.loads(x) for x in bank.read_text().splitlines()])
    refused = pytester.runpytest("banks", "-p", "no:cacheprovider", f"--exam-trec-rag-topics={topics}")
    assert refused.ret == 4
    refused.stderr.fnmatch_lines(["*team-rag.jsonl:1*topic text is not the official one*rag24_validation.py*"])
    bad = pytester.path / "topics.txt"
    bad.write_text("no tab on this line\n")
    refused = pytester.runpytest("banks", "-p", "no:cacheprovider", f"--exam-trec-rag-topics={bad}")
    assert refused.ret == 4
    refused.stderr.fnmatch_lines(["*topics.txt:1*a topic line is id<TAB>text*"])
