"""The counts of the "one door" issue, for this tree and another one (no timing: a census).

    python bench/door_counts.py [--before OTHER/tooling]

  bypasses     imports from an adapter (cli/, mcp/, watch/) into the engine (format/, gate/,
               index/, read/, write/, gitstore, times, params, files, api), and the distinct
               (adapter file, engine module) pairs
  parse sites  time parsing outside times.py: calls of parse_time/fromisoformat/strptime
  flag names   library errors that name a CLI flag (`parameter="--…"` or a message "--…")
               outside cli/
  constants    definitions of constants the issue found copied
  big modules  modules over 500 lines
"""

from __future__ import annotations

import argparse
import ast
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTERS = ("cli", "mcp", "watch")
ENGINE = ("format", "gate", "index", "read", "write", "gitstore", "times", "params", "files", "api")
CONSTANTS = {"tenant keys": r"^\s*_?(TENANT_KEYS|TENANT_FILTERS)\s*=|\(\"org\", \"project\", \"agent\", \"user\"\)",
             "DOCUMENT_ROOTS": r"^\s*DOCUMENT_ROOTS\s*=", "CORRECTION_PRIORITY": r"^\s*CORRECTION_PRIORITY\s*=",
             "MAX_LIMIT": r"^\s*MAX_LIMIT\s*=", "PARALLEL_THRESHOLD": r"^\s*PARALLEL_THRESHOLD\s*="}
PARSES = re.compile(r"\b(parse_time|fromisoformat|strptime)\(")
FLAG = re.compile(r"parameter=f?\"--|UsageError\(f?\"--")


def modules(package: str) -> dict[str, str]:
    found = {}
    for folder, _, files in os.walk(package):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                found[os.path.relpath(path, package)] = open(path, encoding="utf-8").read()
    return found


def census(tooling: str) -> dict[str, object]:
    package = os.path.join(tooling, "obsrepo")
    sources = modules(package)
    bypasses, pairs = 0, set()
    for path, text in sources.items():
        if path.split(os.sep)[0] not in ADAPTERS:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                depth = path.count(os.sep)  # the package of the module, relative to obsrepo/
                if node.level > depth:  # reaches above the adapter's folder
                    target = (node.module or "").split(".")[0]
                    targets = [target] if target else [alias.name for alias in node.names]
                    for name in targets:
                        if name in ENGINE:
                            bypasses += 1
                            pairs.add((path, name))
    parse_sites = sum(len(PARSES.findall(text)) for path, text in sources.items() if path != "times.py")
    flags = sum(len(FLAG.findall(text)) for path, text in sources.items() if path.split(os.sep)[0] != "cli")
    constants = {name: sum(1 for text in sources.values() for line in text.splitlines() if re.search(pattern, line))
                 for name, pattern in CONSTANTS.items()}
    sizes = sorted(((text.count("\n"), path) for path, text in sources.items()), reverse=True)
    return {"bypass imports": bypasses, "adapter→engine pairs": len(pairs), "time parse sites": parse_sites,
            "flag names in the library": flags, "constants": constants,
            "modules over 500 lines": [f"{path} ({lines})" for lines, path in sizes if lines > 500],
            "largest module": f"{sizes[0][1]} ({sizes[0][0]})"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="another tree's tooling folder")
    args = parser.parse_args()
    trees = {"now": os.path.join(os.path.dirname(HERE), "tooling")}
    if args.before:
        trees = {"before": args.before, **trees}
    for name, tooling in trees.items():
        print(name)
        for key, value in census(tooling).items():
            print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
