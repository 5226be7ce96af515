/*
 * @file datapath.c
 * See datapath.h. This file starts and stops the data path; its jobs live
 * in files of their own behind the private header datapath_i.h, which
 * lists them in the order they call each other (lowest first) and writes
 * down the lock order: tileplace.c, tilelocation.c, tileread.c,
 * tilecache.c, writebehind.c, filecommit.c, pagestore.c, openfiles.c,
 * bufferreclaim.c, readpath.c, fileattr.c.
 */
#include "datapath_i.h"

#include "bufferreclaim.h"
#include "log.h"
#include "openfiles.h"

#include <stdlib.h>

/* Threads for TILE_SYNC requests: one per datanode of a small cluster. */
#define SYNC_THREADS 4
/* Sends to a tile's further holders: one per write job a file may have in
 * flight, so that each job's holders are written at once. */
#define REPLICA_THREADS MAX_WRITES_IN_FLIGHT

/*
 * Meta deleted ino while this mount's lease had expired: the bytes are gone
 * (or going), so its I/O fails loudly instead of reading holes or writing
 * tiles nobody will ever find (metaclient_on_lost).
 */
static void datapath_lost(void *ctx, uint64_t ino)
{
    struct datapath *datapath = ctx;
    pthread_mutex_lock(&datapath->lock);
    struct open_file *file = openfiles_find(datapath, ino);
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
    datapath->replica_workers = workers_new(REPLICA_THREADS);
    datapath->guard = config->guard;
    if (!datapath->sync_workers || !datapath->replica_workers || !datapath->guard) {
        workers_destroy(&datapath->sync_workers);
        workers_destroy(&datapath->replica_workers);
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
    if (!bufferreclaim_start(datapath)) {
        datapath_destroy(&datapath);
        return NULL;
    }
    metaclient_on_lost(meta, datapath_lost, datapath);
    return datapath;
}

void datapath_destroy(struct datapath **datapathp)
{
    if (!datapathp || !*datapathp)
        return;
    struct datapath *datapath = *datapathp;
    metaclient_on_lost(datapath->meta, NULL, NULL);
    bufferreclaim_stop(datapath);
    if (datapath->tiles_taken + datapath->tiles_copied > 0)
        log_info("whole-tile writes: %llu taken from the request, %llu copied",
                 (unsigned long long)datapath->tiles_taken,
                 (unsigned long long)datapath->tiles_copied);
    if (datapath->buffers_reclaimed > 0)
        log_info("sent %llu buffers early to free write budget for other files",
                 (unsigned long long)datapath->buffers_reclaimed);
    openfiles_free_all(datapath);
    workers_destroy(&datapath->sync_workers);
    workers_destroy(&datapath->replica_workers);
    budget_fini(&datapath->write_budget);
    budget_fini(&datapath->read_budget);
    pthread_cond_destroy(&datapath->load_dropped);
    pthread_mutex_destroy(&datapath->loads_lock);
    pthread_mutex_destroy(&datapath->lock);
    free(datapath);
    *datapathp = NULL;
}
