/*
 * @file store.c
 * See store.h. The store owns the LMDB environment, the DBI handles, the
 * "map is full" flag that makes store_write() retry, the "dirty" flag that
 * makes the once-a-second sync cheap when nothing changed, and the thread
 * that runs that sync.
 *
 * Why a thread of its own: an fdatasync of data.mdb waits for the disk, and
 * while the datanodes on the same disk write a stream it took 200-600 ms
 * (measured with 4 fio writers: every writer stalled that long once a
 * second, a third of the run). On the request loop that stalled every tile
 * allocation of every mount. The sync needs no transaction: it only flushes
 * what commits already wrote with pwrite(), so it runs beside them.
 */
#include "store.h"

#include "log.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/*
 * Virtual address space reserved for the map; the file grows as needed.
 * Overridable at build time so that a test can exercise the growth path.
 */
#ifndef STORE_INITIAL_MAP_BYTES
#define STORE_INITIAL_MAP_BYTES ((size_t)16 << 30)
#endif

/* How often the syncer flushes what was committed (store.h: a machine crash
 * loses at most this much). */
#define STORE_SYNC_INTERVAL_MS 1000

struct store {
    MDB_env *env;
    MDB_dbi dbi[STORE_TABLE_COUNT];
    int lock_fd;
    bool map_full;     /* an operation of the current transaction hit MDB_MAP_FULL */
    atomic_bool dirty; /* committed since the last sync began */
    /* The syncer thread (see the top). sync_lock protects stopping, and is
     * held around every mdb_env_sync() and map resize: mdb_env_sync reads
     * the meta pages out of the map, which a resize replaces. */
    pthread_t syncer;
    bool syncer_started;
    pthread_mutex_t sync_lock;
    pthread_cond_t sync_wake;
    bool stopping;
    /* A reset read transaction kept for the next store_read(): renewing it
     * skips the reader-table lock and slot search of mdb_txn_begin (the
     * environment is MDB_NOTLS, so the slot belongs to the txn, not the
     * thread). NULL while a store_read() uses it or none was made yet. */
    MDB_txn *idle_read;
};

static const char *const store_table_names[STORE_TABLE_COUNT] = {
    [STORE_INODES] = "inodes",     [STORE_DIRENTS] = "dirents",   [STORE_TILES] = "tiles",
    [STORE_NODES] = "nodes",       [STORE_XATTRS] = "xattrs",     [STORE_GARBAGE] = "garbage",
    [STORE_COUNTERS] = "counters", [STORE_PROFILES] = "profiles", [STORE_COPIES] = "copies",
    [STORE_JOURNAL] = "journal",   [STORE_GRANTS] = "grants",     [STORE_IDENTITY] = "identity",
    [STORE_PARENTS] = "parents",
};

/* The first value each counter hands out. */
static const uint64_t store_counter_first[STORE_COUNTER_COUNT] = {
    [STORE_NEXT_INO] = 2,
    [STORE_NEXT_VERSION] = 1,
    [STORE_NEXT_NODE_ID] = 1,
    [STORE_NEXT_GENERATION] = 1,
};

void store_be32_put(uint8_t *out, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(value >> (24 - 8 * i));
}

void store_be64_put(uint8_t *out, uint64_t value)
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(value >> (56 - 8 * i));
}

uint32_t store_be32_get(const uint8_t *in)
{
    uint32_t value = 0;
    for (int i = 0; i < 4; i++)
        value = (value << 8) | in[i];
    return value;
}

uint64_t store_be64_get(const uint8_t *in)
{
    uint64_t value = 0;
    for (int i = 0; i < 8; i++)
        value = (value << 8) | in[i];
    return value;
}

int store_error(struct store *store, int mdb_result)
{
    switch (mdb_result) {
    case MDB_SUCCESS: return 0;
    case MDB_NOTFOUND: return -ENOENT;
    case MDB_KEYEXIST: return -EEXIST;
    case MDB_MAP_FULL: store->map_full = true; return -ENOSPC;
    default:
        if (mdb_result > 0)
            return -mdb_result; /* LMDB passes system errors through */
        log_error("lmdb: %s", mdb_strerror(mdb_result));
        return -EIO;
    }
}

MDB_dbi store_dbi(const struct store *store, enum store_table table)
{
    return store->dbi[table];
}

