/*
 * @file test_handlers_leases_batches.c
 * Unit tests of the metadata requests that serve the mount's statahead,
 * background releases and early unlinks and creates (READDIRPLUS,
 * RELEASE_MANY, UNLINK_MANY, DIR_LEASE, CREATE_MANY), of meta's lease table
 * (leases.c) and of the store's reuse
 * of read transactions, against a real LMDB store in a fresh temporary
 * directory per case (metafixture.h): requests encoded with the generated
 * encoders, handed to the real handlers through handlers_table, replies
 * decoded with the generated decoders.
 */
#include "metafixture.h"
#include "leases.h"
#include "proto.h"
#include "service.h"
#include "status.h"
#include "store.h"
#include "tile.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#define TEST_NODE_TIMEOUT_MS 60000

static int setup(void **state)
{
    return metafixture_setup(state, "test_handlers_leases_batches", TEST_NODE_TIMEOUT_MS, 0);
}

static int teardown(void **state)
{
    return metafixture_teardown(state);
}

static uint64_t make(struct metafixture *f, uint64_t parent, const char *name, uint32_t mode)
{
    struct ts_attr attr = {0};
    struct ts_mknod_req m = {
        .parent = parent, .name = ts_str_of(name), .mode = mode, .uid = 1000, .gid = 100};
    assert_int_equal(metafixture_attr_call(f, CALL(f, TS_OP_MKNOD, mknod_req, &m), &attr), TS_OK);
    return attr.ino;
}

static uint64_t make_dir(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_attr attr = {0};
    struct ts_mkdir_req m = {
        .parent = parent, .name = ts_str_of(name), .mode = 0755, .uid = 1000, .gid = 100};
    assert_int_equal(metafixture_attr_call(f, CALL(f, TS_OP_MKDIR, mkdir_req, &m), &attr), TS_OK);
    return attr.ino;
}

static int do_getattr(struct metafixture *f, uint64_t ino, struct ts_attr *attr)
{
    struct ts_getattr_req m = {.ino = ino};
    return metafixture_attr_call(f, CALL(f, TS_OP_GETATTR, getattr_req, &m), attr);
}

static int do_open(struct metafixture *f, uint64_t ino)
{
    struct ts_open_req m = {.ino = ino};
    return metafixture_open_call(f, CALL(f, TS_OP_OPEN, open_req, &m), NULL, NULL, 0);
}

static int do_unlink(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_name_req m = {.parent = parent, .name = ts_str_of(name)};
    return CALL(f, TS_OP_UNLINK, name_req, &m);
}

struct listed {
    uint32_t count;
    uint32_t done;
    char names[64][TS_MAX_NAME + 1];
    struct ts_attr attrs[64];
};

