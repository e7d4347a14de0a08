"""``exam-harness generate QUERIES --out BANK``: generate question or nugget banks with an LLM.

QUERIES is a JSON object ``{query_id: text}`` or a TSV file of ``id<TAB>text`` lines. ``--facets``
adds subtopics (JSON ``{query_id: {facet_id: text}}`` or TSV ``query_id<TAB>facet_id<TAB>text``);
a query with facets gets one bank per facet. The bank file is created or merged without
overwriting human edits (see :mod:`exam_harness.generate` for the rule).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from exam_harness.errors import ConfigError, InputError
from exam_harness.graders.backend import TextBackend
from exam_harness.models import Query
from exam_harness.settings import parse_key_values

BACKENDS = ("openai", "hf")


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "generate",
        help="Generate question or nugget banks for queries with an LLM.",
        description="Generate exam question or nugget banks with the method's generation prompts. "
        "Existing bank files are merged: items already there stay as they are, items a person "
        "deleted are not added again.",
    )
    parser.add_argument(
        "queries", type=Path, help="Queries: a JSON object {id: text} or a TSV file 'id<TAB>text'."
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="Bank file to create or merge into (.yaml, .json, .jsonl, .jsonl.gz)."
    )
    parser.add_argument(
        "--kind", choices=("questions", "nuggets"), default="questions", help="What to generate (default: questions)."
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="openai",
        help="Model backend (default: openai, any OpenAI-compatible server).",
    )
    parser.add_argument(
        "--model", help="Model: the served model's name for openai (required), a hub name or local path for hf."
    )
    parser.add_argument(
        "--base-url",
        help="OpenAI-compatible server URL, e.g. http://localhost:8000/v1 "
        "(default: OPENAI_BASE_URL, else api.openai.com).",
    )
    parser.add_argument(
        "--facets",
        type=Path,
        help="Subtopics: JSON {query_id: {facet_id: text}} or TSV 'query_id<TAB>facet_id<TAB>text' (default: none).",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Backend option, repeatable, e.g. temperature=0.2, concurrency=16, endpoint=completions "
        "(default: none).",
    )
    parser.add_argument(
        "--max-new-tokens", type=int, default=1024, help="Answer length limit in tokens (default: 1024)."
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="Also regenerate banks that already have items of this kind, merging new items in "
        "(default: skip them).",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="Print how many calls and prompt tokens generation would spend, and stop.",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exam_harness.generate import (
        check_bank_path,
        generate_into_file,
        generation_prompt,
        generation_targets,
        load_bank_file,
        point_kind,
    )

    check_bank_path(args.out)
    if args.max_new_tokens < 1:
        raise ConfigError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    queries = load_queries(args.queries)
    if args.facets is not None:
        queries = add_facets(queries, load_facets(args.facets, {q.id for q in queries}))
    options = parse_key_values(args.option or [], "--option")

    if args.dry_run:
        targets = generation_targets(queries)
        if not args.refresh and args.out.exists():
            wanted = point_kind(args.kind)
            done = {b.key for b in load_bank_file(args.out) if any(tp.kind == wanted for tp in b.test_points)}
            targets = [t for t in targets if t.key not in done]
        prompts = [generation_prompt(args.kind, t.query_text, t.facet_text) for t in targets]
        if args.backend == "openai":
            options.setdefault("api_key", "dry-run")  # nothing is sent: no key needed
        backend = make_backend(args, options)
        try:
            calls, tokens = _estimate(backend, prompts, args.max_new_tokens)
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


def _estimate(backend: TextBackend, prompts: list[str], max_new_tokens: int) -> tuple[int, int]:
    estimate = getattr(backend, "estimate", None)
    if callable(estimate):
        return estimate(prompts, max_new_tokens=max_new_tokens)
    unique = set(prompts)
    return len(unique), sum(backend.count_tokens(p) for p in unique)


def make_backend(args: argparse.Namespace, options: dict[str, str]) -> TextBackend:
    if args.backend == "openai":
        from exam_harness.graders.openai_backend import backend_from_options

        if args.base_url:
            options = {**options, "base_url": args.base_url}
        backend, unused = backend_from_options(args.model, options)
        if unused:
            raise ConfigError(f"unknown openai option(s): {', '.join(sorted(unused))}")
        return backend
    return _hf_backend(args.model, options)


def _hf_backend(model: str | None, options: dict[str, str]) -> TextBackend:
    """The transformers backend, built (and its options checked) by the ``hf`` grader's factory."""
    from exam_harness.graders.base import GraderConfig

    try:
        from exam_harness.graders.hf import create_hf_grader
    except ImportError as exc:
        raise ConfigError(
            f"the hf backend needs transformers and torch: pip install 'exam-harness[hf]' ({exc})"
        ) from exc
    grader = create_hf_grader(GraderConfig(model=model, options=dict(options)))
    return grader.backend


