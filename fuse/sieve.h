/*
 * @file sieve.h
 * Data sieving for small random reads of one open file: decides when the
 * data path should read a whole tile once instead of the small pieces a
 * reader keeps asking for in it.
 *
 * A read that is part of a stream never comes here (read-ahead serves it),
 * so a sequential reader never pays for sieving. A small read elsewhere
 * "touches" its tile; the tile is worth reading whole when a second touch
 * comes within SIEVE_WINDOW_MS of the one before. A one-shot reader that
 * reads one piece of each tile never touches a tile twice, so it never
 * pays either.
 *
 * What a whole tile is worth depends on who keeps it. For a buffered open
 * the tile goes into the kernel's page cache (datapath_store_begin), and
 * no later read of it reaches the mount: the second touch is reason enough.
 * For an O_DIRECT open only the client's few cached tiles hold it; there a
 * credit counts what sieving saved: each read served from a sieved tile
 * earns one, each whole-tile read costs SIEVE_LOAD_COST. Without credit a
 * direct reader sieves only one tile in SIEVE_PROBE_EVERY second touches,
 * to notice when its pattern got denser. A random reader of a file much
 * bigger than the cache thus pays about 1/SIEVE_PROBE_EVERY of a tile read
 * per small read.
 *
 * Not thread-safe: the caller holds the file's lock.
 */
#ifndef TESSERA_SIEVE_H
#define TESSERA_SIEVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A second touch of a tile within this long makes it worth reading whole. */
#define SIEVE_WINDOW_MS 1000
/* A whole-tile read costs about this many small reads (1 MiB vs 4 KiB:
 * one round trip either way, plus the transfer and the datanode's read). */
#define SIEVE_LOAD_COST 8
/* Without credit, a direct reader still sieves one in this many. */
#define SIEVE_PROBE_EVERY 256
/* Touches remembered: direct-mapped by tile, sized to the file up to this. */
#define SIEVE_TOUCHES_MIN 64
#define SIEVE_TOUCHES_MAX 4096

struct sieve_touch {
    uint64_t tile;
    int64_t at_ms; /* 0: empty */
};

struct sieve {
    struct sieve_touch *touches; /* NULL until the first small random read */
    size_t touch_slots;          /* a power of two */
    int credit;                  /* direct readers: hits earned minus loads paid */
    uint32_t since_probe;        /* second touches refused for lack of credit */
};

/* An empty sieve with the credit of two whole-tile reads. */
void sieve_init(struct sieve *sieve);
void sieve_fini(struct sieve *sieve);

/*
 * A small read that is not part of a stream touched `tile`, one of `tiles`
 * in the file, at now_ms (monotonic, > 0). kernel_keeps: the tile will go
 * into the kernel's page cache (a buffered open). Returns true if the
 * whole tile should be read now (the caller then reads it into its cache
 * and calls sieve_hit for every later read it serves from there). False
 * when memory for the touch table is short.
 */
bool sieve_touch(struct sieve *sieve, uint64_t tile, uint64_t tiles, int64_t now_ms,
                 bool kernel_keeps);

/* A read was served from a tile read whole for sieving. */
void sieve_hit(struct sieve *sieve);

#endif