/* READDIRPLUS(dir, from, inclusive, max) into *out; returns the status. */
static int readdirplus(struct metafixture *f, uint64_t dir, const char *from, uint32_t inclusive,
                       uint32_t max, struct listed *out)
{
    struct ts_readdirplus_req m = {
        .ino = dir, .after = ts_str_of(from), .inclusive = inclusive, .max_entries = max};
    struct ts_readdirplus_rep reply;
    struct ts_cursor cursor;
    int status = CALL(f, TS_OP_READDIRPLUS, readdirplus_req, &m);
    memset(out, 0, sizeof(*out));
    if (status != TS_OK)
        return status;
    assert_int_equal(ts_readdirplus_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_true(reply.count <= 64);
    ts_cursor_init(&cursor, reply.entries.ptr, reply.entries.len);
    for (uint32_t i = 0; i < reply.count; i++) {
        struct ts_readdirplus_rec entry;
        assert_int_equal(ts_readdirplus_rec_read(&cursor, &entry), 0);
        out->attrs[i] = entry.attr;
        assert_int_equal(ts_str_copy(entry.name, out->names[i], sizeof(out->names[i])), 0);
    }
    assert_int_equal(cursor.left, 0);
    out->count = reply.count;
    out->done = reply.done;
    return status;
}

/* Pages of a listing, with every entry's attributes as GETATTR gives them. */
static void test_readdirplus_pages(void **state)
{
    struct metafixture *f = *state;
    uint64_t dir = make_dir(f, TS_ROOT_INO, "walk");
    struct listed *page = calloc(1, sizeof(*page));
    struct ts_attr attr = {0};
    char after[TS_MAX_NAME + 1] = "";
    uint32_t total = 0;

    /* Scrambled creation order; a symlink and a subdirectory among them. */
    for (uint32_t i = 0; i < 100; i++) {
        char name[16];
        snprintf(name, sizeof(name), "f%03u", (i * 37u) % 100);
        make(f, dir, name, S_IFREG | 0640);
    }
    make_dir(f, dir, "f050x");
    do {
        assert_int_equal(readdirplus(f, dir, after, 0, 16, page), TS_OK);
        assert_true(page->count <= 16);
        assert_true(page->done || page->count == 16);
        for (uint32_t i = 0; i < page->count; i++) {
            assert_true(strcmp(page->names[i], after) > 0);
            assert_int_equal(do_getattr(f, page->attrs[i].ino, &attr), TS_OK);
            metafixture_assert_attr_equal(&page->attrs[i], &attr);
            snprintf(after, sizeof(after), "%s", page->names[i]);
            total++;
        }
    } while (!page->done);
    assert_int_equal(total, 101);
    assert_string_equal(after, "f099");

    /* inclusive: the listing starts at the name itself when it exists... */
    assert_int_equal(readdirplus(f, dir, "f050", 1, 3, page), TS_OK);
    assert_int_equal(page->count, 3);
    assert_string_equal(page->names[0], "f050");
    assert_string_equal(page->names[1], "f050x");
    assert_true(S_ISDIR(page->attrs[1].mode));
    assert_int_equal(page->attrs[1].nlink, 2);
    assert_string_equal(page->names[2], "f051");
    assert_int_equal(page->done, 0);
    /* ...at the next one when it does not, and exclusive skips it. */
    assert_int_equal(readdirplus(f, dir, "f050a", 1, 1, page), TS_OK);
    assert_string_equal(page->names[0], "f050x");
    assert_int_equal(readdirplus(f, dir, "f050", 0, 1, page), TS_OK);
    assert_string_equal(page->names[0], "f050x");
    /* From past the last name: empty and done (every later name is absent). */
    assert_int_equal(readdirplus(f, dir, "g", 1, 16, page), TS_OK);
    assert_int_equal(page->count, 0);
    assert_int_equal(page->done, 1);
    /* The last page is done even when it is exactly full. */
    assert_int_equal(readdirplus(f, dir, "f098", 1, 2, page), TS_OK);
    assert_int_equal(page->count, 2);
    assert_int_equal(page->done, 1);
    /* An empty directory. */
    uint64_t empty = make_dir(f, TS_ROOT_INO, "empty");
    assert_int_equal(readdirplus(f, empty, "", 0, 16, page), TS_OK);
    assert_int_equal(page->count, 0);
    assert_int_equal(page->done, 1);
    free(page);
}

/* Sizes follow commits; files, not directories, are refused; limits hold. */
static void test_readdirplus_errors_and_limits(void **state)
{
    struct metafixture *f = *state;
    struct listed *page = calloc(1, sizeof(*page));
    uint64_t file = make(f, TS_ROOT_INO, "file", S_IFREG | 0644);
    struct ts_commit_req commit = {.ino = file, .min_size = 12345};

    assert_int_equal(metafixture_attr_call(f, CALL(f, TS_OP_COMMIT, commit_req, &commit), NULL),
                     TS_OK);
    assert_int_equal(readdirplus(f, TS_ROOT_INO, "file", 1, 1, page), TS_OK);
    assert_int_equal(page->attrs[0].size, 12345);
    assert_int_equal(readdirplus(f, file, "", 0, 16, page), TS_ERR_NOTDIR);
    assert_int_equal(readdirplus(f, 424242, "", 0, 16, page), TS_ERR_NOENT);

    /* max_entries 0 means as many as fit, capped like READDIR's. */
    uint64_t dir = make_dir(f, TS_ROOT_INO, "many");
    for (uint32_t i = 0; i < 5000; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%05u", i);
        make(f, dir, name, S_IFREG | 0644);
    }
    struct ts_readdirplus_req all = {.ino = dir, .after = ts_str_of(""), .max_entries = 0};
    struct ts_readdirplus_rep reply;
    assert_int_equal(CALL(f, TS_OP_READDIRPLUS, readdirplus_req, &all), TS_OK);
    assert_int_equal(ts_readdirplus_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.count, 4096);
    assert_int_equal(reply.done, 0);

    /* Malformed requests. */
    struct ts_readdirplus_req bad = {.ino = dir, .after = ts_str_of(""), .inclusive = 2};
    assert_int_equal(CALL(f, TS_OP_READDIRPLUS, readdirplus_req, &bad), TS_ERR_BADMSG);
    char long_name[TS_MAX_NAME + 2];
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    bad.inclusive = 0;
    bad.after = ts_str_of(long_name);
    assert_int_equal(CALL(f, TS_OP_READDIRPLUS, readdirplus_req, &bad), TS_ERR_INVAL);
    size_t len = metafixture_encoded_length(
        ts_readdirplus_req_encode(&all, f->request, METAFIXTURE_PAYLOAD_CAP));
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(metafixture_call(f, TS_OP_READDIRPLUS, f->request, cut), TS_ERR_BADMSG);
    assert_int_equal(metafixture_call(f, TS_OP_READDIRPLUS, f->request, len + 1), TS_ERR_BADMSG);
    free(page);
}

static int release_many(struct metafixture *f, const uint64_t *inos, uint32_t count)
{
    uint8_t records[64 * ts_release_rec_bytes];
    struct ts_writer writer;
    ts_writer_init(&writer, records, sizeof(records));
    for (uint32_t i = 0; i < count; i++) {
        struct ts_release_rec record = {.ino = inos[i]};
        ts_release_rec_write(&writer, &record);
    }
    assert_false(writer.failed);
    struct ts_release_many_req m = {.count = count,
                                    .inos = {(const char *)records, (uint32_t)writer.len}};
    return CALL(f, TS_OP_RELEASE_MANY, release_many_req, &m);
}

/* RELEASE_MANY counts opens down as one RELEASE per record would. */
static void test_release_many(void **state)
{
    struct metafixture *f = *state;
    uint64_t kept = make(f, TS_ROOT_INO, "kept", S_IFREG | 0644);
    uint64_t gone = make(f, TS_ROOT_INO, "gone", S_IFREG | 0644);

    assert_int_equal(do_open(f, kept), TS_OK);
    assert_int_equal(do_open(f, gone), TS_OK);
    assert_int_equal(do_open(f, gone), TS_OK);
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "gone"), TS_OK);
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "kept"), TS_OK);

    /* One of two opens of `gone` released: it stays (unlinked but open). */
    uint64_t first[] = {gone};
    assert_int_equal(release_many(f, first, 1), TS_OK);
    assert_int_equal(do_getattr(f, gone, NULL), TS_OK);
    /* The last releases of both, and duplicates and strangers: harmless. */
    uint64_t rest[] = {gone, kept, gone, 999999};
    assert_int_equal(release_many(f, rest, 4), TS_OK);
    assert_int_equal(do_getattr(f, gone, NULL), TS_ERR_NOENT);
    assert_int_equal(do_getattr(f, kept, NULL), TS_ERR_NOENT);

    /* A linked file just counts down. */
    uint64_t linked = make(f, TS_ROOT_INO, "linked", S_IFREG | 0644);
    assert_int_equal(do_open(f, linked), TS_OK);
    uint64_t again[] = {linked};
    assert_int_equal(release_many(f, again, 1), TS_OK);
    assert_int_equal(do_getattr(f, linked, NULL), TS_OK);

    /* Malformed: count and blob disagree, too many, truncated. */
    uint8_t records[16] = {0};
    struct ts_release_many_req bad = {.count = 3, .inos = {(const char *)records, 16}};
    assert_int_equal(CALL(f, TS_OP_RELEASE_MANY, release_many_req, &bad), TS_ERR_BADMSG);
    bad.count = TS_MAX_RELEASES + 1;
    assert_int_equal(CALL(f, TS_OP_RELEASE_MANY, release_many_req, &bad), TS_ERR_BADMSG);
    bad.count = 2;
    size_t len = metafixture_encoded_length(
        ts_release_many_req_encode(&bad, f->request, METAFIXTURE_PAYLOAD_CAP));
    assert_int_equal(metafixture_call(f, TS_OP_RELEASE_MANY, f->request, len), TS_OK);
    assert_int_equal(metafixture_call(f, TS_OP_RELEASE_MANY, f->request, len - 1), TS_ERR_BADMSG);
    assert_int_equal(metafixture_call(f, TS_OP_RELEASE_MANY, f->request, 0), TS_ERR_BADMSG);
}

