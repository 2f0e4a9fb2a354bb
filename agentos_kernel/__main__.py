"""`python -m agentos_kernel ...` is `agentos ...` (for a client that spawns the server by
interpreter path, e.g. an MCP client's `command: [python, -m, agentos_kernel, mcp, serve]`)."""

import sys

from .cli.main import main

sys.exit(main())
