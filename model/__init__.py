"""Reference models: one obviously-correct function per spec handler, one per file."""