/* UNLINK_MANY(parents[i], names[i]...) into statuses; returns the request's status. */
/* The STATUSES_REP of a batch of count records into statuses[]. */
static void read_statuses(struct metafixture *f, uint32_t count, uint32_t *statuses)
{
    struct ts_statuses_rep reply;
    struct ts_cursor cursor;
    assert_int_equal(ts_statuses_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.count, count);
    ts_cursor_init(&cursor, reply.statuses.ptr, reply.statuses.len);
    for (uint32_t i = 0; i < count; i++) {
        struct ts_status_rec record;
        assert_int_equal(ts_status_rec_read(&cursor, &record), 0);
        statuses[i] = record.status;
    }
    assert_int_equal(cursor.left, 0);
}

static int unlink_many(struct metafixture *f, const uint64_t *parents, const char *const *names,
                       uint32_t count, uint32_t *statuses)
{
    uint8_t records[16 * (ts_unlink_rec_bytes + TS_MAX_NAME + 1)];
    struct ts_writer writer;
    ts_writer_init(&writer, records, sizeof(records));
    for (uint32_t i = 0; i < count; i++) {
        struct ts_unlink_rec record = {.parent = parents[i], .name = ts_str_of(names[i])};
        ts_unlink_rec_write(&writer, &record);
    }
    assert_false(writer.failed);
    struct ts_batch_req m = {.count = count,
                                   .records = {(const char *)records, (uint32_t)writer.len}};
    int status = CALL(f, TS_OP_UNLINK_MANY, batch_req, &m);
    if (status == TS_OK)
        read_statuses(f, count, statuses);
    return status;
}

