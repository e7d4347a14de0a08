"""Live systems: declared in Python (``conftest.py`` or a plugin), called once per bank query,
recorded into the runs folder as ordinary run files, and replayed from there.

* :mod:`~exam_harness.systems.declare`: ``@exam_harness.system``, ``http_system``, ``command_system``,
  the :class:`Query` a system is asked and the :class:`Answer`/:class:`Passage` it may return;
* :mod:`~exam_harness.systems.calling`: bounded concurrency (threads for sync functions, one event loop
  for async ones), a per-call deadline, retries with backoff, early stop;
* :mod:`~exam_harness.systems.recording`: ``<name>.responses.jsonl`` (or ``<name>.run`` plus
  ``<name>.collection.jsonl``) and the ``<name>.system.json`` manifest, written atomically;
* :mod:`~exam_harness.systems.session`: the modes (once, replay, record, live) over the three above.
"""
