"""What is done to recorded runs: re-running with recorded answers (`rerun --verify`), forking a
session at event k, diffing two logs step by step, and stepping a run live (a gate before each
append). Replay itself is a pure fold and lives in `store/replay/`.

May import: the composition root (`kernel`) and every layer below it.
"""
