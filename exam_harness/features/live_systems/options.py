"""The live-systems feature's options (group ``systems``): how declared systems are called, what a stale
recording does, where recordings go. Declared through ``pytest_exam_add_options`` (plugin.py): pytest's
``--exam-NAME`` and ini ``exam_NAME``, ``exam-harness record --NAME``; read as ``options.feature(OPTION)``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from exam_harness.api import FeatureOption, choice, feature_option
from exam_harness.config.options import SYSTEMS

SYSTEM_MODES: tuple[str, ...] = ("once", "replay", "record", "live")
STALE_POLICIES: tuple[str, ...] = ("warn", "fail", "record")

SYSTEM_MODE: FeatureOption[str | None] = feature_option(
    "system-mode", None, "How declared live systems are called: 'once' (only queries their recording lacks; "
    "everything when the system changed), 'replay' (call nothing, read the recording), 'record' (call every "
    "query again) or 'live' (call, record nothing) (default: $EXAM_SYSTEM_MODE, else replay when CI=true, "
    "else once)", choice(*SYSTEM_MODES), group=SYSTEMS, metavar="MODE")
STALE: FeatureOption[str | None] = feature_option(
    "stale", None, "What a stale recording of a declared system (made by another version of it: the function, "
    "a project module it imports, its files= or version= changed) does: 'warn' (scored as it is, with a "
    "warning), 'fail' (scored, and the session fails with a case of its own) or 'record' (called again; "
    "replay mode calls nothing, so there a warning) (default: fail when CI=true, else record)",
    choice(*STALE_POLICIES), group=SYSTEMS, metavar="POLICY")
RECORD_INTO: FeatureOption[Path | None] = feature_option(
    "record-into", None, "Folder the recordings of declared systems go to, made when missing, and read as a "
    "runs folder (default: the first runs folder, which must exist when named with --exam-runs)", Path,
    group=SYSTEMS, path=True, metavar="DIR")
OPTIONS: tuple[FeatureOption[Any], ...] = (SYSTEM_MODE, STALE, RECORD_INTO)