static int lookup(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_lookup_req m = {.parent = parent, .name = ts_str_of(name)};
    return CALL(f, TS_OP_LOOKUP, lookup_req, &m);
}

/*
 * UNLINK_MANY removes each name as UNLINK would, in order, in one
 * transaction; a name that cannot go gets its own status and the others
 * still go. A malformed request changes nothing.
 */
static void test_unlink_many(void **state)
{
    struct metafixture *f = *state;
    uint64_t dir = make_dir(f, TS_ROOT_INO, "d");
    uint64_t a = make(f, dir, "a", S_IFREG | 0644);
    make(f, dir, "b", S_IFREG | 0644);
    uint64_t open_one = make(f, TS_ROOT_INO, "open", S_IFREG | 0644);
    make_dir(f, dir, "sub");
    uint64_t plain = make(f, TS_ROOT_INO, "plain", S_IFREG | 0644);
    struct ts_attr before;
    assert_int_equal(do_getattr(f, dir, &before), TS_OK);
    assert_int_equal(do_open(f, open_one), TS_OK);

    const uint64_t parents[] = {dir, dir, dir, dir, dir, TS_ROOT_INO, plain, dir};
    const char *const names[] = {"a", "missing", "sub", "b", "a", "open", "x", "."};
    uint32_t statuses[8];
    assert_int_equal(unlink_many(f, parents, names, 8, statuses), TS_OK);
    assert_int_equal(statuses[0], TS_OK);
    assert_int_equal(statuses[1], TS_ERR_NOENT);
    assert_int_equal(statuses[2], TS_ERR_ISDIR);
    assert_int_equal(statuses[3], TS_OK);
    assert_int_equal(statuses[4], TS_ERR_NOENT); /* removed two records earlier */
    assert_int_equal(statuses[5], TS_OK);
    assert_int_equal(statuses[6], TS_ERR_NOTDIR); /* a file as the parent */
    assert_int_equal(statuses[7], TS_ERR_INVAL);

    assert_int_equal(lookup(f, dir, "a"), TS_ERR_NOENT);
    assert_int_equal(lookup(f, dir, "b"), TS_ERR_NOENT);
    assert_int_equal(lookup(f, dir, "sub"), TS_OK);
    assert_int_equal(do_getattr(f, a, NULL), TS_ERR_NOENT); /* last link, not open: gone */
    struct ts_attr open_attr;
    assert_int_equal(do_getattr(f, open_one, &open_attr), TS_OK); /* open: stays */
    assert_int_equal(open_attr.nlink, 0);
    struct ts_attr after;
    assert_int_equal(do_getattr(f, dir, &after), TS_OK);
    assert_true(after.mtime_sec > before.mtime_sec ||
                (after.mtime_sec == before.mtime_sec && after.mtime_nsec > before.mtime_nsec));
    assert_int_equal(after.nlink, before.nlink); /* files only: no subdirectory went */

    /* Malformed: a cut record, count and records disagreeing, too many. */
    make(f, dir, "c", S_IFREG | 0644);
    const uint64_t c_parent[] = {dir};
    const char *const c_name[] = {"c"};
    uint8_t records[64];
    struct ts_writer writer;
    ts_writer_init(&writer, records, sizeof(records));
    struct ts_unlink_rec c_record = {.parent = dir, .name = ts_str_of("c")};
    ts_unlink_rec_write(&writer, &c_record);
    struct ts_batch_req bad = {.count = 1,
                                     .records = {(const char *)records, (uint32_t)writer.len - 1}};
    assert_int_equal(CALL(f, TS_OP_UNLINK_MANY, batch_req, &bad), TS_ERR_BADMSG);
    bad.records.len = (uint32_t)writer.len;
    bad.count = 2;
    assert_int_equal(CALL(f, TS_OP_UNLINK_MANY, batch_req, &bad), TS_ERR_BADMSG);
    bad.count = 0;
    assert_int_equal(CALL(f, TS_OP_UNLINK_MANY, batch_req, &bad), TS_ERR_BADMSG);
    bad.count = TS_MAX_UNLINKS + 1;
    assert_int_equal(CALL(f, TS_OP_UNLINK_MANY, batch_req, &bad), TS_ERR_BADMSG);
    bad.count = 1;
    size_t len =
        metafixture_encoded_length(ts_batch_req_encode(&bad, f->request, METAFIXTURE_PAYLOAD_CAP));
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(metafixture_call(f, TS_OP_UNLINK_MANY, f->request, cut), TS_ERR_BADMSG);
    assert_int_equal(lookup(f, dir, "c"), TS_OK);
    assert_int_equal(unlink_many(f, c_parent, c_name, 1, statuses), TS_OK);
    assert_int_equal(statuses[0], TS_OK);
    assert_int_equal(lookup(f, dir, "c"), TS_ERR_NOENT);
}

