#!/usr/bin/env python3
"""quadrant_read.py FILE Q ROWS COLS DIRECT: reads quadrant Q (0 top left ..
3 bottom right) of a ROWSxCOLS f32 array FILE as a quadrant reader does, one
pread per row segment (O_DIRECT if DIRECT is 1), and prints the sha256 of its
bytes. Used by tests/integration/test_array_readahead.sh and
bench/quadrants.sh."""
import hashlib
import mmap
import os
import sys

if len(sys.argv) != 6 or sys.argv[1] in ("-h", "--help"):
    sys.exit(__doc__)
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
print(digest.hexdigest())
