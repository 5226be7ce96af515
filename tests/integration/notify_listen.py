#!/usr/bin/env python3
"""A stand-in for systemd's notification socket (run by test_service.sh).

Usage: notify_listen.py SOCKET OUT CHECK

Binds a Unix datagram socket at SOCKET (what $NOTIFY_SOCKET names for a
Type=notify service) and appends every message a daemon sends to OUT, one
line per field. When a message carries READY=1 it checks, at that moment,
that the daemon really serves: CHECK is tcp:PORT (something accepts a TCP
connection on 127.0.0.1:PORT) or mount:DIR (DIR is a mount point), and
appends "CHECK ok" or "CHECK failed". Runs until killed.
"""
import os
import socket
import sys


def serving(check):
    kind, _, what = check.partition(":")
    if kind == "tcp":
        try:
            socket.create_connection(("127.0.0.1", int(what)), timeout=2).close()
            return True
        except OSError:
            return False
    if kind == "mount":
        return os.path.ismount(what)
    raise SystemExit(f"notify_listen.py: unknown check {check}")


def main():
    path, out_path, check = sys.argv[1:4]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    with open(out_path, "a", buffering=1) as out:
        out.write("listening\n")
        while True:
            message = listener.recv(4096).decode("utf-8", "replace")
            fields = message.split("\n")
            verdict = None
            if "READY=1" in fields:
                verdict = "CHECK ok" if serving(check) else "CHECK failed"
            for field in fields:
                if field:
                    out.write(field + "\n")
            if verdict:
                out.write(verdict + "\n")


main()
