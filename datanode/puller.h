/*
 * @file puller.h
 * Background pulls for TILE_PULL (proto.h): this datanode copies a tile
 * file from a peer datanode into its own store, off the loop thread.
 *
 * Why threads: the loop is single-threaded and two datanodes may pull from
 * each other at the same time, so a fetch made inside a handler would stop
 * this node from answering the peer's fetch (and the peer from answering
 * ours). Instead the handler queues a job and answers "running"; a small
 * pool of puller threads (PULLER_THREADS) takes jobs in arrival order. A
 * puller PINGs the source (so an unreachable source fails in
 * ping_timeout_ms, not read_timeout_ms), fetches the whole tile with one
 * TILE_READ, stores it with tilestore_install() (staged, fsync'd, renamed
 * only if no file has the name, directory fsync'd) and records its bytes
 * and CRC-32C. Each puller thread keeps its own rpc_client per source
 * address (a few, least recently used goes first). With meta_endpoint set,
 * a source that is not a registered datanode's address is refused
 * (TS_ERR_PERM) before anything is fetched from it; meta's node list is
 * cached for that, so a repair of many tiles costs few NODE_LISTs.
 *
 * Jobs are known by the file they make, (ino, tile, new_version). The loop
 * thread learns of finished jobs through an eventfd (puller_event_fd()) and
 * puller_collect(), which counts each new file in the tilestore (only the
 * loop thread touches its counters). The puller is the tilestore's delete
 * hook: when meta's garbage deletion names a file being pulled (a move
 * aborted meanwhile), the pull fails and its file does not stay behind.
 * A finished job is remembered for
 * finished_keep_ms, at most finished_limit of them (the oldest go first); a
 * failure is reported once and then forgotten, so asking again retries.
 *
 * Thread use: every function but the worker threads' own is for the loop
 * thread. A pull in flight ends at its RPC deadline; shutting down the
 * ZeroMQ context (zmq_ctx_shutdown) makes it end at once, which is what
 * the daemon does before puller_destroy().
 */
#ifndef TESSERA_DATANODE_PULLER_H
#define TESSERA_DATANODE_PULLER_H

#include "tilestore.h"

#include <stdint.h>

#define PULLER_THREADS 2
#define PULLER_QUEUE_LIMIT 64                    /* jobs queued or running */
#define PULLER_FINISHED_LIMIT 256                /* finished jobs remembered */
#define PULLER_FINISHED_KEEP_MS (10 * 60 * 1000) /* ... and for how long */
#define PULLER_PING_TIMEOUT_MS 5000              /* the source must answer a PING by then */
#define PULLER_READ_TIMEOUT_MS 60000             /* ... and send the tile by then */
#define PULLER_CLIENTS_PER_THREAD 8              /* sources a thread stays connected to */
#define PULLER_TEXT_MAX 240
/* How long meta's node list stays good for checking sources (a miss asks again at once). */
#define PULLER_SOURCES_FRESH_MS 5000

struct puller_config {
    unsigned threads;
    unsigned queue_limit;
    unsigned finished_limit;
    int64_t finished_keep_ms;
    int ping_timeout_ms;
    int read_timeout_ms;
    /* Meta's endpoint: a pull's source must be the address of a datanode in
     * its NODE_LIST (cached: PULLER_SOURCES_FRESH_MS, asked again at once
     * for a source not in it). "" = sources not checked (a
     * cluster without keys, where anyone may register anyway). */
    char meta_endpoint[256];
};

/* The values above. */
void puller_config_default(struct puller_config *config);

/* A pull as TILE_PULL asks for it. */
struct puller_job {
    uint64_t ino;
    uint64_t tile;
    uint64_t version;     /* the source's file */
    uint64_t new_version; /* the file made here */
    const char *source;   /* the source datanode's endpoint (copied) */
    uint64_t max_bytes;   /* a larger tile fails with TS_ERR_NOSPC */
};

enum puller_state {
    PULLER_UNKNOWN = 0, /* no such job (never asked, forgotten, or its failure reported) */
    PULLER_RUNNING,     /* queued or in progress */
    PULLER_DONE,        /* stored: bytes and checksum are set */
    PULLER_FAILED,      /* status and text are set */
};

struct puller_result {
    enum puller_state state;
    uint64_t bytes;
    uint32_t checksum;
    int status; /* PULLER_FAILED: a TS_ERR_* status */
    char text[PULLER_TEXT_MAX];
};

struct puller;

/*
 * Starts config->threads puller threads (config NULL: the defaults) that
 * store into store, which must outlive the puller, and becomes the store's
 * delete hook (tilestore_set_delete_hook()). Returns 0, -ENOMEM, or
 * the -errno of eventfd() or pthread_create().
 */
int puller_new(struct tilestore *store, const struct puller_config *config,
               struct puller **pullerp);
/*
 * Stops the threads (a job in progress is waited for: see above; queued
 * jobs are dropped) and frees everything (NULL-safe). Counts nothing: the
 * files of jobs not collected are found by the next start's tile count.
 */
void puller_destroy(struct puller **pullerp);

/* Readable (poll for input) when a job has finished since the last collect. */
int puller_event_fd(const struct puller *puller);

/* How many times the threads asked meta for NODE_LIST (tests, metrics). Any thread. */
uint64_t puller_node_list_calls(struct puller *puller);

/*
 * Takes the finished jobs' news: counts each new tile file in the
 * tilestore once, forgets finished jobs past their keep time or limit, and
 * drains the eventfd.
 */
void puller_collect(struct puller *puller);

/*
 * Where the pull of job's file (ino, tile, new_version) stands, after a
 * collect. A failed job is reported here once and forgotten. A job for the
 * same file from another source version is reported as PULLER_FAILED with
 * TS_ERR_BUSY, and stays.
 */
void puller_query(struct puller *puller, const struct puller_job *job,
                  struct puller_result *result);

/*
 * Queues job (whose file must be unknown to puller_query()). Returns 0,
 * or -EBUSY when queue_limit jobs are queued or running already.
 */
int puller_start(struct puller *puller, const struct puller_job *job);

/* Jobs queued or running now. */
unsigned puller_active(struct puller *puller);

#endif
