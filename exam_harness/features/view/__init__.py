"""The view feature: ``exam-harness view REPORT.json``, a saved result document in the terminal (Textual, the
``[view]`` extra), and the blind labelling screen of ``exam-harness label``.

plugin.py registers both through the hooks (``pytest_exam_register_commands``: ``view``;
``pytest_exam_register_label_screens``: the screen ``label`` asks for). ``document.py`` (what the screens show,
from the document alone; no Textual), ``pairs.py`` (a test point's pairs from the grade cache the document names,
read-only), ``filters.py`` (the search language), ``app.py`` and ``screens.py`` (the viewer), ``labelling.py`` (the
labelling screen), ``label_screen.py`` (its registered entry), ``command.py`` (the subcommand). The leaderboard
shows the calibration feature's corrected scores beside the raw ones, read through its section's model
(features/calibration/model.py, pydantic only). Only ``app.py``,
``screens.py`` and ``labelling.py`` import Textual, on first use: ``import exam_harness`` and every other
subcommand never do.
"""

# the other features this one imports: their sections' models
REQUIRES: tuple[str, ...] = ("calibration", "flips", "judge_variance")
