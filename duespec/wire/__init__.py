"""Resonate on the wire: the HTTP envelope protocol, `duespec serve`, and the HTTP target."""
