/*
 * @file store.h
 * The LMDB environment of tessera-meta: its tables, its transactions and its
 * counters. Every other meta/ file that touches LMDB goes through here.
 *
 * One environment in the data directory holds one named database (DBI) per
 * table; the DBIs are opened once, at store_open(), from a static table. All
 * keys are fixed-width big-endian integers, or such integers followed by a
 * name, so that LMDB's cursor order is numeric order.
 *
 * A request is one write transaction run by store_write(): the body either
 * succeeds and is committed, or fails and nothing of it remains. When the map
 * fills up (MDB_MAP_FULL), store_write() aborts, doubles the map and runs the
 * body once more, so a body must be re-runnable: it may not change anything
 * outside the transaction before it returns success.
 *
 * Durability: the environment is opened with MDB_NOSYNC. LMDB writes its pages
 * with pwrite(), so a killed process loses nothing that was committed; a
 * machine crash can lose the last second, which store_sync() bounds: a
 * thread of the store's own calls it every second (so the request loop
 * never waits for the disk on its behalf), and COMMIT with sync = 1 calls
 * it with force. store_open() starts that thread, store_close() stops it.
 */
#ifndef TESSERA_META_STORE_H
#define TESSERA_META_STORE_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The tables, one DBI each; the names are the DBI names in the file. */
enum store_table {
    STORE_INODES,   /* u64 ino -> inode record (inodes.c) */
    STORE_DIRENTS,  /* u64 parent + name -> child (dirents.c) */
    STORE_TILES,    /* u64 ino + u64 tile -> location (tiles.c) */
    STORE_NODES,    /* u32 node id -> datanode record (nodes.c) */
    STORE_XATTRS,   /* u64 ino + name -> value (xattrs.c) */
    STORE_GARBAGE,  /* u32 node + u64 ino + u64 tile + u64 version (garbage.c) */
    STORE_COUNTERS, /* u32 counter id -> u64 next value */
    STORE_PROFILES, /* u64 ino + u64 tile + machine -> access counts (profiles.c) */
    STORE_COPIES,   /* u64 ino + u64 tile + u32 node -> replica's version (copies.c) */
    STORE_JOURNAL,  /* u64 ino + u64 tile -> relocation in progress (journal.c) */
    STORE_GRANTS,   /* u64 first ino -> inode numbers granted to a mount (grants.c) */
    STORE_IDENTITY, /* name -> value: which cluster this store is (clusterid.c) */
    STORE_PARENTS,  /* u64 child + u64 parent -> entries naming it (parents.c) */
    STORE_TABLE_COUNT
};

/* Monotonic counters; each value is handed out once. */
enum store_counter {
    STORE_NEXT_INO,        /* starts at 2: the root directory is 1 */
    STORE_NEXT_VERSION,    /* tile versions */
    STORE_NEXT_NODE_ID,    /* datanode ids, from 1 */
    STORE_NEXT_GENERATION, /* inode generations */
    STORE_COUNTER_COUNT
};

struct store;

/* A transaction and the store it belongs to: what every table function takes. */
struct store_txn {
    struct store *store;
    MDB_txn *txn;
};

/*
 * Opens (creating if needed, mkdir -p) the environment in directory `dir`
 * and every table. Takes an exclusive lock on DIR/meta.lock so that two
 * tessera-meta processes never share a store. Returns 0, -EBUSY if another
 * process holds the lock, or another -errno (logged).
 */
int store_open(const char *dir, struct store **storep);
/* Closes the store after a final sync; accepts NULL, clears *storep. */
void store_close(struct store **storep);

/*
 * The body of a transaction. Returns TS_OK to commit, or a TS_ERR_* status
 * (which aborts the transaction and is passed on to the caller).
 */
typedef int (*store_body_fn)(struct store_txn *txn, void *arg);

/*
 * Runs body in one write transaction and commits it if the body returns
 * TS_OK. Returns the body's status, TS_ERR_NOSPC if the map cannot grow any
 * more, or TS_ERR_INTERNAL if LMDB failed (logged).
 */
int store_write(struct store *store, store_body_fn body, void *arg);
/* Runs body in a read-only transaction; returns its status. */
int store_read(struct store *store, store_body_fn body, void *arg);

/*
 * Turns an LMDB return code into 0 or a negative errno: MDB_NOTFOUND is
 * -ENOENT, MDB_KEYEXIST -EEXIST, MDB_MAP_FULL -ENOSPC (and remembers it so
 * that store_write() grows the map and retries), other LMDB codes -EIO.
 * Every table function passes its LMDB results through this.
 */
int store_error(struct store *store, int mdb_result);

/* The DBI of a table. */
MDB_dbi store_dbi(const struct store *store, enum store_table table);

/* Point access; values returned by store_get point into the map and stay
 * valid until the transaction ends. All return 0 or a negative errno
 * (-ENOENT when the key is missing). */
int store_get(struct store_txn *txn, enum store_table table, const void *key, size_t key_len,
              MDB_val *value);
int store_put(struct store_txn *txn, enum store_table table, const void *key, size_t key_len,
              const void *value, size_t value_len);
int store_del(struct store_txn *txn, enum store_table table, const void *key, size_t key_len);
/* Opens a cursor on a table (closed with mdb_cursor_close, or by the txn end). */
int store_cursor(struct store_txn *txn, enum store_table table, MDB_cursor **cursorp);
/*
 * Visits the records of a table in key order from the first key >= start:
 * visit returns 0 to go on, a positive value to stop (store_scan returns
 * it), or a negative errno (returned as well). Returns 0 at the table's
 * end, or a negative errno from LMDB. The key and value point into the map
 * and are valid during the call only.
 */
typedef int (*store_scan_fn)(void *arg, const MDB_val *key, const MDB_val *value);
int store_scan(struct store_txn *txn, enum store_table table, const void *start, size_t start_len,
               store_scan_fn visit, void *arg);
/* Number of records in a table. */
int store_entries(struct store_txn *txn, enum store_table table, uint64_t *count);

/* The value the counter hands out next, without taking it. 0 or a negative errno. */
int store_counter_peek(struct store_txn *txn, enum store_counter counter, uint64_t *next);
/* Hands out the counter's next value. 0 or a negative errno. */
int store_counter_take(struct store_txn *txn, enum store_counter counter, uint64_t *value);
/* Makes sure the counter will never hand out a value below `at_least`. */
int store_counter_raise(struct store_txn *txn, enum store_counter counter, uint64_t at_least);
/* Sets the counter's next value (to wrap a counter whose values have a narrower type). */
int store_counter_set(struct store_txn *txn, enum store_counter counter, uint64_t next);

/*
 * Flushes committed transactions to disk (mdb_env_sync with force) when
 * something was committed since the last sync, or always when `force`.
 * Returns 0 or a negative errno. Safe beside any other store call (the
 * syncer thread calls it).
 */
int store_sync(struct store *store, bool force);
/* Whether something was committed since the last sync began. */
bool store_dirty(struct store *store);

/* Big-endian key helpers: keys sort numerically under LMDB's memcmp. */
void store_be32_put(uint8_t *out, uint32_t value);
void store_be64_put(uint8_t *out, uint64_t value);
uint32_t store_be32_get(const uint8_t *in);
uint64_t store_be64_get(const uint8_t *in);

#endif
