"""A YAML syntax error as a person fixes it: where the mistake starts, and a one-line hint.

libyaml reports where it gave up, which for an unclosed quote or bracket is the end of the
front matter (the closing `---`). Its error also carries where the construct it was reading
began (`context_mark`): that is where the mistake is, so that is where the issue points
(docs/design.md §8a). Only bad documents reach this module; `check` of a valid one never does.
"""

from __future__ import annotations

from typing import Any

# (what libyaml was reading, the hint) for constructs whose opener is the mistake when they run
# past their own line: an unclosed quote or bracket
_UNCLOSED = (
    ("quoted scalar", "close the quote"),
    ("flow sequence", "close the '[' with ']'"),
    ("flow mapping", "close the '{' with '}'"),
)
TAB_HINT = "indent with spaces, not tabs"
COLON_HINT = "quote the value"


def describe(exc: Any, text: str) -> tuple[Any, str]:
    """(the mark to report, the message) for a `MarkedYAMLError` raised while reading `text`."""
    context, problem = exc.context or "", exc.problem or "invalid YAML"
    start, end = exc.context_mark, exc.problem_mark or exc.context_mark
    what = f"{context}, {problem}" if context else problem
    if end is not None and _character(text, end) == "\t":
        return end, f"invalid YAML: {what}; {TAB_HINT}"
    if start is not None and end is not None and end.line > start.line:
        hint = next((hint for construct, hint in _UNCLOSED if construct in context), None)
        if hint is not None:
            return start, f"invalid YAML: {what} on line {end.line + 2}; {hint}"
    if end is not None and "mapping values are not allowed" in problem and ": " in _line(text, end)[: end.column]:
        return end, f"invalid YAML: {what}: a value holds ': '; {COLON_HINT}"
    return end, f"invalid YAML: {what}"


def _line(text: str, mark: Any) -> str:
    lines = text.split("\n", mark.line + 1)
    return lines[mark.line] if mark.line < len(lines) else ""


def _character(text: str, mark: Any) -> str:
    line = _line(text, mark)
    return line[mark.column] if mark.column < len(line) else ""
