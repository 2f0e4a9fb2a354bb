"""Your Lab 07 runtime: one module per responsibility (see the lab's handout, README.md)."""
