"""The sample feature's section, scoring input, gate figure and subcommand: each run's share of top-k passages
of at least ``--exam-long-words`` words (a passage's words split on whitespace)."""

from __future__ import annotations

import argparse
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from exam_harness.api import Argument, FeatureOption, InputKey, Scored, feature_option, integer, read_document

MIN_WORDS: FeatureOption[int | None] = feature_option("long-words", None, "Sample feature: count the top-k passages of at least N words",
                           integer(1), group="scoring", metavar="N")
MIN_WORDS_INPUT: InputKey[int] = InputKey("sample feature: --long-words")
NAME = "long-passages"


class LongPassages(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_words: int
    share: dict[str, float]  # run -> share of its top-k passages over the exam's queries with >= min_words words


@dataclass
class LongPassagesSection:
    name: str = NAME
    title: str = "Long passages"
    model: type[BaseModel] = LongPassages

    def compute(self, scored: Scored) -> LongPassages | None:
        words = scored.input(MIN_WORDS_INPUT)
        if words is None:
            return None
        passages = scored.view.data.passages
        share: dict[str, float] = {}
        for name, run in sorted(scored.runs.items()):
            top = [pid for bank in scored.banks for pid in run.top_k(bank.query.id, scored.plan.k)]
            long = [pid for pid in top if pid in passages and len(passages[pid].text.split()) >= words]
            share[name] = len(long) / len(top) if top else 0.0
        return LongPassages(min_words=words, share=share)

    def terminal(self, content: LongPassages) -> list[str]:
        shown = ", ".join(f"{run} {value:.2f}" for run, value in content.share.items())
        return [f"long passages (>= {content.min_words} words): {shown}"]

    def markdown(self, content: LongPassages, escape: Any) -> str:
        rows = "\n".join(f"| {escape(run)} | {value:.2f} |" for run, value in content.share.items())
        return f"### {self.title}\n\n| run | share |\n|:--|--:|\n{rows}"

    def html(self, content: LongPassages) -> str:
        rows = "".join(f"<tr><td>{html.escape(run)}</td><td>{value:.2f}</td></tr>" for run, value in content.share.items())
        return f'<section id="{NAME}"><h2>{self.title}</h2><table>{rows}</table></section>'


@dataclass
class LongShare:
    """The gate figure ``long-share``: a run's share from the section (higher is better)."""

    name: str = "long-share"
    title: str = "long-passage share"
    section: str = NAME
    lower_is_better: bool = False

    def value(self, content: Any, run: str) -> float | None:
        share: dict[str, float] = content.share if isinstance(content, LongPassages) else content.get("share", {})
        return share.get(run)


DOCUMENT = Argument("document", "A saved exam report or evaluation.", Path, positional=True)


@dataclass
class LongPassagesCommand:
    """``exam-harness long-passages DOCUMENT``: the section's shares from a saved document."""

    help: str = "Each run's share of long top-k passages in a saved document (sample feature)."
    description: str = "Print the long-passages section of an exam report or evaluation (tests/features/sample_feature)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        DOCUMENT.add_to(parser)

    def run(self, args: argparse.Namespace) -> int:
        content = read_document(args.document).sections.get(NAME)
        if content is None:
            print(f"{args.document} holds no {NAME} section (asked with --long-words)")
            return 1
        typed = content if isinstance(content, LongPassages) else LongPassages.model_validate(content)
        for run, value in typed.share.items():
            print(f"{run}\t{value:.4f}")
        return 0
