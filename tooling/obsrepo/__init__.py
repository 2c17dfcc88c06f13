"""obsrepo: a git repository as a database of observations agents and people can trust.

    from obsrepo import Repository
    repo = Repository(".")
"""

from __future__ import annotations

from typing import Any

from .version import __version__

__all__ = ["Repository", "__version__"]


def __getattr__(name: str) -> Any:
    # the facade is loaded on first use, so `obsrepo check` starts without it
    if name == "Repository":
        from .api import Repository

        return Repository
    raise AttributeError(name)
