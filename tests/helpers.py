"""Shared test scaffolding: a hand-made graded Workbench exam, a keyword grader, and a pytester
project with a deterministic marker grader. Test modules import from here, never from each other.

The hand-made exam (grades are recorded self-ratings; k = 2; judgments 0..3):

    q1 (test points q1/a, q1/b)          q2 (test points q2/a, q2/b, q2/c)
    passage  a  b  judged                passage  a  b  c  judged
    p1       5  0  2                     p5       4  4  0  3
    p2       0  4  1                     p6       0  0  0  0
    p3       3  3  0                     p7       2  5  0  2
    p4       0  0  0                     p8       1  0  0  0

    runs (top 2):  A: q1 [p1 p2], q2 [p5 p7]   B: q1 [p3 p4], q2 [p7 p6]   C: q1 [p4 p2], q2 [p6 p8]
    official leaderboard: A 1, B 2, C 3
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.models import Grade, GraderSpec
from exam_harness.graders.base import Grader, GraderConfig, GradeResult, GradingRequest
from tests.paths import REPO

GRADES: dict[str, dict[str, dict[str, int]]] = {
    "q1": {"p1": {"a": 5, "b": 0}, "p2": {"a": 0, "b": 4}, "p3": {"a": 3, "b": 3}, "p4": {"a": 0, "b": 0}},
    "q2": {
        "p5": {"a": 4, "b": 4, "c": 0}, "p6": {"a": 0, "b": 0, "c": 0},
        "p7": {"a": 2, "b": 5, "c": 0}, "p8": {"a": 1, "b": 0, "c": 0},
    },
}
JUDGED = {"q1": {"p1": 2, "p2": 1, "p3": 0, "p4": 0}, "q2": {"p5": 3, "p6": 0, "p7": 2, "p8": 0}}
RUNS = {
    "A": {"q1": ["p1", "p2"], "q2": ["p5", "p7"]},
    "B": {"q1": ["p3", "p4"], "q2": ["p7", "p6"]},
    "C": {"q1": ["p4", "p2"], "q2": ["p6", "p8"]},
}
OFFICIAL = {"A": 1, "B": 2, "C": 3}
# passage texts carry the keywords the keyword grader of the edit-impact tests looks for
TEXTS = {
    "p1": "alpha is the first letter", "p2": "beta comes second", "p3": "alpha and beta together",
    "p4": "nothing useful here", "p5": "gamma and delta facts", "p6": "unrelated words",
    "p7": "delta rays", "p8": "epsilon small",
}
LLM = "google/flan-t5-large"
PROMPT = "QuestionSelfRatedUnanswerablePromptWithChoices"


def paragraph_lines(
    extra_run: dict[str, Any] | None = None, answers: bool = True
) -> list[list[Any]]:
    lines = []
    for qid, by_passage in GRADES.items():
        paras = []
        for pid, ratings in by_passage.items():
            rankings = [
                {"method": run, "paragraphId": pid, "queryId": qid, "rank": ranked[qid].index(pid) + 1,
                 "score": 10.0 - ranked[qid].index(pid)}
                for run, ranked in RUNS.items() if pid in ranked[qid]
            ]
            tids = [f"{qid}/{t}" for t in ratings]
            entry = {
                "correctAnswered": [f"{qid}/{t}" for t, g in ratings.items() if g >= 1],
                "wrongAnswered": [f"{qid}/{t}" for t, g in ratings.items() if g < 1],
                "self_ratings": [{"question_id": f"{qid}/{t}", "self_rating": g} for t, g in ratings.items()],
                "answers": [[tid, f"answer {pid} {tid}"] for tid in tids] if answers else [],
                "llm": LLM, "llm_options": {}, "exam_ratio": 0.5,
                "prompt_info": {"prompt_class": PROMPT, "is_self_rated": True},
            }
            exam_grades = [entry]
            if extra_run is not None:
                exam_grades.append({**entry, **extra_run})
            paras.append({
                "paragraph_id": pid, "text": TEXTS[pid], "paragraph": {},
                "paragraph_data": {
                    "judgments": [{"paragraphId": pid, "query": qid, "relevance": JUDGED[qid][pid], "titleQuery": qid}],
                    "rankings": rankings,
                },
                "exam_grades": exam_grades,
            })
        lines.append([qid, paras])
    return lines


def write_exam(folder: Path, **kwargs: Any) -> tuple[Path, Path]:
    """The hand-made paragraph file (gzipped) and the official leaderboard, written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "exam.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for line in paragraph_lines(**kwargs):
            out.write(json.dumps(line) + "\n")
    official = folder / "official.json"
    official.write_text(json.dumps(OFFICIAL))
    return path, official


