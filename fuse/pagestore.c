/*
 * @file pagestore.c
 * See pagestore.h.
 *
 * Data sieving (sieve.h): a small read outside a stream whose tile was
 * touched shortly before has the read path (readpath.c) load the whole
 * tile into the cache instead; for a
 * buffered handle the caller then puts the tile into the kernel's page
 * cache (datapath_store_begin/end), so later reads of it never come here.
 * Bytes stored there must never be older than what this mount wrote, nor
 * older than what an open that followed a close elsewhere must see
 * (close-to-open: the kernel drops a file's pages at each open). So a tile
 * is stored only while the file has no handle open for writing here (a
 * writer's write() or mmap could change a page under the store) and no
 * write, open or truncation happened since its load began (`generation`);
 * an open or truncation that comes while a store runs waits for it (see
 * pagestore_wait for the bound); stores never reach past the file's size.
 */
#include "pagestore.h"

#include "log.h"
#include "util.h"
#include "writebehind.h"

#include <errno.h>

void pagestore_wait(struct datapath *datapath, struct open_file *file)
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
        !writebehind_pending(file) && start < file->size) {
        /* Never past the size this mount knows: the kernel would take the
         * end of the store as the file's new size. */
        uint64_t length = file->size - start;
        if (length > slot->length)
            length = slot->length; /* the rest is a hole: reads of it still come here */
        if (length > 0) {
            store->offset = start;
            store->data = read_slot_bytes(slot);
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
