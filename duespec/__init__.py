"""duespec: executable specifications and a model-checking harness for duebook and
Resonate schedules. See README.md."""

__version__ = "0.1.0"
