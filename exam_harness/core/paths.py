"""How a path is shown to users: relative to a root folder when it lies below it, else as given.

The one helper for every message, report field and manifest that names a file, so that outputs do
not depend on where the checkout lies (reports and manifests go into git).
"""

from __future__ import annotations

import os
from pathlib import Path


def shown_path(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> str:
    """``path`` relative to ``root`` (the current folder when None) where it lies below it, else as given."""
    base = Path.cwd() if root is None else Path(root)
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except ValueError:  # outside ``root``: an absolute or ../ path says more than a guess
        return str(path)
