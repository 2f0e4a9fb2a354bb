"""Lab 07 runtime: one module per responsibility (spec Implementation Guide)."""
