#!/usr/bin/env python3
"""What data sieving puts into the kernel's page cache (run by test_sieve.sh).

Usage: sieve_check.py MOUNT1 MOUNT2 (two mounts of one cluster).

A model of the file (a bytearray) is kept beside one file in the mount. Small
random reads through a buffered handle of mount 1 that stays open are
compared with the model after every change: writes through other handles of
mount 1 (pwrite and mmap), concurrent ones, truncation and regrowth, and,
after a reopen (close-to-open), writes and truncations through mount 2. The
reads come back to the same tiles, so tiles are read whole and put into the
page cache (that it happens is checked with mincore()); a page stored older
than a write would be caught by the next comparison, as the handle is never
reopened while mount 1 writes. O_DIRECT reads must never fill the page cache.
Exits 1 with a message naming the first difference.
"""
import ctypes
import mmap
import os
import random
import sys
import threading
import time

PAGE = 4096
READ = 4096
rng = random.Random(3)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def fail(message):
    print(f"sieve_check: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def log(message):
    print(f"# sieve_check: {message}", flush=True)


def resident_pages(fd, start, length):
    """Pages of [start, start + length) in the page cache. Counted through a
    mapping of fd: opening the file again would have the kernel drop them."""
    addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, start)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        fail(f"mmap for mincore failed: {os.strerror(ctypes.get_errno())}")
    pages = (length + PAGE - 1) // PAGE
    vec = ctypes.create_string_buffer(pages)
    try:
        if libc.mincore(addr, length, vec) != 0:
            fail(f"mincore failed: {os.strerror(ctypes.get_errno())}")
    finally:
        libc.munmap(addr, length)
    return sum(b & 1 for b in vec.raw[:pages])


class File:
    """One file in the mounts and the model of its bytes."""

    def __init__(self, mount1, mount2, name):
        self.paths = {1: os.path.join(mount1, name), 2: os.path.join(mount2, name)}
        self.model = bytearray()

    def write(self, mount, offset, data):
        """pwrite through a handle of its own (opened and closed)."""
        fd = os.open(self.paths[mount], os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            if os.pwrite(fd, data, offset) != len(data):
                fail(f"short write of {len(data)} at {offset} on mount {mount}")
        finally:
            os.close(fd)
        if offset > len(self.model):
            self.model.extend(bytes(offset - len(self.model)))
        self.model[offset:offset + len(data)] = data

    def truncate(self, mount, size):
        os.truncate(self.paths[mount], size)
        if size < len(self.model):
            del self.model[size:]
        else:
            self.model.extend(bytes(size - len(self.model)))

    def expect(self, what, offset, got):
        want = bytes(self.model[offset:offset + READ])
        if got != want:
            first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                         min(len(got), len(want)))
            fail(f"{what}: read at {offset} returned {len(got)} bytes, {len(want)} expected; "
                 f"first difference at file offset {offset + first}")

    def check_random(self, what, fd, tiles, count, tile_bytes):
        """count reads of 4 KiB at random offsets (not page aligned), most in
        the given tiles: the second read into a tile has it read whole."""
        for _ in range(count):
            tile = rng.choice(tiles)
            low = tile * tile_bytes
            high = min(low + tile_bytes, len(self.model))
            offset = rng.randrange(low, max(high, low + 1))
            self.expect(what, offset, os.pread(fd, READ, offset))

    def check_all(self, what, fd):
        """Every page of the file, in random order, and past its end."""
        offsets = list(range(0, len(self.model), READ))
        rng.shuffle(offsets)
        for offset in offsets:
            self.expect(what, offset, os.pread(fd, READ, offset))
        if os.pread(fd, READ, len(self.model)) != b"":
            fail(f"{what}: a read at the end ({len(self.model)}) returned bytes")


def open_reader(path):
    fd = os.open(path, os.O_RDONLY)
    # No kernel read-ahead: each read reaches the mount as it is.
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    return fd


