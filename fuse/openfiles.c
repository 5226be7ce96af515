/*
 * @file openfiles.c
 * See openfiles.h. A file's state lives from its first open here to the
 * release of its last reference (a handle, or a read, setattr or reclaim
 * pass in progress); the last one writes out what is pending and commits
 * it before meta hears of the release, so an unlinked file is deleted
 * only after its bytes are out.
 */
#include "openfiles.h"

#include "filecommit.h"
#include "log.h"
#include "metaclient.h"
#include "pagestore.h"
#include "tilecache.h"
#include "tilelocation.h"
#include "writebehind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Frees a file with no jobs in flight. */
static void openfiles_free(struct datapath *datapath, struct open_file *file)
{
    tilecache_free(datapath, file);
    writebehind_free(datapath, file);
    filetiles_fini(&file->layout);
    sieve_fini(&file->sieve);
    pthread_cond_destroy(&file->changed);
    pthread_mutex_destroy(&file->lock);
    tilelocation_fini(file);
    free(file->dirty);
    free(file);
}

static struct open_file **bucket_of(struct datapath *datapath, uint64_t ino)
{
    return &datapath->buckets[ino % OPEN_TABLE_BUCKETS];
}

struct open_file *openfiles_find(struct datapath *datapath, uint64_t ino)
{
    for (struct open_file *file = *bucket_of(datapath, ino); file; file = file->next) {
        if (file->ino == ino)
            return file;
    }
    return NULL;
}

struct open_file *openfiles_get(struct datapath *datapath, uint64_t ino)
{
    pthread_mutex_lock(&datapath->lock);
    struct open_file *file = openfiles_find(datapath, ino);
    if (file)
        file->handles++;
    pthread_mutex_unlock(&datapath->lock);
    return file;
}

void openfiles_hold(struct datapath *datapath, struct open_file *file)
{
    pthread_mutex_lock(&datapath->lock);
    file->handles++;
    pthread_mutex_unlock(&datapath->lock);
}

struct open_file **openfiles_hold_all(struct datapath *datapath, size_t *count_out)
{
    size_t count = 0, cap = 64;
    struct open_file **files = malloc(cap * sizeof(*files));
    *count_out = 0;
    if (!files)
        return NULL;
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
            file->handles++; /* kept until openfiles_put below */
            files[count++] = file;
        }
    }
listed:
    pthread_mutex_unlock(&datapath->lock);
    *count_out = count;
    return files;
}

void openfiles_free_all(struct datapath *datapath)
{
    for (size_t i = 0; i < OPEN_TABLE_BUCKETS; i++) {
        while (datapath->buckets[i]) {
            struct open_file *file = datapath->buckets[i];
            datapath->buckets[i] = file->next;
            openfiles_free(datapath, file);
        }
    }
}

bool datapath_file_shared(struct datapath *datapath, struct open_file *file)
{
    pthread_mutex_lock(&datapath->lock);
    bool shared = file->handles > 1;
    pthread_mutex_unlock(&datapath->lock);
    return shared;
}

/* One more handle on a file open here. Called with file->lock held. */
static void handle_opened(struct datapath *datapath, struct open_file *file, bool writing)
{
    file->generation++;
    if (writing)
        file->writers++;
    pagestore_wait(datapath, file);
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
    struct open_file *file = openfiles_get(datapath, attr->ino);
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
        tilelocation_forget_all(file);
        /* The cached tiles go unless meta says the inode is as it was at
         * the last open here: another mount's writes reach meta (their
         * commit) before their close returns, and change its counter.
         * Several readers opening one file one after another then share
         * the tiles loaded for the first (each open threw them away, and
         * they were fetched again: 4 of 48 tiles for three readers). */
        if (attr->change == 0 || attr->change != file->opened_change)
            tilecache_forget_range(datapath, file, 0, UINT64_MAX);
        file->opened_change = attr->change;
        pthread_mutex_unlock(&file->lock);
        meta_open_counted(datapath, file);
        *out = file;
        return 0;
    }
    created = calloc(1, sizeof(*created));
    if (!created || tilelocation_init(created) != 0) {
        free(created);
        return -ENOMEM;
    }
    created->ino = attr->ino;
    created->handles = 1;
    if (array_spec) {
        char message[256];
        int error = filetiles_init_array(&created->layout, array_spec, strlen(array_spec), message,
                                         sizeof(message));
        if (error != 0) {
            log_error("inode %llu: bad array layout \"%s\": %s", (unsigned long long)attr->ino,
                      array_spec, message);
            tilelocation_fini(created);
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
    created->opened_change = attr->change;
    created->last_written_tile = UINT64_MAX;
    created->writers = writing ? 1 : 0;
    sieve_init(&created->sieve);
    pthread_mutex_init(&created->lock, NULL);
    pthread_cond_init(&created->changed, NULL);

    pthread_mutex_lock(&datapath->lock);
    file = openfiles_find(datapath, attr->ino);
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
        openfiles_free(datapath, created);
        pthread_mutex_lock(&file->lock);
        handle_opened(datapath, file, writing);
        pthread_mutex_unlock(&file->lock);
    }
    meta_open_counted(datapath, file);
    *out = file;
    return 0;
}

void openfiles_put(struct datapath *datapath, struct open_file *file)
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
    if (!atomic_load(&file->lost) && writebehind_drain(datapath, file) == 0)
        filecommit_size(datapath, file, 0);
    while (file->loads_in_flight > 0)
        pthread_cond_wait(&file->changed, &file->lock);
    pthread_mutex_unlock(&file->lock);
    openfiles_free(datapath, file);
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
     * writes are out (openfiles_put). */
    pthread_mutex_lock(&datapath->lock);
    if (file->meta_opens > 1 && file->handles > 1) {
        file->meta_opens--;
        release_now = true;
    }
    pthread_mutex_unlock(&datapath->lock);
    if (release_now)
        metaclient_release(datapath->meta, file->ino);
    openfiles_put(datapath, file);
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

bool datapath_write_kills_privileges(struct datapath *datapath, struct open_file *file)
{
    (void)datapath;
    uint32_t mode = atomic_load_explicit(&file->mode, memory_order_relaxed);
    return S_ISREG(mode) &&
           ((mode & S_ISUID) || (mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP));
}
