#!/usr/bin/env python3
"""Every command `tessera --help` lists has its built page tessera-COMMAND(1).

Usage: check_command_pages.py MAN_BUILD_DIR TESSERA

For each command: MAN_BUILD_DIR/tessera-COMMAND.1 (built by
docs/man/command_page.py from tessera.1.scd) is a man page of that name in
section 1, its NAME gives the summary `tessera --help` prints, and it names
every option `tessera COMMAND --help` defines and every subcommand of its
usage lines. So no command is without its page, and a page cannot lose
what its section of tessera(1) says.
"""
import os
import re
import subprocess
import sys

from check_completion import defined_options, subcommands


def roff_text(path):
    """The page's words as troff shows them: font changes and \\& dropped."""
    with open(path, encoding="utf-8") as page:
        return re.sub(r"\\f[BIR]|\\&", "", page.read())


def main():
    man_dir, tessera = sys.argv[1:3]
    failures = []
    listing = subprocess.run([tessera, "--help"], capture_output=True, text=True,
                             timeout=30).stdout
    commands = dict(re.findall(r"^  ([a-z]+) +(.+)$", listing, re.M))
    if len(commands) < 10:
        failures.append(f"`tessera --help` lists only {commands}: the check reads it wrong")
    for command, summary in commands.items():
        path = os.path.join(man_dir, f"tessera-{command}.1")
        if not os.path.exists(path):
            failures.append(f"no page {path}")
            continue
        text = roff_text(path)
        if f'.TH "tessera-{command}" "1"' not in text:
            failures.append(f"{path} is not titled tessera-{command}(1)")
        if f"tessera-{command} - {summary}" not in " ".join(text.split()):
            failures.append(f"{path}'s NAME is not '{summary}'")
        help_text = subprocess.run([tessera, command, "--help"], capture_output=True,
                                   text=True, timeout=30).stdout
        for word in sorted(defined_options(help_text) | subcommands(help_text, command)):
            if word not in text:
                failures.append(f"{path} does not mention {word}")
    for failure in failures:
        print("command pages:", failure)
    print(f"checked the pages of {len(commands)} commands in {man_dir}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