static int store_lock(const char *dir, int *fdp)
{
    char path[PATH_MAX];
    int fd;

    if (snprintf(path, sizeof(path), "%s/meta.lock", dir) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int saved = errno;
        close(fd);
        return saved == EWOULDBLOCK ? -EBUSY : -saved;
    }
    *fdp = fd;
    return 0;
}

static int store_open_tables(struct store *store)
{
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(store->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        goto fail;
    for (int i = 0; i < STORE_TABLE_COUNT; i++) {
        rc = mdb_dbi_open(txn, store_table_names[i], MDB_CREATE, &store->dbi[i]);
        if (rc != MDB_SUCCESS) {
            mdb_txn_abort(txn);
            goto fail;
        }
    }
    rc = mdb_txn_commit(txn);
    if (rc != MDB_SUCCESS)
        goto fail;
    return 0;
fail:
    log_error("cannot open the metadata tables: %s", mdb_strerror(rc));
    return rc > 0 ? -rc : -EIO;
}

/*
 * The syncer: store_sync() every STORE_SYNC_INTERVAL_MS until stopped. It
 * calls nothing of LMDB but mdb_env_sync(), which without MDB_WRITEMAP reads
 * the meta pages and fdatasyncs the data file: safe beside transactions,
 * and a map resize waits for it (sync_lock).
 */
static void *store_syncer_main(void *arg)
{
    struct store *store = arg;
    pthread_mutex_lock(&store->sync_lock);
    while (!store->stopping) {
        struct timespec deadline = util_monotonic_deadline(STORE_SYNC_INTERVAL_MS);
        pthread_cond_timedwait(&store->sync_wake, &store->sync_lock, &deadline);
        if (store->stopping)
            break;
        pthread_mutex_unlock(&store->sync_lock);
        store_sync(store, false); /* takes sync_lock itself */
        pthread_mutex_lock(&store->sync_lock);
    }
    pthread_mutex_unlock(&store->sync_lock);
    return NULL;
}

/* Starts the syncer with every signal blocked: signals are the request loop's. */
static int store_syncer_start(struct store *store)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&store->syncer, NULL, store_syncer_main, store);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    store->syncer_started = rc == 0;
    return -rc;
}

/* Stops and joins the syncer (if it runs); store_close() syncs once more. */
static void store_syncer_stop(struct store *store)
{
    if (!store->syncer_started)
        return;
    pthread_mutex_lock(&store->sync_lock);
    store->stopping = true;
    pthread_cond_signal(&store->sync_wake);
    pthread_mutex_unlock(&store->sync_lock);
    pthread_join(store->syncer, NULL);
    store->syncer_started = false;
}

int store_open(const char *dir, struct store **storep)
{
    struct store *store;
    int err;
    int rc;

    *storep = NULL;
    store = calloc(1, sizeof(*store));
    if (!store)
        return -ENOMEM;
    store->lock_fd = -1;
    pthread_mutex_init(&store->sync_lock, NULL);
    util_cond_init_monotonic(&store->sync_wake);
    err = util_mkdir_p(dir, 0755);
    if (err < 0) {
        log_error("cannot create data directory %s: %s", dir, strerror(-err));
        goto fail_free;
    }
    err = store_lock(dir, &store->lock_fd);
    if (err < 0) {
        if (err == -EBUSY)
            log_error("%s is in use by another tessera-meta (stop it or pick another --data)", dir);
        else
            log_error("cannot lock %s/meta.lock: %s", dir, strerror(-err));
        goto fail_free;
    }
    rc = mdb_env_create(&store->env);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_maxdbs(store->env, STORE_TABLE_COUNT);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_mapsize(store->env, STORE_INITIAL_MAP_BYTES);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_open(store->env, dir, MDB_NOSYNC | MDB_NOTLS, 0644);
    if (rc != MDB_SUCCESS) {
        log_error("cannot open the LMDB environment in %s: %s", dir, mdb_strerror(rc));
        err = rc > 0 ? -rc : -EIO;
        goto fail_env;
    }
    err = store_open_tables(store);
    if (err < 0)
        goto fail_env;
    err = store_syncer_start(store);
    if (err < 0) {
        log_error("cannot start the metadata sync thread: %s", strerror(-err));
        goto fail_env;
    }
    *storep = store;
    return 0;

fail_env:
    if (store->env)
        mdb_env_close(store->env);
    close(store->lock_fd);
fail_free:
    pthread_cond_destroy(&store->sync_wake);
    pthread_mutex_destroy(&store->sync_lock);
    free(store);
    return err;
}

