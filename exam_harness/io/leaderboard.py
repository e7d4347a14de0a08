"""Official leaderboards: a JSON object mapping run name -> rank (1 = best; ties may be averaged)."""

from __future__ import annotations

from pathlib import Path

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.io.limits import quoted
from exam_harness.io.located import MAP, SCALAR, Node, describe, finite_number, load_located


def load_leaderboard(path: Path) -> dict[str, float]:
    """Read ``{"run name": rank, ...}``; ranks are numbers >= 0 (averaged ties such as 7.5 allowed)."""
    path = Path(path)
    root = load_located(path)
    if root is None or root.kind != MAP:
        raise InputError(
            f"a leaderboard must be a JSON object, got {describe(root) if root else 'nothing'}",
            path=path,
            line=root.line if root else 1,
            expected='{"run name": rank, ...}',
        )
    if not root.value:
        raise InputError("empty leaderboard", path=path, line=root.line, expected="at least one run")
    ranks: dict[str, float] = {}
    for name, node in root.value.items():
        rank = finite_number(node.value) if node.kind == SCALAR else None
        if rank is None or rank < 0:
            raise InputError(
                f"rank of run {quoted(name)} is not a number",
                path=path,
                line=node.line,
                field=limits.cut(name),
                value=_shown(node),
                expected="a rank number >= 0 (1 = best; ties as averaged ranks)",
            )
        if not name or any(ch.isspace() for ch in name):
            raise InputError(
                "run name must be non-empty and without whitespace",
                path=path,
                line=node.line,
                field=limits.cut(name),
                expected="a run name",
            )
        ranks[name] = rank
    return ranks


def _shown(node: Node) -> object:
    """The bad rank as the file has it (a YAML scalar as written: it may be an integer too long to print)."""
    if node.kind != SCALAR:
        return describe(node)
    return node.raw if node.raw is not None and not isinstance(node.value, str) else node.value
