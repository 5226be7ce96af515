/*
 * @file datapath.c
 * See datapath.h.
 *
 * Writes (write-behind): a write fills the buffer of its tile (a linear file
 * keeps one or two, an array file up to MAX_WRITE_BUFFERS, since a
 * row-major writer fills many tiles at once); a buffer holds one contiguous
 * run of its tile. When it is full, when a write does not touch its run, or
 * when its slot is needed for another tile, it becomes a write job for the
 * worker pool. Up to
 * max_writes_in_flight jobs per file run at once, to all the datanodes in
 * parallel; buffers become jobs in the order they were taken for writing out
 * (whichever thread took them: a writer, a reader settling a tile, flush) and
 * two jobs for the same tile never run together, so writes to one tile land
 * in order. The buffer is handed to ZeroMQ without a copy and its
 * memory returns to the write budget when ZeroMQ has sent it. flush and
 * fsync wait for the file's jobs and report the first error. A writer that
 * finds the budget spent sends its file's other buffers first, then waits
 * while the reclaimer thread sends the idle ones of other open files: files
 * written a little at a time hold partial tiles until close, and enough of
 * them open at once would otherwise hold the whole budget for good.
 *
 * Reads (read-ahead): a sequential reader of a linear file gets whole tiles
 * loaded into the file's tile cache ahead of it, from all their datanodes in
 * parallel, one more tile ahead for each tile it enters in a row, up to
 * readahead_tiles; other reads fetch just the bytes asked for. Tiles on
 * datanodes of this machine go over their tile streams instead, straight
 * into the kernel's page cache: there the kernel's own read-ahead (the
 * bdi's read_ahead_kb, several tiles) keeps enough requests in flight, and
 * the datanodes' stream threads serve them in parallel. Array files always
 * read whole tiles (data sieving: a sub-block reader comes back to the same
 * tile row after row). Cache slots are bounded per file and their memory by
 * the read budget.
 *
 * Data sieving (sieve.h): a small read outside a stream whose tile was
 * touched shortly before reads the whole tile into the cache instead; for a
 * buffered handle the caller then puts the tile into the kernel's page
 * cache (datapath_store_begin/end), so later reads of it never come here.
 * Bytes stored there must never be older than what this mount wrote, nor
 * older than what an open that followed a close elsewhere must see
 * (close-to-open: the kernel drops a file's pages at each open). So a tile
 * is stored only while the file has no handle open for writing here (a
 * writer's write() or mmap could change a page under the store) and no
 * write, open or truncation happened since its load began (`generation`);
 * an open or truncation that comes while a store runs waits for it (see
 * stores_wait for the bound); stores never reach past the file's size.
 *
 * Relocation: every tile request (read, write, truncate) that a datanode
 * answers with TS_ERR_STALE goes through stale_relocate(), which asks meta
 * for the tile's location now and sleeps 5, 10, 20.. up to 100 ms between
 * tries while meta still gives the same one (a move not yet committed, or
 * a frozen tile), until io_timeout_ms have passed: then EIO. Workers never
 * take file->lock to do so (a thread may hold it while it waits for budget
 * the worker holds): they ask meta directly and put the new location into
 * the file's cache when they finish, under the lock they take anyway. A
 * write job retries inside its job, so the tile stays in `writing` and the
 * next write of that tile waits for it: writes of one tile keep their order.
 *
 * Locking: datapath->lock protects the open-file table and each file's
 * reference count (`handles`: kernel handles plus short-lived references
 * taken by setattr/getattr); it is never held across I/O and never taken
 * while a file->lock is held. file->lock protects everything else in the
 * file; waits for jobs use file->changed, which releases it. Workers give
 * budget back before they take file->lock, so a thread waiting for budget
 * while holding file->lock cannot block the workers that would free it.
 */
#include "datapath.h"

#include "log.h"
#include "proto.h"
#include "sieve.h"
#include "status.h"
#include "tile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define OPEN_TABLE_BUCKETS 1024
/* Tile locations remembered per open file, direct-mapped by tile index: a
 * few KiB for small files, so that many open files stay cheap, growing with
 * the file up to a cap (random readers of a big file then find every
 * location without asking meta again). */
#define LOCATION_CACHE_MIN 256
#define LOCATION_CACHE_MAX 65536
/* Tiles asked of meta at once when reading. */
#define TILE_MAP_BATCH 64
/* Tiles allocated at once for a sequential writer. */
#define ALLOCATE_BATCH 16
/* Write jobs one file may have in flight. */
#define MAX_WRITES_IN_FLIGHT 16
/* Whole tiles one file may keep in its read cache. */
#define READ_SLOTS 16
/* Reads of at most this fraction of a tile may be sieved (sieve.h). */
#define SIEVE_MAX_READ_FRACTION 4
/* Tile buffers one file may fill at once (array files; linear ones use 2). */
#define MAX_WRITE_BUFFERS 64
/* Dynamic placement: tile writes in flight per datanode, and tiles handed
 * to a node at once (Panda's batch; small, as the size of a stream is not
 * known ahead). A node gets a batch only when it has room for all of it,
 * so the writer never waits on a slow node while a fast one idles. */
#define NODE_SLOTS 4
#define DYNAMIC_BATCH 2
#define MAX_NODES 256
/* Threads for TILE_SYNC requests: one per datanode of a small cluster. */
#define SYNC_THREADS 4
/* A direct read ending this close to the end of the file may outrun the
 * size the kernel caches: a page, the unit the kernel rounds it to. */
#define DIRECT_READ_NEAR_END 4096
/* Backoff between tries of a tile whose datanode says it is stale while
 * meta still names it (a move about to commit): doubling, capped. */
#define STALE_FIRST_DELAY_MS 5
#define STALE_MAX_DELAY_MS 100
/* How often a write asks meta again while no datanode is up. */
#define NONODES_RETRY_MS 200
/* How often the reclaimer looks again while writers still wait for budget,
 * and how long a buffer must have gone unwritten for it to send it. */
#define RECLAIM_RETRY_MS 20
#define RECLAIM_IDLE_MS 50

struct cached_location {
    uint64_t tile;
    struct tile_location location; /* node 0: slot empty */
};

/* A tile written since the last fsync, to be synced on its datanode. */
struct dirty_tile {
    uint32_t node;
    uint64_t tile;
    uint64_t version;
};

enum slot_state { SLOT_EMPTY = 0, SLOT_LOADING, SLOT_READY, SLOT_FAILED };

/*
 * One whole tile in the read cache. Its bytes stay in the datanode's reply
 * (no copy); readers pin the slot while the kernel copies from it.
 */
struct read_slot {
    enum slot_state state;
    uint64_t tile;
    struct rpc_reply reply; /* SLOT_READY: reply.data holds `length` bytes */
    bool holds_budget;      /* tile_bytes taken from the read budget */
    uint32_t length;        /* bytes the datanode had; the rest of the tile is zeros */
    bool local;             /* loaded from a datanode on this machine (profiled files) */
    int error;              /* SLOT_FAILED: -errno */
    int pins;               /* readers replying from it */
    bool discard;           /* stale: clear when no longer loading or pinned */
    uint64_t last_use;
    bool sieved;         /* loaded for data sieving, not by read-ahead */
    bool stored;         /* handed to the kernel's page cache */
    uint64_t generation; /* file->generation when its load began */
};

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
    int handles;            /* protected by datapath->lock */
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
    struct timespec mtime;
    int error; /* first write error not yet reported by flush/fsync */
    struct write_buffer buffers[MAX_WRITE_BUFFERS];
    int buffer_limit; /* buffers in use at most */
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
    struct cached_location *locations;
    size_t location_slots; /* a power of two */
    struct dirty_tile *dirty;
    size_t dirty_count;
    size_t dirty_cap;
    struct sieve sieve;
    /* Bumped by every write, open and truncation: a tile loaded before
     * may hold bytes the kernel must not get (datapath_store_begin). */
    uint64_t generation;
    int writers;             /* handles open for writing */
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
    struct budget write_budget;
    struct budget read_budget;
    uint32_t readahead_tiles;
    int io_timeout_ms;
    struct profiler *profile; /* NULL: nothing is counted */
    struct tilestream *streams; /* NULL: tiles come over ZeroMQ only */
    /* This mount's commits of sizes and times, for attribute replies
     * assembled across one (attrguard.h). */
    struct attrguard *guard;
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

static int errno_of(int status) { return -status_to_errno(status); }

static void open_file_put(struct datapath *datapath, struct open_file *file);
static void buffer_write_out(struct datapath *datapath, struct open_file *file,
                             struct write_buffer *buffer);

/*
 * Writes out the file's buffers that no write touched for RECLAIM_IDLE_MS
 * (a stream's buffer being filled stays: sent now it would cost its tile
 * two writes). Returns how many. Called with file->lock held.
 */
static uint64_t buffers_write_out_idle(struct datapath *datapath, struct open_file *file)
{
    uint64_t sent = 0;
    for (;;) {
        int64_t now = util_monotonic_ms();
        struct write_buffer *idle = NULL;
        for (int i = 0; i < file->buffer_limit && !idle; i++) {
            struct write_buffer *buffer = &file->buffers[i];
            if (buffer->used && now - buffer->written_ms >= RECLAIM_IDLE_MS)
                idle = buffer;
        }
        if (!idle)
            return sent;
        buffer_write_out(datapath, file, idle); /* may let the lock go: look again */
        sent++;
    }
}

/* Called by budget_take before it waits for write budget. */
static void reclaim_wanted(void *arg)
{
    struct datapath *datapath = arg;
    pthread_mutex_lock(&datapath->reclaim_lock);
    datapath->reclaim_wanted = true;
    pthread_cond_signal(&datapath->reclaim_wake);
    pthread_mutex_unlock(&datapath->reclaim_lock);
}

/*
 * Sends the idle buffers of every open file whose lock is free. A locked
 * file is skipped, not waited for: its holder may be the writer waiting for
 * budget.
 */
static void reclaim_pass(struct datapath *datapath)
{
    size_t count = 0, cap = 64;
    struct open_file **files = malloc(cap * sizeof(*files));
    if (!files)
        return;
    pthread_mutex_lock(&datapath->lock);
    for (size_t i = 0; i < OPEN_TABLE_BUCKETS; i++) {
        for (struct open_file *file = datapath->buckets[i]; file; file = file->next) {
            if (count == cap) {
                struct open_file **more = realloc(files, 2 * cap * sizeof(*files));
                if (!more)
                    goto listed;
                files = more;
                cap *= 2;
            }
            file->handles++; /* kept until open_file_put below */
            files[count++] = file;
        }
    }
listed:
    pthread_mutex_unlock(&datapath->lock);
    for (size_t i = 0; i < count; i++) {
        struct open_file *file = files[i];
        if (pthread_mutex_trylock(&file->lock) == 0) {
            datapath->buffers_reclaimed += buffers_write_out_idle(datapath, file);
            pthread_mutex_unlock(&file->lock);
        }
        open_file_put(datapath, file);
    }
    free(files);
}

/* Reclaims when asked, then every RECLAIM_RETRY_MS while writers still wait
 * (their other files' buffers go idle meanwhile, locked files come free). */
static void *reclaimer_main(void *arg)
{
    struct datapath *datapath = arg;
    pthread_mutex_lock(&datapath->reclaim_lock);
    while (!datapath->stopping) {
        if (!datapath->reclaim_wanted) {
            pthread_cond_wait(&datapath->reclaim_wake, &datapath->reclaim_lock);
            continue;
        }
        datapath->reclaim_wanted = false;
        pthread_mutex_unlock(&datapath->reclaim_lock);
        reclaim_pass(datapath);
        pthread_mutex_lock(&datapath->reclaim_lock);
        if (!datapath->reclaim_wanted && !datapath->stopping &&
            budget_wanted(&datapath->write_budget)) {
            struct timespec until = util_monotonic_deadline(RECLAIM_RETRY_MS);
            pthread_cond_timedwait(&datapath->reclaim_wake, &datapath->reclaim_lock, &until);
            datapath->reclaim_wanted = budget_wanted(&datapath->write_budget);
        }
    }
    pthread_mutex_unlock(&datapath->reclaim_lock);
    return NULL;
}

static struct open_file *open_file_find(struct datapath *datapath, uint64_t ino);

/*
 * Meta deleted ino while this mount's lease had expired: the bytes are gone
 * (or going), so its I/O fails loudly instead of reading holes or writing
 * tiles nobody will ever find (metaclient_on_lost).
 */
static void datapath_lost(void *ctx, uint64_t ino)
{
    struct datapath *datapath = ctx;
    pthread_mutex_lock(&datapath->lock);
    struct open_file *file = open_file_find(datapath, ino);
    if (file)
        atomic_store(&file->lost, true);
    pthread_mutex_unlock(&datapath->lock);
}

