"""The Workbench feature: grades to and from the Autograding Workbench's paragraph files.

- ``evaluate --export-workbench FILE`` (options.py, writer.py): the exam's passages, runs, judgments and grades
  (the recorded ones of the loaded files, and ours) as a paragraph file, written by its writer;
- ``exam-harness import-grades`` (command.py): a graded paragraph file's grades stored in the grade cache under the
  ``recorded`` grader's identity;

both by grades.py. The Workbench file formats themselves (io/workbench.py: banks and paragraph files read as banks
and runs, the recorded grades the ``recorded`` grader replays) stay the core's: the method's published data (DL19,
CAR) comes in them, so every exam reads them whether or not this feature is registered. plugin.py registers the
option, the writer and the subcommand through the hooks ``exam_harness.api`` declares.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
