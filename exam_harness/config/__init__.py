"""What a user configures: the one option schema (options.py, pytest ``--exam-NAME`` + ini and the
subcommands' ``--NAME``), the CI gates as declared (gates.py) and a subcommand's declaration (commands.py)."""
