"""Bank loaders and writers: hand format (YAML/JSON), Workbench JSON lines, round trips, discovery."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from exam_harness.core.errors import InputError
from exam_harness.core.models import Query, QueryBank, TestPoint, md5_hex
from exam_harness.core.models import test_point_id as make_id
from exam_harness.io import is_bank_file, iter_bank_files, load_bank, write_bank_yaml, write_workbench_bank

TIDES_YAML = """\
secret: false
queries:
  - id: q1
    text: what causes ocean tides
    questions:
      - What pulls the oceans toward the moon?
      - text: How often do high tides occur each day?
        answers: [twice, two times]
        choices: [once, twice, four times]
        required: true
        id: q1/custom-id
    nuggets:
      - gravitational pull of the moon
      - text: spring and neap tides
        weight: 0.5
        required: true
    facets:
      - id: f1
        text: tidal energy
        questions:
          - How is tidal energy harvested?
          - no
        nuggets: [turbines]
  - id: 1115776
    text: what is an aml surveillance analyst
    nuggets: [yes, "  spaced  "]
"""


def _unsourced(banks: list[QueryBank]) -> list[QueryBank]:
    return [b.model_copy(update={"source": ""}) for b in banks]


@pytest.fixture
def tides(tmp_path: Path) -> Path:
    path = tmp_path / "tides.yaml"
    path.write_text(TIDES_YAML, encoding="utf-8")
    return path


def test_hand_yaml_banks_ids_and_fields(tides: Path) -> None:
    banks = load_bank(tides)
    assert [b.key for b in banks] == ["q1", "q1/f1", "1115776"]
    q1, f1, aml = banks
    assert q1.query == Query(id="q1", text="what causes ocean tides")
    assert q1.source == str(tides) and not q1.secret
    assert [tp.kind for tp in q1.test_points] == ["question", "question", "nugget", "nugget"]
    plain, custom, moon, tides_np = q1.test_points
    assert plain.id == "q1/" + md5_hex("What pulls the oceans toward the moon?")
    assert custom.id == "q1/custom-id"
    assert custom.gold_answers == ("twice", "two times")
    assert custom.choices == ("once", "twice", "four times")
    assert custom.required and not plain.required
    assert moon.weight == 1.0 and tides_np.weight == 0.5 and tides_np.required
    # facet banks name their facet in the query text, and ids carry the facet
    assert f1.facet_id == "f1"
    assert f1.query == Query(id="q1", text="what causes ocean tides / tidal energy", facets={"f1": "tidal energy"})
    assert f1.test_points[0].id == make_id("q1", "How is tidal energy harvested?", "f1")
    assert all(tp.facet_id == "f1" for tp in f1.test_points)
    # YAML's yes/no stay texts; numeric ids become text; quoted spaces are kept (they are hashed)
    assert f1.test_points[1].text == "no"
    assert aml.query.id == "1115776"
    assert [tp.text for tp in aml.test_points] == ["yes", "  spaced  "]
    assert aml.test_points[1].id == "1115776/" + md5_hex("  spaced  ")


def test_secret_flag(tmp_path: Path) -> None:
    path = tmp_path / "s.yml"
    path.write_text("secret: true\nqueries:\n  - {id: q, text: t, questions: [a?]}\n")
    (bank,) = load_bank(path)
    assert bank.secret


def test_hand_json_matches_yaml(tides: Path, tmp_path: Path) -> None:
    import yaml

    doc = yaml.safe_load(TIDES_YAML.replace("- no\n", "- 'no'\n"))
    doc["queries"][1]["id"] = "1115776"
    doc["queries"][1]["nuggets"] = ["yes", "  spaced  "]
    path = tmp_path / "tides.json"
    path.write_text(json.dumps(doc, indent=2))
    assert _unsourced(load_bank(path)) == _unsourced(load_bank(tides))


@pytest.mark.parametrize("name", ["out.yaml", "out.yml", "out.json"])
def test_hand_format_round_trip(tides: Path, tmp_path: Path, name: str) -> None:
    banks = load_bank(tides)
    out = tmp_path / name
    write_bank_yaml(out, banks)
    again = load_bank(out)
    assert _unsourced(again) == _unsourced(banks)
    text = out.read_text()
    # explicit ids only where they differ from the default rule
    assert "q1/custom-id" in text
    assert md5_hex("What pulls the oceans toward the moon?") not in text
    assert not list(tmp_path.glob(".*tmp"))  # no temp file left behind


def test_secret_survives_writing(tides: Path, tmp_path: Path) -> None:
    out = tmp_path / "secret.yaml"
    write_bank_yaml(out, load_bank(tides), secret=True)
    assert all(b.secret for b in load_bank(out))
    out2 = tmp_path / "again.yaml"
    write_bank_yaml(out2, load_bank(out))  # a secret bank stays secret without asking
    assert all(b.secret for b in load_bank(out2))


@pytest.mark.parametrize("name", ["wb.jsonl", "wb.jsonl.gz"])
def test_workbench_round_trip(tides: Path, tmp_path: Path, name: str) -> None:
    banks = load_bank(tides)
    out = tmp_path / name
    write_workbench_bank(out, banks)
    assert _unsourced(load_bank(out)) == _unsourced(banks)
    opener = gzip.open if name.endswith(".gz") else open
    with opener(out, "rt", encoding="utf-8") as fh:
        first = json.loads(fh.readline())
    assert set(first) >= {"query_id", "query_text", "items"}
    assert first["items"][0] == {
        "query_id": "q1",
        "question_id": banks[0].test_points[0].id,
        "question_text": "What pulls the oceans toward the moon?",
    }


def test_workbench_to_hand_format(tmp_path: Path) -> None:
    """A CAR-style Workbench bank ('title / heading' query texts) converts to the hand format and back."""
    lines = [
        {
            "query_id": "tqa:L1",
            "facet_id": f"T{i}",
            "query_text": f"Earth science / branch {i}",
            "info": None,
            "items": [
                {"query_id": "tqa:L1", "facet_id": f"T{i}", "nugget_id": f"tqa:L1/T{i}/n", "nugget_text": f"fact {i}"}
            ],
        }
        for i in range(2)
    ]
    src = tmp_path / "car.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    banks = load_bank(src)
    assert banks[0].query.facets == {"T0": "branch 0"}
    out = tmp_path / "car.yaml"
    write_bank_yaml(out, banks)
    doc_text = out.read_text()
    assert "text: Earth science\n" in doc_text and "text: branch 1" in doc_text
    assert _unsourced(load_bank(out)) == _unsourced(banks)


def test_workbench_older_questions_form(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    record = {
        "query_id": "7",
        "facet_id": None,
        "query_text": "why is the sky blue",
        "info": None,
        "questions": [
            {
                "question_id": "7/abc",
                "question_text": "What scatters light? ",
                "query_id": "7",
                "facet_id": None,
                "info": None,
            },
            {"question_text": "Which colour scatters most?", "gold_answers": ["blue"]},
        ],
    }
    path.write_text(json.dumps(record) + "\n\n")
    (bank,) = load_bank(path)
    assert bank.facet_id is None and bank.query == Query(id="7", text="why is the sky blue")
    first, second = bank.test_points
    assert (first.id, first.text, first.kind) == ("7/abc", "What scatters light? ", "question")
    assert second.id == make_id("7", "Which colour scatters most?")
    assert second.gold_answers == ("blue",)


def test_workbench_mixed_items_and_verbatim_repeat(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    items = [
        {"question_id": "1/q", "question_text": "Why?"},
        {"nugget_id": "1/n", "nugget_text": "Active margins are"},
        {"nugget_id": "1/n", "nugget_text": "Active margins are"},  # generated banks repeat items
    ]
    path.write_text(json.dumps({"query_id": 1, "query_text": "q", "items": items}) + "\n")
    (bank,) = load_bank(path)
    assert [(tp.id, tp.kind) for tp in bank.test_points] == [("1/q", "question"), ("1/n", "nugget")]
    assert bank.query.id == "1"


def test_workbench_duplicate_bank_line(tmp_path: Path) -> None:
    line = json.dumps({"query_id": "q", "query_text": "t", "items": [{"nugget_text": "x"}]})
    path = tmp_path / "dup.jsonl"
    path.write_text(line + "\n" + line.replace('"x"', '"y"') + "\n")
    with pytest.raises(InputError, match=r"dup.jsonl:2: bank 'q' appears twice \(first at line 1\)"):
        load_bank(path)


def test_item_query_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps({"query_id": "q", "query_text": "t", "items": [{"query_id": "r", "nugget_text": "x"}]}))
    with pytest.raises(InputError, match=r"another query.*items\[0\].query_id"):
        load_bank(path)


def test_write_rejects_unrepresentable_facet(tmp_path: Path) -> None:
    bank = QueryBank(
        query=Query(id="q", text="no separator", facets={"f": "no separator"}),
        facet_id="f",
        test_points=(TestPoint(id="q/f/x", query_id="q", kind="nugget", text="x", facet_id="f"),),
    )
    with pytest.raises(InputError, match="cannot be written in the hand format"):
        write_bank_yaml(tmp_path / "x.yaml", [bank])
    write_workbench_bank(tmp_path / "x.jsonl", [bank])  # the Workbench form keeps it
    assert _unsourced(load_bank(tmp_path / "x.jsonl")) == [bank]


def test_write_workbench_needs_jsonl(tmp_path: Path, tides: Path) -> None:
    with pytest.raises(InputError, match="jsonl"):
        write_workbench_bank(tmp_path / "x.json", load_bank(tides))


def test_is_bank_file_and_iter_bank_files(tmp_path: Path, tides: Path) -> None:
    banks_dir = tmp_path / "banks"
    (banks_dir / "sub").mkdir(parents=True)
    (banks_dir / ".hidden").mkdir()
    write_bank_yaml(banks_dir / "a.yaml", load_bank(tides))
    write_workbench_bank(banks_dir / "sub" / "b.jsonl.gz", load_bank(tides))
    (banks_dir / "broken.yml").write_text("queries: [\n")  # counts: loading reports the error
    (banks_dir / "config.yaml").write_text("model: flan\n")
    (banks_dir / "queries.json").write_text('{"q1": "tides"}')
    (banks_dir / "x.responses.jsonl").write_text('{"query_id": "q1", "run": "a", "response": "b", "items": []}\n')
    (banks_dir / "para.jsonl").write_text('["q1", []]\n')
    (banks_dir / "notes.md").write_text("# notes\n")
    (banks_dir / ".hidden" / "c.yaml").write_text(TIDES_YAML)
    (banks_dir / ".d.yaml").write_text(TIDES_YAML)
    found = iter_bank_files([banks_dir])
    # every file with a bank suffix is a bank (loading it reports what is wrong); run-side files,
    # documents and hidden files are not
    assert [p.relative_to(banks_dir).as_posix() for p in found] == [
        "a.yaml", "broken.yml", "config.yaml", "para.jsonl", "queries.json", "sub/b.jsonl.gz"]
    assert is_bank_file(banks_dir / "a.yaml") and not is_bank_file(banks_dir / "x.responses.jsonl")
    assert not is_bank_file(banks_dir / "missing.yaml")
    # a file named explicitly must be a bank
    assert iter_bank_files([tides]) == [tides]
    with pytest.raises(InputError, match="not a bank file name"):
        iter_bank_files([banks_dir / "notes.md"])
    with pytest.raises(InputError, match="not found"):
        iter_bank_files([tmp_path / "nope"])


def test_write_bank_yaml_needs_a_hand_suffix(tmp_path: Path, tides: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match="yaml"):
        write_bank_yaml(out / "x.jsonl", load_bank(tides))
    assert not list(out.iterdir())


def test_writers_replace_files_atomically(tmp_path: Path, tides: Path) -> None:
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "bank.yaml"
    out.write_text("old content")
    write_bank_yaml(out, load_bank(tides))
    assert out.read_text().startswith("queries:")
    assert [p.name for p in out.parent.iterdir()] == ["bank.yaml"]
    assert out.stat().st_mode & 0o444 == 0o444


# --- the located YAML tree is built from PyYAML's events: the same values and lines as its composed graph
YAML_DOCUMENTS = [
    TIDES_YAML,
    "a: 2001-12-14\nb: 0x1F\nc: 1_000\nd: .inf\ne: yes\nf: ~\ng: null\nh: !!str 12\ni: '007'\nj: 1:20\n",
    "list:\n  - [1, 2, {a: b}]\n  - |\n    block text\n  - >\n    folded\n    text\n  - ''\n? k\n: v\n",
    "--- {a: [b, c], 'd e': \"f\\tg\"}\n...\n",
    "",
    "# only a comment\n",
    "---\n",
    "plain scalar document\n",
    "%YAML 1.1\n---\nx: &anchor 1\n",
]


def _composed(node: object) -> object:
    """(kind, line, content) of PyYAML's composed node graph, the reference for the located tree."""
    import yaml

    if node is None:
        return None
    assert isinstance(node, yaml.Node)
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        return ("mapping", line, {str(k.value): _composed(v) for k, v in node.value})
    if isinstance(node, yaml.SequenceNode):
        return ("list", line, [_composed(item) for item in node.value])
    value = yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    return ("scalar", line, value, node.value if node.tag != "tag:yaml.org,2002:null" else None)


