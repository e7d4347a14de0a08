"""Bank files: find them under bank paths and load them, through the bank-format registry."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from exam_harness.errors import InputError
from exam_harness.io.formats import BankFormat, builtin_bank_formats, claiming
from exam_harness.io.textio import is_hidden
from exam_harness.models import QueryBank
from exam_harness.registry import Registry

BANK_FORMS = (
    "a hand-written bank (.yaml, .yml, .json with a 'queries' list) or a Workbench bank "
    "(.jsonl or .jsonl.gz, one {query_id, query_text, items} object per line), or a format a plugin registers"
)


def load_bank(path: Path, formats: Registry[BankFormat] | None = None) -> list[QueryBank]:
    """Read one bank file into its query banks (one per query, or per query facet)."""
    path = Path(path)
    fmt = claiming(formats or builtin_bank_formats(), path)
    if fmt is None:
        raise InputError("not a bank file name", path=path, field="file name", value=path.name, expected=BANK_FORMS)
    return fmt.load(path)


def is_bank_file(path: Path, formats: Registry[BankFormat] | None = None) -> bool:
    """Whether ``path`` is a visible file that some bank format claims."""
    path = Path(path)
    return path.is_file() and not is_hidden(path) and claiming(formats or builtin_bank_formats(), path) is not None


def iter_bank_files(paths: Iterable[Path], formats: Registry[BankFormat] | None = None) -> list[Path]:
    """The bank files named by ``paths``: files as given, folders searched recursively (sorted,
    skipping hidden files and folders). A named file that is not a bank is an InputError."""
    formats = formats or builtin_bank_formats()
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):
                rel = candidate.relative_to(path)
                if any(part.startswith(".") for part in rel.parts):
                    continue
                if is_bank_file(candidate, formats):
                    found.append(candidate)
        elif path.is_file():
            if not is_bank_file(path, formats):
                raise InputError("not a bank file name", path=path, field="file name", value=path.name,
                                 expected=BANK_FORMS)
            found.append(path)
        else:
            raise InputError("bank path not found", path=path, expected="an existing bank file or folder")
    return found
