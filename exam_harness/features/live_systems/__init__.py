"""The live-systems feature: systems declared in Python (``conftest.py`` or a plugin), called once per bank query,
recorded into the runs folder as ordinary run files, and replayed from there (docs/live-systems.md).

* :mod:`.declare`: ``@exam_harness.system``, ``http_system``, ``command_system`` (the package's public names,
  exam_harness/__init__.py), the :class:`Query` a system is asked and the :class:`Answer`/:class:`Passage` it may
  return;
* :mod:`.calling`: bounded concurrency (threads for sync functions, one event loop for async ones), a per-call
  deadline, retries with backoff, early stop;
* :mod:`.recording`: ``<name>.responses.jsonl`` (or ``<name>.run`` plus ``<name>.collection.jsonl``) and the
  ``<name>.system.json`` manifest, written atomically;
* :mod:`.session`: the modes (once, replay, record, live) over the three above; :mod:`.health` each system's
  health, :mod:`.fingerprint`, :mod:`.reads` and :mod:`.secrets` what a recording is checked and scrubbed by;
* :mod:`.pytest_session`: the systems in a pytest session (called before grading, a failed query's cases errors),
  :mod:`.record`: ``exam-harness record``;
* :mod:`.section` (``live-systems``) and :mod:`.costs` (``system-costs``): the document's sections, and
  :mod:`.figures` the gate figures ``latency-p50``, ``latency-p95``, ``tokens`` and ``cost`` read from the latter;
* :mod:`.options` (``--exam-system-mode``, ``--exam-stale``, ``--exam-record-into``), :mod:`.inputs` (what the
  session hands its sections), and :mod:`.plugin`, which registers all of it through the hooks.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
