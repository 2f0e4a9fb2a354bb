"""The workbench's pictures (matplotlib, imported on use): a session's timeline, cost and
phase graph, the ranges they draw, cost what-ifs, and the class views.
"""
