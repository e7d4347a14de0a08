"""What a result document is written as and what it decides: the writer registry (``writers.py``) and
the verdict over a document (``verdict.py``), shared by the pytest session and the subcommands."""
