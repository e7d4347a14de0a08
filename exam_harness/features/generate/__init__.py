"""The bank generation feature, the method's first phase: ``exam-harness generate QUERIES --out BANK`` sends the
method's generation prompts to an LLM and writes exam questions or nuggets as a bank file, merged without
overwriting human edits (docs/graders.md, docs/cli.md).

plugin.py registers the subcommand through the hooks ``exam_harness.api`` declares; command.py is the subcommand
(its arguments, the backends), generation.py the generation and the merge rule.
"""

REQUIRES: tuple[str, ...] = ()  # the other features this one imports (none)