/* ---- read transactions -------------------------------------------------- */

struct read_probe {
    uint64_t ino;
    int status;
    int nested_status;
    uint64_t size;
    struct store *store;
    bool nest;
};

static int probe_body(struct store_txn *txn, void *arg);

/* Reads inode size through the inodes table's own key layout: u64 BE ino. */
static int probe_body(struct store_txn *txn, void *arg)
{
    struct read_probe *probe = arg;
    uint8_t key[8];
    MDB_val value;
    store_be64_put(key, probe->ino);
    probe->status = store_get(txn, STORE_INODES, key, sizeof(key), &value);
    probe->size = probe->status == 0 ? value.mv_size : 0;
    if (probe->nest) {
        struct read_probe inner = *probe;
        inner.nest = false;
        probe->nested_status = store_read(probe->store, probe_body, &inner);
        if (inner.status != probe->status)
            return TS_ERR_INTERNAL;
    }
    return TS_OK;
}

/*
 * The reused read transaction sees every write committed before it, works
 * nested, and survives a close and reopen.
 */
static void test_read_txn_reuse(void **state)
{
    struct metafixture *f = *state;
    struct read_probe probe = {.store = f->service->store};

    for (int round = 0; round < 50; round++) {
        char name[16];
        snprintf(name, sizeof(name), "r%02d", round);
        probe.ino = make(f, TS_ROOT_INO, name, S_IFREG | 0644);
        probe.nest = round % 2 == 1;
        assert_int_equal(store_read(f->service->store, probe_body, &probe), TS_OK);
        assert_int_equal(probe.status, 0);
        assert_true(probe.size > 0);
        if (probe.nest)
            assert_int_equal(probe.nested_status, TS_OK);
        assert_int_equal(do_unlink(f, TS_ROOT_INO, name), TS_OK);
        probe.nest = false;
        assert_int_equal(store_read(f->service->store, probe_body, &probe), TS_OK);
        assert_int_not_equal(probe.status, 0); /* the deletion is seen */
    }
    service_close(&f->service);
    assert_int_equal(service_open(f->dir, TEST_NODE_TIMEOUT_MS, &f->service), 0);
    probe.store = f->service->store;
    probe.ino = TS_ROOT_INO;
    assert_int_equal(store_read(f->service->store, probe_body, &probe), TS_OK);
    assert_int_equal(probe.status, 0);
}


/* ---- leases and early creates ------------------------------------------- */

static int dir_lease(struct metafixture *f, uint64_t dir, uint32_t action, uint32_t want,
                     struct ts_dir_lease_rep *out)
{
    struct ts_dir_lease_req m = {.dir = dir, .action = action, .want_inodes = want};
    int status = CALL(f, TS_OP_DIR_LEASE, dir_lease_req, &m);
    if (status == TS_OK && out)
        assert_int_equal(ts_dir_lease_rep_decode(out, f->reply, f->reply_len), 0);
    return status;
}

static int lookup_attr(struct metafixture *f, uint64_t parent, const char *name,
                       struct ts_attr *attr)
{
    struct ts_lookup_req m = {.parent = parent, .name = ts_str_of(name)};
    return metafixture_attr_call(f, CALL(f, TS_OP_LOOKUP, lookup_req, &m), attr);
}