def _located(node: object) -> object:
    from exam_harness.io.located import MAP, SEQ, Node

    if node is None:
        return None
    assert isinstance(node, Node)
    if node.kind == MAP:
        return ("mapping", node.line, {k: _located(v) for k, v in node.value.items()})
    if node.kind == SEQ:
        return ("list", node.line, [_located(item) for item in node.value])
    return ("scalar", node.line, node.value, node.raw)


@pytest.mark.parametrize("text", YAML_DOCUMENTS)
def test_yaml_tree_matches_the_composed_graph(text: str) -> None:
    import yaml

    from exam_harness.io.located import parse_yaml

    assert _located(parse_yaml(text, Path("b.yaml"))) == _composed(yaml.compose(text, Loader=yaml.SafeLoader))


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a: &x [1]\nb: *x\n", 2, "YAML aliases are not allowed (found '*x')"),
        ("queries: " + "[" * 65 + "]" * 65 + "\n", 1, "nesting deeper than 64 levels"),
        ("a: 1\n---\nb: 2\n", 2, "single document"),
        ("a: 1\nb: 2001-02-30\n", 2, "invalid value '2001-02-30'"),
        ("a: 1\na: 2\n", 2, "duplicate key 'a' (first at line 1)"),
        ("a: 1\nb: x\x00\n", 2, "unacceptable character #x0000"),
    ],
)
def test_yaml_refusals_name_the_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    from exam_harness.io.located import load_located

    path = tmp_path / "b.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_located(path)
    assert info.value.line == line and message in str(info.value), str(info.value)


