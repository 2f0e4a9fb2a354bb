"""Grading a submission folder on the spec's Lab Rubric: finding and reading the submission,
one module per criterion, running its test suite in the sandbox, and the reports (table, CSV,
HTML, JSON).
"""
