"""Every limit the loaders enforce, declared once.

The values are generous for real data (the largest published inputs: Workbench paragraph lines of
5.3 MB, passages of 450 kB, banks of at most 50 test points per query) yet bounded, so that no input
can exhaust memory, recursion or time. A loader checks a limit *before* it spends what the limit
guards and reports an input past it as an :class:`~exam_harness.core.errors.InputError` naming the file,
the line, the limit and its value (e.g. "nesting deeper than 64 levels").
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Final

from exam_harness.core.errors import InputError
from exam_harness.core.ids import MAX_ID_CHARS as MAX_ID_CHARS  # the one id rule's (exam_harness/core/ids.py)
from exam_harness.core.ids import MAX_NAME_BYTES as MAX_NAME_BYTES

KIB: Final = 1024
MIB: Final = 1024 * KIB

# --- structure ---------------------------------------------------------------------------------

# Lists/objects (YAML lists/mappings) nested in one JSON or YAML document. The formats nest at most
# 7 levels; the parsers recurse once per level, so this keeps any input far from the recursion limit.
MAX_NESTING_DEPTH: Final = 64

# Values (scalars, lists, mappings; YAML keys count) in one document parsed whole (hand-written banks,
# leaderboards, query and facet files, the report): each costs ~100-250 bytes parsed, and a few
# microseconds in the line-tracking parse (the TREC CAR question bank in the hand format has 14,560).
MAX_DOCUMENT_VALUES: Final = 1_000_000

# YAML anchors may be written, aliases (*name) are refused: hand banks never need them, and a few
# nested aliases expand a 400-byte file into billions of values ("billion laughs"). A policy, not a
# switch: the YAML reader has no support for aliases.
YAML_ALIASES_ALLOWED: Final = False

# --- sizes -------------------------------------------------------------------------------------

# Decompressed size of a file parsed whole (hand-written banks, leaderboards, query and facet files,
# the JSON report; the DL19 report is 0.4 MB). Its memory is bounded by MAX_DOCUMENT_VALUES too.
MAX_FILE_BYTES: Final = 32 * MIB

# One line of a JSON-lines file or a TSV collection (the largest published line is 5.3 MB). Parsed
# JSON takes up to ~20 times the line's size in memory (a line of empty objects), ~10 for real data.
MAX_LINE_BYTES: Final = 32 * MIB

# One line of a column file: TREC runs, qrels, query and facet TSV (ids, numbers, a query text).
MAX_FIELDS_LINE_BYTES: Final = 64 * KIB

# Decompressed bytes per compressed byte of a .gz line file, checked once a MiB came out: text
# compresses 3-20 times (DL19 paragraphs: 14), a gzip bomb up to 1000 times.
MAX_GZIP_RATIO: Final = 200

# --- texts and counts --------------------------------------------------------------------------

# A passage of a collection or paragraph file (MS MARCO passages < 10 kB, the longest published
# Workbench passage 450 kB, a test project loads 10 MB).
MAX_PASSAGE_CHARS: Final = 16 * MIB
# tokens one grader call may be counted for, whatever a server's ``usage`` claims (a 400-digit count would
# overflow a float): far beyond any context window, so it still exhausts any budget (llm/cost.py)
MAX_TOKEN_COUNT: Final = 10**12

# A generated response (LLM answers are < 100 kB). Segmenting it takes up to ~80 bytes of memory per
# character (a span per whitespace token).
MAX_RESPONSE_CHARS: Final = 1 * MIB

# Test points of one query bank (one query or query facet; the published banks have at most 50).
MAX_TEST_POINTS_PER_BANK: Final = 10_000

# Test points of one bank file (the published TREC CAR bank: 8,551 in 726 banks).
MAX_TEST_POINTS_PER_FILE: Final = 200_000

# Queries of one file: a queries file, or the queries of a bank file (MS MARCO dev has 101,093).
MAX_QUERIES_PER_FILE: Final = 200_000

# Magnitude of a relevance label (a judgment or qrels line; TREC uses -2..4): labels are summed and
# exponentiated (nDCG's 2**label - 1), and trec_eval keeps them in a C int.
MAX_RELEVANCE_LABEL: Final = 1_000

# Characters of input an error message quotes.
MAX_QUOTED_CHARS: Final = 80


def size_text(nbytes: int) -> str:
    """``33554432`` -> ``"32 MiB"`` (limits are whole KiB or MiB)."""
    if nbytes % MIB == 0:
        return f"{nbytes // MIB} MiB"
    if nbytes % KIB == 0:
        return f"{nbytes // KIB} KiB"
    return f"{nbytes} bytes"


def count_text(count: int) -> str:
    """``200000`` -> ``"200,000"``."""
    return f"{count:,}"


def cut(text: str) -> str:
    """``text`` cut to :data:`MAX_QUOTED_CHARS` (a key or name shown in a message)."""
    return text if len(text) <= MAX_QUOTED_CHARS else text[: MAX_QUOTED_CHARS - 3] + "..."


def quoted(value: object) -> str:
    """``repr(value)`` cut to :data:`MAX_QUOTED_CHARS`, without building the repr of a huge value first
    (error messages never quote more of the input)."""
    try:
        text = _SHORT_REPR.repr(value)
    except ValueError:  # an int past Python's 4300-digit conversion limit (YAML hex can write one)
        text = f"<{type(value).__name__} too long to show>"
    return text if len(text) <= MAX_QUOTED_CHARS else text[: MAX_QUOTED_CHARS - 3] + "..."


_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel = 3
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = MAX_QUOTED_CHARS
_SHORT_REPR.maxlist = _SHORT_REPR.maxtuple = _SHORT_REPR.maxdict = _SHORT_REPR.maxset = 8


def over_limit(
    message: str, limit: str, valid: str, *, path: str | Path | None, line: int | None = None, field: str | None = None
) -> InputError:
    """The error for an input past a limit: ``message`` says which limit and its value (``"line longer
    than 32 MiB"``), ``valid`` what is within it and ``limit`` names its constant here."""
    return InputError(message, path=path, line=line, field=field, expected=f"{valid} (limit {limit})")
