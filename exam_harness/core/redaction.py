"""Keeping secret bank text out of outputs that may echo it (grader errors, messages, reports).

A secret can come back re-encoded: a server's JSON error escapes quotes and non-ASCII characters, a
Python repr escapes differently, an HTML page or URL encodes it, a message flattens its line breaks
or cuts it short. :class:`Redactor` replaces every such form, case-insensitively, and any echo of a
secret's beginning of at least :data:`MIN_ECHO` characters (a cut-off quote of a question).
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator

from exam_harness.core.errors import InputError

MARK = "[redacted]"
MIN_ECHO = 16  # characters of a secret's beginning that count as an echo of it


def encodings(secret: str) -> set[str]:
    """The forms in which ``secret`` may come back in a message."""
    flat = " ".join(secret.split())
    forms: set[str] = set()
    for text in {secret, flat}:
        forms |= {
            text,
            json.dumps(text)[1:-1],
            json.dumps(text, ensure_ascii=False)[1:-1],
            repr(text)[1:-1],
            ascii(text)[1:-1],
            html.escape(text),
            html.escape(text, quote=False),
            urllib.parse.quote(text),
            urllib.parse.quote_plus(text),
        }
    return {f for f in forms if f.strip()}


class Redactor:
    """Replaces the secrets it was built with, in any of their :func:`encodings`, with ``[redacted]``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms = sorted({form for s in secrets if s.strip() for form in encodings(s)}, key=len, reverse=True)
        self._whole = re.compile("|".join(re.escape(f) for f in forms), re.IGNORECASE) if forms else None
        # beginnings of the longer forms, for echoes cut short ("What force pulls the oce…")
        self._beginnings = [f for f in forms if len(f) >= MIN_ECHO]
        prefixes = sorted({f[:MIN_ECHO] for f in self._beginnings})
        self._prefix = re.compile("|".join(re.escape(p) for p in prefixes), re.IGNORECASE) if prefixes else None

    def __bool__(self) -> bool:
        return self._whole is not None

    def __call__(self, text: str) -> str:
        if self._whole is None:
            return text
        text = self._whole.sub(MARK, text)
        if self._prefix is None or not self._prefix.search(text):
            return text
        out: list[str] = []
        at = 0
        while (match := self._prefix.search(text, at)) is not None:
            end = max(self._echo_end(text, match.start(), form) for form in self._beginnings)
            if end <= match.start():
                end = match.end()
            out += [text[at:match.start()], MARK]
            at = end
        return "".join(out) + text[at:]

    @staticmethod
    def _echo_end(text: str, start: int, form: str) -> int:
        """Where an echo of ``form``'s beginning that starts at ``start`` ends (``start``: no echo)."""
        n = 0
        while n < len(form) and start + n < len(text) and text[start + n].lower() == form[n].lower():
            n += 1
        return start + n if n >= MIN_ECHO else start


# --- input errors of secret banks ---------------------------------------------------------------

# Secret texts shorter than this are not looked for inside a message (a gold answer "no" would blank
# every "no" of it); the error's own value is still withheld when it is one of them.
MIN_SEARCHED = 4


def secret_texts(value: object, *, skip_key: Callable[[str], bool]) -> list[str]:
    """Every text inside ``value`` (nested lists and mappings, as parsed), except under keys for which
    ``skip_key`` holds (ids, which messages must keep)."""
    found: list[str] = []
    stack: list[object] = [value]
    while stack:  # no recursion: the documents were bounded in depth, but a loop is as short
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(v for k, v in item.items() if not (isinstance(k, str) and skip_key(k)))
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return found


@contextlib.contextmanager
def secret_input_errors(texts: Iterable[str]) -> Iterator[None]:
    """Re-raise an InputError of a secret bank without its texts: the message and what is expected
    redacted (:class:`Redactor`), the value withheld when it holds one. File, line and field stay."""
    try:
        yield
    except InputError as error:
        texts = [t for t in texts if t.strip()]
        redact = Redactor(t for t in texts if len(t) >= MIN_SEARCHED)
        short = {t.casefold() for t in texts}
        value = error.value
        if value is not None:
            shown = repr(value)
            if redact(shown) != shown or any(t.casefold() in short for t in secret_texts(value, skip_key=_never)):
                value = MARK
        expected = redact(error.expected) if error.expected else error.expected
        raise InputError(redact(error.message), path=error.path, line=error.line, field=error.field, value=value,
                         expected=expected) from None


def _never(_key: str) -> bool:
    return False


# --- credentials in what a server sends back ----------------------------------------------------

# A credential header or field as a server may echo it: 'Authorization: Bearer sk-..', "api-key": "..",
# api_key=.., in a header dump, a JSON body or a Python repr. The name and scheme stay, the value goes.
# Each pattern opens with a lookahead on its first letter: it matches what it matched without, but lets
# the regex engine skip to the candidates (a case-insensitive alternation is otherwise tried at every
# character: a system manifest of 1000 queries took about 30 ms to scrub, 5 ms with the lookaheads).
_CREDENTIAL = re.compile(
    r"""(?=[apx])((?:proxy-)?authorization|(?:x-)?api[-_]key)(["']?\s*[:=]\s*["']?)((?:bearer|basic|token)\s+)?"""
    r"""([^\s"',;}\]\\]+)""",
    re.IGNORECASE)
_USERINFO = re.compile(r"(?i)(?=h)\b(https?://)[^/\s:@]+:[^/\s@]+@")  # http://user:password@host
MIN_KEY = 8  # a shorter key (a local server's placeholder such as EMPTY) is not looked for in the text


def credential_scrubber(*keys: str | None) -> Callable[[str], str]:
    """A function that removes ``keys`` (in any of their :func:`encodings`, or cut short), the value of
    every ``Authorization`` / ``api-key`` header or field and a URL's ``user:password@`` from a text,
    whatever a server echoed."""
    redact = Redactor(k for k in keys if k and len(k.strip()) >= MIN_KEY)

    def scrub(text: str) -> str:
        text = _CREDENTIAL.sub(lambda m: m.group(1) + m.group(2) + (m.group(3) or "") + MARK, text)
        text = _USERINFO.sub(lambda m: m.group(1) + MARK + "@", text)
        return redact(text)

    return scrub
