"""A feature as a plugin outside the package, in one folder (the done-when of issue 36): it needs an option of its
own (``--exam-long-words`` / ``--long-words``), a scoring input its section reads, a gate figure (``long-share``)
and a subcommand (``exam-harness long-passages``). A project registers it with one line in its conftest.py,
``pytest_plugins = ["tests.features.sample_feature.plugin"]``, which pytest and the command line both honour."""

REQUIRES: tuple[str, ...] = ()