struct datapath *datapath_new(struct metaclient *meta, struct nodedir *nodes,
                              struct workers *workers, const struct datapath_config *config)
{
    struct datapath *datapath = calloc(1, sizeof(*datapath));
    if (!datapath)
        return NULL;
    datapath->meta = meta;
    datapath->nodes = nodes;
    datapath->workers = workers;
    datapath->sync_workers = workers_new(SYNC_THREADS);
    datapath->guard = config->guard;
    if (!datapath->sync_workers || !datapath->guard) {
        workers_destroy(&datapath->sync_workers);
        free(datapath);
        return NULL;
    }
    datapath->committed = config->committed;
    datapath->committed_context = config->committed_context;
    datapath->readahead_tiles = config->readahead_tiles;
    datapath->io_timeout_ms = config->io_timeout_ms > 0 ? config->io_timeout_ms : 5000;
    datapath->profile = config->profile;
    datapath->streams = config->streams;
    if (datapath->readahead_tiles > READ_SLOTS - 2)
        datapath->readahead_tiles = READ_SLOTS - 2;
    /* Half for writes in flight, half for cached tiles: neither starves the other. */
    budget_init(&datapath->write_budget, config->memory_bytes / 2);
    budget_init(&datapath->read_budget, config->memory_bytes / 2);
    pthread_mutex_init(&datapath->lock, NULL);
    pthread_mutex_init(&datapath->loads_lock, NULL);
    pthread_cond_init(&datapath->load_dropped, NULL);
    pthread_mutex_init(&datapath->reclaim_lock, NULL);
    util_cond_init_monotonic(&datapath->reclaim_wake);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    datapath->reclaimer_running =
        pthread_create(&datapath->reclaimer, NULL, reclaimer_main, datapath) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!datapath->reclaimer_running) {
        datapath_destroy(&datapath);
        return NULL;
    }
    budget_on_short(&datapath->write_budget, reclaim_wanted, datapath);
    metaclient_on_lost(meta, datapath_lost, datapath);
    return datapath;
}

/* Frees a file with no jobs in flight. */
static void open_file_free(struct datapath *datapath, struct open_file *file)
{
    for (int i = 0; i < READ_SLOTS; i++) {
        rpc_reply_release(&file->slots[i].reply);
        if (file->slots[i].holds_budget)
            budget_give(&datapath->read_budget, file->tile_bytes);
    }
    for (int i = 0; i < MAX_WRITE_BUFFERS; i++) {
        if (file->buffers[i].data) {
            reqmem_free(file->buffers[i].data);
            budget_give(&datapath->write_budget, file->tile_bytes);
        }
    }
    filetiles_fini(&file->layout);
    sieve_fini(&file->sieve);
    pthread_cond_destroy(&file->changed);
    pthread_mutex_destroy(&file->lock);
    free(file->locations);
    free(file->dirty);
    free(file);
}

void datapath_destroy(struct datapath **datapathp)
{
    if (!datapathp || !*datapathp)
        return;
    struct datapath *datapath = *datapathp;
    metaclient_on_lost(datapath->meta, NULL, NULL);
    if (datapath->reclaimer_running) {
        pthread_mutex_lock(&datapath->reclaim_lock);
        datapath->stopping = true;
        pthread_cond_signal(&datapath->reclaim_wake);
        pthread_mutex_unlock(&datapath->reclaim_lock);
        pthread_join(datapath->reclaimer, NULL);
    }
    if (datapath->tiles_taken + datapath->tiles_copied > 0)
        log_info("whole-tile writes: %llu taken from the request, %llu copied",
                 (unsigned long long)datapath->tiles_taken,
                 (unsigned long long)datapath->tiles_copied);
    if (datapath->buffers_reclaimed > 0)
        log_info("sent %llu buffers early to free write budget for other files",
                 (unsigned long long)datapath->buffers_reclaimed);
    for (size_t i = 0; i < OPEN_TABLE_BUCKETS; i++) {
        while (datapath->buckets[i]) {
            struct open_file *file = datapath->buckets[i];
            datapath->buckets[i] = file->next;
            open_file_free(datapath, file);
        }
    }
    workers_destroy(&datapath->sync_workers);
    budget_fini(&datapath->write_budget);
    budget_fini(&datapath->read_budget);
    pthread_cond_destroy(&datapath->load_dropped);
    pthread_mutex_destroy(&datapath->loads_lock);
    pthread_mutex_destroy(&datapath->lock);
    pthread_cond_destroy(&datapath->reclaim_wake);
    pthread_mutex_destroy(&datapath->reclaim_lock);
    free(datapath);
    *datapathp = NULL;
}

static struct open_file **bucket_of(struct datapath *datapath, uint64_t ino)
{
    return &datapath->buckets[ino % OPEN_TABLE_BUCKETS];
}

/* Finds the open file of ino; called with datapath->lock held. */
static struct open_file *open_file_find(struct datapath *datapath, uint64_t ino)
{
    for (struct open_file *file = *bucket_of(datapath, ino); file; file = file->next) {
        if (file->ino == ino)
            return file;
    }
    return NULL;
}

/* The open file of ino with one more reference, or NULL. */
static struct open_file *open_file_get(struct datapath *datapath, uint64_t ino)
{
    pthread_mutex_lock(&datapath->lock);
    struct open_file *file = open_file_find(datapath, ino);
    if (file)
        file->handles++;
    pthread_mutex_unlock(&datapath->lock);
    return file;
}

bool datapath_file_shared(struct datapath *datapath, struct open_file *file)
{
    pthread_mutex_lock(&datapath->lock);
    bool shared = file->handles > 1;
    pthread_mutex_unlock(&datapath->lock);
    return shared;
}

/* ---- read cache ------------------------------------------------------- */

static void slot_clear(struct datapath *datapath, struct open_file *file, struct read_slot *slot)
{
    rpc_reply_release(&slot->reply);
    if (slot->holds_budget)
        budget_give(&datapath->read_budget, file->tile_bytes);
    memset(slot, 0, sizeof(*slot));
}

/* Drops cached tiles in [first, last]: their bytes are about to change. */
static void cache_forget_range(struct datapath *datapath, struct open_file *file, uint64_t first,
                               uint64_t last)
{
    for (int i = 0; i < READ_SLOTS; i++) {
        struct read_slot *slot = &file->slots[i];
        if (slot->state == SLOT_EMPTY || slot->tile < first || slot->tile > last)
            continue;
        if (slot->state == SLOT_LOADING || slot->pins > 0)
            slot->discard = true; /* the loader or the last reader clears it */
        else
            slot_clear(datapath, file, slot);
    }
}

/*
 * Takes the size meta gave for the file. When it grew (another mount wrote
 * past the end this mount knew), the cached tiles from the old end on may
 * hold fewer bytes than the tiles have now, and their zeros must not be
 * served as the new bytes: they are forgotten. Called with file->lock held.
 */
static void size_learned(struct datapath *datapath, struct open_file *file, uint64_t size)
{
    if (size > file->size) {
        uint64_t first = file->layout.array ? 0 : tile_index_of(file->size, file->tile_bytes);
        cache_forget_range(datapath, file, first, UINT64_MAX);
    }
    file->size = size;
}

static struct read_slot *cache_find(struct open_file *file, uint64_t tile)
{
    for (int i = 0; i < READ_SLOTS; i++) {
        struct read_slot *slot = &file->slots[i];
        if (slot->state != SLOT_EMPTY && !slot->discard && slot->tile == tile)
            return slot;
    }
    return NULL;
}

/*
 * Waits for the stores into the kernel's page cache in progress, so that
 * none overlaps the open or truncation the caller does; called with
 * file->lock held, after bumping file->generation so that no new one
 * starts. A store waits only for pages the kernel holds locked for reads
 * and writes in flight, which other threads serve within the I/O timeout;
 * the wait is bounded by it all the same, so that no cycle of waits can
 * hang the mount (datapath_store_end then has the kernel drop what that
 * store put there).
 */
static void stores_wait(struct datapath *datapath, struct open_file *file)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    util_timespec_add_ms(&deadline, datapath->io_timeout_ms);
    while (file->stores_in_progress > 0) {
        if (pthread_cond_timedwait(&file->changed, &file->lock, &deadline) == ETIMEDOUT) {
            log_warn("inode %llu: a store into the page cache still runs after %d ms; "
                     "going on without it",
                     (unsigned long long)file->ino, datapath->io_timeout_ms);
            file->waits_given_up++;
            return;
        }
    }
}

/* One more handle on a file open here. Called with file->lock held. */
static void handle_opened(struct datapath *datapath, struct open_file *file, bool writing)
{
    file->generation++;
    if (writing)
        file->writers++;
    stores_wait(datapath, file);
}

/* The handle being opened came with one open in meta (its OPEN). */
static void meta_open_counted(struct datapath *datapath, struct open_file *file)
{
    pthread_mutex_lock(&datapath->lock);
    file->meta_opens++;
    pthread_mutex_unlock(&datapath->lock);
}

int datapath_open(struct datapath *datapath, const struct ts_attr *attr, const char *array_spec,
                  bool writing, struct open_file **out)
{
    struct open_file *file = open_file_get(datapath, attr->ino);
    struct open_file *created;

    if (file) {
        pthread_mutex_lock(&file->lock);
        handle_opened(datapath, file, writing);
        /* Another mount may have changed the file since (close-to-open). */
        if (!file->size_dirty)
            file->size = attr->size;
        file->mode = attr->mode;
        /* Profiling switched on or off since the file was first opened here
         * takes effect now, for every handle. */
        file->profiled = (attr->flags & TS_ATTR_PROFILED) != 0;
        memset(file->locations, 0, file->location_slots * sizeof(*file->locations));
        cache_forget_range(datapath, file, 0, UINT64_MAX);
        pthread_mutex_unlock(&file->lock);
        meta_open_counted(datapath, file);
        *out = file;
        return 0;
    }
    created = calloc(1, sizeof(*created));
    if (created)
        created->locations = calloc(LOCATION_CACHE_MIN, sizeof(*created->locations));
    if (!created || !created->locations) {
        free(created);
        return -ENOMEM;
    }
    created->location_slots = LOCATION_CACHE_MIN;
    created->ino = attr->ino;
    created->handles = 1;
    if (array_spec) {
        char message[256];
        int error = filetiles_init_array(&created->layout, array_spec, strlen(array_spec), message,
                                      sizeof(message));
        if (error != 0) {
            log_error("inode %llu: bad array layout \"%s\": %s", (unsigned long long)attr->ino,
                      array_spec, message);
            free(created->locations);
            free(created);
            return error == -EINVAL ? -EIO : error;
        }
        created->buffer_limit = MAX_WRITE_BUFFERS;
    } else {
        filetiles_init_linear(&created->layout, attr->tile_bytes);
        created->buffer_limit = 2; /* one filling, one for a writer that steps back */
    }
    created->tile_bytes = created->layout.max_tile_bytes;
    created->placement = attr->placement;
    created->profiled = (attr->flags & TS_ATTR_PROFILED) != 0;
    created->size = attr->size;
    created->mode = attr->mode;
    created->last_written_tile = UINT64_MAX;
    created->writers = writing ? 1 : 0;
    sieve_init(&created->sieve);
    pthread_mutex_init(&created->lock, NULL);
    pthread_cond_init(&created->changed, NULL);

    pthread_mutex_lock(&datapath->lock);
    file = open_file_find(datapath, attr->ino);
    if (file) {
        /* Another thread opened it meanwhile: share its state. */
        file->handles++;
    } else {
        created->next = *bucket_of(datapath, attr->ino);
        *bucket_of(datapath, attr->ino) = created;
        file = created;
        created = NULL;
    }
    pthread_mutex_unlock(&datapath->lock);
    if (created) {
        open_file_free(datapath, created);
        pthread_mutex_lock(&file->lock);
        handle_opened(datapath, file, writing);
        pthread_mutex_unlock(&file->lock);
    }
    meta_open_counted(datapath, file);
    *out = file;
    return 0;
}

/* ---- dynamic placement ------------------------------------------------ */

static struct node_load *node_load_find(struct datapath *datapath, uint32_t node)
{
    for (size_t i = 0; i < datapath->load_count; i++) {
        if (datapath->loads[i].node == node)
            return &datapath->loads[i];
    }
    if (datapath->load_count == MAX_NODES)
        return NULL;
    datapath->loads[datapath->load_count] = (struct node_load){node, 0};
    return &datapath->loads[datapath->load_count++];
}

