/*
 * @file warmer.h
 * Which tiles to bring whole into the page cache. A small read (a 4 KiB
 * O_DIRECT read, say) costs a disk access each time its tile is not
 * cached; once a tile has had a second small read within WARMER_WINDOW_NS,
 * more are likely (random reads over a file), and the whole tile is read
 * ahead in one request (POSIX_FADV_WILLNEED): the data sieving the design
 * asks for, done where the disk is. A tile read once only, or ever more
 * seldom, costs nothing more. Remembers WARMER_SLOTS tiles (a direct-mapped
 * table: a newer tile takes an older one's place). Not thread-safe: callers
 * hold the handlers' lock (nodehandlers.h).
 */
#ifndef TESSERA_DATANODE_WARMER_H
#define TESSERA_DATANODE_WARMER_H

#include <stdbool.h>
#include <stdint.h>

/* Reads below this many bytes count as small. */
#define WARMER_SMALL_BYTES (64u << 10)
/* A second small read of a tile within this long warms it. */
#define WARMER_WINDOW_NS (2 * 1000000000ll)
/* A warmed tile is warmed again at the earliest this much later: it may
 * have left the page cache meanwhile, and a hint for pages that are all
 * cached costs only a walk over them. */
#define WARMER_AGAIN_NS (1000000000ll)
#define WARMER_SLOTS 4096

struct warmer;

/* A new, empty warmer; NULL without memory. */
struct warmer *warmer_new(void);
void warmer_destroy(struct warmer **warmerp);

/*
 * Notes a read of `length` bytes of tile (ino, tile) at now_ns (a monotonic
 * clock); true if the whole tile is to be read into the page cache now.
 */
bool warmer_note(struct warmer *warmer, uint64_t ino, uint64_t tile, uint32_t length,
                 int64_t now_ns);

#endif
