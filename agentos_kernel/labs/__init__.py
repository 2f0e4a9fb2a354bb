"""Grading and checking: audit, conformance, lab notebooks, rubric grading.

This package reads event logs, notebooks and submission folders; it never writes a log.
The runtime layers never import it (the arrow points from here down to `kernel`, `events`,
`replay`, `schemas`). Heavy imports (pandas, nbclient, nbformat) happen inside functions,
so `agentos --help` stays fast.
"""
