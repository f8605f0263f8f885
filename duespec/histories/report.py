"""Placeholder replaced below."""
def describe(verdict):
    return verdict.status
