"""The secrets live-system declarations name, and the one scrubber for every text about live systems that
leaves the process (the manifest, terminal lines, case failures and so JUnit and the reports).

Fed with: every header value of an ``http_system``, the values of URL query parameters named like a
credential (``api_key``, ``token``, ``sig``, ...), every :class:`Secret` in a declaration (a command
argument, a body value), and the values of environment variables named like a key (``*_KEY``,
``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``). :func:`scrub` also removes what
:func:`exam_harness.core.redaction.credential_scrubber` removes (``Authorization`` values, ``user:pass@``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable

from exam_harness.core.redaction import MARK, MIN_KEY, credential_scrubber

_SECRETS: set[str] = set()
_CREDENTIAL_NAME = re.compile(r"(?i)(key|token|secret|passw|auth|sig|credential)")


class Secret(str):
    """A declaration value that is secret: sent, but kept out of the fingerprint, the manifest and every
    message (``exam_harness.Secret(os.environ["RAG_KEY"])`` as a command argument or body value)."""

    __slots__ = ()

    def __new__(cls, value: str) -> Secret:
        made = super().__new__(cls, value)
        remember(value)
        return made


def is_credential_name(name: str) -> bool:
    return bool(_CREDENTIAL_NAME.search(name))


def remember(value: str) -> None:
    """Scrub ``value`` (and its stripped form) from every later text."""
    for form in (value, value.strip()):
        if len(form.strip()) >= MIN_KEY:
            _SECRETS.add(form)


def shown(value: str) -> str:
    """A declared value as the manifest may show it."""
    return MARK if isinstance(value, Secret) else value


def _environment() -> frozenset[str]:
    return frozenset(value for name, value in os.environ.items()
                     if re.search(r"(?i)(_KEY|_TOKEN|_SECRET|PASSWORD)$|PASSWORD", name))


@functools.lru_cache(maxsize=8)
def _scrubber(secrets: frozenset[str]) -> Callable[[str], str]:
    return credential_scrubber(*secrets)


def scrub(text: str) -> str:
    """``text`` without any secret a declaration named, in any of the forms a server or error echoes it."""
    return _scrubber(frozenset(_SECRETS) | _environment())(text)
