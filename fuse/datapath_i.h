/*
 * @file datapath_i.h
 * The data path's private header: the structs its files share (the data
 * path, an open file, a read-cache slot, a write buffer) and the limits
 * their arrays are sized by. Only the data path's own files include it;
 * everyone else goes through datapath.h.
 *
 * The files, lowest first (each calls only files before it):
 * tileplace.c (node loads, the dynamic pick), tilelocation.c (the
 * location cache, following tiles that move), tileread.c (reading a tile
 * from where this machine reads it), tilecache.c (the read cache),
 * writebehind.c (write buffers and write jobs), filecommit.c (flush,
 * fsync, commits), pagestore.c (stores into the kernel's page cache),
 * openfiles.c (the open-file table, open and release), bufferreclaim.c
 * (the reclaimer thread), readpath.c (reads and their replies), fileattr.c
 * (setattr, punch, attributes), datapath.c (start and stop).
 *
 * Locking: datapath->lock protects the open-file table and each file's
 * reference count (`handles`: kernel handles plus short-lived references
 * taken by setattr/getattr); it is never held across I/O and never taken
 * while a file->lock is held. file->lock protects everything else in the
 * file; waits for jobs use file->changed, which releases it. Workers give
 * budget back before they take file->lock, so a thread waiting for budget
 * while holding file->lock cannot block the workers that would free it.
 * Meta is not asked with file->lock held on the paths every read and write
 * takes (tile lookups, COMMIT, the size of a read past the end): they let
 * it go while meta answers, so anything looked up before such a call is
 * looked up again after it (tilelocation.h). SETATTR, OPEN with a
 * truncation and PUNCH still hold it: the file must not change under them.
 */
#ifndef TESSERA_DATAPATH_I_H
#define TESSERA_DATAPATH_I_H

#include "datapath.h"
#include "sieve.h"
#include "status.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define OPEN_TABLE_BUCKETS 1024
/* Write jobs one file may have in flight. */
#define MAX_WRITES_IN_FLIGHT 16
/* Whole tiles one file may keep in its read cache. */
#define READ_SLOTS 16
/* Tile buffers one file may fill at once (array files; linear ones use 2). */
#define MAX_WRITE_BUFFERS 64
/* Datanodes whose tile writes in flight the mount counts (dynamic placement). */
#define MAX_NODES 256

/*
 * Holders a cached location keeps: copies=2 and a read copy, or a replica
 * being moved, fit. A tile with more is not cached (asked of meta at each
 * use): every holder must be known to write the tile, and a location cache
 * of full tile_locations (TS_MAX_HOLDERS each) cost 184 bytes a slot
 * before tile tokens (over 500 with them); three holders with their
 * tokens are 208 bytes a slot, 13 MiB for one large file at
 * LOCATION_CACHE_MAX.
 */
#define CACHED_HOLDERS 3

/* One tile's struct tile_location, compact (tilelocation.c packs it): 208 bytes
 * (each holder's tile token and its expiry are 40 of them). */
struct cached_location {
    uint64_t tile;
    uint64_t version; /* the primary's */
    uint64_t read_version;
    uint32_t node; /* the primary; 0: slot empty */
    uint32_t read_node;
    uint32_t flags;
    uint32_t holder_count; /* 1..CACHED_HOLDERS */
    struct tile_holder holders[CACHED_HOLDERS];
};

/* A tile written since the last fsync, to be synced on its datanode: one
 * per holder that took the bytes. */
struct dirty_tile {
    uint32_t node;
    uint64_t tile;
    uint64_t version;
};

enum slot_state { SLOT_EMPTY = 0, SLOT_LOADING, SLOT_READY, SLOT_FAILED };

/*
 * One whole tile in the read cache. Its bytes stay where they came in: the
 * datanode's ZeroMQ reply, or the buffer a tile stream read them into (a
 * datanode on this machine); no copy. Readers pin the slot while the
 * kernel copies from it.
 */