def write_bank(path: Path, questions: dict[str, dict[str, str]]) -> Path:
    """A Workbench bank: query -> {test point id: text}."""
    lines = []
    for qid, items in questions.items():
        lines.append({"query_id": qid, "query_text": f"query {qid}",
                      "items": [{"question_id": tid, "question_text": text} for tid, text in items.items()]})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


class KeywordGrader(Grader):
    """Grade 5 when the test point's last word occurs in the passage, else 0; counts what it grades."""

    name = "keyword"

    def __init__(self, config: GraderConfig | None = None) -> None:
        self.graded: list[tuple[str, str]] = []

    def spec(self) -> GraderSpec:
        return GraderSpec(name=self.name, version="1", model="kw-model", prompt_class="KeywordPrompt", default_min_grade=4)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        out: list[GradeResult] = []
        for r in requests:
            self.graded.append((r.passage.id, r.test_point.id))
            word = r.test_point.text.rstrip("?").split()[-1].lower()
            hit = word in r.passage.text.lower().split()
            out.append(Grade(grade=5 if hit else 0, grader=self.name, raw_response="yes" if hit else "no",
                             extracted_answer=word if hit else None))
        return out


KEYWORD_BANK = {"q1": {"q1/k-alpha": "What is alpha?", "q1/k-beta": "What is beta?"},
                "q2": {"q2/k-delta": "What is delta?", "q2/k-gamma": "What is gamma?"}}


# A conftest.py that registers the keyword grader, for folders the CLI runs in (it loads ./conftest.py).
KEYWORD_CONFTEST = """
from tests.helpers import KeywordGrader

def pytest_exam_register_graders(registry):
    registry.register("keyword", KeywordGrader, "test grader: the test point's last word in the passage")
"""


# Grade 5 when the passage text contains the marker [x] of test point "<q>/x", else 0. Each graded
# pair is logged so tests can count what the grader was asked (the cache must spare it).
CONFTEST = '''
from pathlib import Path
from exam_harness.graders.base import Grader, GradeFailure
from exam_harness.core.models import Grade, GraderSpec

LOG = Path(__file__).parent / "graded.log"

class MarkerGrader(Grader):
    name = "marker"
    def __init__(self, config):
        self.config = config
    def spec(self):
        return GraderSpec(name="marker", version="1", default_min_grade=4)
    def grade_batch(self, requests):
        out = []
        with LOG.open("a") as log:
            for r in requests:
                log.write(f"{r.passage.id} {r.test_point.id}\\n")
                if "BROKEN" in r.passage.text:
                    out.append(GradeFailure("model server said 500"))
                    continue
                marker = "[" + r.test_point.id.rsplit("/", 1)[1] + "]"
                out.append(Grade(grade=5 if marker in r.passage.text else 0, grader="marker",
                                 raw_response="5" if marker in r.passage.text else "0"))
        return out

def pytest_exam_register_graders(registry):
    registry.register("marker", MarkerGrader, "test grader")
'''

