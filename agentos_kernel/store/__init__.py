"""L4 Append-only Event Store: the `Event` and the `EventStore` Protocol, the JSONL store
(`jsonl`), the one writer of a session (`recorder.SessionLog`: redaction, a schema check per
payload, the hash chain), durability and the one-writer lock, integrity (`verify`) and repair,
copying between stores, reading a runtime's sessions; `replay/` (the pure fold, snapshots,
summaries, windows on a long log) and `postgres/` (the class-server store).

May import: `schemas` (L7), `config`, `workspace` and the ground modules; never a layer above.
"""
