"""Replay (I-1): the pure fold of a log into a `Snapshot` (`fold`), the snapshot values, the
bounded-memory summary, the index of snapshots at event k, and the lazy window on a log's bytes.

Nothing here writes or re-runs anything: re-running is `runs/rerun.py`.
"""
