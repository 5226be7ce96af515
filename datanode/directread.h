/*
 * @file directread.h
 * Reads a tile range that is not in the page cache straight from the disk
 * (O_DIRECT) into the caller's buffer, for the tile stream to check and
 * send from there.
 *
 * Why: a cold read through the page cache cost the datanode the cache's
 * fill (allocating and charging pages, the LRU), a copy out of it for the
 * CRC check, sendfile's page references and, for a reader that keeps the
 * bytes, dropping the pages again (nodehandlers_drop_behind): in a profile
 * of a cold `dd` through the mount, 43 % of the datanodes' CPU, where the
 * disk's own copy into the buffer costs the CPU nothing and one send()
 * copies the checked bytes to the socket.
 *
 * Only bytes the reader keeps in its own page cache (TS_STREAM_READ_KEPT:
 * the datanode would drop its copy anyway) are read so, and only a range
 * none of whose pages is cached (cachestat(2), Linux 6.5): cached bytes are
 * cheaper to take from the cache, and a dirty page would have to be written
 * out first. An O_DIRECT reader's bytes still go through the page cache,
 * its only cache. Without cachestat, or on
 * a filesystem that takes no O_DIRECT (tmpfs before Linux 6.6), nothing is
 * read so and the caller reads through the page cache as before.
 */
#ifndef TESSERA_DATANODE_DIRECTREAD_H
#define TESSERA_DATANODE_DIRECTREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* O_DIRECT's alignment of buffer, offset and length: any disk's logical block. */
#define DIRECTREAD_ALIGN 4096u

/*
 * What to read for bytes [offset, offset + length) of a file of `size`
 * bytes (the range within it): the whole CRC blocks (tilecrc.h) that hold
 * them, so every block can be checked from the buffer, the end rounded up
 * to DIRECTREAD_ALIGN. *start is block-aligned.
 */
void directread_span(uint64_t size, uint64_t offset, uint64_t length, uint64_t *start, size_t *len);

/* Whether fd's bytes [start, start + len) have no page in the page cache. */
bool directread_cold(int fd, uint64_t start, size_t len);

/*
 * Reads [start, start + len) of fd (start, len and buf aligned to
 * DIRECTREAD_ALIGN) past the page cache into buf; *got: the bytes read,
 * fewer at the end of the file. fd's flags are as they were afterwards.
 * 0, or a negative errno (-EINVAL: the filesystem takes no O_DIRECT).
 */
int directread_read(int fd, uint64_t start, size_t len, void *buf, size_t *got);

#endif
