"""The citation-support feature's option, declared through ``pytest_exam_add_options`` (plugin.py): ``evaluate
--support``."""

from __future__ import annotations

from exam_harness.api import FeatureOption, feature_option
from exam_harness.config.options import EVALUATE

SUPPORT: FeatureOption[bool] = feature_option(
    "support", False, "Grade every answer sentence against each document it cites with the grader's support prompt "
    "(--grader hf or openai; TREC RAG answer files with a collection of the cited segments) and add citation "
    "precision, recall and F1", group=EVALUATE, flag=True, fronts=("cli",))
