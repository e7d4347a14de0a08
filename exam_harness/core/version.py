"""The package's version (pyproject.toml's ``version``), which reports, recordings and ``--version`` carry.

Its own module, low in the layers, so the modules that stamp it never import the package's public names
(``exam_harness/__init__.py`` re-exports them from above every layer, ARCHITECTURE.md, Layers)."""

__version__ = "0.1.0"
