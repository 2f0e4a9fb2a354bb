"""Notebook labs in nbgrader's own format, without nbgrader: the cell metadata and markers,
`release` (the student version), running a notebook and scoring its grade cells (`check`), and
handing the notebooks out (`handout`).
"""
