#!/usr/bin/env python3
"""Every command and option the programs' --help lists is in their man page.

Usage: check_manpages.py MAN_DIR TESSERA TESSERA_META TESSERA_DATANODE TESSERA_MOUNT

Runs each program's --help (and `tessera COMMAND --help` for every command
`tessera --help` lists) and checks the scdoc sources in MAN_DIR: each
command has its "## COMMAND" section in tessera.1.scd, each option of a
command appears in that section, each daemon option in the daemon's page,
and each daemon option a configuration file can set is a key of its
section of tessera.conf.5.scd. So a new command or option cannot be added
without its documentation (the man pages are built from these sources).
"""
import os
import re
import subprocess
import sys

# Options that are not configuration keys (conffile.h reads or ignores them).
NOT_KEYS = {"config", "check-config", "help", "version"}
LONG_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")
SHORT_OPTION = re.compile(r"^\s+(-[a-z])\s", re.M)
# The lines of a --help that define options: usage lines (and their
# continuations) and option lines; prose may name other programs' options.
DEFINING_LINE = re.compile(r"^\s*(usage:|options:|-|\[|tessera )", re.I)


def long_options(text):
    lines = [line for line in text.splitlines() if DEFINING_LINE.match(line)]
    return set(LONG_OPTION.findall("\n".join(lines)))

failures = []


def help_text(*argv):
    run = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if run.returncode != 0:
        failures.append(f"{' '.join(argv)} exited {run.returncode}: {run.stderr.strip()}")
    return run.stdout


def read_page(man_dir, name):
    with open(os.path.join(man_dir, name), encoding="utf-8") as page:
        # scdoc escapes: "\_" is a literal underscore.
        return page.read().replace("\\_", "_")


def sections(page, level):
    """{heading: text} of the page's headings of this level ("#" or "##")."""
    parts = re.split(rf"^{level} (.+)$", page, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def need(options, text, where):
    for option in sorted(options):
        if option not in text:
            failures.append(f"{where} does not mention {option}")


def main():
    man_dir, tessera, meta, datanode, mount = sys.argv[1:6]
    tessera_page = read_page(man_dir, "tessera.1.scd")
    commands_text = help_text(tessera, "--help")
    commands = re.findall(r"^  ([a-z]+)  ", commands_text, re.M)
    if len(commands) < 10:
        failures.append(f"`tessera --help` lists only {commands}: the check reads it wrong")
    need({"--" + o for o in long_options(commands_text)}, tessera_page, "tessera.1.scd")
    by_command = sections(tessera_page, "##")
    for command in commands:
        if command not in by_command:
            failures.append(f"tessera.1.scd has no '## {command}' section")
            continue
        options = {"--" + o for o in long_options(help_text(tessera, command, "--help"))}
        need(options, by_command[command] + tessera_page.split("# COMMANDS")[0],
             f"tessera.1.scd's {command} section")

    conf_sections = sections(read_page(man_dir, "tessera.conf.5.scd"), "##")
    for program, page, section in ((meta, "tessera-meta.8.scd", "[meta]"),
                                   (datanode, "tessera-datanode.8.scd", "[datanode]"),
                                   (mount, "tessera-mount.8.scd", "[mount]")):
        text = help_text(program, "--help")
        longs = long_options(text)
        if len(longs) < 10:
            failures.append(f"{program} --help lists only {longs}: the check reads it wrong")
        need({"--" + o for o in longs} | set(SHORT_OPTION.findall(text)),
             read_page(man_dir, page), page)
        keys = conf_sections.get(section, "")
        for key in sorted(longs - NOT_KEYS):
            if not re.search(rf"^\*{re.escape(key)}\* =", keys, re.M):
                failures.append(f"tessera.conf.5.scd's {section} has no key {key}")

    for failure in failures:
        print("not documented:", failure)
    print(f"checked {len(commands)} commands and 3 daemons' options against {man_dir}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
