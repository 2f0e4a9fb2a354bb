"""Audit Completeness (spec) and conformance for any event log, ours or another
implementation's: log-level and flow checks, the conformance scenarios and the parity table.
"""