struct read_slot {
    enum slot_state state;
    uint64_t tile;
    struct rpc_reply reply; /* from ZeroMQ: reply.data holds the bytes */
    uint8_t *streamed;      /* from a tile stream: the bytes (malloc'd), else NULL */
    bool holds_budget;      /* tile_bytes taken from the read budget */
    uint32_t length;        /* bytes the datanode had; the rest of the tile is zeros */
    bool local;             /* loaded from a datanode on this machine (profiled files) */
    int error;              /* SLOT_FAILED: -errno */
    int pins;               /* readers replying from it */
    bool discard;           /* stale: clear when no longer loading or pinned */
    uint64_t last_use;
    uint64_t served_bytes; /* bytes reads took from it since it was loaded */
    bool sieved;         /* loaded for data sieving, not by read-ahead */
    bool stored;         /* handed to the kernel's page cache */
    uint64_t generation; /* file->generation when its load began */
};

/* SLOT_READY: the slot's `length` bytes, wherever they came in. */
static inline const uint8_t *read_slot_bytes(const struct read_slot *slot)
{
    return slot->streamed ? slot->streamed : (const uint8_t *)slot->reply.data;
}

/* Bytes [low, high) of tile `tile`, not yet sent. */
struct write_buffer {
    bool used;
    uint64_t tile;
    uint32_t low;
    uint32_t high;
    uint8_t *data; /* max_tile_bytes, from the write budget; NULL if not used */
    uint64_t last_use;
    int64_t written_ms;      /* monotonic time of its last write */
    uint64_t profiled_bytes; /* bytes of the requests in it (profiled files) */
};

struct open_file {
    uint64_t ino;
    int handles; /* protected by datapath->lock */
    /* Opens meta counts for the kernel handles of this file (one OPEN
     * each), released as the handles go: protected by datapath->lock. */
    uint32_t meta_opens;
    /* Meta deleted the inode while this mount's session had expired
     * (metaclient_on_lost): every read, write and flush fails with EIO. */
    atomic_bool lost;
    struct open_file *next; /* hash chain, protected by datapath->lock */
    pthread_mutex_t lock;   /* protects all fields below */
    pthread_cond_t changed; /* a job finished */
    struct filetiles layout;
    uint32_t tile_bytes; /* layout.max_tile_bytes: what each buffer and slot holds */
    uint32_t placement;  /* enum ts_placement of new tiles */
    bool profiled;       /* count requests in the profile (as of the last open) */
    uint64_t size;       /* size as this mount sees it */
    /* As of the last open or setattr through this mount; written under
     * lock, read without it by every write (datapath_write_kills_privileges). */
    _Atomic uint32_t mode;
    bool size_dirty; /* size or mtime not yet committed to meta */
    /* Meta's change counter of the inode (ts_attr.change) at the last open
     * here; 0: not known. */
    uint64_t opened_change;
    struct timespec mtime;
    /* Bumped by every write: a COMMIT sent with the lock let go clears
     * size_dirty only if no write came meanwhile. */
    uint64_t writes_made;
    /* A COMMIT is on its way, sent with the lock let go (filecommit_size):
     * the next COMMIT, and every truncation or punch, waits on `changed`
     * for it, so meta never gets an older size after a newer change. */
    bool committing;
    int error; /* first write error not yet reported by flush/fsync */
    struct write_buffer buffers[MAX_WRITE_BUFFERS];
    int buffer_limit;           /* buffers in use at most */
    uint64_t last_written_tile; /* for sequential allocation */
    /* tiles with a write job in flight (at most MAX_WRITES_IN_FLIGHT) */
    uint64_t writing[MAX_WRITES_IN_FLIGHT];
    int writes_in_flight;
    /* buffers taken for writing out, waiting for a job slot: their bytes
     * are in neither a buffer nor `writing`, so reads wait for them too */
    int writeouts_waiting;
    /* They become jobs in the order they were taken (tickets), whichever
     * thread woke first: two of the same tile must not swap. */
    uint64_t writeout_next_ticket;
    uint64_t writeout_turn;
    int loads_in_flight;
    struct read_slot slots[READ_SLOTS];
    uint64_t use_clock;
    uint64_t next_read_offset; /* where a sequential reader goes next */
    /* Tiles a sequential reader has entered in a row (0: none yet) and the
     * last of them: the read-ahead grows with the run, so a reader of a
     * file's head does not load the tiles after it. */
    uint32_t run_tiles;
    uint64_t run_last_tile;
    /* An array file's reader (readpath.c, array_read_ahead): where its last
     * read began and how far the one before it was from there; two equal
     * strides in a row say where the next reads go. */
    uint64_t array_last_offset;
    uint64_t array_stride;
    struct cached_location *locations;
    size_t location_slots; /* a power of two */
    /* Bumped whenever cached locations are forgotten (truncation, punch):
     * an answer of meta asked with the lock let go is kept only if this
     * did not change meanwhile (tilelocation.c). */
    uint64_t locations_epoch;
    struct dirty_tile *dirty;
    size_t dirty_count;
    size_t dirty_cap;
    struct sieve sieve;
    /* Bumped by every write, open and truncation: a tile loaded before
     * may hold bytes the kernel must not get (datapath_store_begin). */
    uint64_t generation;
    int writers;             /* handles open for writing */
    /* Attribute write-back (attrwriteback.h): meta's latest attributes of
     * a file this mount created, and the changes held back since. */
    bool attrs_known;
    struct ts_attr attrs;
    int64_t attrs_learned_ms; /* when meta answered them */
    struct ts_setattr_req attrs_pending; /* valid 0: none */
    struct timespec attrs_pending_ctime;
    int stores_in_progress;  /* tiles being put into the kernel's page cache */
    uint64_t waits_given_up; /* opens and truncations that did not wait for them */
};

