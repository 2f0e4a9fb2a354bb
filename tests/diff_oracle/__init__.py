"""The log diff engine before it streamed (runs/diff.py and runs/difftext.py at main 262f3d1):
both logs read whole, every row a DiffRow holding its Events. Kept only as the oracle the
streaming engine must agree with, row for row and line for line (tests/test_diff_stream.py)."""