def wait_resident(fd, start, length, least, what):
    deadline = time.monotonic() + 5
    while True:
        pages = resident_pages(fd, start, length)
        if pages >= least:
            return pages
        if time.monotonic() > deadline:
            fail(f"{what}: {pages} pages in the page cache, {least} expected")
        time.sleep(0.05)


def wait_size(path, size, what):
    """Another mount's change shows once the kernel's attributes expire."""
    deadline = time.monotonic() + 5
    while os.stat(path).st_size != size:
        if time.monotonic() > deadline:
            fail(f"{what}: size {os.stat(path).st_size} on mount 1, {size} expected")
        time.sleep(0.05)


def main():
    if len(sys.argv) != 3:
        print("usage: sieve_check.py MOUNT1 MOUNT2", file=sys.stderr)
        return 2
    file = File(sys.argv[1], sys.argv[2], "sieved.bin")
    file.write(1, 0, rng.randbytes(8))
    tile_bytes = os.stat(file.paths[1]).st_blksize  # the mount reports the tile size there
    tiles = 20
    # Not a multiple of tiles: the last tile is short and ends in a partial page.
    file.write(1, 0, rng.randbytes(tiles * tile_bytes + 12345))
    last = tiles  # the short tile
    hot = [2, 7, 11, last]
    log(f"tile {tile_bytes} bytes, file {len(file.model)} bytes")

    # Reads that reach the mount from beyond the others are never a stream:
    # start at the end, so every read below is a random one.
    reader = open_reader(file.paths[1])
    direct = os.open(file.paths[1], os.O_RDONLY | os.O_DIRECT)
    file.expect("first read", len(file.model) - 100, os.pread(reader, READ, len(file.model) - 100))

    # Two reads into tile 2 put all of it into the page cache; one read into
    # tile 5 does not; O_DIRECT reads into tile 9 store nothing.
    aligned = mmap.mmap(-1, READ)
    for offset in (9 * tile_bytes + 8192, 9 * tile_bytes + 65536, 9 * tile_bytes + 8192):
        got = os.preadv(direct, [aligned], offset)
        file.expect("O_DIRECT read", offset, bytes(aligned[:got]))
    for offset in (2 * tile_bytes + 5000, 2 * tile_bytes + 700000, 5 * tile_bytes + 4096):
        file.expect("read", offset, os.pread(reader, READ, offset))
    pages = wait_resident(reader, 2 * tile_bytes, tile_bytes, tile_bytes // PAGE,
                          "tile 2 after two small reads")
    log(f"tile 2: {pages} pages in the page cache after two 4 KiB reads")
    if resident_pages(reader, 5 * tile_bytes, tile_bytes) > 2:
        fail("tile 5 was stored after a single read")
    if resident_pages(reader, 9 * tile_bytes, tile_bytes) != 0:
        fail("O_DIRECT reads put tile 9 into the page cache")
    for offset in (last * tile_bytes + 100, last * tile_bytes + 9000):
        file.expect("read of the short tile", offset, os.pread(reader, READ, offset))
    wait_resident(reader, last * tile_bytes, len(file.model) - last * tile_bytes,
                  (len(file.model) - last * tile_bytes + PAGE - 1) // PAGE, "the short tile")
    file.check_all("whole file", reader)
    for offset in range(0, len(file.model), 3 * READ):
        got = os.preadv(direct, [aligned], offset)
        file.expect("O_DIRECT read", offset, bytes(aligned[:got]))

    # Writes through mount 1 while the reader stays open: stored pages of
    # the tiles they touch must not survive them.
    for step in range(12):
        tile = rng.choice(hot[:-1])
        offset = tile * tile_bytes + rng.randrange(tile_bytes) - (step % 3) * 3000
        file.write(1, offset, rng.randbytes(rng.choice([1, 100, 4096, 70000])))
        file.check_random(f"after write {step} on mount 1", reader, hot, 40, tile_bytes)
    file.check_all("after writes on mount 1", reader)

    # Through a shared writable mapping of another handle.
    fd = os.open(file.paths[1], os.O_RDWR)
    with mmap.mmap(fd, len(file.model)) as mapping:
        offset = 7 * tile_bytes + 1234
        data = rng.randbytes(10000)
        mapping[offset:offset + len(data)] = data
        file.model[offset:offset + len(data)] = data
    os.close(fd)
    file.check_random("after an mmap write", reader, hot, 60, tile_bytes)
    file.check_all("after an mmap write", reader)

    # Writers racing the reader, which keeps reading the same tiles (and
    # storing them): one that opens and closes around each write, one that
    # keeps its handle open. When they are done, every page of the still
    # open reader must be the last one written.
    for reopen, count in ((True, 60), (False, 400)):
        stop = threading.Event()
        writes = []

        def writer():
            local = random.Random(count)
            fd = -1
            for _ in range(count):
                offset = local.choice(hot[:-1]) * tile_bytes + local.randrange(tile_bytes - 5000)
                data = local.randbytes(local.choice([512, 4096, 5000]))
                if fd < 0:
                    fd = os.open(file.paths[1], os.O_WRONLY)
                os.pwrite(fd, data, offset)
                if reopen:
                    os.close(fd)
                    fd = -1
                writes.append((offset, data))
            if fd >= 0:
                os.close(fd)
            stop.set()

        thread = threading.Thread(target=writer)
        thread.start()
        reads = 0
        while not stop.is_set():
            offset = rng.choice(hot[:-1]) * tile_bytes + rng.randrange(tile_bytes - READ)
            os.pread(reader, READ, offset)
            reads += 1
        thread.join()
        for offset, data in writes:
            file.model[offset:offset + len(data)] = data
        what = "reopened for each write" if reopen else "keeping its handle open"
        log(f"{len(writes)} writes {what} raced {reads} reads")
        file.check_all(f"after writes {what} racing reads", reader)

    # Truncated and regrown through mount 1, the reader still open.
    file.check_random("before truncation", reader, hot, 40, tile_bytes)
    file.truncate(1, 7 * tile_bytes + 333)
    file.check_random("after truncation", reader, [2, 7], 40, tile_bytes)
    file.write(1, 15 * tile_bytes + 77, rng.randbytes(5000))  # a hole in between
    file.check_random("after regrowth", reader, [2, 7, 11, 15], 80, tile_bytes)
    file.truncate(1, 17 * tile_bytes + 4097)
    file.check_random("after truncating up", reader, [7, 11, 15, 17], 80, tile_bytes)
    file.check_all("after truncation and regrowth on mount 1", reader)

    # Changes through mount 2 show on mount 1 after a reopen (close-to-open).
    for step in range(6):
        file.check_random(f"before change {step} on mount 2", reader, [2, 7, 11, 15], 40,
                          tile_bytes)
        if step == 2:
            file.truncate(2, 11 * tile_bytes + 5)
        elif step == 4:
            file.write(2, 19 * tile_bytes + 1, rng.randbytes(3 * tile_bytes + 999))
        else:
            file.write(2, rng.choice([2, 7, 11]) * tile_bytes + rng.randrange(tile_bytes),
                       rng.randbytes(rng.choice([10, 4096, 300000])))
        wait_size(file.paths[1], len(file.model), f"change {step} on mount 2")
        os.close(reader)
        reader = open_reader(file.paths[1])
        file.check_random(f"after change {step} on mount 2", reader, [2, 7, 11, 15, 20], 60,
                          tile_bytes)
        file.check_all(f"after change {step} on mount 2", reader)

    os.close(reader)
    os.close(direct)
    other = open_reader(file.paths[2])
    file.check_all("on mount 2 at the end", other)
    os.close(other)
    log("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
