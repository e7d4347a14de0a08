"""The flips feature: the test points whose verdict flipped between two exam reports, answered before and missed
now or the other way round (flips.py, a pure function of the two reports' outcomes), shown as the pytest
session's ``flips`` section against the kept report it compares with (``--exam-compare``: the core's reference,
``Scored.reference``, which its gates check too) and as ``exam-harness compare``'s last table.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
