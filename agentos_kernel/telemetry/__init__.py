"""What a run looks like from outside: OpenTelemetry export (GenAI conventions; spans derived
from the log, never recorded beside it), live export for a profile's `telemetry:`, and the
one-line event summaries of the trace and the live trace.

May import: `store`, `config` and the ground modules (and OpenTelemetry's SDK, on use).
"""