/* The lease table alone, on its own clock. */
static void test_lease_table(void **state)
{
    (void)state;
    struct leases *leases = leases_new();
    assert_non_null(leases);
    assert_int_equal(leases_get(leases, 7, 1, 1000), 0);
    assert_int_equal(leases_get(leases, 7, 2, 1000), -EBUSY); /* held by mount 1 */
    assert_false(leases_refuse(leases, 7, 1, 1001));           /* its holder goes on */
    assert_false(leases_refuse(leases, 8, 2, 1001));           /* another directory */
    assert_int_equal(leases_renew(leases, 7, 1, 1002), 0);
    assert_true(leases_refuse(leases, 7, 2, 1003));  /* mount 2 waits, mount 1 is asked */
    assert_true(leases_refuse(leases, 7, 0, 1003));  /* so does a tool */
    assert_int_equal(leases_renew(leases, 7, 1, 1004), -EBUSY);
    assert_int_equal(leases_get(leases, 7, 1, 1004), -EBUSY); /* not again before returning */
    leases_return(leases, 7, 1);
    assert_false(leases_refuse(leases, 7, 2, 1005));
    assert_int_equal(leases_get(leases, 7, 2, 1005), 0);
    /* Not renewed: it lapses, and another mount may have it. */
    assert_true(leases_refuse(leases, 7, 1, 1005 + LEASES_TTL_MS - 1));
    assert_false(leases_refuse(leases, 7, 1, 1005 + LEASES_TTL_MS));
    assert_int_equal(leases_renew(leases, 7, 2, 1005 + LEASES_TTL_MS), -EBUSY);
    assert_int_equal(leases_get(leases, 7, 1, 1005 + LEASES_TTL_MS), 0);
    /* Mounts by routing id. */
    uint8_t id[13] = {'M', 9, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
    assert_int_equal(leases_mount_of(id, sizeof(id)), 9);
    assert_int_equal(leases_mount_of(id, 12), 0);
    id[0] = 'X';
    assert_int_equal(leases_mount_of(id, sizeof(id)), 0);
    assert_int_equal(leases_mount_of(NULL, 0), 0);
    leases_destroy(&leases);
}

/* While a mount holds a directory's lease, only it reads or changes the directory. */
static void test_lease_excludes_others(void **state)
{
    struct metafixture *f = *state;
    uint64_t dir = make_dir(f, TS_ROOT_INO, "d");
    uint64_t sub = make_dir(f, dir, "sub");
    make(f, dir, "x", S_IFREG | 0644);
    struct ts_dir_lease_rep granted;
    struct listed listed;

    assert_int_equal(dir_lease(f, dir, TS_LEASE_GET, 0, NULL), TS_ERR_INVAL); /* not a mount */
    metafixture_send_as(f, 1);
    assert_int_equal(dir_lease(f, dir, TS_LEASE_GET, 0, &granted), TS_OK);
    assert_int_equal(granted.lease_ms, LEASES_TTL_MS);
    assert_int_equal(granted.template.tile_bytes, TILE_DEFAULT_BYTES);
    assert_int_equal(dir_lease(f, sub, TS_LEASE_GET, 0, NULL), TS_OK);
    /* The holder goes on as before. */
    assert_int_equal(lookup(f, dir, "x"), TS_OK);
    assert_int_equal(readdirplus(f, dir, "", 0, 10, &listed), TS_OK);
    assert_int_equal(do_getattr(f, dir, NULL), TS_OK);
    /* Everyone else waits: lookups, listings, getattr, changes, tools. */
    metafixture_send_as(f, 2);
    assert_int_equal(dir_lease(f, dir, TS_LEASE_GET, 0, NULL), TS_ERR_BUSY);
    assert_int_equal(lookup(f, dir, "x"), TS_ERR_LEASED);
    assert_int_equal(readdirplus(f, dir, "", 0, 10, &listed), TS_ERR_LEASED);
    assert_int_equal(do_getattr(f, dir, NULL), TS_ERR_LEASED);
    struct ts_mknod_req m = {.parent = dir, .name = ts_str_of("y"), .mode = S_IFREG | 0644};
    assert_int_equal(CALL(f, TS_OP_MKNOD, mknod_req, &m), TS_ERR_LEASED);
    metafixture_send_as(f, 0);
    struct ts_name_req rmdir_d = {.parent = TS_ROOT_INO, .name = ts_str_of("d")};
    assert_int_equal(CALL(f, TS_OP_RMDIR, name_req, &rmdir_d), TS_ERR_NOTEMPTY);
    /* The holder is asked back for what others touched: renewals fail; it returns it. */
    metafixture_send_as(f, 1);
    assert_int_equal(dir_lease(f, dir, TS_LEASE_RENEW, 0, NULL), TS_ERR_BUSY);
    assert_int_equal(dir_lease(f, sub, TS_LEASE_RENEW, 0, NULL), TS_OK);
    assert_int_equal(dir_lease(f, dir, TS_LEASE_RETURN, 0, NULL), TS_OK);
    metafixture_send_as(f, 2);
    assert_int_equal(lookup(f, dir, "x"), TS_OK);
    assert_int_equal(CALL(f, TS_OP_MKNOD, mknod_req, &m), TS_OK);
    /* Removing names does not wait: it cannot make the holder's creates fail,
     * and unlink queues that waited for each other's leases could deadlock. */
    metafixture_send_as(f, 1);
    assert_int_equal(dir_lease(f, dir, TS_LEASE_GET, 0, NULL), TS_OK);
    metafixture_send_as(f, 2);
    assert_int_equal(do_unlink(f, dir, "x"), TS_OK);
    const uint64_t parents[] = {dir};
    const char *const names[] = {"y"};
    uint32_t statuses[1];
    assert_int_equal(unlink_many(f, parents, names, 1, statuses), TS_OK);
    assert_int_equal(statuses[0], TS_OK);
    metafixture_send_as(f, 1);
    assert_int_equal(dir_lease(f, dir, TS_LEASE_RENEW, 0, NULL), TS_OK); /* not recalled */
    assert_int_equal(dir_lease(f, dir, TS_LEASE_RETURN, 0, NULL), TS_OK);
    metafixture_send_as(f, 2);
    struct ts_name_req rmdir_sub = {.parent = dir, .name = ts_str_of("sub")};
    /* Removing a leased directory waits too: its holder may have creates to send. */
    assert_int_equal(CALL(f, TS_OP_RMDIR, name_req, &rmdir_sub), TS_ERR_LEASED);
    metafixture_send_as(f, 1);
    assert_int_equal(dir_lease(f, sub, TS_LEASE_RENEW, 0, NULL), TS_ERR_BUSY);
    assert_int_equal(dir_lease(f, sub, TS_LEASE_RETURN, 0, NULL), TS_OK);
    metafixture_send_as(f, 2);
    assert_int_equal(CALL(f, TS_OP_RMDIR, name_req, &rmdir_sub), TS_OK);
    /* No lease where new files get more than a template says. */
    struct ts_setattr_req setgid = {.ino = dir, .valid = TS_SET_MODE, .mode = 02755};
    assert_int_equal(CALL(f, TS_OP_SETATTR, setattr_req, &setgid), TS_OK);
    assert_int_equal(dir_lease(f, dir, TS_LEASE_GET, 0, NULL), TS_ERR_BUSY);
    assert_int_equal(dir_lease(f, dir, 99, 0, NULL), TS_ERR_INVAL);
}

/* One CREATE_MANY record (proto.h). */
static void create_record(struct ts_writer *writer, uint64_t parent, uint64_t ino,
                          const char *name, int64_t sec)
{
    struct ts_create_rec record = {.parent = parent,
                                   .ino = ino,
                                   .mode = S_IFREG | 0640,
                                   .uid = 1000,
                                   .gid = 100,
                                   .time_sec = sec,
                                   .time_nsec = 5,
                                   .open = 0,
                                   .name = ts_str_of(name)};
    ts_create_rec_write(writer, &record);
}

static int create_many(struct metafixture *f, const uint8_t *records, size_t len, uint32_t count,
                       uint32_t *statuses)
{
    struct ts_batch_req m = {.count = count, .records = {(const char *)records, (uint32_t)len}};
    int status = CALL(f, TS_OP_CREATE_MANY, batch_req, &m);
    if (status == TS_OK)
        read_statuses(f, count, statuses);
    return status;
}

/* Creates a mount made under its lease, with the inode numbers meta granted it. */
static void test_create_many(void **state)
{
    struct metafixture *f = *state;
    uint64_t dir = make_dir(f, TS_ROOT_INO, "d");
    make(f, dir, "taken", S_IFREG | 0644);
    struct ts_dir_lease_rep lease, inodes, others;
    uint8_t records[1024];
    struct ts_writer writer;
    uint32_t statuses[6];

    metafixture_send_as(f, 1);
    assert_int_equal(dir_lease(f, dir, TS_LEASE_GET, 0, &lease), TS_OK);
    assert_int_equal(dir_lease(f, 0, TS_LEASE_INODES, 0, NULL), TS_ERR_INVAL);
    assert_int_equal(dir_lease(f, 0, TS_LEASE_INODES, TS_MAX_CREATES + 1, NULL), TS_ERR_INVAL);
    assert_int_equal(dir_lease(f, 0, TS_LEASE_INODES, 3, &inodes), TS_OK);
    assert_int_equal(inodes.inode_count, 3);
    metafixture_send_as(f, 2);
    assert_int_equal(dir_lease(f, 0, TS_LEASE_INODES, 2, &others), TS_OK);
    assert_true(others.first_ino >= inodes.first_ino + 3); /* never handed out twice */
    uint64_t a = inodes.first_ino;

    metafixture_send_as(f, 1);
    ts_writer_init(&writer, records, sizeof(records));
    create_record(&writer, dir, a, "a", 1700000000);
    create_record(&writer, dir, a + 1, "taken", 1700000001);        /* EXIST */
    create_record(&writer, dir, others.first_ino, "b", 1700000002); /* mount 2's number */
    create_record(&writer, dir, a, "c", 1700000003);                /* a's number again */
    create_record(&writer, dir, a + 1, "../e", 1700000004);         /* a bad name */
    create_record(&writer, dir, a + 2, "e", 1700000005);
    assert_int_equal(create_many(f, records, writer.len, 6, statuses), TS_OK);
    assert_int_equal(statuses[0], TS_OK);
    assert_int_equal(statuses[1], TS_ERR_EXIST);
    assert_int_equal(statuses[2], TS_ERR_PERM);
    assert_int_equal(statuses[3], TS_ERR_STALE);
    assert_int_equal(statuses[4], TS_ERR_INVAL);
    assert_int_equal(statuses[5], TS_OK);

    /* Made as the mount answered: its number, generation, owner, mode, times, the template. */
    struct ts_attr made, listed_dir;
    assert_int_equal(lookup_attr(f, dir, "a", &made), TS_OK);
    assert_int_equal(made.ino, a);
    assert_int_equal(made.generation, inodes.first_generation);
    assert_int_equal(made.mode, S_IFREG | 0640);
    assert_int_equal(made.uid, 1000);
    assert_int_equal(made.gid, 100);
    assert_int_equal(made.nlink, 1);
    assert_int_equal(made.mtime_sec, 1700000000);
    assert_int_equal(made.ctime_nsec, 5);
    assert_int_equal(made.tile_bytes, lease.template.tile_bytes);
    assert_int_equal(made.placement, lease.template.placement);
    assert_int_equal(made.flags, lease.template.flags);
    assert_int_equal(lookup_attr(f, dir, "e", &made), TS_OK);
    assert_int_equal(made.ino, a + 2);
    assert_int_equal(made.generation, inodes.first_generation + 2);
    assert_int_equal(lookup(f, dir, "b"), TS_ERR_NOENT);
    assert_int_equal(lookup(f, dir, "c"), TS_ERR_NOENT);
    assert_int_equal(do_getattr(f, dir, &listed_dir), TS_OK);
    assert_int_equal(listed_dir.mtime_sec, 1700000005); /* the last create's time */

    /* Sent again after a lost reply: nothing changes. */
    ts_writer_init(&writer, records, sizeof(records));
    create_record(&writer, dir, a, "a", 1700000000);
    assert_int_equal(create_many(f, records, writer.len, 1, statuses), TS_OK);
    assert_int_equal(statuses[0], TS_ERR_EXIST);
    /* Only named mounts; malformed requests change nothing. */
    metafixture_send_as(f, 0);
    ts_writer_init(&writer, records, sizeof(records));
    create_record(&writer, dir, a + 1, "f", 1700000006);
    assert_int_equal(create_many(f, records, writer.len, 1, statuses), TS_ERR_INVAL);
    metafixture_send_as(f, 1);
    assert_int_equal(create_many(f, records, writer.len - 1, 1, statuses), TS_ERR_BADMSG);
    assert_int_equal(create_many(f, records, writer.len, 2, statuses), TS_ERR_BADMSG);
    assert_int_equal(create_many(f, records, writer.len, TS_MAX_CREATES + 1, statuses),
                     TS_ERR_BADMSG);
    assert_int_equal(lookup(f, dir, "f"), TS_ERR_NOENT);
    /* A directory another mount leased since: that mount's view stands. */
    assert_int_equal(dir_lease(f, dir, TS_LEASE_RETURN, 0, NULL), TS_OK);
    metafixture_send_as(f, 2);
    assert_int_equal(dir_lease(f, dir, TS_LEASE_GET, 0, NULL), TS_OK);
    metafixture_send_as(f, 1);
    assert_int_equal(create_many(f, records, writer.len, 1, statuses), TS_OK);
    assert_int_equal(statuses[0], TS_ERR_LEASED);
    metafixture_send_as(f, 2);
    assert_int_equal(lookup(f, dir, "f"), TS_ERR_NOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_readdirplus_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readdirplus_errors_and_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlink_many, setup, teardown),
        cmocka_unit_test(test_lease_table),
        cmocka_unit_test_setup_teardown(test_lease_excludes_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_txn_reuse, setup, teardown),
    };
    return cmocka_run_group_tests_name("handlers_leases_batches", tests, NULL, NULL);
}