/* Tile writes in flight to one datanode, from all files of this mount. */
struct node_load {
    uint32_t node;
    int in_flight;
};

struct datapath {
    struct metaclient *meta;
    struct nodedir *nodes;
    struct workers *workers;
    /* TILE_SYNCs run on their own threads: fsync waits for them with the
     * file's lock held, and every thread of `workers` may be a load of that
     * file waiting for the same lock to finish. */
    struct workers *sync_workers;
    /* The sends of a write job to the holders of its tile after the first
     * (writebehind.c): the job waits for them, so they cannot share its pool. */
    struct workers *replica_workers;
    struct budget write_budget;
    struct budget read_budget;
    uint32_t readahead_tiles;
    int io_timeout_ms;
    struct profiler *profile;   /* NULL: nothing is counted */
    struct tilestream *streams; /* NULL: tiles come over ZeroMQ only */
    /* This mount's commits of sizes and times, for attribute replies
     * assembled across one (attrguard.h). */
    struct attrguard *guard;
    /* What this mount's synchronous creates by root came back owned by
     * (attrwriteback.h): root's (root_owner_kept) or meta's squashed owner. */
    atomic_bool root_owner_kept;
    atomic_bool root_squashed;
    void (*committed)(void *context, uint64_t ino);
    void *committed_context;
    pthread_mutex_t lock;
    struct open_file *buckets[OPEN_TABLE_BUCKETS];
    /* loads_lock protects loads, load_count, next_pick; never held with
     * another lock taken after it */
    pthread_mutex_t loads_lock;
    pthread_cond_t load_dropped;
    struct node_load loads[MAX_NODES];
    size_t load_count;
    uint32_t next_pick; /* rotates ties between equally loaded nodes */
    /* The reclaimer thread: while a writer waits for write budget, it sends
     * the idle buffers of the other open files (a file written a little at
     * a time keeps its partial tiles until close): many such files must not
     * hold the whole budget while their one writer waits for more. */
    pthread_t reclaimer;
    bool reclaimer_running;
    pthread_mutex_t reclaim_lock; /* protects reclaim_wanted and stopping */
    pthread_cond_t reclaim_wake;
    bool reclaim_wanted;
    bool stopping;
    atomic_uint_fast64_t buffers_reclaimed;
    /* Writes of a whole tile that took the request's memory (buffer_fill),
     * and those that had to copy it: logged at exit, read by tests. */
    atomic_uint_fast64_t tiles_taken;
    atomic_uint_fast64_t tiles_copied;
};

/* A project status as the negative errno the data path returns. */
static inline int errno_of_status(int status)
{
    return -status_to_errno(status);
}

#endif
