#!/usr/bin/env python3
"""Checks that every public symbol of the package (and of the packages named on the command line) has a doc comment.

Runs `swift package dump-symbol-graph --minimum-access-level public` in each package root (it builds the
package first) and reads the symbol graphs it writes: every `public` or `open` symbol declared in that
package's `Sources/` must carry a doc comment (`///` or `/** */`). Symbols that only implement a protocol
requirement and have no comment of their own inherit none here, so they count as missing too: document
them. Fails (exit status 1) with one line per symbol without a doc comment: module, kind, name, file:line.

Usage: .ci/check-doc-comments.py [PACKAGE_DIR ...]   (default: the repository root and Examples/MinimalWorker)
"""
import glob
import json
import os
import subprocess
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
packages = sys.argv[1:] or [".", "Examples/MinimalWorker", "Examples"]

missing, checked = [], 0
for package in packages:
    directory = os.path.realpath(os.path.join(root, package))
    dump = subprocess.run(["swift", "package", "dump-symbol-graph", "--minimum-access-level", "public"],
                          cwd=directory, capture_output=True, text=True)
    # The test-runner modules (`<package>PackageTests`, `…PackageDiscoveredTests`) exist only after
    # `swift build --build-tests` and have no public symbols: their failure is not ours to report.
    errors = [line for line in (dump.stdout + dump.stderr).splitlines()
              if line.startswith("error:") and "PackageTests'" not in line and "PackageDiscoveredTests'" not in line]
    if errors:
        sys.exit(f"{package}: dump-symbol-graph failed:\n" + "\n".join(errors))
    sources = os.path.join(directory, "Sources") + os.sep
    graphs = glob.glob(os.path.join(directory, ".build", "*", "symbolgraph", "*.symbols.json"))
    if not graphs:
        sys.exit(f"{package}: dump-symbol-graph wrote no symbol graph")
    seen = set()
    for path in sorted(graphs):
        module = os.path.basename(path).split(".")[0]
        for symbol in json.load(open(path))["symbols"]:
            if symbol["accessLevel"] not in ("public", "open"):
                continue
            location = symbol.get("location", {})
            uri = location.get("uri", "").removeprefix("file://")
            if not os.path.realpath(uri).startswith(sources):
                continue  # a symbol of another package, or synthesized
            key = (symbol["identifier"]["precise"], uri)
            if key in seen:
                continue
            seen.add(key)
            checked += 1
            lines = [line.get("text", "") for line in (symbol.get("docComment") or {}).get("lines", [])]
            if not any(text.strip() for text in lines):
                line = location.get("position", {}).get("line", 0) + 1
                missing.append(f"{module}: {symbol['kind']['displayName'].lower()} "
                               f"{'.'.join(symbol['pathComponents'])} ({os.path.relpath(uri, directory)}:{line})")

if missing:
    print(f"{len(missing)} of {checked} public symbols have no doc comment:", file=sys.stderr)
    for entry in missing:
        print("  " + entry, file=sys.stderr)
    sys.exit(1)
print(f"doc comments: all {checked} public symbols documented ({', '.join(packages)})")
