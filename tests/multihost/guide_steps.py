#!/usr/bin/env python3
"""Splits docs/deployment.md into the steps test_deploy.sh runs.

Usage: guide_steps.py GUIDE OUTDIR

A step is a fenced code block right after a marker line
  <!-- guide: KIND HOST [ARG] -->
KIND: `file` (the block is the file ARG on HOST), `run` (run it on HOST)
or `start` (run it on HOST, which starts daemon ARG: meta, datanode or
mount). Writes OUTDIR/NNN (the block) and one line per step to
OUTDIR/index: "NNN KIND HOST [ARG]", in the guide's order. Fails on a
marker without a block right after it, an unknown kind, or no step at all,
so a guide edited out of shape fails the test instead of skipping steps.
"""
import os
import re
import sys

MARKER = re.compile(r"^<!-- guide: (.+?) -->$")
KINDS = {"file": 3, "run": 2, "start": 3}


def main():
    guide, outdir = sys.argv[1], sys.argv[2]
    lines = open(guide, encoding="utf-8").read().split("\n")
    os.makedirs(outdir, exist_ok=True)
    index = []
    i = 0
    while i < len(lines):
        found = MARKER.match(lines[i])
        i += 1
        if not found:
            continue
        words = found.group(1).split()
        if not words or words[0] not in KINDS or len(words) != KINDS[words[0]]:
            sys.exit(f"{guide}:{i}: bad marker {found.group(1)!r} "
                     "(want: file HOST PATH, run HOST, start HOST meta|datanode|mount)")
        if i >= len(lines) or not lines[i].startswith("```"):
            sys.exit(f"{guide}:{i}: marker {found.group(1)!r} is not followed by a code block")
        start = i + 1
        end = start
        while end < len(lines) and lines[end] != "```":
            end += 1
        if end == len(lines):
            sys.exit(f"{guide}:{i + 1}: code block not closed")
        number = f"{len(index):03d}"
        with open(os.path.join(outdir, number), "w", encoding="utf-8") as block:
            block.write("\n".join(lines[start:end]) + "\n")
        index.append(f"{number} {' '.join(words)}")
        i = end + 1
    if not index:
        sys.exit(f"{guide}: no <!-- guide: ... --> step")
    with open(os.path.join(outdir, "index"), "w", encoding="utf-8") as out:
        out.write("\n".join(index) + "\n")


if __name__ == "__main__":
    main()
