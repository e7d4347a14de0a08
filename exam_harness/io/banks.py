"""Bank files: find them under bank paths and load them, through the bank-format registry."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from exam_harness.core.errors import InputError
from exam_harness.core.models import QueryBank
from exam_harness.core.registry import Registry
from exam_harness.io.formats import BankFormat, claiming, default_bank_formats
from exam_harness.io.textio import is_hidden

BANK_FORMS = (
    "a hand-written bank (.yaml, .yml, .json with a 'queries' list) or a Workbench bank "
    "(.jsonl or .jsonl.gz, one {query_id, query_text, items} object per line), a nuggetizer nugget file "
    "(.jsonl, one {qid, query, nuggets} object per line), or a format a plugin registers"
)


def load_bank(path: Path, formats: Registry[BankFormat] | None = None) -> list[QueryBank]:
    """Read one bank file into its query banks (one per query, or per query facet)."""
    path = Path(path)
    fmt = claiming(formats or default_bank_formats(), path)
    if fmt is None:
        raise InputError("not a bank file name", path=path, field="file name", value=path.name, expected=BANK_FORMS)
    return fmt.load(path)


def is_bank_file(path: Path, formats: Registry[BankFormat] | None = None) -> bool:
    """Whether ``path`` is a visible file that some bank format claims."""
    path = Path(path)
    return path.is_file() and not is_hidden(path) and claiming(formats or default_bank_formats(), path) is not None


def iter_bank_files(paths: Iterable[Path], formats: Registry[BankFormat] | None = None) -> list[Path]:
    """The bank files named by ``paths``: files as given, folders searched recursively (sorted, hidden
    files and folders skipped) by :func:`walk_bank_folder`. A named file that is not a bank is an InputError."""
    formats = formats or default_bank_formats()
    found: dict[Path, Path] = {}  # resolved -> as found: a file reached twice is one bank file
    for path in map(Path, paths):
        if path.is_dir():
            for candidate in walk_bank_folder(path, formats):
                found.setdefault(candidate.resolve(), candidate)
        elif path.is_file():
            if not is_bank_file(path, formats):
                raise InputError("not a bank file name", path=path, field="file name", value=path.name,
                                 expected=BANK_FORMS)
            found.setdefault(path.resolve(), path)
        elif path.is_symlink():
            raise _dangling(path)
        else:
            raise InputError("bank path not found", path=path, expected="an existing bank file or folder")
    return list(found.values())


def walk_bank_folder(root: Path, formats: Registry[BankFormat] | None = None) -> list[Path]:
    """Bank files under ``root`` by the paths found (symlinks followed), sorted.

    A symlinked folder that leads to a folder on its own way down from ``/`` (``banks/up -> ..``) is a loop
    and is not entered (pytest's collection applies the same rule);
    a file reached through two paths is listed under the first; a symlink whose target is missing is an
    InputError (a bank that silently drops out of an exam would make the exam pass without it).
    """
    formats = formats or default_bank_formats()
    found: list[Path] = []
    seen_files: set[Path] = set()

    # depth-first in sorted order, with an explicit stack: a deep folder tree cannot exhaust the recursion limit
    top = Path(root).resolve()
    stack: list[tuple[Path, frozenset[Path]]] = [(Path(root), frozenset({top, *top.parents}))]
    while stack:
        entry, ancestors = stack.pop()
        if entry.is_dir() and entry.resolve() in ancestors and entry != Path(root):
            continue  # a loop back up the tree: its banks are found on the way down already
        if entry.is_dir():
            children = [c for c in sorted(entry.iterdir()) if not is_hidden(c)]
            inner = ancestors | {entry.resolve()}
            stack.extend((child, inner) for child in reversed(children))
        elif entry.is_symlink() and not entry.exists():
            if claiming(formats, entry) is not None or not entry.suffix:
                raise _dangling(entry)
        elif entry.is_file() and claiming(formats, entry) is not None:
            real = entry.resolve()
            if real not in seen_files:
                seen_files.add(real)
                found.append(entry)
    return found


def _dangling(path: Path) -> InputError:
    return InputError("the symlink's target does not exist, so this bank would silently drop out of the exam",
                      path=path, field="symlink", value=str(path.readlink()),
                      expected="a link to an existing bank file or folder (or remove the link)")