def test_nesting_of_64_levels_is_allowed(tmp_path: Path) -> None:
    from exam_harness.io.located import load_located

    for name, text in (("b.yaml", "[" * 64 + "]" * 64), ("b.json", "[" * 64 + "]" * 64)):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert load_located(path) is not None


class _StrictBuild:
    """A YAML loader built like a C PyYAML with a nesting limit of its own that fires before any event:
    it refuses a document whose brackets nest past 100 as libyaml 0.2.6 refuses past 1,000 (whatever
    the installed build does, the harness's message must win)."""

    def __init__(self, text: str) -> None:
        import yaml

        self.text, self.loader = text, yaml.SafeLoader(text)
        self.get_event, self.dispose = self.loader.get_event, self.loader.dispose

    def check_event(self) -> bool:
        import yaml

        depth = 0
        for index, char in enumerate(self.text):  # libyaml raises on the first event wanted, as here
            depth += (char in "[{") - (char in "]}")
            if depth > 100:
                mark = yaml.Mark("<unicode string>", index, self.text.count("\n", 0, index), 0, self.text, index)
                raise yaml.scanner.ScannerError("while increasing flow level", mark,
                                                "exceeded maximum nesting depth", mark)
        return bool(self.loader.check_event())


@pytest.mark.parametrize("build", ["installed", "pure-python", "strict"])
@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("queries: " + "[" * 100_000 + "]" * 100_000 + "\n", 1),  # libyaml 0.2.6 scans past 1,000 first
        ("queries:\n" + " [\n" * 2_000 + "]" * 2_000 + "\n", 65),
        ("queries: " + "{a: " * 2_000 + "}" * 2_000 + "\n", 1),
    ],
)
def test_the_harness_nesting_limit_wins_over_the_parser_s(
    monkeypatch: pytest.MonkeyPatch, build: str, text: str, line: int
) -> None:
    import yaml

    from exam_harness.io import located, located_yaml

    if build != "installed":
        monkeypatch.setattr(located_yaml, "_YamlLoader", yaml.SafeLoader if build == "pure-python" else _StrictBuild)
    with pytest.raises(InputError) as info:
        located.parse_yaml(text, Path("b.yaml"))
    assert info.value.line == line and "nesting deeper than 64 levels" in str(info.value), str(info.value)
    assert "MAX_NESTING_DEPTH" in str(info.value)


def test_a_parser_error_that_is_not_nesting_stays_the_parser_s(monkeypatch: pytest.MonkeyPatch) -> None:
    from exam_harness.io import located, located_yaml

    monkeypatch.setattr(located_yaml, "_YamlLoader", _StrictBuild)
    text = "queries: " + "[" * 50 + "]" * 50 + "\nbad: [1, 2\n"  # within the limit, then unclosed
    with pytest.raises(InputError) as info:
        located.parse_yaml(text, Path("b.yaml"))
    assert "invalid YAML" in str(info.value) and "nesting" not in str(info.value), str(info.value)
    deep = "queries: " + "[" * 101 + "]" * 101 + "\n"  # past both limits: the harness's message
    with pytest.raises(InputError, match="nesting deeper than 64 levels"):
        located.parse_yaml(deep, Path("b.yaml"))
