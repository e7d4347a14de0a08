"""Subcommands of the exam-harness CLI, one module each (add_parser + run)."""
