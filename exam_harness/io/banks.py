"""Bank files: dispatch on suffix, and tell bank files from other files in bank folders.

* ``.yaml`` / ``.yml`` / ``.json``: the hand-editable format (:mod:`exam_harness.io.handbank`)
* ``.jsonl`` / ``.jsonl.gz``: Workbench banks (:mod:`exam_harness.io.workbench`)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from exam_harness.errors import InputError
from exam_harness.io.handbank import load_hand_bank
from exam_harness.io.textio import base_name, first_json_line, is_gz, is_hidden
from exam_harness.io.workbench import is_workbench_bank_record, load_workbench_bank
from exam_harness.models import QueryBank

HAND_SUFFIXES = (".yaml", ".yml", ".json")
BANK_FORMS = (
    "a hand-written bank (.yaml, .yml, .json with a 'queries' list) or a Workbench bank "
    "(.jsonl or .jsonl.gz, one {query_id, query_text, items} object per line)"
)


def _hand_suffix(path: Path) -> bool:
    return not is_gz(path) and path.suffix.lower() in HAND_SUFFIXES


def _workbench_suffix(path: Path) -> bool:
    return base_name(path).endswith(".jsonl")


def load_bank(path: Path) -> list[QueryBank]:
    """Read one bank file into its query banks (one per query, or per query facet)."""
    path = Path(path)
    if _hand_suffix(path):
        return load_hand_bank(path)
    if _workbench_suffix(path):
        return load_workbench_bank(path)
    raise InputError("not a bank file name", path=path, field="file name", value=path.name, expected=BANK_FORMS)


def is_bank_file(path: Path) -> bool:
    """Whether ``path`` holds a bank, judged by its suffix and a cheap look at its content.

    A hand-format file counts when its top level is a mapping with ``queries``; a JSON-lines file
    when its first line is a Workbench bank object. A file of a bank suffix that cannot be parsed
    counts too, so that loading it reports the syntax error instead of silently skipping a bank.
    """
    path = Path(path)
    if not path.is_file() or is_hidden(path):
        return False
    name = base_name(path)
    if _workbench_suffix(path):
        if name.endswith(".responses.jsonl") or name == "collection.jsonl" or name.endswith(".collection.jsonl"):
            return False
        try:
            return is_workbench_bank_record(first_json_line(path))
        except InputError:
            return True
    if not _hand_suffix(path):
        return False
    from exam_harness.io.located import MAP, load_located

    try:
        root = load_located(path)
    except InputError:
        return True
    return root is not None and root.kind == MAP and "queries" in root.value


def iter_bank_files(paths: Iterable[Path]) -> list[Path]:
    """The bank files named by ``paths``: files as given, folders searched recursively (sorted,
    skipping hidden files and folders). A named file that is not a bank is an InputError."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):
                rel = candidate.relative_to(path)
                if any(part.startswith(".") for part in rel.parts):
                    continue
                if is_bank_file(candidate):
                    found.append(candidate)
        elif path.is_file():
            if not is_bank_file(path):
                raise InputError("not a bank file", path=path, expected=BANK_FORMS)
            found.append(path)
        else:
            raise InputError("bank path not found", path=path, expected="an existing bank file or folder")
    return found
