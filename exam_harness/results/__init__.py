"""The one result document and what reads, writes or decides over it: the section protocol and registry
(``sections.py``), what scoring hands the document's builder (``scored.py``) and the verdict over a
document (``verdict.py``), shared by the pytest session and the subcommands (the writers that render it
are report/writers.py)."""
