"""L4 in PostgreSQL (`event_store: {kind: postgres}`): `PostgresEventStore` behind the same
`EventStore` Protocol, its versioned schema (row-level security per student role, append-only
triggers) and the role management of `agentos store`. psycopg is imported only here, on use.
"""
