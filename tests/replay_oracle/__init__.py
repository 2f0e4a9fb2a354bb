"""The widgets' log reading before it read on demand (store/replay at main 43f5877): LogEvents
held the whole file's bytes, ReplayIndex a fold of every event and each type's positions.
Kept only as the oracle the on-demand forms must agree with, event for event and snapshot
for snapshot (tests/test_replay_ondemand.py)."""