# --- reading queries and facets --------------------------------------------------------------


def _is_json(path: Path, text: str) -> bool:
    return path.suffix.lower() == ".json" or text.lstrip().startswith("{")


def _read(path: Path) -> str:
    from exam_harness.io.textio import read_text

    if not path.exists():
        raise InputError("file not found", path=path)
    return read_text(path)


def load_queries(path: Path) -> list[Query]:
    """Queries from a JSON object ``{id: text}`` or a TSV file ``id<TAB>text`` (``#`` lines skipped)."""
    text = _read(path)
    pairs: list[tuple[str, str, int | None]] = []
    if _is_json(path, text):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
        if not isinstance(data, dict):
            raise InputError(
                "queries must be a JSON object",
                path=path,
                line=1,
                value=type(data).__name__,
                expected='{"query_id": "query text", ...}',
            )
        for qid, qtext in data.items():
            if not isinstance(qtext, str):
                raise InputError(
                    "query text must be a string",
                    path=path,
                    field=qid,
                    value=qtext,
                    expected='{"query_id": "query text"}',
                )
            pairs.append((qid, qtext, None))
    else:
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.startswith("#"):
                continue
            qid, sep, qtext = line.partition("\t")
            if not sep:
                raise InputError(
                    "a query line needs a tab between id and text",
                    path=path,
                    line=lineno,
                    value=line,
                    expected="id<TAB>text",
                )
            pairs.append((qid.strip(), qtext.strip(), lineno))
    queries: list[Query] = []
    seen: set[str] = set()
    for qid, qtext, lineno in pairs:
        where: dict[str, Any] = {"path": path, "line": lineno}
        if not qid or any(ch.isspace() for ch in qid):
            raise InputError("bad query id", **where, field="id", value=qid, expected="an id without whitespace")
        if not qtext.strip():
            raise InputError("empty query text", **where, field=qid, expected="the query text")
        if qid in seen:
            raise InputError("duplicate query id", **where, field="id", value=qid, expected="each query once")
        seen.add(qid)
        queries.append(Query(id=qid, text=qtext.strip()))
    if not queries:
        raise InputError("no queries", path=path, expected='a JSON object {"id": "text"} or lines id<TAB>text')
    return queries


def load_facets(path: Path, query_ids: set[str]) -> dict[str, dict[str, str]]:
    """Facets from JSON ``{query_id: {facet_id: text}}`` or TSV ``query_id<TAB>facet_id<TAB>text``."""
    text = _read(path)
    triples: list[tuple[str, str, Any, int | None]] = []
    if _is_json(path, text):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
        if not isinstance(data, dict):
            raise InputError(
                "facets must be a JSON object",
                path=path,
                line=1,
                expected='{"query_id": {"facet_id": "facet text"}}',
            )
        for qid, facets in data.items():
            if not isinstance(facets, dict):
                raise InputError(
                    "facets of a query must be an object",
                    path=path,
                    field=qid,
                    value=facets,
                    expected='{"facet_id": "facet text"}',
                )
            triples.extend((qid, fid, ftext, None) for fid, ftext in facets.items())
    else:
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t", 2)
            if len(parts) != 3:
                raise InputError(
                    "a facet line needs three tab-separated fields",
                    path=path,
                    line=lineno,
                    value=line,
                    expected="query_id<TAB>facet_id<TAB>text",
                )
            triples.append((parts[0].strip(), parts[1].strip(), parts[2].strip(), lineno))
    facets: dict[str, dict[str, str]] = {}
    for qid, fid, ftext, lineno in triples:
        if qid not in query_ids:
            raise InputError(
                "facet of an unknown query",
                path=path,
                line=lineno,
                field="query_id",
                value=qid,
                expected="a query id of the queries file",
            )
        if not fid or any(ch.isspace() for ch in fid):
            raise InputError(
                "bad facet id",
                path=path,
                line=lineno,
                field="facet_id",
                value=fid,
                expected="an id without whitespace",
            )
        if not isinstance(ftext, str) or not ftext.strip():
            raise InputError(
                "empty facet text",
                path=path,
                line=lineno,
                field=fid,
                value=ftext,
                expected="the facet text",
            )
        if fid in facets.get(qid, {}):
            raise InputError(
                "duplicate facet id",
                path=path,
                line=lineno,
                field="facet_id",
                value=fid,
                expected="each facet once per query",
            )
        facets.setdefault(qid, {})[fid] = ftext.strip()
    return facets


def add_facets(queries: list[Query], facets: dict[str, dict[str, str]]) -> list[Query]:
    return [q.model_copy(update={"facets": facets[q.id]}) if q.id in facets else q for q in queries]
