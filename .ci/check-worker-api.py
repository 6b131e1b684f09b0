#!/usr/bin/env python3
"""Checks that the worker-API products build with the toolchain alone.

Reads `swift package describe --type json` (run here, in the package root) and, for each product named on
the command line (default: PushWorkerAPI and PushWorkerProbe), walks the closure of its targets. It fails
(exit status 1) when that closure holds a system-library target (a C library needing a -dev package), a
binary target, a product of another package, or a source file importing FoundationNetworking (libcurl).

Usage: .ci/check-worker-api.py [PRODUCT ...]
"""
import json
import os
import re
import subprocess
import sys

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
products = sys.argv[1:] or ["PushWorkerAPI", "PushWorkerProbe"]
description = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"],
                                        check=True, capture_output=True, text=True).stdout)
targets = {target["name"]: target for target in description["targets"]}
by_product = {product["name"]: product for product in description["products"]}
forbidden_import = re.compile(r"^\s*(@_exported\s+)?import\s+(FoundationNetworking|C[A-Z]\w*)\b", re.MULTILINE)

failures = []
for name in products:
    product = by_product.get(name)
    if product is None:
        failures.append(f"{name}: no such product in Package.swift")
        continue
    closure, pending = [], list(product["targets"])
    while pending:
        target_name = pending.pop()
        if target_name in closure:
            continue
        closure.append(target_name)
        target = targets[target_name]
        pending.extend(target.get("target_dependencies") or [])
        if target["type"] in ("system-target", "binary"):
            failures.append(f"{name}: its closure holds {target['type']} {target_name}")
        for dependency in target.get("product_dependencies") or []:
            failures.append(f"{name}: {target_name} depends on product {dependency} of another package")
        for source in target.get("sources") or []:
            path = os.path.join(target["path"], source)
            if not path.endswith(".swift"):
                continue
            with open(path, encoding="utf-8") as file:
                for match in forbidden_import.finditer(file.read()):
                    failures.append(f"{name}: {path} imports {match.group(2)}")
    print(f"{name}: targets {', '.join(sorted(closure))}")

if failures:
    print("The worker API must build with the toolchain's modules only:", file=sys.stderr)
    for failure in failures:
        print(f"  {failure}", file=sys.stderr)
    sys.exit(1)
print("worker API closure: no system-library target, no FoundationNetworking")
