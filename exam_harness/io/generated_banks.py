"""Bank files that ``exam-harness generate`` writes, and the sidecar of the ids it generated.

The sidecar ``<bank>.generated-ids`` lists every generated test point id ever written to a bank, so
that an item a person deleted is never generated into the bank again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from exam_harness.core.errors import InputError
from exam_harness.core.models import QueryBank
from exam_harness.io.handbank import write_bank_yaml
from exam_harness.io.textio import atomic_write_text, read_text
from exam_harness.io.workbench import write_workbench_bank

SIDECAR_SUFFIX = ".generated-ids"


def sidecar_path(bank_path: Path) -> Path:
    return bank_path.with_name(bank_path.name + SIDECAR_SUFFIX)


def read_generated_ids(bank_path: Path) -> set[str]:
    """Ids listed in the bank's sidecar (empty when there is none)."""
    path = sidecar_path(Path(bank_path))
    if not path.exists():
        return set()
    ids: set[str] = set()
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):  # bounded, UTF-8, a regular file only
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if any(ch.isspace() for ch in line):
            raise InputError(
                "a generated id must not contain spaces", path=path, line=lineno, value=line, expected="one id per line"
            )
        ids.add(line)
    return ids


def write_generated_ids(bank_path: Path, ids: set[str]) -> None:
    path = sidecar_path(Path(bank_path))
    header = (
        f"# exam-harness: every generated test point id ever written to {Path(bank_path).name}.\n"
        "# An id listed here but missing from the bank was deleted by a person: 'exam-harness generate'\n"
        "# never adds it again. Delete a line to let generation add that item back.\n"
    )
    atomic_write_text(path, header + "".join(f"{i}\n" for i in sorted(ids)))


def write_bank(path: Path, banks: Sequence[QueryBank]) -> None:
    """Write ``banks`` in the format the file name says: a Workbench bank for ``.jsonl[.gz]``, else the
    hand-editable YAML/JSON bank."""
    check_bank_path(path)
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        write_workbench_bank(path, banks)
    else:
        write_bank_yaml(path, banks)


def check_bank_path(path: Path) -> None:
    if not path.name.endswith((".yaml", ".yml", ".json", ".jsonl", ".jsonl.gz")):
        raise InputError(
            "unknown bank file type",
            path=path,
            field="--out",
            value=path.name,
            expected="a .yaml/.yml/.json hand-editable bank or a .jsonl/.jsonl.gz Workbench bank",
        )