/* Counts a tile write to `node` starting (+1) or ending (-1). */
static void node_load_change(struct datapath *datapath, uint32_t node, int delta)
{
    pthread_mutex_lock(&datapath->loads_lock);
    struct node_load *load = node_load_find(datapath, node);
    if (load)
        load->in_flight += delta;
    if (delta < 0)
        pthread_cond_broadcast(&datapath->load_dropped);
    pthread_mutex_unlock(&datapath->loads_lock);
}

/*
 * Panda's dynamic allocation with the writer as manager: the datanode that
 * has room for `tiles` more writes first gets them (the least loaded one;
 * ties rotate). Waits while every node is full, with file->lock (held by
 * the caller) released meanwhile. Returns 0 when no node takes tiles (the
 * caller leaves the choice to meta).
 */
static uint32_t dynamic_pick(struct datapath *datapath, struct open_file *file, uint32_t tiles)
{
    uint32_t candidates[MAX_NODES];
    size_t count = nodedir_candidates(datapath->nodes, candidates, MAX_NODES);
    if (count == 0)
        return 0;
    for (;;) {
        uint32_t chosen = 0;
        int best_load = NODE_SLOTS;
        pthread_mutex_lock(&datapath->loads_lock);
        for (size_t k = 0; k < count; k++) {
            uint32_t node = candidates[(datapath->next_pick + k) % count];
            struct node_load *load = node_load_find(datapath, node);
            int in_flight = load ? load->in_flight : 0;
            if (in_flight + (int)tiles <= NODE_SLOTS && in_flight < best_load) {
                best_load = in_flight;
                chosen = node;
            }
        }
        if (chosen != 0) {
            datapath->next_pick++;
            pthread_mutex_unlock(&datapath->loads_lock);
            return chosen;
        }
        /* Not with file->lock held: the write jobs that free the slots take
         * it when they finish, and the workers that run the queued ones may
         * all be waiting for it. (The caller's write-out holds its ticket, so
         * nothing of this file's write-outs moves meanwhile.) */
        pthread_mutex_unlock(&file->lock);
        pthread_cond_wait(&datapath->load_dropped, &datapath->loads_lock);
        pthread_mutex_unlock(&datapath->loads_lock);
        pthread_mutex_lock(&file->lock);
    }
}

/* ---- tile locations --------------------------------------------------- */

static struct cached_location *location_slot(struct open_file *file, uint64_t tile)
{
    return &file->locations[tile & (file->location_slots - 1)];
}

/* Grows the location cache to hold `tiles` tiles (up to the cap). */
static void location_cache_grow(struct open_file *file, uint64_t tiles)
{
    size_t slots = file->location_slots;
    while (slots < tiles && slots < LOCATION_CACHE_MAX)
        slots *= 2;
    if (slots == file->location_slots)
        return;
    struct cached_location *grown = calloc(slots, sizeof(*grown));
    if (!grown)
        return; /* a smaller cache only costs meta round trips */
    for (size_t i = 0; i < file->location_slots; i++) {
        struct cached_location *old = &file->locations[i];
        if (old->location.node != 0)
            grown[old->tile & (slots - 1)] = *old;
    }
    free(file->locations);
    file->locations = grown;
    file->location_slots = slots;
}

static void location_remember(struct open_file *file, uint64_t tile,
                              const struct tile_location *location)
{
    if (location->node == 0)
        return; /* holes are asked again: another mount may fill them */
    if (tile >= file->location_slots)
        location_cache_grow(file, tile + 1);
    struct cached_location *slot = location_slot(file, tile);
    slot->tile = tile;
    slot->location = *location;
}

/*
 * Meta said no datanode is up to take tile: one may be restarting, or meta
 * may have missed their heartbeats for a moment. Asks again every
 * NONODES_RETRY_MS for io_timeout_ms, as long as a silent datanode is
 * waited for, before the write fails. Called with file->lock held; lets it
 * go while sleeping. Returns meta's last status (one tile in *location).
 */
static int nodes_wait_and_allocate(struct datapath *datapath, struct open_file *file, uint64_t tile,
                                   struct tile_location *location)
{
    int64_t deadline_ms = util_monotonic_ms() + datapath->io_timeout_ms;
    int status = TS_ERR_NONODES;

    log_warn("no datanode is up to take inode %llu tile %llu; waiting up to %d ms for one",
             (unsigned long long)file->ino, (unsigned long long)tile, datapath->io_timeout_ms);
    while (status == TS_ERR_NONODES && util_monotonic_ms() < deadline_ms) {
        pthread_mutex_unlock(&file->lock);
        util_sleep_ms(NONODES_RETRY_MS);
        pthread_mutex_lock(&file->lock);
        status = metaclient_tile_map(datapath->meta, file->ino, tile, 1, true, 0, location);
    }
    if (status == TS_OK)
        log_info("inode %llu tile %llu placed on datanode %u after waiting",
                 (unsigned long long)file->ino, (unsigned long long)tile, location->node);
    return status;
}

/*
 * The location of `tile`; with allocate, a hole gets a tile placed by meta
 * (with the following tiles too when the writer is sequential, so meta sees
 * one request per batch, not per tile). location->node is 0 for a hole
 * (only without allocate). Called with file->lock held; an allocation may
 * release it while it waits for a datanode with room (dynamic_pick).
 */
static int location_get(struct datapath *datapath, struct open_file *file, uint64_t tile,
                        bool allocate, struct tile_location *location)
{
    struct cached_location *slot = location_slot(file, tile);
    struct tile_location batch[TILE_MAP_BATCH];
    uint32_t count = 1;
    int status;

    if (slot->location.node != 0 && slot->tile == tile) {
        *location = slot->location;
        return 0;
    }
    uint32_t node = 0;
    if (allocate && file->placement == TS_PLACEMENT_DYNAMIC) {
        count = DYNAMIC_BATCH;
        node = dynamic_pick(datapath, file, count);
    } else if (allocate) {
        if (tile == file->last_written_tile + 1 || (tile == 0 && file->size == 0))
            count = ALLOCATE_BATCH;
    } else {
        /* Reads go forward: fetch the tiles up to the end of the file too. */
        uint64_t tiles_in_file = filetiles_tile_count(&file->layout, file->size);
        if (tiles_in_file > tile + 1)
            count = (uint32_t)(tiles_in_file - tile < TILE_MAP_BATCH ? tiles_in_file - tile
                                                                     : TILE_MAP_BATCH);
    }
    status = metaclient_tile_map(datapath->meta, file->ino, tile, count, allocate, node, batch);
    if ((status == TS_ERR_NOSPC || status == TS_ERR_NONODES) && (count > 1 || node != 0)) {
        /* The batch may not fit, or the node may have filled up since meta
         * last said: one tile, placed by meta. */
        count = 1;
        status = metaclient_tile_map(datapath->meta, file->ino, tile, count, allocate, 0, batch);
    }
    if (status == TS_ERR_NONODES && allocate)
        status = nodes_wait_and_allocate(datapath, file, tile, batch);
    if (status != TS_OK)
        return errno_of(status);
    for (uint32_t i = 0; i < count; i++)
        location_remember(file, tile + i, &batch[i]);
    *location = batch[0];
    return 0;
}

static void locations_forget_from(struct open_file *file, uint64_t first_tile)
{
    for (size_t i = 0; i < file->location_slots; i++) {
        if (file->locations[i].tile >= first_tile)
            memset(&file->locations[i], 0, sizeof(file->locations[i]));
    }
}

static bool location_equal(const struct tile_location *a, const struct tile_location *b)
{
    return a->node == b->node && a->version == b->version && a->copies == b->copies &&
           a->read_node == b->read_node && a->read_version == b->read_version &&
           a->flags == b->flags;
}

/*
 * After a worker followed a tile to `now`: puts it in the cache unless the
 * cache already moved on from `before` (another thread relocated it first).
 * Called with file->lock held.
 */
static void location_replace(struct open_file *file, uint64_t tile,
                             const struct tile_location *before, const struct tile_location *now)
{
    struct cached_location *slot = location_slot(file, tile);
    if (location_equal(before, now))
        return;
    if (slot->location.node != 0 && slot->tile == tile &&
        !location_equal(&slot->location, before))
        return;
    if (now->node == 0) { /* a hole now: asked again next time */
        if (slot->tile == tile)
            memset(slot, 0, sizeof(*slot));
        return;
    }
    location_remember(file, tile, now);
}

/* Where this machine reads a tile: a copy here, or the primary. */
static void read_source(const struct tile_location *location, uint32_t *node, uint64_t *version)
{
    if (location->read_node != 0) {
        *node = location->read_node;
        *version = location->read_version;
    } else {
        *node = location->node;
        *version = location->version;
    }
}

/* ---- tiles that move --------------------------------------------------- */

/* What a request does to a tile: which location it uses, what it may allocate. */
enum tile_access { TILE_ACCESS_READ, TILE_ACCESS_WRITE, TILE_ACCESS_TRUNCATE };

static const char *access_name(enum tile_access access)
{
    return access == TILE_ACCESS_READ    ? "read"
           : access == TILE_ACCESS_WRITE ? "write"
                                         : "truncate";
}

/* The time left to a request that follows a moving tile, and its backoff. */
struct stale_retry {
    bool started;
    int64_t deadline_ms;
    int delay_ms;
};

/* The place a request of this kind goes to: the read source, or the primary. */
static bool location_same_for(enum tile_access access, const struct tile_location *a,
                              const struct tile_location *b)
{
    uint32_t a_node, b_node;
    uint64_t a_version, b_version;
    if (access != TILE_ACCESS_READ)
        return a->node == b->node && a->version == b->version;
    read_source(a, &a_node, &a_version);
    read_source(b, &b_node, &b_version);
    return a_node == b_node && a_version == b_version;
}

/*
 * Called when the datanode of *location answered TS_ERR_STALE for a tile:
 * asks meta where the tile is now and puts that in *location (writes have
 * a missing tile allocated; for reads and truncates node 0 means the tile
 * is a hole now). While meta still names the same place (the move has not
 * committed yet, or the tile is frozen for a moment), sleeps first, 5 ms
 * doubling to 100 ms. Returns 0 to try the datanode again; -EIO (with a log
 * line) once io_timeout_ms have passed since the first STALE; or meta's
 * error. Takes no lock of the data path.
 */
static int stale_relocate(struct datapath *datapath, uint64_t ino, uint64_t tile,
                          enum tile_access access, struct stale_retry *retry,
                          struct tile_location *location)
{
    struct tile_location now;
    int64_t now_ms = util_monotonic_ms();

    if (!retry->started) {
        retry->started = true;
        retry->deadline_ms = now_ms + datapath->io_timeout_ms;
        retry->delay_ms = STALE_FIRST_DELAY_MS;
    }
    if (now_ms >= retry->deadline_ms) {
        log_error("%s of inode %llu tile %llu: datanode %u still refuses the tile as moved or "
                  "being moved, and meta still places it there, after %d ms (a relocation "
                  "stuck? see `tessera rebalance`); failing with EIO",
                  access_name(access), (unsigned long long)ino, (unsigned long long)tile,
                  location->node, datapath->io_timeout_ms);
        return -EIO;
    }
    int status = metaclient_tile_map(datapath->meta, ino, tile, 1,
                                     access == TILE_ACCESS_WRITE, 0, &now);
    if (status != TS_OK) {
        log_error("%s of inode %llu tile %llu: the tile moved and meta cannot say where: %s",
                  access_name(access), (unsigned long long)ino, (unsigned long long)tile,
                  status_text(status));
        return errno_of(status);
    }
    bool same = location_same_for(access, location, &now);
    *location = now;
    if (same) {
        int64_t left = retry->deadline_ms - now_ms;
        util_sleep_ms(retry->delay_ms < left ? retry->delay_ms : left);
        retry->delay_ms = retry->delay_ms * 2 < STALE_MAX_DELAY_MS ? retry->delay_ms * 2
                                                                  : STALE_MAX_DELAY_MS;
    } else {
        log_debug("%s of inode %llu tile %llu: the tile moved to datanode %u",
                  access_name(access), (unsigned long long)ino, (unsigned long long)tile,
                  now.node);
    }
    return 0;
}

/*
 * Has meta drop the read copies of a tile about to be written (so no
 * reader is served a copy older than the primary) and makes *location say
 * so. Takes no lock of the data path.
 */
static int tile_uncopy(struct datapath *datapath, uint64_t ino, uint64_t tile,
                       struct tile_location *location)
{
    int status = metaclient_tile_uncopy(datapath->meta, ino, tile, 1);
    if (status != TS_OK) {
        log_error("inode %llu tile %llu: meta could not drop the tile's %u read copies before "
                  "a write: %s",
                  (unsigned long long)ino, (unsigned long long)tile, location->copies,
                  status_text(status));
        return errno_of(status);
    }
    location->copies = 0;
    location->read_node = location->node;
    location->read_version = location->version;
    return 0;
}

