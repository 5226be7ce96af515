#!/usr/bin/env python3
"""Builds the page tessera-COMMAND(1) from COMMAND's section of tessera(1).

Usage: command_page.py SCDOC TESSERA_1_SCD TESSERA COMMAND OUTPUT

tessera.1.scd stays the one source: its "## COMMAND" section becomes the
page's SYNOPSIS (the section's "*tessera COMMAND..." lines) and DESCRIPTION
(the rest), the one-line summary `tessera --help` prints for COMMAND its
NAME, and tessera(1)'s GLOBAL OPTIONS (--key, and how commands find their
cluster: --state, --meta, --timeout-ms), except --version and --help
(tessera's own), follow. scdoc turns the result into OUTPUT, so
`man tessera-rebalance` shows the same text as tessera(1)'s rebalance section.
"""
import re
import subprocess
import sys


def sections(page, level):
    """{heading: text} of the page's headings of this level ("#" or "##")."""
    parts = re.split(rf"^{level} (.+)$", page, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def paragraphs(text):
    return [p.strip("\n") for p in re.split(r"\n\s*\n", text) if p.strip()]


def command_summary(tessera, command):
    listing = subprocess.run([tessera, "--help"], capture_output=True, text=True,
                             check=True, timeout=30).stdout
    found = re.search(rf"^  {re.escape(command)}\s+(.+)$", listing, re.M)
    if not found:
        sys.exit(f"command_page.py: `{tessera} --help` does not list {command}")
    return found.group(1).strip()


def scd_escape(text):
    """A summary in plain text: scdoc reads * and _ as markup."""
    return re.sub(r"([*_\\])", r"\\\1", text)


def command_page(source, command, summary):
    top = sections(source, "#")
    commands = sections(top.get("COMMANDS", ""), "##")
    if command not in commands:
        sys.exit(f"command_page.py: tessera.1.scd has no '## {command}' section")
    body = paragraphs(commands[command])
    synopsis = [p for p in body if p.startswith(f"*tessera {command}")]
    description = [p for p in body if p not in synopsis]
    global_options = [p for p in paragraphs(top.get("GLOBAL OPTIONS", ""))
                      if not re.match(r"\*--(version|help)\*", p)]
    blocks = [f"tessera-{command}(1)",
              "# NAME", f"tessera-{command} - {scd_escape(summary)}",
              "# SYNOPSIS", *synopsis,
              "# DESCRIPTION", *description,
              "# GLOBAL OPTIONS", *global_options,
              "# SEE ALSO", f"*tessera*(1), the section *{command}* there, of which this "
              "page is a copy."]
    return "\n\n".join(blocks) + "\n"


def main():
    scdoc, source_path, tessera, command, output = sys.argv[1:6]
    with open(source_path, encoding="utf-8") as source:
        text = command_page(source.read(), command, command_summary(tessera, command))
    with open(output, "w", encoding="utf-8") as out:
        subprocess.run([scdoc], input=text, stdout=out, text=True, check=True, timeout=30)


if __name__ == "__main__":
    main()
