"""``exam-harness view``: the feature lives in exam_harness/features/view/ (its subcommand: command.py)."""

from exam_harness.features.view.command import add_parser as add_parser
from exam_harness.features.view.command import run as run
