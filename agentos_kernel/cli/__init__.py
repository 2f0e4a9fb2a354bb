"""`agentos`, the command line: thin — parse, call the library, print. `main` builds the parser
from one module per command group; `common` holds what they share (exit codes, UsageError, the
runtime and session arguments).

May import: anything in the package except `jupyter`.
"""
