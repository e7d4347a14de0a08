"""In-tree features: each folder one feature with its own front end (``view/``: ``exam-harness view`` and the
labelling screen), registered with the command line by one line (exam_harness/cli/)."""
