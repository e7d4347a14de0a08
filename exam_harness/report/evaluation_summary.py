"""``evaluate``'s document as a markdown summary and an HTML page: the tables ``evaluate`` prints (its
terminal output, report/evaluation_tables.py), kept as plain text so both read exactly as the terminal."""

from __future__ import annotations

import html
import io

from rich.console import Console

from exam_harness.core.display import TEXT_WIDTH
from exam_harness.report.evaluation_tables import print_evaluation
from exam_harness.results.evaluation import EvaluationReport


def evaluation_text(result: EvaluationReport, label: str = "max-grade") -> str:
    """What ``evaluate`` prints for ``result``, without colour."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=TEXT_WIDTH, color_system=None, highlight=False, markup=False)
    print_evaluation(result, console, label=label)
    return buffer.getvalue()


def evaluation_markdown(result: EvaluationReport, label: str = "max-grade") -> str:
    runs = len(result.systems)
    taus = ", ".join(str(t) for t in result.settings.min_grades)
    fence = "````" if "```" in (text := evaluation_text(result, label)) else "```"
    return (f"## exam-harness evaluate: {runs} run{'s' if runs != 1 else ''}, tau {taus}\n\n"
            f"{fence}text\n{text}{fence}\n")


def evaluation_html(result: EvaluationReport, label: str = "max-grade") -> str:
    title = f"exam-harness evaluate: {len(result.systems)} runs"
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            "</head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>\n<pre>{html.escape(evaluation_text(result, label))}</pre>\n"
            "</body></html>\n")
