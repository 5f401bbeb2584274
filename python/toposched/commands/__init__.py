"""One module per ``toposched`` subcommand.

Each module defines ``NAME``, ``HELP``, ``DESCRIPTION``, optionally ``EPILOG``,
``add_arguments(parser)`` and ``run(args) -> int`` (the exit status). ``toposched.cli``
finds them by listing this package, so adding a command is adding a file.
"""