void store_close(struct store **storep)
{
    if (!storep || !*storep)
        return;
    struct store *store = *storep;
    store_syncer_stop(store);
    if (store_sync(store, false) < 0)
        log_warn("final sync of the metadata store failed");
    if (store->idle_read)
        mdb_txn_abort(store->idle_read);
    mdb_env_close(store->env);
    close(store->lock_fd);
    pthread_cond_destroy(&store->sync_wake);
    pthread_mutex_destroy(&store->sync_lock);
    free(store);
    *storep = NULL;
}

/* Doubles the map; only legal with no transaction open in this process. */
static int store_grow(struct store *store)
{
    MDB_envinfo info;
    int rc;
    if (store->idle_read) { /* it would keep a view of the old map */
        mdb_txn_abort(store->idle_read);
        store->idle_read = NULL;
    }
    rc = mdb_env_info(store->env, &info);
    if (rc == MDB_SUCCESS) {
        size_t bigger = info.me_mapsize * 2;
        pthread_mutex_lock(&store->sync_lock);
        rc = mdb_env_set_mapsize(store->env, bigger);
        pthread_mutex_unlock(&store->sync_lock);
        if (rc == MDB_SUCCESS)
            log_info("metadata map grown to %zu KiB", bigger >> 10);
    }
    if (rc != MDB_SUCCESS)
        log_error("cannot grow the metadata map: %s", mdb_strerror(rc));
    return rc == MDB_SUCCESS ? 0 : -EIO;
}

int store_write(struct store *store, store_body_fn body, void *arg)
{
    int status = TS_ERR_INTERNAL;

    for (int attempt = 0; attempt < 2; attempt++) {
        struct store_txn txn = {store, NULL};
        int rc = mdb_txn_begin(store->env, NULL, 0, &txn.txn);
        if (rc != MDB_SUCCESS) {
            log_error("cannot begin a write transaction: %s", mdb_strerror(rc));
            return TS_ERR_INTERNAL;
        }
        store->map_full = false;
        status = body(&txn, arg);
        if (status == TS_OK) {
            rc = mdb_txn_commit(txn.txn);
            if (rc == MDB_SUCCESS) {
                atomic_store(&store->dirty, true);
                return TS_OK;
            }
            status = store_error(store, rc) == -ENOSPC ? TS_ERR_NOSPC : TS_ERR_INTERNAL;
        } else {
            mdb_txn_abort(txn.txn);
        }
        if (!store->map_full)
            return status;
        if (attempt == 0 && store_grow(store) < 0)
            break;
    }
    log_error("the metadata store is full and cannot grow");
    return TS_ERR_NOSPC;
}

int store_read(struct store *store, store_body_fn body, void *arg)
{
    struct store_txn txn = {store, store->idle_read};
    int rc;
    int status;

    /* A nested store_read() finds no idle txn and begins its own. */
    store->idle_read = NULL;
    if (txn.txn) {
        rc = mdb_txn_renew(txn.txn);
        if (rc != MDB_SUCCESS) {
            mdb_txn_abort(txn.txn);
            txn.txn = NULL;
        }
    }
    if (!txn.txn) {
        rc = mdb_txn_begin(store->env, NULL, MDB_RDONLY, &txn.txn);
        if (rc != MDB_SUCCESS) {
            log_error("cannot begin a read transaction: %s", mdb_strerror(rc));
            return TS_ERR_INTERNAL;
        }
    }
    status = body(&txn, arg);
    if (store->idle_read) {
        mdb_txn_abort(txn.txn);
    } else {
        mdb_txn_reset(txn.txn);
        store->idle_read = txn.txn;
    }
    return status;
}

int store_get(struct store_txn *txn, enum store_table table, const void *key, size_t key_len,
              MDB_val *value)
{
    MDB_val k = {key_len, (void *)key};
    return store_error(txn->store, mdb_get(txn->txn, txn->store->dbi[table], &k, value));
}

