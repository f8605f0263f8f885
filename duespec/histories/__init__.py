"""Concurrent histories: recorded, checked for linearizability, reported (docs/histories.md)."""
