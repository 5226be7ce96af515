#!/usr/bin/env python3
"""The bash completion offers what `tessera --help` and each command's --help list.

Usage: check_completion.py COMPLETION_SCRIPT TESSERA

Loads the script in bash (`bash --norc`, as bash-completion would source
it) and asks the function it registers for `tessera` what it completes:
`tessera ` must offer exactly the commands of `tessera --help`;
`tessera COMMAND --` every option that command's --help defines (its usage
and option lines) and nothing its --help does not name; `tessera COMMAND `
every subcommand its usage lines name ("tessera rebalance plan|..."); and
the value of an option taking a directory, `--policy` and `--role` what
they may be. So a command, subcommand or option cannot be added or removed
without the completion following.
"""
import os
import re
import subprocess
import sys
import tempfile

from check_manpages import LONG_OPTION

# The lines of a --help that define options: usage lines (and their indented
# continuations) and indented option lines; a line at the margin is prose
# even when it begins with another program's option (node's --throttle-mbps).
DEFINING_LINE = re.compile(r"^(\s*(usage:|options:|\[|tessera )|\s+-)", re.I)

failures = []


def help_text(tessera, *args):
    run = subprocess.run([tessera, *args, "--help"], capture_output=True, text=True,
                         timeout=30)
    if run.returncode != 0:
        failures.append(f"tessera {' '.join(args)} --help exited {run.returncode}")
    return run.stdout


def defined_options(text):
    lines = [line for line in text.splitlines() if DEFINING_LINE.match(line)]
    return {"--" + o for o in LONG_OPTION.findall("\n".join(lines))}


def subcommands(text, command):
    """The words after `tessera COMMAND` in its usage lines: "plan", "drain|remove"."""
    found = set()
    for words in re.findall(rf"^(?:Usage:)?\s*tessera {command} \[?([a-z][a-z|-]*)",
                            text, re.M):
        found.update(words.split("|"))
    return found


class Completer:
    """One bash with the script loaded, asked for the completions of many lines."""

    def __init__(self, script):
        self.script = script

    def complete_all(self, lines):
        """{line: set of completions}; each line is completed at its end."""
        with tempfile.TemporaryDirectory() as work:
            program = [f"source {quote(self.script)} || exit 9",
                       "function=$(complete -p tessera | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')",
                       '[[ -n $function ]] || { echo "no complete -F for tessera" >&2; exit 9; }']
            for number, line in enumerate(lines):
                words = line.split(" ")
                program += [
                    f"COMP_LINE={quote(line)}; COMP_POINT=${{#COMP_LINE}}",
                    "COMP_WORDS=(" + " ".join(quote(w) for w in words) + ")",
                    f"COMP_CWORD={len(words) - 1}; COMPREPLY=()",
                    '"$function" tessera "${COMP_WORDS[COMP_CWORD]}" '
                    '"${COMP_WORDS[COMP_CWORD-1]}"',
                    f'printf "%s\\n" "@@ {number}" "${{COMPREPLY[@]}}"',
                ]
            # Directory values are completed in this directory: one "somedir".
            os.mkdir(os.path.join(work, "somedir"))
            open(os.path.join(work, "somefile"), "w").close()
            run = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(program)],
                                 capture_output=True, text=True, cwd=work, timeout=60)
        if run.returncode != 0:
            failures.append(f"bash exited {run.returncode}: {run.stderr.strip()}")
        elif run.stderr:
            failures.append(f"the completion wrote to stderr: {run.stderr.strip()}")
        answers = {}
        current = None
        for out_line in run.stdout.splitlines():
            if out_line.startswith("@@ "):
                current = lines[int(out_line[3:])]
                answers[current] = set()
            elif current is not None and out_line:
                answers[current].add(out_line)
        return answers


def quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def expect(answers, line, wanted, exact):
    got = answers.get(line)
    if got is None:
        failures.append(f"{line!r}: no answer")
        return
    missing = wanted - got
    extra = got - wanted if exact else set()
    if missing:
        failures.append(f"{line!r} does not offer {sorted(missing)} (offers {sorted(got)})")
    if extra:
        failures.append(f"{line!r} offers {sorted(extra)}, which --help does not name")


def main():
    script, tessera = sys.argv[1:3]
    top = help_text(tessera)
    commands = re.findall(r"^  ([a-z]+)  ", top, re.M)
    if len(commands) < 10:
        failures.append(f"`tessera --help` lists only {commands}: the check reads it wrong")
    checks = [("tessera ", set(commands), True),
              ("tessera --key k.key ", set(commands), True),
              ("tessera re", {c for c in commands if c.startswith("re")}, True),
              ("tessera --", {"--key", "--help", "--version"}, True)]
    for command in commands:
        text = help_text(tessera, command)
        options = defined_options(text)
        named = {"--" + o for o in LONG_OPTION.findall(text)} | {"--help"}
        # Options it offers must be named in --help (exact check against
        # `named`, which includes prose mentions, after the superset check).
        checks.append((f"tessera {command} --", options | {"--help"}, False))
        checks.append((f"tessera {command} --", named, "subset"))
        subs = subcommands(text, command)
        if subs:
            checks.append((f"tessera {command} ", subs, True))
    if not {"--policy", "--max-copies"} <= defined_options(help_text(tessera, "rebalance")):
        failures.append("rebalance --help's options are not read: the check reads it wrong")
    checks += [("tessera rebalance apply x --policy ", {"frequent", "balanced", "lbm"}, True),
               ("tessera keys add --role ", {"meta", "datanode", "mount", "admin"}, True),
               ("tessera up --state ", {"somedir"}, True),
               ("tessera --key ", {"somedir", "somefile"}, True),
               ("tessera fsck --timeout-ms ", set(), True),
               ("tessera rebalance plan ", {"somedir", "somefile"}, True),
               ("tessera rebalance --state somedir ", subcommands(
                   help_text(tessera, "rebalance"), "rebalance"), True)]

    answers = Completer(os.path.abspath(script)).complete_all([c[0] for c in checks])
    for line, wanted, how in checks:
        if how == "subset":
            got = answers.get(line, set())
            if not got <= wanted:
                failures.append(f"{line!r} offers {sorted(got - wanted)}, "
                                "which its --help does not name")
        else:
            expect(answers, line, wanted, how)

    for failure in failures:
        print("completion:", failure)
    print(f"checked the completion of {len(commands)} commands against {tessera} --help")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
