"""The two YAML event parsers the strict composer (`document.py`) can read front matter with.

`CParser` is libyaml (inside PyYAML's wheels): the reader of record, whose rules, positions and
messages the test cases hold; None when PyYAML was built without it. `PureParser` is PyYAML's
pure-Python parser, the fallback then, about ten times slower. The two give the same documents
for front matter libyaml reads without a syntax problem, except around a tab, U+FEFF, `?` and a
bare `!`; a front matter libyaml refuses gets other wording from the fallback, and some of it
is accepted there (tests/test_event_parsers.py holds what is equal).
"""

from __future__ import annotations

from typing import Any

from yaml.parser import Parser
from yaml.reader import Reader
from yaml.scanner import Scanner

try:
    from yaml._yaml import CParser as _libyaml
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    _libyaml = None

CParser: Any = _libyaml


class PureParser(Reader, Scanner, Parser):
    """PyYAML's reader, scanner and parser, without a composer or constructor."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)

    def dispose(self) -> None:
        pass
