"""The workbench's pictures (matplotlib, imported on use): a session's timeline, cost and
phase graph, the ranges they draw, cost what-ifs, and the class views. Each returns a matplotlib
Figure carrying its DataFrame as `.data` and takes `ax=` (canvas.py).
"""
