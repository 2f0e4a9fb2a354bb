"""L1 MCP-first Tool Protocol: `ToolDef`, `ToolRegistry` and `dispatch_tool` (the spec's nine
steps, in order), the builtin tools (confined to the workspace), the MCP client, the bridge
that turns an MCP server's tools into ToolDefs, and the MCP server that serves a workspace's
tools back through the same dispatch.

May import: `hooks` (L6), `skills` (L5), `store` (L4), `schemas` (L7), `config` and the ground.
"""
