"""The release, in one place: the package metadata (pyproject.toml reads it), `--version`, and
the tags `init` pins the hook and the Action to. This module imports nothing."""

__version__ = "0.1.0"