BANK = """\
queries:
  - id: q1
    text: first query
    questions:
      - {id: q1/a, text: question a}
      - {id: q1/b, text: question b}
    nuggets:
      - {id: q1/n, text: nugget n, weight: 2}
  - id: q2
    text: second query
    questions:
      - {id: q2/c, text: question c}
"""

COLLECTION = """\
id\ttext
p1\tanswers [a] and [n]
p2\tanswers [b]
p3\tnothing useful here
p4\tanswers [c]
p5\tanother useless passage
"""

PROJECT_RUNS = {
    "good.run": "q1 Q0 p1 1 3.0 good\nq1 Q0 p2 2 2.0 good\nq2 Q0 p4 1 1.0 good\n",
    "weak.run": "q1 Q0 p3 1 3.0 weak\nq1 Q0 p1 2 2.0 weak\nq2 Q0 p5 1 1.0 weak\n",
}


def write_project(pytester: pytest.Pytester, bank: str, collection: str, runs: Mapping[str, str],
                  *ini: str) -> pytest.Pytester:
    """A pytester project: ``banks/exam.yaml``, ``runs/collection.tsv`` and the run files, with an ini that
    points the harness at them (cache, report folder) plus the ``ini`` lines given."""
    settings = ["exam_banks = banks", "exam_runs = runs", "exam_cache = .cache/grades.sqlite",
                "exam_report_dir = reports", *ini]
    pytester.makeini("[pytest]\n" + "\n".join(settings) + "\n")
    (pytester.path / "banks").mkdir()
    (pytester.path / "banks" / "exam.yaml").write_text(bank)
    folder = pytester.path / "runs"
    folder.mkdir()
    (folder / "collection.tsv").write_text(collection)
    for name, text in runs.items():
        (folder / name).write_text(text)
    return pytester


def make_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester project: marker grader from its conftest.py, one bank, a collection and two runs."""
    pytester.makeconftest(CONFTEST)
    return write_project(pytester, BANK, COLLECTION, PROJECT_RUNS, "exam_grader = marker",
                         "filterwarnings = ignore::pytest.PytestAssertRewriteWarning")


def report_means(report: dict[str, Any], measure: str = "exam-cover") -> dict[str, float]:
    """run -> mean of ``measure`` (by name, as --exam-measures takes it) in a report read as JSON."""
    from exam_harness.results.schema import ExamReport

    return ExamReport.model_validate(report).means(measure)


def report_values(report: dict[str, Any], measure: str) -> dict[tuple[str, str], float | None]:
    """(run, query) -> the per-query value of ``measure`` in a report read as JSON (None: left out)."""
    from exam_harness.results.schema import ExamReport

    return ExamReport.model_validate(report).values(measure)


def evaluation_boards(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The leaderboards of an ``evaluate --json`` document read as JSON, one per entry of ``measures``: the
    measure's statistics (``leaderboards[]``) with its short name as ``measure``, its label (absent for an
    EXAM measure), tau (0: none), title, and each run's mean and standard error from ``systems[].scores``
    (``per_query``: run -> query -> value, with ``--per-query``); its ``correlation`` with the official
    leaderboard (``sections.correlations``) and its ``significance`` against the baseline
    (``sections.significance``: the test's settings and the runs' comparisons) where the document holds them."""
    stats = {s["measure"]: s for s in doc["leaderboards"]}
    sections = doc.get("sections", {})
    correlations = {m["measure"]: m["correlation"] for m in sections.get("correlations", {}).get("measures", [])}
    significance = sections.get("significance")
    comparisons = {m["measure"]: m["runs"] for m in (significance or {}).get("measures", [])}
    boards = []
    for info in doc["measures"]:
        name = info["name"]
        board = {**stats[name], "name": name, "measure": stats[name]["key"], "title": info["title"],
                 "min_grade": info["min_grade"] or 0}
        if info["label"] is not None:
            board["label"] = info["label"]
        if name in correlations:
            board["correlation"] = correlations[name]
        if significance is not None and name in comparisons:
            board["significance"] = {**{key: significance[key] for key in ("baseline", "method", "alpha", "resamples")},
                                     "runs": comparisons[name]}
        held = [s for s in doc["systems"] if name in s["scores"]]
        board["systems"] = {s["run"]: s["scores"][name]["mean"] for s in held}
        board["stderr"] = {s["run"]: s["scores"][name]["stderr"] for s in held}
        if "per_query" in doc:
            per_query: dict[str, dict[str, float]] = {}
            for row in doc["per_query"]:
                if name in row["scores"]:
                    per_query.setdefault(row["run"], {})[row["query_id"]] = row["scores"][name]
            board["per_query"] = per_query
        boards.append(board)
    return boards


