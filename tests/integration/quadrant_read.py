#!/usr/bin/env python3
"""quadrant_read.py FILE Q ROWS COLS DIRECT [START_AT]: reads quadrant Q (0 top
left .. 3 bottom right) of a ROWSxCOLS f32 array FILE as a quadrant reader
does, one pread per row segment (O_DIRECT if DIRECT is 1), and prints the
sha256 of its bytes. With START_AT (seconds of CLOCK_MONOTONIC, which every
network namespace shares), it waits until then to open the file and prints
the sha256, then the monotonic times its reading started and ended: a
benchmark's readers then start together, and their time is the reading's,
not their interpreters' start-up. Used by
tests/integration/test_array_readahead.sh and bench/quadrants.sh."""
import hashlib
import mmap
import os
import sys
import time

if len(sys.argv) not in (6, 7) or sys.argv[1] in ("-h", "--help"):
    sys.exit(__doc__)
start_at = float(sys.argv[6]) if len(sys.argv) == 7 else None
if start_at is not None:
    time.sleep(max(0.0, start_at - time.monotonic()))
started = time.monotonic()
path, quadrant, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
direct = sys.argv[5] == "1"
row_bytes = cols * 4
segment = row_bytes // 2
first_row = (quadrant // 2) * (rows // 2)
column = (quadrant % 2) * segment
fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
buf = mmap.mmap(-1, segment)  # page-aligned, as O_DIRECT asks
digest = hashlib.sha256()
for row in range(first_row, first_row + rows // 2):
    if os.preadv(fd, [buf], row * row_bytes + column) != segment:
        sys.exit("short read at row %d" % row)
    digest.update(buf)
if start_at is None:
    print(digest.hexdigest())
else:
    print(digest.hexdigest(), "%.6f" % started, "%.6f" % time.monotonic())
