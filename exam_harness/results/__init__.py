"""The one result document and what reads or writes it: the section protocol and registry
(``sections.py``), what scoring hands the document's builder (``scored.py``)."""
