"""L7 Schema-versioned IPC: the `SchemaRegistry` (every schema file compiled once with
jsonschema-rs, checked at every boundary) and the JSON-shape helpers its messages use.

May import: the ground modules (`errors`, `clock`, `yamlload`) only. Every layer above uses it.
"""