def doc_example(document: str, marker: str) -> list[str]:
    """The lines of the fenced block after ``<!-- MARKER: ... -->`` in ``docs/DOCUMENT`` (trailing spaces cut):
    an example output a test compares with what the command printed, so the document stays true."""
    text = (REPO / "docs" / document).read_text()
    at = text.index(f"<!-- {marker}:")
    start = text.index("```\n", at) + 4
    return [line.rstrip() for line in text[start:text.index("\n```", start)].splitlines()]


def printed_block(printed: str, first: str, lines: int) -> list[str]:
    """The ``lines`` lines of ``printed`` from the one starting with ``first`` (trailing spaces cut)."""
    shown = [line.rstrip() for line in printed.splitlines()]
    start = next(i for i, line in enumerate(shown) if line.startswith(first))
    return shown[start:start + lines]


def table_rows(printed: str, title: str) -> dict[str, list[str]]:
    """The body rows of the rich table titled ``title...`` in ``printed``: first cell -> the other cells (the rows
    of every section, up to the table's bottom rule)."""
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 4:]:  # title, top rule, header, header rule
        if line.startswith("└"):
            break
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.strip("│").split("│")]
            rows[cells[0]] = cells[1:]
    return rows


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def outside(root: Path, before: dict[str, bytes], *inside: Path) -> dict[str, bytes]:
    """Files under ``root`` that are new or changed since ``before``, except those under ``inside``."""
    kept = [str(folder.relative_to(root)) for folder in inside]
    return {name: data for name, data in files_under(root).items()
            if before.get(name) != data and not any(name.startswith(k + os.sep) for k in kept)}


def in_tree_writers() -> Any:
    """The built-in writers and the in-tree features' (as both front ends register them), without any front end."""
    from exam_harness.features import default_manager
    from exam_harness.report.writers import builtin_writers

    registry = builtin_writers()
    default_manager().hook.pytest_exam_register_reporters(registry=registry)
    return registry


def table_cells(text: str, title: re.Pattern[str]) -> dict[str, dict[str, dict[str, str]]]:
    """Tables read back from printed text: for each table whose title line matches ``title`` (continued ones
    too), key (the match's first group, else the whole match) -> row (its first cell) -> column title -> cell;
    footer rows (below a line) are rows like the others, and a row's second line (a standard error drawn below
    its value) is left out."""
    cells: dict[str, dict[str, dict[str, str]]] = {}
    key: str | None = None
    titles: list[str] = []
    in_body = False
    for line in text.splitlines():
        if match := title.match(line):
            key, titles, in_body = match[1] if match.groups() else match[0], [], False
        elif key is not None and line.startswith("┃"):
            titles = [t.strip() for t in line.strip("┃").split("┃")]
        elif key is not None and line.startswith("┡"):
            in_body = True
        elif key is not None and in_body and line.startswith("│"):
            row = [c.strip() for c in line.strip("│").split("│")]
            if row[0]:  # a row's own line; a line of its second part (a standard error below) has no name
                cells.setdefault(key, {}).setdefault(row[0], {}).update(zip(titles[1:], row[1:]))
        elif line.startswith("└"):
            key = None  # the table's end: a continued part has its own title
    return cells
