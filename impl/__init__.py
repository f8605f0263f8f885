"""Production implementations; never imports duespec.model."""