/* ---- write jobs ------------------------------------------------------- */

static int dirty_remember(struct open_file *file, uint32_t node, uint64_t tile,
                          uint64_t version)
{
    if (file->dirty_count > 0) {
        struct dirty_tile *last = &file->dirty[file->dirty_count - 1];
        if (last->node == node && last->tile == tile && last->version == version)
            return 0;
    }
    if (file->dirty_count == file->dirty_cap) {
        size_t new_cap = file->dirty_cap ? file->dirty_cap * 2 : 16;
        struct dirty_tile *grown = realloc(file->dirty, new_cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        file->dirty = grown;
        file->dirty_cap = new_cap;
    }
    file->dirty[file->dirty_count++] = (struct dirty_tile){node, tile, version};
    return 0;
}

static void record_error(struct open_file *file, int error)
{
    if (error != 0 && file->error == 0)
        file->error = error;
}

/*
 * One tile write. The buffer is handed to ZeroMQ without a copy, once per
 * try; the job and its buffer go when the last of the running job and the
 * sends ZeroMQ still holds lets go (refs), and the buffer's memory then
 * returns to the write budget.
 */
struct write_job {
    struct worker_job job;
    struct datapath *datapath;
    struct open_file *file;
    struct tile_location location;
    uint64_t tile;
    uint32_t offset;
    uint32_t length;
    uint8_t *buffer;         /* a whole tile buffer; [offset, offset + length) is sent */
    uint32_t buffer_bytes;   /* its size, from the write budget */
    uint64_t profiled_bytes; /* bytes of profiled requests in it (for local_bytes) */
    atomic_int refs;
};

static void write_job_unref(struct write_job *job)
{
    if (atomic_fetch_sub(&job->refs, 1) != 1)
        return;
    /* ZeroMQ may let go after the file is gone: only the job is used here. */
    reqmem_free(job->buffer);
    budget_give(&job->datapath->write_budget, job->buffer_bytes);
    free(job);
}

/* ZeroMQ is done with one send of a buffer. */
static void write_buffer_free(void *data, void *hint)
{
    (void)data;
    write_job_unref(hint);
}

/* One more send of the buffer (rpc_data_owner.hold_fn): write_send's
 * caller holds the job throughout, so the buffer is still there. */
static void write_buffer_hold(void *hint)
{
    struct write_job *job = hint;
    atomic_fetch_add(&job->refs, 1);
}

/* Sends the job's bytes to the primary of *location. Returns a status. */
static int write_send(struct write_job *job, const struct tile_location *location)
{
    uint8_t payload[64];
    struct rpc_reply reply;
    struct rpc_data_owner owner = {write_buffer_free, job, write_buffer_hold};
    struct ts_tile_write_req request = {.ino = job->file->ino,
                                        .tile = job->tile,
                                        .version = location->version,
                                        .offset = job->offset};
    int len = ts_tile_write_req_encode(&request, payload, sizeof(payload));

    if (job->datapath->streams) {
        int32_t status = TS_OK;
        if (tilestream_write(job->datapath->streams, location->node, &request,
                             job->buffer + job->offset, job->length, &status) == 0 &&
            status == TS_OK)
            return TS_OK;
        /* Anything else over ZeroMQ, whose answer says what it is. */
    }
    atomic_fetch_add(&job->refs, 1); /* ZeroMQ's, dropped by write_buffer_free */
    int status = nodedir_call_owned(job->datapath->nodes, location->node, TS_OP_TILE_WRITE,
                                    payload, (size_t)len, job->buffer + job->offset,
                                    job->length, &owner, &reply);
    rpc_reply_release(&reply);
    return status;
}

static bool tile_is_being_written(const struct open_file *file, uint64_t tile)
{
    for (int i = 0; i < file->writes_in_flight; i++) {
        if (file->writing[i] == tile)
            return true;
    }
    return false;
}

static void write_job_run(struct worker_job *worker_job)
{
    struct write_job *job = (struct write_job *)worker_job;
    struct open_file *file = job->file;
    struct datapath *datapath = job->datapath;
    uint64_t ino = file->ino;
    uint64_t tile = job->tile;
    uint64_t profiled_bytes = job->profiled_bytes;
    struct tile_location planned = job->location; /* as the file's cache had it */
    struct tile_location location = job->location;
    struct stale_retry retry = {0};
    int status;
    int error = 0;

    for (;;) {
        status = write_send(job, &location);
        if (status != TS_ERR_STALE)
            break;
        uint32_t old_node = location.node;
        error = stale_relocate(datapath, ino, tile, TILE_ACCESS_WRITE, &retry, &location);
        if (error == 0 && location.copies > 0)
            error = tile_uncopy(datapath, ino, tile, &location);
        if (error != 0)
            break;
        if (location.node != old_node) {
            node_load_change(datapath, old_node, -1);
            node_load_change(datapath, location.node, +1);
        }
    }
    if (error == 0)
        error = errno_of(status);
    node_load_change(datapath, location.node, -1);
    write_job_unref(job); /* before file->lock: see the top */
    if (error != 0 && status != TS_ERR_STALE)
        log_error("write of inode %llu tile %llu to datanode %u failed: %s",
                  (unsigned long long)ino, (unsigned long long)tile, location.node,
                  status_text(status));
    bool local = error == 0 && profiled_bytes > 0 && datapath->profile &&
                 nodedir_is_local(datapath->nodes, location.node);

    pthread_mutex_lock(&file->lock);
    for (int i = 0; i < file->writes_in_flight; i++) {
        if (file->writing[i] == tile) {
            file->writing[i] = file->writing[--file->writes_in_flight];
            break;
        }
    }
    if (error == 0)
        error = dirty_remember(file, location.node, tile, location.version);
    location_replace(file, tile, &planned, &location);
    record_error(file, error);
    pthread_cond_broadcast(&file->changed);
    pthread_mutex_unlock(&file->lock);
    /* The file may be gone now; ino and the profile are not. */
    if (local) {
        struct profiler_counts delta = {.local_bytes = profiled_bytes};
        profiler_add(datapath->profile, ino, tile, &delta);
    }
}

/* The buffer holding tile `tile`, or NULL. */
static struct write_buffer *buffer_find(struct open_file *file, uint64_t tile)
{
    for (int i = 0; i < file->buffer_limit; i++) {
        if (file->buffers[i].used && file->buffers[i].tile == tile)
            return &file->buffers[i];
    }
    return NULL;
}

/*
 * Hands a write buffer to a write job. Called with file->lock held; may
 * wait (releasing it) for a free job slot. Errors are kept in file->error.
 */
static void buffer_write_out(struct datapath *datapath, struct open_file *file,
                             struct write_buffer *buffer)
{
    struct tile_location location;
    int error;

    if (!buffer->used)
        return;
    struct write_job *job = calloc(1, sizeof(*job));
    if (!job) {
        record_error(file, -ENOMEM);
        return;
    }
    /* The bytes move to the job before any wait below releases file->lock:
     * a write arriving meanwhile gets a buffer of its own. */
    buffer->used = false;
    job->job.run = write_job_run;
    job->datapath = datapath;
    job->file = file;
    job->tile = buffer->tile;
    job->offset = buffer->low;
    job->length = buffer->high - buffer->low;
    job->buffer = buffer->data;
    job->buffer_bytes = file->tile_bytes;
    job->profiled_bytes = buffer->profiled_bytes;
    atomic_init(&job->refs, 1);
    buffer->data = NULL;
    buffer->profiled_bytes = 0;
    /* The write before, to the same tile, may move the tile: look it up after. */
    uint64_t ticket = file->writeout_next_ticket++;
    file->writeouts_waiting++;
    while (ticket != file->writeout_turn || file->writes_in_flight == MAX_WRITES_IN_FLIGHT ||
           tile_is_being_written(file, job->tile))
        pthread_cond_wait(&file->changed, &file->lock);
    error = location_get(datapath, file, job->tile, true, &location);
    if (error != 0)
        log_error("no tile for inode %llu tile %llu: %s", (unsigned long long)file->ino,
                  (unsigned long long)job->tile, strerror(-error));
    if (error == 0 && location.copies > 0) {
        error = tile_uncopy(datapath, file->ino, job->tile, &location);
        if (error == 0)
            location_remember(file, job->tile, &location);
    }
    file->writeouts_waiting--;
    file->writeout_turn++;
    pthread_cond_broadcast(&file->changed);
    if (error != 0) {
        record_error(file, error); /* the bytes are lost: the error reports it */
        write_job_unref(job);
        return;
    }
    file->last_written_tile = job->tile;
    /* A read-ahead may have cached the tile's old bytes meanwhile. */
    cache_forget_range(datapath, file, job->tile, job->tile);
    job->location = location;
    file->writing[file->writes_in_flight++] = job->tile;
    node_load_change(datapath, location.node, +1);
    workers_submit(datapath->workers, &job->job);
}

/* Writes out every buffer, lowest tile first (sequential allocation). */
static void buffers_write_out(struct datapath *datapath, struct open_file *file)
{
    for (;;) {
        struct write_buffer *lowest = NULL;
        for (int i = 0; i < file->buffer_limit; i++) {
            struct write_buffer *buffer = &file->buffers[i];
            if (buffer->used && (!lowest || buffer->tile < lowest->tile))
                lowest = buffer;
        }
        if (!lowest)
            return;
        buffer_write_out(datapath, file, lowest);
    }
}

/*
 * Makes the bytes this mount wrote to `tile` visible to a datanode read:
 * sends its buffer and waits for its write job.
 */
static void tile_settle(struct datapath *datapath, struct open_file *file, uint64_t tile)
{
    struct write_buffer *buffer = buffer_find(file, tile);
    if (buffer)
        buffer_write_out(datapath, file, buffer);
    while (file->writeouts_waiting > 0 || tile_is_being_written(file, tile))
        pthread_cond_wait(&file->changed, &file->lock);
}

/* Waits until no write job of the file runs. Called with file->lock held. */
static void writes_wait(struct open_file *file)
{
    while (file->writes_in_flight > 0 || file->writeouts_waiting > 0)
        pthread_cond_wait(&file->changed, &file->lock);
}

/* Tells the guard and the owner that meta now has attr, this mount's change. */
static void committed_note(struct datapath *datapath, const struct ts_attr *attr)
{
    attrguard_record(datapath->guard, attr);
    if (datapath->committed)
        datapath->committed(datapath->committed_context, attr->ino);
}

/* Commits size and mtime if this mount changed them. */
static int commit_size(struct datapath *datapath, struct open_file *file, int sync)
{
    struct ts_attr attr;
    int status;
    if (!file->size_dirty && !sync)
        return 0;
    status = metaclient_commit(datapath->meta, file->ino, file->size,
                               file->size_dirty ? &file->mtime : NULL, sync, &attr);
    if (status != TS_OK)
        return errno_of(status);
    /* Recorded before size_dirty is cleared: an attribute reply being put
     * together meanwhile finds the size here or is refused as older. */
    if (file->size_dirty)
        committed_note(datapath, &attr);
    file->size_dirty = false;
    size_learned(datapath, file, attr.size);
    return 0;
}

/* Takes the pending error, reporting it once. */
static int take_error(struct open_file *file)
{
    int error = file->error;
    file->error = 0;
    return error;
}

/* Writes out everything and waits for it; returns the pending error. */
static int write_everything(struct datapath *datapath, struct open_file *file)
{
    buffers_write_out(datapath, file);
    writes_wait(file);
    return take_error(file);
}

int datapath_flush(struct datapath *datapath, struct open_file *file)
{
    int result;
    if (atomic_load(&file->lost))
        return -EIO;
    pthread_mutex_lock(&file->lock);
    result = write_everything(datapath, file);
    if (result == 0)
        result = commit_size(datapath, file, 0);
    pthread_mutex_unlock(&file->lock);
    return result;
}

/* One TILE_SYNC request: all tiles of one datanode. */
struct sync_job {
    struct worker_job job;
    struct datapath *datapath;
    uint32_t node;
    uint8_t *payload;
    size_t payload_len;
    int status;
    /* completion: shared by the sync jobs of one fsync */
    pthread_mutex_t *lock;
    pthread_cond_t *done;
    int *pending;
};

static void sync_job_run(struct worker_job *worker_job)
{
    struct sync_job *job = (struct sync_job *)worker_job;
    struct rpc_reply reply;
    job->status = nodedir_call(job->datapath->nodes, job->node, TS_OP_TILE_SYNC, job->payload,
                               job->payload_len, NULL, 0, &reply);
    rpc_reply_release(&reply);
    pthread_mutex_lock(job->lock);
    (*job->pending)--;
    pthread_cond_broadcast(job->done);
    pthread_mutex_unlock(job->lock);
}

/* Encodes a TILE_SYNC request for the dirty tiles on `node`. */
static int sync_job_prepare(struct open_file *file, uint32_t node, struct sync_job *job)
{
    size_t count = 0;
    for (size_t i = 0; i < file->dirty_count; i++)
        count += file->dirty[i].node == node;
    size_t records_len = count * TS_GARBAGE_RECORD_BYTES;
    uint8_t *records = malloc(records_len + 1);
    job->payload_len = records_len + 16;
    job->payload = malloc(job->payload_len);
    if (!records || !job->payload) {
        free(records);
        return -ENOMEM;
    }
    struct ts_writer writer;
    ts_writer_init(&writer, records, records_len);
    for (size_t i = 0; i < file->dirty_count; i++) {
        if (file->dirty[i].node != node)
            continue;
        ts_writer_u64(&writer, file->ino);
        ts_writer_u64(&writer, file->dirty[i].tile);
        ts_writer_u64(&writer, file->dirty[i].version);
    }
    struct ts_tile_sync_req request = {.count = (uint32_t)count,
                                       .tiles = {(const char *)records, (uint32_t)writer.len}};
    int len = ts_tile_sync_req_encode(&request, job->payload, job->payload_len);
    free(records);
    if (len < 0)
        return -EINVAL;
    job->payload_len = (size_t)len;
    job->node = node;
    return 0;
}

/*
 * Has every datanode sync the tiles written to it since the last fsync, all
 * nodes in parallel. Called with file->lock held (no writes in flight).
 */
static int sync_dirty_tiles(struct datapath *datapath, struct open_file *file)
{
    uint32_t nodes[64];
    size_t node_count = 0;
    struct sync_job jobs[64];
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t done = PTHREAD_COND_INITIALIZER;
    int pending = 0;
    int result = 0;

    for (size_t i = 0; i < file->dirty_count; i++) {
        size_t known = 0;
        while (known < node_count && nodes[known] != file->dirty[i].node)
            known++;
        if (known == node_count && node_count < 64)
            nodes[node_count++] = file->dirty[i].node;
    }
    memset(jobs, 0, sizeof(jobs));
    for (size_t n = 0; n < node_count; n++) {
        if (sync_job_prepare(file, nodes[n], &jobs[n]) != 0) {
            result = -ENOMEM;
            break;
        }
        jobs[n].job.run = sync_job_run;
        jobs[n].datapath = datapath;
        jobs[n].lock = &lock;
        jobs[n].done = &done;
        jobs[n].pending = &pending;
        pthread_mutex_lock(&lock);
        pending++;
        pthread_mutex_unlock(&lock);
        workers_submit(datapath->sync_workers, &jobs[n].job);
    }
    pthread_mutex_lock(&lock);
    while (pending > 0)
        pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
    for (size_t n = 0; n < node_count; n++) {
        /* STALE: a tile moved since it was written; the move's pull stored
         * it synced on its new datanode. */
        if (result == 0 && jobs[n].payload && jobs[n].status != TS_OK &&
            jobs[n].status != TS_ERR_STALE)
            result = errno_of(jobs[n].status);
        free(jobs[n].payload);
    }
    if (result == 0)
        file->dirty_count = 0;
    return result;
}

int datapath_fsync(struct datapath *datapath, struct open_file *file)
{
    int result;
    if (atomic_load(&file->lost))
        return -EIO;
    pthread_mutex_lock(&file->lock);
    result = write_everything(datapath, file);
    if (result == 0)
        result = sync_dirty_tiles(datapath, file);
    if (result == 0)
        result = commit_size(datapath, file, 1);
    pthread_mutex_unlock(&file->lock);
    return result;
}

/* Drops one reference; the last one writes out, frees and tells meta. */
static void open_file_put(struct datapath *datapath, struct open_file *file)
{
    bool last;
    uint64_t ino = file->ino;
    uint32_t meta_opens = 0;

    pthread_mutex_lock(&datapath->lock);
    last = --file->handles == 0;
    if (last) {
        struct open_file **link = bucket_of(datapath, file->ino);
        while (*link != file)
            link = &(*link)->next;
        *link = file->next;
        meta_opens = file->meta_opens;
    }
    pthread_mutex_unlock(&datapath->lock);
    if (!last)
        return;
    /* flush() normally did this already; a release without flush (mmap
     * writeback after close) still must not lose data. */
    pthread_mutex_lock(&file->lock);
    if (!atomic_load(&file->lost) && write_everything(datapath, file) == 0)
        commit_size(datapath, file, 0);
    while (file->loads_in_flight > 0)
        pthread_cond_wait(&file->changed, &file->lock);
    pthread_mutex_unlock(&file->lock);
    open_file_free(datapath, file);
    /* After the data is out: meta may delete an unlinked file at the last. */
    for (uint32_t i = 0; i < meta_opens; i++)
        metaclient_release(datapath->meta, ino);
}

void datapath_release(struct datapath *datapath, struct open_file *file, bool writing)
{
    bool release_now = false;
    if (writing) {
        pthread_mutex_lock(&file->lock);
        file->writers--;
        pthread_mutex_unlock(&file->lock);
    }
    /* Each handle came with an open in meta: released with it while
     * another handle keeps one, else by the last reference, once its
     * writes are out (open_file_put). */
    pthread_mutex_lock(&datapath->lock);
    if (file->meta_opens > 1 && file->handles > 1) {
        file->meta_opens--;
        release_now = true;
    }
    pthread_mutex_unlock(&datapath->lock);
    if (release_now)
        metaclient_release(datapath->meta, file->ino);
    open_file_put(datapath, file);
}

/* The file's least recently written buffer in use, or NULL. */
static struct write_buffer *buffer_oldest(struct open_file *file)
{
    struct write_buffer *oldest = NULL;
    for (int i = 0; i < file->buffer_limit; i++) {
        struct write_buffer *buffer = &file->buffers[i];
        if (buffer->used && (!oldest || buffer->last_use < oldest->last_use))
            oldest = buffer;
    }
    return oldest;
}

/*
 * A tile's worth of memory from the write budget, or NULL if malloc fails.
 * While the budget is short the file's own buffers go out first: the
 * reclaimer, which sends other files' buffers, cannot take this file's lock.
 * Called with file->lock held; may let it go meanwhile (buffer_write_out).
 */
static uint8_t *buffer_memory(struct datapath *datapath, struct open_file *file)
{
    while (!budget_try_take(&datapath->write_budget, file->tile_bytes)) {
        struct write_buffer *oldest = buffer_oldest(file);
        if (!oldest) {
            budget_take(&datapath->write_budget, file->tile_bytes);
            break;
        }
        buffer_write_out(datapath, file, oldest);
    }
    uint8_t *data = reqmem_new(file->tile_bytes);
    if (!data)
        budget_give(&datapath->write_budget, file->tile_bytes);
    return data;
}

/*
 * The buffer for a write to [low, high) of tile: the tile's own if the
 * write touches its run, else a fresh one (sending whatever stood in the
 * way). NULL on allocation failure. Called with file->lock held. Whatever
 * lets the lock go (a write-out waiting for a job slot, memory) is followed
 * by a fresh look: another writer may have taken the slot meanwhile.
 */
static struct write_buffer *buffer_for_write(struct datapath *datapath, struct open_file *file,
                                             uint64_t tile, uint32_t low, uint32_t high)
{
    uint8_t *memory = NULL; /* taken for the buffer, not yet in it */
    struct write_buffer *buffer;
    for (;;) {
        buffer = buffer_find(file, tile);
        if (buffer && low <= buffer->high && high >= buffer->low)
            break;
        if (buffer) {
            buffer_write_out(datapath, file, buffer); /* not contiguous: send the old run */
            continue;
        }
        for (int i = 0; i < file->buffer_limit && !buffer; i++) {
            if (!file->buffers[i].used)
                buffer = &file->buffers[i];
        }
        if (!buffer) {
            buffer_write_out(datapath, file, buffer_oldest(file));
            continue;
        }
        if (!buffer->data && !memory) {
            memory = buffer_memory(datapath, file);
            if (!memory)
                return NULL;
            continue;
        }
        if (!buffer->data) {
            buffer->data = memory;
            memory = NULL;
        }
        buffer->used = true;
        buffer->tile = tile;
        buffer->low = low;
        buffer->high = high;
        break;
    }
    if (memory) { /* a buffer with memory of its own came free meanwhile */
        reqmem_free(memory);
        budget_give(&datapath->write_budget, file->tile_bytes);
    }
    return buffer;
}

/*
 * Puts a segment of a write into its buffer. A segment that is a whole tile,
 * held in the request's own memory (request), is not copied: the buffer and
 * the request thread exchange their memory, both reqmem of the same size.
 */
static void buffer_fill(struct datapath *datapath, struct write_buffer *buffer, const char *bytes,
                        uint32_t low, uint32_t length, uint32_t tile_bytes,
                        const struct reqmem_slot *request)
{
    bool whole_tile = low == 0 && length == tile_bytes;
    if (whole_tile && request && request->payload_bytes == tile_bytes &&
        (const uint8_t *)bytes == *request->payload) {
        uint8_t *own = buffer->data;
        buffer->data = *request->payload;
        *request->payload = own;
        datapath->tiles_taken++;
        return;
    }
    memcpy(buffer->data + low, bytes, length);
    if (whole_tile)
        datapath->tiles_copied++;
}

ssize_t datapath_write(struct datapath *datapath, struct open_file *file, const char *buf,
                       size_t size, uint64_t offset, const struct reqmem_slot *request)
{
    struct filetiles_walk walk;
    struct tile_segment segment;
    struct profiler_batch batch;
    ssize_t result = (ssize_t)size;

    if (size > (uint64_t)INT64_MAX - offset)
        return -EFBIG;
    pthread_mutex_lock(&file->lock);
    bool profiled = file->profiled && datapath->profile;
    if (profiled)
        profiler_batch_init(&batch, file->ino, true);
    if (file->error != 0 || atomic_load(&file->lost)) {
        result = file->error != 0 ? file->error : -EIO;
        goto out;
    }
    if (file->layout.array && offset + size > file->layout.array->array_bytes) {
        result = -EFBIG; /* an array file has the size its layout declares */
        goto out;
    }
    file->generation++; /* tiles loaded before must not reach the page cache */
    filetiles_walk_init(&walk, &file->layout, offset, size);
    while (filetiles_walk_next(&walk, &segment)) {
        uint32_t low = segment.tile_offset;
        uint32_t high = segment.tile_offset + segment.length;
        cache_forget_range(datapath, file, segment.tile, segment.tile);
        struct write_buffer *buffer = buffer_for_write(datapath, file, segment.tile, low, high);
        if (!buffer) {
            result = -ENOMEM;
            goto out;
        }
        buffer_fill(datapath, buffer, buf + (segment.file_offset - offset), low, segment.length,
                    file->tile_bytes, request);
        if (profiled) {
            /* Whether these bytes are local is known when the buffer is sent. */
            profiler_batch_add(datapath->profile, &batch, segment.tile, segment.length, false);
            buffer->profiled_bytes += segment.length;
        }
        if (low < buffer->low)
            buffer->low = low;
        if (high > buffer->high)
            buffer->high = high;
        buffer->last_use = ++file->use_clock;
        buffer->written_ms = util_monotonic_ms();
        if (buffer->high - buffer->low == filetiles_tile_bytes(&file->layout, segment.tile))
            buffer_write_out(datapath, file, buffer);
    }
    if (file->error != 0) {
        result = file->error;
        goto out;
    }
    if (offset + size > file->size)
        file->size = offset + size;
    file->size_dirty = true;
    file->mtime = util_now();
out:
    pthread_mutex_unlock(&file->lock);
    if (profiled && result >= 0)
        profiler_batch_commit(datapath->profile, &batch);
    return result;
}

/* ---- reads ------------------------------------------------------------ */

/*
 * A datanode had no file for a tile at the place meta names for it now
 * (read from `node`, the tile's read source in *location). Without
 * TS_TILE_STORED the tile was placed but never written: a hole, 0. With
 * it, a holder reported the file, so this one lost it (deleted, a disk
 * that lost it, a data directory replaced): a lost copy is logged and
 * given up for the primary (-EAGAIN: read again), a lost primary is
 * logged (file, tile, datanode id and address) and fails with -EIO, never
 * read as zeros. Takes no lock of the data path.
 */
static int read_missing(struct datapath *datapath, uint64_t ino, uint64_t tile, uint32_t node,
                        struct tile_location *location)
{
    char endpoint[128];
    if (!(location->flags & TS_TILE_STORED))
        return 0;
    /* Another node may answer at its address now (nodedir_call refuses it then). */
    nodedir_suspect(datapath->nodes);
    nodedir_endpoint(datapath->nodes, node, endpoint, sizeof(endpoint));
    if (node != location->node) {
        log_error("inode %llu tile %llu: its read copy on datanode %u (%s) has no file, though "
                  "the tile was written: the copy is lost there; reading the primary on "
                  "datanode %u",
                  (unsigned long long)ino, (unsigned long long)tile, node, endpoint,
                  location->node);
        location->read_node = location->node;
        location->read_version = location->version;
        return -EAGAIN;
    }
    log_error("read of inode %llu tile %llu failed: datanode %u (%s) has no file for it "
              "(version %llu), though the tile was written: the tile is lost there (its file "
              "deleted, or the datanode's data directory wiped or replaced); failing with EIO, "
              "not reading zeros",
              (unsigned long long)ino, (unsigned long long)tile, node, endpoint,
              (unsigned long long)location->version);
    return -EIO;
}

/*
 * Reads part of a tile into `reply` (reply->data_len bytes; the rest of the
 * range holds nothing: zeros) from where this machine reads it, following
 * the tile if it moves: *location ends as the place it was read from
 * (node 0: the tile became a hole, and reply is empty). A tile whose file
 * its datanode lacks is a hole only if meta says it was never written
 * (read_missing(): else -EIO). A read copy that fails for another reason
 * is given up for the primary. The caller
 * releases reply in every case. Takes no lock of the data path.
 */
static int read_tile(struct datapath *datapath, uint64_t ino, uint64_t tile,
                     uint32_t tile_offset, uint32_t length, struct tile_location *location,
                     struct rpc_reply *reply)
{
    struct stale_retry retry = {0};
    bool asked_missing = false;
    uint8_t payload[64];

    for (;;) {
        uint32_t node;
        uint64_t version;
        memset(reply, 0, sizeof(*reply));
        if (location->node == 0)
            return 0;
        read_source(location, &node, &version);
        struct ts_tile_read_req request = {.ino = ino,
                                           .tile = tile,
                                           .version = version,
                                           .offset = tile_offset,
                                           .length = length};
        int len = ts_tile_read_req_encode(&request, payload, sizeof(payload));
        int status = nodedir_call(datapath->nodes, node, TS_OP_TILE_READ, payload, (size_t)len,
                                  NULL, 0, reply);
        if (status == TS_OK && reply->data_len > length)
            status = TS_ERR_BADMSG;
        if (status == TS_OK)
            return 0;
        rpc_reply_release(reply);
        if (status == TS_ERR_STALE) {
            int error = stale_relocate(datapath, ino, tile, TILE_ACCESS_READ, &retry, location);
            if (error != 0)
                return error;
            continue;
        }
        if (status == TS_ERR_NOENT && !asked_missing) {
            /*
             * No file there: a tile placed but not written yet (a hole), a
             * copy or old place deleted after this mount cached it, or a
             * lost file. Meta tells which: another place is retried; at the
             * same place it says whether a holder ever reported the file
             * (cached records may predate that report).
             */
            struct tile_location now;
            asked_missing = true;
            status = metaclient_tile_map(datapath->meta, ino, tile, 1, 0, 0, &now);
            if (status != TS_OK)
                return errno_of(status);
            memset(reply, 0, sizeof(*reply));
            bool same = location_same_for(TILE_ACCESS_READ, location, &now);
            *location = now;
            if (!same)
                continue;
            status = TS_ERR_NOENT;
        }
        if (status == TS_ERR_NOENT) {
            /* Meta names this place now: read_missing() says what that means. */
            int error = read_missing(datapath, ino, tile, node, location);
            if (error != -EAGAIN)
                return error;
            continue;
        }
        if (node != location->node) {
            log_warn("read of inode %llu tile %llu from its copy on datanode %u failed: %s; "
                     "reading the primary on datanode %u",
                     (unsigned long long)ino, (unsigned long long)tile, node,
                     status_text(status), location->node);
            location->read_node = location->node;
            location->read_version = location->version;
            continue;
        }
        log_error("read of inode %llu tile %llu from datanode %u failed: %s",
                  (unsigned long long)ino, (unsigned long long)tile, node, status_text(status));
        return errno_of(status);
    }
}

/* True if the tile is read from a datanode on this machine. */
static bool read_is_local(struct datapath *datapath, const struct tile_location *location)
{
    uint32_t node;
    uint64_t version;
    if (location->node == 0)
        return false;
    read_source(location, &node, &version);
    return nodedir_is_local(datapath->nodes, node);
}

struct load_job {
    struct worker_job job;
    struct datapath *datapath;
    struct open_file *file;
    struct read_slot *slot;
    struct tile_location location;
    uint64_t tile;
};

static void load_job_run(struct worker_job *worker_job)
{
    struct load_job *job = (struct load_job *)worker_job;
    struct open_file *file = job->file;
    struct read_slot *slot = job->slot;
    struct tile_location location = job->location;
    /* Nobody else touches a LOADING slot, so the reply goes straight into
     * it: a zmq_msg_t must not be copied (small messages live inside it). */
    int error = read_tile(job->datapath, file->ino, job->tile, 0,
                          filetiles_tile_bytes(&file->layout, job->tile), &location, &slot->reply);
    bool local = error == 0 && job->datapath->profile && read_is_local(job->datapath, &location);
    pthread_mutex_lock(&file->lock);
    location_replace(file, job->tile, &job->location, &location);
    slot->local = local;
    slot->state = error == 0 ? SLOT_READY : SLOT_FAILED;
    slot->error = error;
    slot->length = error == 0 ? (uint32_t)slot->reply.data_len : 0;
    if (slot->discard)
        slot_clear(job->datapath, file, slot);
    file->loads_in_flight--;
    pthread_cond_broadcast(&file->changed);
    pthread_mutex_unlock(&file->lock);
    free(job);
}

/* A slot to load a tile into: a free one, else the least recently used. */
static struct read_slot *cache_victim(struct datapath *datapath, struct open_file *file)
{
    struct read_slot *victim = NULL;
    for (int i = 0; i < READ_SLOTS; i++) {
        struct read_slot *slot = &file->slots[i];
        if (slot->state == SLOT_EMPTY)
            return slot;
        if (slot->state == SLOT_LOADING || slot->pins > 0 || slot->discard)
            continue;
        if (!victim || slot->last_use < victim->last_use)
            victim = slot;
    }
    if (victim)
        slot_clear(datapath, file, victim);
    return victim;
}

/*
 * Starts loading a whole tile into the cache. Returns the slot, or NULL when
 * there is no memory or slot for it (the caller reads directly instead).
 * Called with file->lock held.
 */
static struct read_slot *cache_load(struct datapath *datapath, struct open_file *file,
                                    uint64_t tile, int *error)
{
    struct tile_location location;
    struct read_slot *slot;

    *error = 0;
    /* Bytes this mount has not written out yet would be missed. */
    if (buffer_find(file, tile) || tile_is_being_written(file, tile))
        return NULL;
    *error = location_get(datapath, file, tile, false, &location);
    if (*error != 0)
        return NULL;
    if (location.node != 0 && !budget_try_take(&datapath->read_budget, file->tile_bytes))
        return NULL;
    struct load_job *job = location.node != 0 ? calloc(1, sizeof(*job)) : NULL;
    slot = (location.node == 0 || job) ? cache_victim(datapath, file) : NULL;
    if (!slot) {
        free(job);
        if (location.node != 0)
            budget_give(&datapath->read_budget, file->tile_bytes);
        return NULL;
    }
    slot->tile = tile;
    slot->last_use = ++file->use_clock;
    slot->generation = file->generation;
    if (location.node == 0) { /* a hole: nothing to fetch */
        slot->state = SLOT_READY;
        slot->length = 0;
        return slot;
    }
    slot->holds_budget = true;
    slot->state = SLOT_LOADING;
    job->job.run = load_job_run;
    job->datapath = datapath;
    job->file = file;
    job->slot = slot;
    job->location = location;
    job->tile = tile;
    file->loads_in_flight++;
    workers_submit(datapath->workers, &job->job);
    return slot;
}

/*
 * Starts loading the tiles after `tile` that a sequential reader will want:
 * as many as it has entered in a row, up to readahead_tiles (as the
 * kernel's read-ahead ramps up).
 */
static void cache_read_ahead(struct datapath *datapath, struct open_file *file, uint64_t tile)
{
    uint64_t tiles_in_file = filetiles_tile_count(&file->layout, file->size);
    uint32_t ahead = file->run_tiles < datapath->readahead_tiles ? file->run_tiles
                                                                  : datapath->readahead_tiles;
    for (uint64_t next = tile + 1; next <= tile + ahead && next < tiles_in_file; next++) {
        int error;
        if (cache_find(file, next))
            continue;
        if (!cache_load(datapath, file, next, &error))
            break;
    }
}

/* Zeros for the parts of a read that no tile holds. */
static const char zeros[64 * 1024];

/* Appends a piece to the result's vector. */
static int result_add(struct datapath_read *result, const void *base, size_t len)
{
    if (len == 0)
        return 0;
    if (result->count == result->cap) {
        size_t new_cap = result->cap * 2;
        struct iovec *grown;
        if (result->iov == result->inline_iov) {
            grown = malloc(new_cap * sizeof(*grown));
            if (grown)
                memcpy(grown, result->iov, result->count * sizeof(*grown));
        } else {
            grown = realloc(result->iov, new_cap * sizeof(*grown));
        }
        if (!grown)
            return -ENOMEM;
        result->iov = grown;
        result->cap = new_cap;
    }
    result->iov[result->count].iov_base = (void *)base;
    result->iov[result->count].iov_len = len;
    result->count++;
    result->bytes += len;
    return 0;
}

static int result_add_zeros(struct datapath_read *result, size_t len)
{
    while (len > 0) {
        size_t piece = len < sizeof(zeros) ? len : sizeof(zeros);
        int error = result_add(result, zeros, piece);
        if (error != 0)
            return error;
        len -= piece;
    }
    return 0;
}

/* Whether the read already holds a pin on the slot. */
static bool result_pins(const struct datapath_read *result, const struct read_slot *slot)
{
    for (int i = 0; i < result->pinned_count; i++)
        if (result->pinned[i] == slot)
            return true;
    return false;
}

/*
 * Adds a segment served from a cached tile, waiting for it to load, and
 * pins the slot (once per read: an array file's read comes back to the same
 * tile every row). Returns -EAGAIN if the slot went away meanwhile.
 */
static int cache_serve(struct datapath *datapath, struct open_file *file, struct read_slot *slot,
                       const struct tile_segment *segment, struct datapath_read *result,
                       bool *local)
{
    uint64_t tile = slot->tile;
    while (slot->state == SLOT_LOADING && slot->tile == tile && !slot->discard)
        pthread_cond_wait(&file->changed, &file->lock);
    if (slot->tile != tile || slot->state == SLOT_EMPTY || slot->discard)
        return -EAGAIN; /* dropped while we waited: read directly */
    if (slot->state == SLOT_FAILED) {
        int error = slot->error;
        slot_clear(datapath, file, slot); /* the next reader tries again */
        return error == -EAGAIN ? -EIO : error;
    }
    if (!result_pins(result, slot)) {
        if (result->pinned_count == DATAPATH_READ_MAX_PINS)
            return -EAGAIN;
        slot->pins++;
        result->pinned[result->pinned_count++] = slot;
    }
    slot->last_use = ++file->use_clock;
    *local = slot->local;
    uint32_t start = segment->tile_offset;
    uint32_t end = start + segment->length;
    uint32_t have = slot->length;
    int error = 0;
    if (have > start)
        error = result_add(result, (const char *)slot->reply.data + start,
                           (end < have ? end : have) - start);
    if (error == 0 && end > have)
        error = result_add_zeros(result, end - (have > start ? have : start));
    return error;
}

/* The TILE_READ of a segment from where this machine reads its tile (*node). */
static struct ts_tile_read_req segment_read_request(const struct open_file *file,
                                                    const struct tile_segment *segment,
                                                    const struct tile_location *location,
                                                    uint32_t *node)
{
    uint64_t version;
    read_source(location, node, &version);
    return (struct ts_tile_read_req){.ino = file->ino,
                                     .tile = segment->tile,
                                     .version = version,
                                     .offset = segment->tile_offset,
                                     .length = segment->length};
}

/*
 * A short direct read over the tile stream of a datanode on this machine,
 * into `out` (the rest of the segment zeros): fewer hand-offs between
 * threads than ZeroMQ's. False: nothing was read, ask over ZeroMQ (which
 * also deals with anything but bytes).
 */
static bool stream_read_into(struct datapath *datapath, struct open_file *file,
                             const struct tile_location *location,
                             const struct tile_segment *segment, bool buffered, char *out,
                             bool *local)
{
    uint32_t node;
    int32_t status = TS_OK;
    uint32_t got = 0;
    struct ts_tile_read_req request = segment_read_request(file, segment, location, &node);
    int error =
        tilestream_read_into(datapath->streams, node, &request, buffered, out, &status, &got);
    if (error != 0 || status != TS_OK)
        return false;
    memset(out + got, 0, segment->length - got);
    if (file->profiled && datapath->profile)
        *local = true; /* streams reach datanodes on this machine only */
    return true;
}

/*
 * Reads a segment's bytes directly (no cache) into `out`, zeros where the
 * tile holds none; *local: they came from a datanode on this machine (set
 * for profiled files).
 */
static int direct_fetch(struct datapath *datapath, struct open_file *file,
                        const struct tile_segment *segment, bool buffered, char *out, bool *local)
{
    struct tile_location location;
    struct rpc_reply reply;
    int error = location_get(datapath, file, segment->tile, false, &location);
    if (error != 0)
        return error;
    if (location.node == 0) {
        memset(out, 0, segment->length);
        return 0;
    }
    if (datapath->streams &&
        stream_read_into(datapath, file, &location, segment, buffered, out, local))
        return 0;
    struct tile_location planned = location;
    error = read_tile(datapath, file->ino, segment->tile, segment->tile_offset, segment->length,
                      &location, &reply);
    location_replace(file, segment->tile, &planned, &location);
    if (error == 0 && file->profiled && datapath->profile)
        *local = read_is_local(datapath, &location);
    if (error == 0) {
        if (reply.data_len > 0)
            memcpy(out, reply.data, reply.data_len);
        memset(out + reply.data_len, 0, segment->length - reply.data_len);
    }
    rpc_reply_release(&reply);
    return error;
}

/* Adds a segment read directly (no cache) into the result's scratch buffer. */
static int direct_serve(struct datapath *datapath, struct open_file *file,
                        const struct tile_segment *segment, struct datapath_read *result,
                        bool *local)
{
    char *out = result->scratch + result->scratch_used;
    int error = direct_fetch(datapath, file, segment, result->buffered, out, local);
    if (error != 0)
        return error;
    result->scratch_used += segment->length;
    return result_add(result, out, segment->length);
}

/* The span of `tile` this read fetched already, or NULL. */
static const struct datapath_span *span_find(const struct datapath_read *result, uint64_t tile)
{
    for (size_t i = 0; i < result->span_count; i++)
        if (result->spans[i].tile == tile)
            return &result->spans[i];
    return NULL;
}

/*
 * Adds a segment of an array file that the cache could not serve. The
 * first time the read meets a tile there, one request fetches every byte
 * of the tile that the rest of the read covers, not each short row on its
 * own: since tile and file are both row-major, those bytes are one run of
 * the tile, and the runs of all tiles add up to at most the read's size
 * (the scratch buffer). `rest`: the walk after this segment.
 */
static int gathered_serve(struct datapath *datapath, struct open_file *file,
                          const struct tile_segment *segment, const struct filetiles_walk *rest,
                          struct datapath_read *result, bool *local)
{
    const struct datapath_span *span = span_find(result, segment->tile);
    if (!span) {
        struct tile_segment run = *segment;
        struct tile_segment next;
        struct filetiles_walk walk = *rest;
        while (filetiles_walk_next(&walk, &next))
            if (next.tile == segment->tile)
                run.length = next.tile_offset + next.length - run.tile_offset;
        if (result->span_count == result->span_cap) {
            size_t cap = result->span_cap ? result->span_cap * 2 : 16;
            struct datapath_span *grown = realloc(result->spans, cap * sizeof(*grown));
            if (!grown)
                return -ENOMEM;
            result->spans = grown;
            result->span_cap = cap;
        }
        char *bytes = result->scratch + result->scratch_used;
        int error = direct_fetch(datapath, file, &run, result->buffered, bytes, local);
        if (error != 0)
            return error;
        result->scratch_used += run.length;
        result->spans[result->span_count] = (struct datapath_span){
            .tile = run.tile, .start = run.tile_offset, .length = run.length, .bytes = bytes};
        span = &result->spans[result->span_count++];
    }
    return result_add(result, span->bytes + (segment->tile_offset - span->start), segment->length);
}

/* Moves the pieces added since the last flush into the pipe. 0 or -EPIPE. */
static int result_flush(struct datapath_read *result)
{
    while (result->flushed < result->count) {
        struct iovec *piece = &result->iov[result->flushed];
        size_t pieces = result->count - result->flushed;
        /* Non-blocking: the pipe holds a whole reply, so "full" is a failure, not a wait. */
        ssize_t moved = vmsplice(result->pipe_fd, piece, pieces < IOV_MAX ? pieces : IOV_MAX,
                                 SPLICE_F_NONBLOCK);
        if (moved < 0 && errno == EINTR)
            continue;
        if (moved <= 0)
            return -EPIPE;
        result->piped = true;
        while (moved > 0) {
            size_t take = (size_t)moved < piece->iov_len ? (size_t)moved : piece->iov_len;
            piece->iov_base = (char *)piece->iov_base + take;
            piece->iov_len -= take;
            moved -= (ssize_t)take;
            if (piece->iov_len == 0) {
                result->flushed++;
                piece++;
            }
        }
    }
    return 0;
}

/*
 * Whether a sequential reader's tile comes over a tile stream rather than
 * through the cache: its datanode is on this machine (where streams go).
 * Called with file->lock held.
 */
static bool tile_streams(struct datapath *datapath, struct open_file *file, uint64_t tile)
{
    struct tile_location location;
    return location_get(datapath, file, tile, false, &location) == 0 &&
           read_is_local(datapath, &location);
}

/*
 * Reads a segment over its datanode's tile stream into the result's
 * pipe, after the pieces before it. Returns 0, -EAGAIN (read it over
 * ZeroMQ instead: no stream, or the datanode answered other than with
 * bytes) or -EPIPE (the pipe is spoilt). Called with file->lock held, which
 * it drops while the bytes come, so a stream's reads overlap.
 */
static int stream_serve(struct datapath *datapath, struct open_file *file,
                        const struct tile_segment *segment, struct datapath_read *result,
                        bool *local)
{
    struct tile_location location;
    int32_t status = TS_OK;
    uint32_t got = 0;
    uint32_t node;

    int error = location_get(datapath, file, segment->tile, false, &location);
    if (error != 0)
        return error;
    if (location.node == 0)
        return result_add_zeros(result, segment->length);
    error = result_flush(result);
    if (error != 0)
        return error;
    struct ts_tile_read_req request = segment_read_request(file, segment, &location, &node);
    pthread_mutex_unlock(&file->lock);
    error = tilestream_read(datapath->streams, node, &request, result->buffered, &status, &got);
    pthread_mutex_lock(&file->lock);
    if (error != 0)
        return error;
    if (status != TS_OK)
        return -EAGAIN; /* ZeroMQ's answer says what it is, and read_tile acts on it */
    result->piped = true;
    result->bytes += got;
    if (file->profiled && datapath->profile)
        *local = true; /* streams reach datanodes on this machine only */
    return result_add_zeros(result, segment->length - got);
}

ssize_t datapath_read(struct datapath *datapath, struct open_file *file, size_t size,
                      uint64_t offset, bool buffered, int pipe_fd, struct datapath_read *result)
{
    struct filetiles_walk walk;
    struct tile_segment segment;
    struct profiler_batch batch;
    bool profiled = false;
    ssize_t outcome = 0;
    bool sequential;

    memset(result, 0, sizeof(*result));
    result->buffered = buffered;
    result->pipe_fd = datapath->streams ? pipe_fd : -1;
    /* The kernel may release the file as soon as it has the reply, before
     * datapath_read_done unpins: the result holds a reference. */
    pthread_mutex_lock(&datapath->lock);
    file->handles++;
    pthread_mutex_unlock(&datapath->lock);
    result->file = file;
    result->iov = result->inline_iov;
    result->cap = sizeof(result->inline_iov) / sizeof(result->inline_iov[0]);
    pthread_mutex_lock(&file->lock);
    profiled = file->profiled && datapath->profile;
    if (profiled)
        profiler_batch_init(&batch, file->ino, false);
    if (atomic_load(&file->lost)) {
        outcome = -EIO;
        goto out;
    }
    /* Only a read past the end this mount knows can come back short, and
     * the kernel keeps a short read's zero fill as the file's bytes if
     * attributes that grow the file reach it first: such reads hold those
     * back until they are answered (attrguard.h). */
    if (buffered && offset + size > file->size)
        result->guarded = attrguard_read_begin(datapath->guard, file->ino);
    if (offset + size > file->size && !file->size_dirty) {
        /* The file may have grown through another mount. */
        struct ts_attr attr;
        if (metaclient_getattr(datapath->meta, file->ino, &attr) == TS_OK) {
            result->size_refresh = attr.size > file->size;
            size_learned(datapath, file, attr.size);
        }
    }
    if (offset >= file->size)
        goto out;
    if (size > file->size - offset)
        size = (size_t)(file->size - offset);
    else if (!buffered && offset + size + DIRECT_READ_NEAR_END > file->size)
        result->size_refresh = true; /* see datapath_read.size_refresh */
    /* The kernel's read-ahead sends a stream's requests slightly out of order.
     * Array files always read whole tiles: see the file comment. A tile
     * cached for sieving says nothing of a stream. */
    struct read_slot *first = file->layout.array
                                  ? NULL
                                  : cache_find(file, tile_index_of(offset, file->tile_bytes));
    sequential = file->layout.array != NULL || offset == file->next_read_offset ||
                 (first && !first->sieved) ||
                 (offset > file->next_read_offset &&
                  offset - file->next_read_offset < 4ull * file->tile_bytes);
    if (offset + size > file->next_read_offset)
        file->next_read_offset = offset + size;
    bool sieving = !sequential && size <= file->tile_bytes / SIEVE_MAX_READ_FRACTION;
    /* Streams carry reads of a tile or more; array files read whole tiles
     * for their short rows: cached. */
    bool streaming = result->pipe_fd >= 0 && !file->layout.array;
    bool through_cache = false; /* a tile of this sequential read has no stream */
    uint64_t tiles_in_file = filetiles_tile_count(&file->layout, file->size);

    uint64_t last_tile = 0;
    filetiles_walk_init(&walk, &file->layout, offset, size);
    while (filetiles_walk_next(&walk, &segment)) {
        /* Reads see this mount's writes. */
        tile_settle(datapath, file, segment.tile);
        struct read_slot *slot = cache_find(file, segment.tile);
        bool cached = slot != NULL;
        int error = 0;
        last_tile = segment.tile;
        bool cache_it = sequential && !(streaming && tile_streams(datapath, file, segment.tile));
        through_cache = through_cache || cache_it;
        if (!slot && cache_it) {
            slot = cache_load(datapath, file, segment.tile, &error);
        } else if (!slot && sieving &&
                   sieve_touch(&file->sieve, segment.tile, tiles_in_file, util_monotonic_ms(),
                               buffered)) {
            slot = cache_load(datapath, file, segment.tile, &error);
            if (slot)
                slot->sieved = true;
        }
        if (error != 0) {
            outcome = error;
            goto out;
        }
        bool local = false;
        error = slot ? cache_serve(datapath, file, slot, &segment, result, &local) : -EAGAIN;
        if (error == 0 && slot->sieved) {
            if (cached)
                sieve_hit(&file->sieve);
            if (buffered && !slot->stored && !result->store_slot)
                result->store_slot = slot; /* pinned by cache_serve */
        }
        if (error == -EAGAIN && streaming)
            error = stream_serve(datapath, file, &segment, result, &local);
        if (error == -EAGAIN) {
            if (!result->scratch)
                result->scratch = malloc(size);
            if (!result->scratch)
                error = -ENOMEM;
            else if (file->layout.array)
                error = gathered_serve(datapath, file, &segment, &walk, result, &local);
            else
                error = direct_serve(datapath, file, &segment, result, &local);
        }
        if (error != 0) {
            outcome = error;
            goto out;
        }
        if (profiled)
            profiler_batch_add(datapath->profile, &batch, segment.tile, segment.length, local);
    }
    if (!sequential) {
        file->run_tiles = 0;
    } else if (file->run_tiles == 0 || last_tile > file->run_last_tile) {
        if (file->run_tiles < READ_SLOTS)
            file->run_tiles++;
        file->run_last_tile = last_tile;
    }
    if (sequential && !file->layout.array && through_cache)
        cache_read_ahead(datapath, file, last_tile);
    if (result->piped) {
        int error = result_flush(result);
        if (error != 0) {
            outcome = error;
            goto out;
        }
    }
    outcome = (ssize_t)result->bytes;
out:
    pthread_mutex_unlock(&file->lock);
    if (profiled && outcome >= 0)
        profiler_batch_commit(datapath->profile, &batch);
    return outcome;
}

void datapath_read_replied(struct datapath *datapath, struct datapath_read *result)
{
    if (result->guarded)
        attrguard_read_end(datapath->guard, result->file->ino);
    result->guarded = false;
}

void datapath_read_done(struct datapath *datapath, struct datapath_read *result)
{
    struct open_file *file = result->file;
    datapath_read_replied(datapath, result);
    if (result->pinned_count > 0) {
        pthread_mutex_lock(&file->lock);
        for (int i = 0; i < result->pinned_count; i++) {
            struct read_slot *slot = result->pinned[i];
            if (--slot->pins == 0 && slot->discard && slot->state != SLOT_LOADING)
                slot_clear(datapath, file, slot);
        }
        pthread_mutex_unlock(&file->lock);
    }
    if (result->iov != result->inline_iov)
        free(result->iov);
    free(result->scratch);
    free(result->spans);
    memset(result, 0, sizeof(*result));
    open_file_put(datapath, file);
}

/* True if the file has bytes written here that no datanode has yet. */
static bool writes_pending(const struct open_file *file)
{
    for (int i = 0; i < file->buffer_limit; i++) {
        if (file->buffers[i].used)
            return true;
    }
    return file->writes_in_flight > 0 || file->writeouts_waiting > 0;
}

bool datapath_store_begin(struct datapath *datapath, struct datapath_read *result,
                          struct datapath_store *store)
{
    struct open_file *file = result->file;
    struct read_slot *slot = result->store_slot;
    bool begun = false;
    (void)datapath;

    if (!slot)
        return false;
    pthread_mutex_lock(&file->lock);
    /* The slot is pinned by this read: its bytes stay until read_done. The
     * generation rules out a write, open or truncation since its load
     * began; no writer means none can start before datapath_store_end
     * (an open waits for it), so the kernel gets no page older than this
     * mount's writes and overwrites none a writer dirtied. Array tiles are
     * not contiguous in the file: only linear files are stored. */
    uint64_t start = slot->tile * (uint64_t)file->tile_bytes;
    if (slot->state == SLOT_READY && !slot->discard && !slot->stored &&
        slot->generation == file->generation && file->writers == 0 && !file->layout.array &&
        !writes_pending(file) && start < file->size) {
        /* Never past the size this mount knows: the kernel would take the
         * end of the store as the file's new size. */
        uint64_t length = file->size - start;
        if (length > slot->length)
            length = slot->length; /* the rest is a hole: reads of it still come here */
        if (length > 0) {
            store->offset = start;
            store->data = slot->reply.data;
            store->length = (size_t)length;
            store->waits_given_up = file->waits_given_up;
            slot->stored = true;
            file->stores_in_progress++;
            begun = true;
        }
    }
    pthread_mutex_unlock(&file->lock);
    return begun;
}

bool datapath_store_end(struct datapath *datapath, struct datapath_read *result,
                        const struct datapath_store *store)
{
    struct open_file *file = result->file;
    (void)datapath;
    pthread_mutex_lock(&file->lock);
    file->stores_in_progress--;
    /* Opens and truncations that waited came after the store: only one
     * that gave up waiting may have changed the file under it. */
    bool changed = file->waits_given_up != store->waits_given_up;
    pthread_cond_broadcast(&file->changed);
    pthread_mutex_unlock(&file->lock);
    return changed;
}

/* ---- attributes ------------------------------------------------------- */

/*
 * Cuts the tile the new end falls in, as meta's SETATTR reply says. The
 * tile's read copies would keep the bytes cut off: they are dropped first
 * (meta is asked whether there are any). A tile that moves is followed.
 */
static int cut_tile(struct datapath *datapath, uint64_t ino, const struct ts_setattr_rep *reply)
{
    struct rpc_reply node_reply;
    struct stale_retry retry = {0};
    struct tile_location location = {.node = reply->cut_node, .version = reply->cut_version};
    uint8_t payload[64];
    int status;
    int error = 0;

    if (reply->cut_node == 0)
        return 0;
    if (metaclient_tile_map(datapath->meta, ino, reply->cut_tile, 1, 0, 0, &location) != TS_OK)
        location = (struct tile_location){.node = reply->cut_node, .version = reply->cut_version};
    for (;;) {
        if (location.node == 0)
            return 0; /* the tile went meanwhile: nothing to cut */
        if (location.copies > 0) {
            error = tile_uncopy(datapath, ino, reply->cut_tile, &location);
            if (error != 0)
                return error;
        }
        struct ts_tile_truncate_req request = {.ino = ino,
                                               .tile = reply->cut_tile,
                                               .version = location.version,
                                               .length = reply->cut_bytes};
        int len = ts_tile_truncate_req_encode(&request, payload, sizeof(payload));
        status = nodedir_call(datapath->nodes, location.node, TS_OP_TILE_TRUNCATE, payload,
                              (size_t)len, NULL, 0, &node_reply);
        rpc_reply_release(&node_reply);
        if (status != TS_ERR_STALE)
            break;
        error = stale_relocate(datapath, ino, reply->cut_tile, TILE_ACCESS_TRUNCATE, &retry,
                               &location);
        if (error != 0)
            return error;
    }
    if (status != TS_OK)
        log_error("truncate of inode %llu tile %llu on datanode %u failed: %s",
                  (unsigned long long)ino, (unsigned long long)reply->cut_tile, location.node,
                  status_text(status));
    return errno_of(status);
}

/*
 * The first half of a change meta makes to ino's attributes, for a file
 * open here (*filep, NULL if it is not; left locked and referenced for
 * truncation_end): its buffers written out, and with `size`, no store into
 * the page cache racing the kernel's truncation of it (a store past the new
 * end would grow the file again). Returns 0 or the writes' error.
 */
static int truncation_begin(struct datapath *datapath, uint64_t ino, bool size,
                            struct open_file **filep)
{
    struct open_file *file = open_file_get(datapath, ino);
    *filep = file;
    if (!file)
        return 0;
    pthread_mutex_lock(&file->lock);
    if (size) {
        file->generation++;
        stores_wait(datapath, file);
    }
    return write_everything(datapath, file);
}

/*
 * The second half: with attr (meta's answer; NULL when the change failed),
 * the file takes meta's size, and with `size` forgets the locations and
 * cached tiles from the tile the end falls in (cut, its copies dropped).
 * Unlocks and puts the file.
 */
static void truncation_end(struct datapath *datapath, struct open_file *file,
                           const struct ts_attr *attr, bool size)
{
    if (!file)
        return;
    file->mode = attr ? attr->mode : file->mode;
    if (attr && size) {
        file->size_dirty = false; /* meta took this mount's size with the change */
        file->size = attr->size;
        if (!file->layout.array)
            locations_forget_from(file, attr->size / file->tile_bytes);
        else
            memset(file->locations, 0, file->location_slots * sizeof(*file->locations));
        cache_forget_range(datapath, file, 0, UINT64_MAX);
    }
    pthread_mutex_unlock(&file->lock);
    open_file_put(datapath, file);
}

int datapath_setattr(struct datapath *datapath, const struct ts_setattr_req *request,
                     struct ts_attr *attr)
{
    struct ts_setattr_req change = *request;
    struct ts_setattr_rep reply;
    struct open_file *file;
    bool size = (request->valid & TS_SET_SIZE) != 0;

    int result = truncation_begin(datapath, request->ino, size, &file);
    if (result == 0 && file && size && file->size_dirty) {
        /* This mount's COMMIT travels with the truncation: one round trip. */
        change.min_size = file->size;
        change.commit_mtime_sec = file->mtime.tv_sec;
        change.commit_mtime_nsec = (uint32_t)file->mtime.tv_nsec;
    } else if (result == 0 && file) {
        result = commit_size(datapath, file, 0);
    }
    if (result == 0)
        result = errno_of(metaclient_setattr(datapath->meta, &change, &reply));
    bool changed = result == 0;
    if (changed)
        committed_note(datapath, &reply.attr);
    if (changed && size)
        result = cut_tile(datapath, request->ino, &reply);
    if (result == 0)
        *attr = reply.attr;
    /* Meta's size holds even when the cut failed. */
    truncation_end(datapath, file, changed ? &reply.attr : NULL, size);
    return result;
}

int datapath_open_truncating(struct datapath *datapath, uint64_t ino, uint32_t flags,
                             uint32_t truncate, struct ts_attr *attr, char **array_spec)
{
    struct open_file *file;
    *array_spec = NULL;
    int result = truncation_begin(datapath, ino, true, &file);
    /* Truncating to 0 drops every tile: this mount's uncommitted size and
     * mtime would only be replaced, so no COMMIT goes first. */
    if (result == 0)
        result = errno_of(metaclient_open(datapath->meta, ino, flags, truncate, attr, array_spec));
    if (result == 0)
        committed_note(datapath, attr);
    truncation_end(datapath, file, result == 0 ? attr : NULL, true);
    return result;
}

int datapath_punch(struct datapath *datapath, struct open_file *file, uint64_t first_tile,
                   uint64_t last_tile, struct ts_attr *attr)
{
    pthread_mutex_lock(&file->lock);
    /* As a truncation: no store into the page cache may race it. */
    file->generation++;
    stores_wait(datapath, file);
    int result = write_everything(datapath, file);
    if (result == 0)
        result = commit_size(datapath, file, 0);
    if (result == 0)
        result = errno_of(metaclient_punch(datapath->meta, file->ino, first_tile, last_tile, attr));
    if (result == 0) {
        committed_note(datapath, attr);
        for (size_t i = 0; i < file->location_slots; i++) {
            uint64_t tile = file->locations[i].tile;
            if (tile >= first_tile && tile <= last_tile)
                memset(&file->locations[i], 0, sizeof(file->locations[i]));
        }
        cache_forget_range(datapath, file, first_tile, last_tile);
        /* Their files are garbage now: nothing of them to sync at fsync. */
        size_t kept = 0;
        for (size_t i = 0; i < file->dirty_count; i++)
            if (file->dirty[i].tile < first_tile || file->dirty[i].tile > last_tile)
                file->dirty[kept++] = file->dirty[i];
        file->dirty_count = kept;
    }
    pthread_mutex_unlock(&file->lock);
    return result;
}

uint64_t datapath_file_size(struct datapath *datapath, struct open_file *file)
{
    (void)datapath;
    pthread_mutex_lock(&file->lock);
    uint64_t size = file->size;
    pthread_mutex_unlock(&file->lock);
    return size;
}

bool datapath_file_is_array(struct open_file *file)
{
    return file->layout.array != NULL; /* fixed at open */
}

uint32_t datapath_file_tile_bytes(struct open_file *file)
{
    return file->tile_bytes; /* fixed at open */
}

/* Puts over attr the size and mtime of data this mount has not committed. */
static void overlay_unwritten(struct datapath *datapath, struct ts_attr *attr)
{
    struct open_file *file = open_file_get(datapath, attr->ino);
    if (file) {
        pthread_mutex_lock(&file->lock);
        if (file->size_dirty) {
            if (file->size > attr->size)
                attr->size = file->size;
            attr->mtime_sec = file->mtime.tv_sec;
            attr->mtime_nsec = (uint32_t)file->mtime.tv_nsec;
        }
        pthread_mutex_unlock(&file->lock);
        open_file_put(datapath, file);
    }
}

bool datapath_write_kills_privileges(struct datapath *datapath, struct open_file *file)
{
    (void)datapath;
    uint32_t mode = atomic_load_explicit(&file->mode, memory_order_relaxed);
    return S_ISREG(mode) && ((mode & S_ISUID) || (mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP));
}

bool datapath_settle_attr(struct datapath *datapath, struct ts_attr *attr)
{
    /* The open file first, the guard after: a commit that comes between
     * the two is recorded before the file stops holding the size, and
     * then refuses attr as older. */
    overlay_unwritten(datapath, attr);
    return attrguard_admit(datapath->guard, attr);
}

void datapath_settle_fresh(struct datapath *datapath, struct ts_attr *attr)
{
    overlay_unwritten(datapath, attr);
    attrguard_record(datapath->guard, attr);
}
