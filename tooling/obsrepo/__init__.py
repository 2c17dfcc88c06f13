"""obsrepo: a git repository as a database of observations agents and people can trust."""

__version__ = "0.1.0"