int store_put(struct store_txn *txn, enum store_table table, const void *key, size_t key_len,
              const void *value, size_t value_len)
{
    MDB_val k = {key_len, (void *)key};
    MDB_val v = {value_len, (void *)value};
    return store_error(txn->store, mdb_put(txn->txn, txn->store->dbi[table], &k, &v, 0));
}

int store_del(struct store_txn *txn, enum store_table table, const void *key, size_t key_len)
{
    MDB_val k = {key_len, (void *)key};
    return store_error(txn->store, mdb_del(txn->txn, txn->store->dbi[table], &k, NULL));
}

int store_cursor(struct store_txn *txn, enum store_table table, MDB_cursor **cursorp)
{
    return store_error(txn->store, mdb_cursor_open(txn->txn, txn->store->dbi[table], cursorp));
}

int store_scan(struct store_txn *txn, enum store_table table, const void *start, size_t start_len,
               store_scan_fn visit, void *arg)
{
    MDB_cursor *cursor;
    MDB_val key = {start_len, (void *)start};
    MDB_val value;
    int result = 0;
    int err = store_cursor(txn, table, &cursor);
    if (err < 0)
        return err;
    err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
    while (err == 0) {
        result = visit(arg, &key, &value);
        if (result != 0)
            break;
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_NEXT));
    }
    mdb_cursor_close(cursor);
    if (err < 0 && err != -ENOENT)
        return err;
    return result;
}

int store_entries(struct store_txn *txn, enum store_table table, uint64_t *count)
{
    MDB_stat stat;
    int err = store_error(txn->store, mdb_stat(txn->txn, txn->store->dbi[table], &stat));
    if (err == 0)
        *count = stat.ms_entries;
    return err;
}

static int store_counter_read(struct store_txn *txn, enum store_counter counter, uint8_t key[4],
                              uint64_t *next)
{
    MDB_val value;
    int err;

    store_be32_put(key, (uint32_t)counter);
    err = store_get(txn, STORE_COUNTERS, key, 4, &value);
    if (err == -ENOENT) {
        *next = store_counter_first[counter];
        return 0;
    }
    if (err < 0)
        return err;
    if (value.mv_size != 8) {
        log_error("counter %d has a corrupt record", (int)counter);
        return -EIO;
    }
    *next = store_be64_get(value.mv_data);
    return 0;
}

static int store_counter_write(struct store_txn *txn, const uint8_t key[4], uint64_t next)
{
    uint8_t value[8];
    store_be64_put(value, next);
    return store_put(txn, STORE_COUNTERS, key, 4, value, sizeof(value));
}

int store_counter_peek(struct store_txn *txn, enum store_counter counter, uint64_t *next)
{
    uint8_t key[4];
    return store_counter_read(txn, counter, key, next);
}

int store_counter_take(struct store_txn *txn, enum store_counter counter, uint64_t *value)
{
    uint8_t key[4];
    uint64_t next;
    int err = store_counter_read(txn, counter, key, &next);
    if (err < 0)
        return err;
    if (next == UINT64_MAX)
        return -EOVERFLOW;
    err = store_counter_write(txn, key, next + 1);
    if (err == 0)
        *value = next;
    return err;
}

int store_counter_raise(struct store_txn *txn, enum store_counter counter, uint64_t at_least)
{
    uint8_t key[4];
    uint64_t next;
    int err = store_counter_read(txn, counter, key, &next);
    if (err < 0 || next >= at_least)
        return err;
    return store_counter_write(txn, key, at_least);
}

int store_counter_set(struct store_txn *txn, enum store_counter counter, uint64_t next)
{
    uint8_t key[4];
    store_be32_put(key, (uint32_t)counter);
    return store_counter_write(txn, key, next);
}

int store_sync(struct store *store, bool force)
{
    /* Cleared before the flush: a commit during it is flushed next time. */
    if (!atomic_exchange(&store->dirty, false) && !force)
        return 0;
    pthread_mutex_lock(&store->sync_lock);
    int rc = mdb_env_sync(store->env, 1);
    pthread_mutex_unlock(&store->sync_lock);
    if (rc != MDB_SUCCESS) {
        atomic_store(&store->dirty, true); /* try again next time */
        log_error("cannot sync the metadata store: %s", mdb_strerror(rc));
        return rc > 0 ? -rc : -EIO;
    }
    return 0;
}

bool store_dirty(struct store *store)
{
    return atomic_load(&store->dirty);
}
