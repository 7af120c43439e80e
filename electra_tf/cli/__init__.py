"""The command lines (console scripts declared in pyproject.toml): each parses its
flags, calls one library function and prints an `ElectraError` in one line."""
