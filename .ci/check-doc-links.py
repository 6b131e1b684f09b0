#!/usr/bin/env python3
"""Checks the Markdown documentation of the repository.

Every relative link in a `.md` file (README.md, docs/, Examples/, deploy/, Benchmarks/) must name a file or
folder that exists, and a `#fragment` must name a heading of the target page (GitHub's heading slugs). No
file may point outside the repository at the development notes it was written from.
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
skip = {".build", ".git", ".build-asan", ".build-tsan", ".build-fuzz"}
pages = [p for p in root.rglob("*.md") if not (set(p.relative_to(root).parts) & skip)
         and not any(part.startswith(".build") for part in p.relative_to(root).parts)]


def slugs(path):
    found, seen = set(), {}
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        m = re.match(r"^#{1,6} (.*)", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


problems = []
for page in pages:
    text = page.read_text(encoding="utf-8")
    text_no_code = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in re.finditer(r"\]\(([^)\s]+)\)", text_no_code):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, fragment = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        rel = page.relative_to(root)
        if not dest.exists():
            problems.append(f"{rel}: link to {target}: no such file")
            continue
        if root not in dest.parents and dest != root:
            problems.append(f"{rel}: link to {target} leaves the repository")
        if fragment and dest.suffix == ".md" and fragment not in slugs(dest):
            problems.append(f"{rel}: link to {target}: no heading with that anchor")

for path in [root / "README.md", *root.glob("docs/*.md"), *root.glob("config/*"), *root.rglob("Sources/**/*.swift")]:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.search(r"\.\./shared|LIBRDKAFKA-NOTES|SANITIZER-NOTES|CONTRACT\.md", line):
            problems.append(f"{path.relative_to(root)}:{n}: points outside the repository: {line.strip()[:80]}")

for p in problems:
    print(p)
print(f"checked {len(pages)} Markdown files: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
