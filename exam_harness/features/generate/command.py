"""``exam-harness generate QUERIES --out BANK``: generate question or nugget banks with an LLM.

QUERIES is a JSON object ``{query_id: text}`` or a TSV file of ``id<TAB>text`` lines. ``--facets``
adds subtopics (JSON ``{query_id: {facet_id: text}}`` or TSV ``query_id<TAB>facet_id<TAB>text``);
a query with facets gets one bank per facet. The bank file is created or merged without
overwriting human edits (see generation.py for the rule). A ``Command`` (config/commands.py) the feature
registers (plugin.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from exam_harness.api import Argument, ConfigError
from exam_harness.config.options import choice, integer, parse_key_values
from exam_harness.io.queries import add_facets, load_facets, load_queries
from exam_harness.llm.backend import PromptParts, TextBackend

BACKENDS = ("openai", "hf")


class GenerateCommand:
    """``exam-harness generate``, registered by the feature (plugin.py: ``pytest_exam_register_commands``)."""

    help = "Generate question or nugget banks for queries with an LLM."
    description = ("Generate exam question or nugget banks with the method's generation prompts. Existing bank files "
                   "are merged: items already there stay as they are, items a person deleted are not added again.")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        for argument in ARGUMENTS:
            argument.add_to(parser)

    def run(self, args: argparse.Namespace) -> int:
        return run(args)


COMMAND = GenerateCommand()


# This subcommand's own arguments, with the schema's converters (exam_harness/config/options.py).
ARGUMENTS: tuple[Argument, ...] = (
    Argument("queries", "Queries: a JSON object {id: text} or a TSV file 'id<TAB>text'.", Path, positional=True),
    Argument("out", "Bank file to create or merge into (.yaml, .json, .jsonl, .jsonl.gz).", Path, required=True),
    Argument("kind", "What to generate (default: questions).", choice("questions", "nuggets"), default="questions",
             metavar="{questions,nuggets}"),
    Argument("backend", "Model backend (default: openai, any OpenAI-compatible server).", choice(*BACKENDS),
             default="openai", metavar="{" + ",".join(BACKENDS) + "}"),
    Argument("model", "Model: the served model's name for openai (required), a hub name or local path for hf."),
    Argument("base-url", "OpenAI-compatible server URL, e.g. http://localhost:8000/v1 (default: OPENAI_BASE_URL, "
             "else api.openai.com)."),
    Argument("facets", "Subtopics: JSON {query_id: {facet_id: text}} or TSV 'query_id<TAB>facet_id<TAB>text' "
             "(default: none).", Path),
    Argument("option", "Backend option, repeatable, e.g. temperature=0.2, concurrency=16, endpoint=completions "
             "(default: none).", str, default=[], many=True, metavar="KEY=VALUE"),  # read by parse_key_values
    Argument("max-new-tokens", "Answer length limit in tokens (default: 1024).", integer(1), default=1024),
    Argument("refresh", "Also regenerate banks that already have items of this kind, merging new items in "
             "(default: skip them).", None),
    Argument("dry-run", "Print how many calls and prompt tokens generation would spend, and stop.", None),
)


def run(args: argparse.Namespace) -> int:
    from exam_harness.features.generate.generation import (
        generate_into_file,
        generation_prompt,
        generation_targets,
        point_kind,
    )
    from exam_harness.io.banks import load_bank
    from exam_harness.io.generated_banks import check_bank_path
    from exam_harness.llm.estimate import estimate_prompts

    check_bank_path(args.out)
    queries = load_queries(args.queries)
    if args.facets is not None:
        queries = add_facets(queries, load_facets(args.facets, {q.id for q in queries}))
    options = parse_key_values(args.option or [], "--option")

    if args.dry_run:
        targets = generation_targets(queries)
        if not args.refresh and args.out.exists():
            wanted = point_kind(args.kind)
            done = {b.key for b in load_bank(args.out) if any(tp.kind == wanted for tp in b.test_points)}
            targets = [t for t in targets if t.key not in done]
        prompts = [PromptParts(generation_prompt(args.kind, t.query_text, t.facet_text), "") for t in targets]
        if args.backend == "openai":
            options.setdefault("api_key", "dry-run")  # nothing is sent: no key needed
        backend = make_backend(args, options)
        try:
            calls, tokens = estimate_prompts(backend, prompts, args.max_new_tokens)
        finally:
            backend.close()
        print(
            f"dry run: {calls} calls, about {tokens} prompt tokens "
            f"({len(targets)} banks of {args.kind}; nothing sent)"
        )
        return 0

    backend = make_backend(args, options)
    try:
        update = generate_into_file(
            args.out,
            queries,
            kind=args.kind,
            backend=backend,
            max_new_tokens=args.max_new_tokens,
            refresh=args.refresh,
        )
    finally:
        backend.close()

    added = sum(update.merge.added.values())
    withheld = sum(update.merge.withheld.values())
    summary = f"{args.out}: {len(update.outcome.banks)} banks generated, {added} {args.kind} added"
    summary += f" in {len(update.merge.added)} banks"
    if withheld:
        summary += f", {withheld} not re-added (deleted by a person)"
    if update.skipped:
        summary += f", {len(update.skipped)} banks skipped (already have {args.kind}; --refresh regenerates)"
    print(summary)
    stats = getattr(backend, "stats", None)
    if stats is not None and hasattr(stats, "as_dict"):
        print("backend: " + ", ".join(f"{k} {v}" for k, v in stats.as_dict().items()))
    for failure in update.outcome.failures:
        print(f"failed: {failure.key}: {failure.message}", file=sys.stderr)
    if update.outcome.failures:
        print(f"{len(update.outcome.failures)} banks failed; run again to retry them", file=sys.stderr)
        return 1
    return 0


def make_backend(args: argparse.Namespace, options: dict[str, str]) -> TextBackend:
    """The backend of ``--backend``, built from ``--model`` and the ``--option`` strings by the options it
    declares (those of the ``openai`` and ``hf`` graders without the prompt options)."""
    if args.backend == "openai":
        from exam_harness.llm.openai import backend_from_options as openai_backend

        if args.base_url:
            options = {**options, "base_url": args.base_url}
        return openai_backend(args.model, options)
    from exam_harness.llm.hf import backend_from_options as hf_backend

    try:
        return hf_backend(args.model, options)
    except ImportError as exc:  # transformers and torch load with the model
        raise ConfigError(
            f"the hf backend needs transformers and torch: pip install 'exam-harness[hf]' ({exc})"
        ) from exc
