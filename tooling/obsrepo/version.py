"""The release, in one place: the package metadata (pyproject.toml reads it), `--version`, the
tags `init` pins the hook and the Action to, and the install command that works before the
package is on PyPI (docs/design.md §18). This module imports nothing."""

__version__ = "0.1.0"
PROJECT_URL = "https://github.com/obsrepo/obsrepo"  # also pyproject.toml's [project.urls]; a test keeps them equal


def install_from_git(requirement: str) -> str:
    """`pip install` of `requirement` (obsrepo with any extras) from this release's tag."""
    return f"pip install '{requirement} @ git+{PROJECT_URL}@v{__version__}'"
