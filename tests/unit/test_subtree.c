/*
 * @file test_subtree.c
 * Unit tests of subtree exports on a real store (metafixture.h): the
 * parents table (parents.h) as the real handlers keep it through creates,
 * hard links, unlinks of one link, renames over an existing name and of
 * directories; where an inode lies (subtree.h); the export gate of a key
 * whose export names a subtree (handlers_subtree.h): inode 1 is the
 * exported directory, `..` of it stays it, an inode outside is refused
 * with TS_ERR_PERM and nothing changes, a link in from outside is refused
 * but one of a file linked both inside and outside is not, an unlinked
 * file passes only for the mount that holds it open; REPLICA_DROP from a
 * mount key only for a file that mount holds open or was just told to
 * cut (recentcuts.h); and a store from
 * before the table gets it built when it opens. Prints what the check
 * costs per create and stat.
 */
#include "exports.h"
#include "metafixture.h"
#include "parents.h"
#include "proto.h"
#include "recentcuts.h"
#include "service.h"
#include "status.h"
#include "store.h"
#include "subtree.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#define MOUNT_ALICE 7
#define MOUNT_OTHER 8
#define MOUNT_BOB 9 /* a session id is one key's (meta/sessionkeys.h) */
#define TEST_UID 1000

static int setup(void **state)
{
    return metafixture_setup(state, "test_subtree", 0, 0);
}

static int teardown(void **state)
{
    return metafixture_teardown(state);
}

static uint64_t make(struct metafixture *f, uint64_t parent, const char *name, uint32_t mode)
{
    struct ts_attr attr;
    int status;
    if (S_ISDIR(mode)) {
        struct ts_mkdir_req m = {.parent = parent, .name = ts_str_of(name), .mode = mode & 07777,
                                 .uid = TEST_UID, .gid = TEST_UID};
        status = metafixture_attr_call(f, CALL(f, TS_OP_MKDIR, mkdir_req, &m), &attr);
    } else {
        struct ts_mknod_req m = {
            .parent = parent, .name = ts_str_of(name), .mode = mode, .uid = TEST_UID, .gid = TEST_UID};
        status = metafixture_attr_call(f, CALL(f, TS_OP_MKNOD, mknod_req, &m), &attr);
    }
    assert_int_equal(status, TS_OK);
    return attr.ino;
}

static int do_link(struct metafixture *f, uint64_t ino, uint64_t parent, const char *name)
{
    struct ts_link_req m = {.ino = ino, .new_parent = parent, .new_name = ts_str_of(name)};
    return CALL(f, TS_OP_LINK, link_req, &m);
}

static int do_unlink(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_name_req m = {.parent = parent, .name = ts_str_of(name)};
    return CALL(f, TS_OP_UNLINK, name_req, &m);
}

static int do_rename(struct metafixture *f, uint64_t parent, const char *name, uint64_t new_parent,
                     const char *new_name)
{
    struct ts_rename_req m = {.parent = parent, .name = ts_str_of(name), .new_parent = new_parent,
                              .new_name = ts_str_of(new_name)};
    return CALL(f, TS_OP_RENAME, rename_req, &m);
}

static int do_getattr(struct metafixture *f, uint64_t ino, struct ts_attr *attr)
{
    struct ts_getattr_req m = {.ino = ino};
    return metafixture_attr_call(f, CALL(f, TS_OP_GETATTR, getattr_req, &m), attr);
}

static int do_lookup(struct metafixture *f, uint64_t parent, const char *name, struct ts_attr *attr)
{
    struct ts_lookup_req m = {.parent = parent, .name = ts_str_of(name)};
    return metafixture_attr_call(f, CALL(f, TS_OP_LOOKUP, lookup_req, &m), attr);
}

/* The parents of one inode, as the table has them. */
struct parents_seen {
    uint64_t child;
    uint64_t parents[8];
    uint32_t counts[8];
    size_t count;
};

static int seen_one(void *arg, uint64_t parent, uint32_t count)
{
    struct parents_seen *seen = arg;
    if (seen->count == 8)
        return -ENOSPC;
    seen->parents[seen->count] = parent;
    seen->counts[seen->count++] = count;
    return 0;
}

static int seen_body(struct store_txn *txn, void *arg)
{
    struct parents_seen *seen = arg;
    return parents_scan(txn, seen->child, seen_one, seen) == 0 ? TS_OK : TS_ERR_INTERNAL;
}

/* Asserts child's parents are exactly the n (parent, count) pairs given, in parent order. */
static void assert_parents(struct metafixture *f, uint64_t child, size_t n, ...)
{
    struct parents_seen seen = {.child = child};
    va_list pairs;
    assert_int_equal(store_read(f->service->store, seen_body, &seen), TS_OK);
    if (seen.count != n)
        fail_msg("inode %llu: %zu parents, want %zu", (unsigned long long)child, seen.count, n);
    va_start(pairs, n);
    for (size_t i = 0; i < n; i++) {
        uint64_t parent = va_arg(pairs, uint64_t);
        uint32_t count = va_arg(pairs, uint32_t);
        assert_int_equal(seen.parents[i], parent);
        assert_int_equal(seen.counts[i], count);
    }
    va_end(pairs);
}

struct place_op {
    uint64_t top;
    uint64_t ino;
    enum subtree_place place;
};

static int place_body(struct store_txn *txn, void *arg)
{
    struct place_op *op = arg;
    return subtree_place(txn, op->top, op->ino, &op->place) == 0 ? TS_OK : TS_ERR_INTERNAL;
}

static enum subtree_place place_of(struct metafixture *f, uint64_t top, uint64_t ino)
{
    struct place_op op = {.top = top, .ino = ino};
    assert_int_equal(store_read(f->service->store, place_body, &op), TS_OK);
    return op.place;
}

static void test_parents_bookkeeping(void **state)
{
    struct metafixture *f = *state;
    uint64_t a = make(f, TS_ROOT_INO, "a", S_IFDIR | 0755);
    uint64_t b = make(f, TS_ROOT_INO, "b", S_IFDIR | 0755);
    uint64_t deep = make(f, a, "deep", S_IFDIR | 0755);
    uint64_t file = make(f, a, "f", S_IFREG | 0644);
    uint64_t other = make(f, b, "other", S_IFREG | 0644);

    assert_parents(f, a, 1, (uint64_t)TS_ROOT_INO, 1u);
    assert_parents(f, deep, 1, a, 1u);
    assert_parents(f, file, 1, a, 1u);
    assert_parents(f, TS_ROOT_INO, 0);

    /* Hard links: a second name in the same directory counts 2. */
    assert_int_equal(do_link(f, file, a, "f2"), TS_OK);
    assert_int_equal(do_link(f, file, b, "g"), TS_OK);
    assert_parents(f, file, 2, a, 2u, b, 1u);
    assert_int_equal(place_of(f, a, file), SUBTREE_UNDER);
    assert_int_equal(place_of(f, b, file), SUBTREE_UNDER);
    assert_int_equal(place_of(f, deep, file), SUBTREE_OUTSIDE);

    /* Unlink of one link keeps the others. */
    assert_int_equal(do_unlink(f, b, "g"), TS_OK);
    assert_parents(f, file, 1, a, 2u);
    assert_int_equal(place_of(f, b, file), SUBTREE_OUTSIDE);

    /* Rename over an existing name: the overwritten file loses that parent. */
    assert_int_equal(do_rename(f, a, "f2", b, "other"), TS_OK);
    assert_parents(f, file, 2, a, 1u, b, 1u);
    assert_parents(f, other, 0);
    assert_int_equal(place_of(f, a, other), SUBTREE_DETACHED);

    /* A directory moves with its files below it. */
    uint64_t below = make(f, deep, "below", S_IFREG | 0644);
    assert_int_equal(place_of(f, a, below), SUBTREE_UNDER);
    assert_int_equal(do_rename(f, a, "deep", b, "deep"), TS_OK);
    assert_parents(f, deep, 1, b, 1u);
    assert_int_equal(place_of(f, a, below), SUBTREE_OUTSIDE);
    assert_int_equal(place_of(f, b, below), SUBTREE_UNDER);
    assert_int_equal(place_of(f, a, TS_ROOT_INO), SUBTREE_OUTSIDE);
    assert_int_equal(place_of(f, a, 999999), SUBTREE_DETACHED);

    /* The last link gone: no row left. */
    assert_int_equal(do_unlink(f, a, "f"), TS_OK);
    assert_int_equal(do_unlink(f, b, "other"), TS_OK);
    assert_parents(f, file, 0);
}

static void use_exports(struct metafixture *f, const char *text)
{
    char why[256];
    assert_int_equal(exports_parse(&f->service->exports, text, strlen(text), why, sizeof(why)), 0);
    f->through_exports = true;
}

static void test_subtree_gate(void **state)
{
    struct metafixture *f = *state;
    struct ts_attr attr;
    uint64_t projects = make(f, TS_ROOT_INO, "projects", S_IFDIR | 0755);
    uint64_t a = make(f, projects, "a", S_IFDIR | 0755);
    uint64_t b = make(f, projects, "b", S_IFDIR | 0755);
    uint64_t inside = make(f, a, "inside", S_IFREG | 0644);
    uint64_t secret = make(f, b, "secret", S_IFREG | 0644);
    uint64_t shared = make(f, b, "shared", S_IFREG | 0644);
    assert_int_equal(do_link(f, shared, a, "shared"), TS_OK);
    use_exports(f, "alice /projects/a rw\nbob /projects/b ro,root_squash\n");
    f->key_user = "mount:alice";
    metafixture_send_as(f, MOUNT_ALICE);

    /* Inode 1 is /projects/a; its `..` is itself. */
    assert_int_equal(do_getattr(f, TS_ROOT_INO, &attr), TS_OK);
    assert_int_equal(attr.ino, a);
    assert_int_equal(do_lookup(f, TS_ROOT_INO, "..", &attr), TS_OK);
    assert_int_equal(attr.ino, a);
    assert_int_equal(do_lookup(f, TS_ROOT_INO, "inside", &attr), TS_OK);
    assert_int_equal(attr.ino, inside);
    uint64_t made = make(f, TS_ROOT_INO, "made", S_IFDIR | 0755);
    assert_parents(f, made, 1, a, 1u);

    /* Outside, by inode: refused, whatever the request. */
    assert_int_equal(do_getattr(f, secret, &attr), TS_ERR_PERM);
    assert_non_null(strstr(f->error_text, "not under /projects/a"));
    assert_int_equal(do_getattr(f, b, &attr), TS_ERR_PERM);
    assert_int_equal(do_getattr(f, projects, &attr), TS_ERR_PERM);
    assert_int_equal(do_lookup(f, b, "secret", &attr), TS_ERR_PERM);
    struct ts_tile_map_req map = {.ino = secret, .count = 1};
    assert_int_equal(CALL(f, TS_OP_TILE_MAP, tile_map_req, &map), TS_ERR_PERM);
    struct ts_setattr_req chmod = {.ino = secret, .valid = TS_SET_MODE, .mode = 0777};
    assert_int_equal(CALL(f, TS_OP_SETATTR, setattr_req, &chmod), TS_ERR_PERM);

    /* Rename or link out of the subtree, or a link in from outside: refused, nothing moves. */
    assert_int_equal(do_rename(f, TS_ROOT_INO, "inside", b, "stolen"), TS_ERR_PERM);
    assert_int_equal(do_link(f, inside, b, "stolen"), TS_ERR_PERM);
    assert_int_equal(do_link(f, secret, TS_ROOT_INO, "secret"), TS_ERR_PERM);
    /* A file linked both inside and outside is under it through its inside link. */
    assert_int_equal(do_getattr(f, shared, &attr), TS_OK);
    assert_int_equal(do_link(f, shared, TS_ROOT_INO, "shared2"), TS_OK);
    f->key_user = NULL;
    f->through_exports = false;
    assert_int_equal(do_lookup(f, b, "stolen", &attr), TS_ERR_NOENT);
    assert_int_equal(do_lookup(f, a, "secret", &attr), TS_ERR_NOENT);
    assert_int_equal(do_lookup(f, a, "inside", &attr), TS_OK);
    f->through_exports = true;
    f->key_user = "mount:alice";

    /* An unlinked file: only the mount that holds it open reaches it. */
    struct ts_open_req open = {.ino = inside, .flags = O_RDWR};
    assert_int_equal(CALL(f, TS_OP_OPEN, open_req, &open), TS_OK);
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "inside"), TS_OK);
    assert_int_equal(do_getattr(f, inside, &attr), TS_OK);
    assert_int_equal(attr.nlink, 0);
    metafixture_send_as(f, MOUNT_OTHER);
    assert_int_equal(do_getattr(f, inside, &attr), TS_ERR_PERM);

    /* Bob's export is read-only, and his root is /projects/b. */
    f->key_user = "mount:bob";
    metafixture_send_as(f, MOUNT_BOB);
    assert_int_equal(do_lookup(f, TS_ROOT_INO, "secret", &attr), TS_OK);
    assert_int_equal(attr.ino, secret);
    struct ts_mkdir_req mkdir = {.parent = TS_ROOT_INO, .name = ts_str_of("x"), .mode = 0755};
    assert_int_equal(CALL(f, TS_OP_MKDIR, mkdir_req, &mkdir), TS_ERR_ROFS);
    assert_int_equal(do_getattr(f, made, &attr), TS_ERR_PERM);

    /* The export's directory gone: every request of the key is refused. */
    f->key_user = NULL;
    f->through_exports = false;
    assert_int_equal(do_rename(f, projects, "b", TS_ROOT_INO, "b-moved"), TS_OK);
    f->through_exports = true;
    f->key_user = "mount:bob";
    assert_int_equal(do_getattr(f, TS_ROOT_INO, &attr), TS_ERR_PERM);
    assert_non_null(strstr(f->error_text, "not a directory now"));
}

/* REPLICA_DROP from a mount key: only for a file that mount holds open. */
static void test_replica_drop_needs_open(void **state)
{
    struct metafixture *f = *state;
    uint64_t file = make(f, TS_ROOT_INO, "f", S_IFREG | 0644);
    struct ts_replica_drop_req drop = {.ino = file, .tile = 0, .node = 1, .version = 1,
                                       .machine = ts_str_of("m")};
    f->key_user = "mount:laptop";
    metafixture_send_as(f, MOUNT_ALICE);
    assert_int_equal(CALL(f, TS_OP_REPLICA_DROP, replica_drop_req, &drop), TS_ERR_PERM);
    assert_non_null(strstr(f->error_text, "not open"));
    struct ts_open_req open = {.ino = file, .flags = O_RDWR};
    assert_int_equal(CALL(f, TS_OP_OPEN, open_req, &open), TS_OK);
    /* Open: the drop reaches the replica set (a hole: nothing to drop, the set as it is). */
    assert_int_not_equal(CALL(f, TS_OP_REPLICA_DROP, replica_drop_req, &drop), TS_ERR_PERM);
    metafixture_send_as(f, MOUNT_OTHER);
    assert_int_equal(CALL(f, TS_OP_REPLICA_DROP, replica_drop_req, &drop), TS_ERR_PERM);

    /* Told to cut a tile of it (a truncate by path, without an open): accepted for a while. */
    int64_t now = util_monotonic_ms();
    recentcuts_note(&f->service->recent_cuts, MOUNT_OTHER, file, now - RECENTCUTS_TTL_MS - 1);
    assert_int_equal(CALL(f, TS_OP_REPLICA_DROP, replica_drop_req, &drop), TS_ERR_PERM);
    recentcuts_note(&f->service->recent_cuts, MOUNT_OTHER, file, now);
    assert_int_not_equal(CALL(f, TS_OP_REPLICA_DROP, replica_drop_req, &drop), TS_ERR_PERM);
    /* Pushed out by the notes of many other cuts: refused again. */
    for (uint64_t i = 0; i < RECENTCUTS_MAX; i++)
        recentcuts_note(&f->service->recent_cuts, MOUNT_ALICE, 1000 + i, now);
    assert_int_equal(CALL(f, TS_OP_REPLICA_DROP, replica_drop_req, &drop), TS_ERR_PERM);
}

/* Makes the store look as one from before the parents table: no rows, no mark. */
static int forget_parents_body(struct store_txn *txn, void *arg)
{
    static const char mark[] = "parents_built";
    (void)arg;
    if (mdb_drop(txn->txn, store_dbi(txn->store, STORE_PARENTS), 0) != 0)
        return TS_ERR_INTERNAL;
    return store_del(txn, STORE_IDENTITY, mark, sizeof(mark) - 1) == 0 ? TS_OK : TS_ERR_INTERNAL;
}

static void test_old_store_gets_parents(void **state)
{
    struct metafixture *f = *state;
    uint64_t a = make(f, TS_ROOT_INO, "a", S_IFDIR | 0755);
    uint64_t b = make(f, a, "b", S_IFDIR | 0755);
    uint64_t file = make(f, b, "f", S_IFREG | 0644);
    assert_int_equal(do_link(f, file, a, "f"), TS_OK);
    assert_int_equal(do_link(f, file, a, "g"), TS_OK);

    assert_int_equal(store_write(f->service->store, forget_parents_body, NULL), TS_OK);
    assert_parents(f, file, 0);
    assert_int_equal(place_of(f, a, file), SUBTREE_DETACHED);

    metafixture_restart(f);
    assert_parents(f, a, 1, (uint64_t)TS_ROOT_INO, 1u);
    assert_parents(f, b, 1, a, 1u);
    assert_parents(f, file, 2, a, 2u, b, 1u);
    assert_int_equal(place_of(f, b, file), SUBTREE_UNDER);

    /* Built once: a later open keeps what the handlers maintain. */
    assert_int_equal(do_unlink(f, a, "g"), TS_OK);
    metafixture_restart(f);
    assert_parents(f, file, 2, a, 1u, b, 1u);
}

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* Creates and stats n files in dir through the gate as key; the seconds each took. */
static void time_ops(struct metafixture *f, uint64_t dir, const char *prefix, int n,
                     double *create_s, double *stat_s)
{
    struct timespec start;
    uint64_t *inos = calloc((size_t)n, sizeof(*inos));
    assert_non_null(inos);
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s%d", prefix, i);
        inos[i] = make(f, dir, name, S_IFREG | 0644);
    }
    *create_s = seconds_since(&start);
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < n; i++) {
        struct ts_attr attr;
        assert_int_equal(do_getattr(f, inos[i], &attr), TS_OK);
    }
    *stat_s = seconds_since(&start);
    free(inos);
}

/* What the subtree check costs a create and a stat, five levels deep. */
static void test_check_cost(void **state)
{
    struct metafixture *f = *state;
    enum { FILES = 2000 };
    uint64_t dir = TS_ROOT_INO;
    const char *levels[] = {"l1", "l2", "l3", "l4", "l5"};
    for (size_t i = 0; i < 5; i++)
        dir = make(f, dir, levels[i], S_IFDIR | 0755);
    double create_whole, stat_whole, create_sub, stat_sub;
    use_exports(f, "whole / rw\nsub /l1 rw\n");
    f->key_user = "mount:whole";
    time_ops(f, dir, "w", FILES, &create_whole, &stat_whole);
    f->key_user = "mount:sub";
    time_ops(f, dir, "s", FILES, &create_sub, &stat_sub);
    printf("# subtree check, %d files 5 levels deep: create %.1f us -> %.1f us, "
           "stat %.1f us -> %.1f us\n",
           FILES, create_whole * 1e6 / FILES, create_sub * 1e6 / FILES, stat_whole * 1e6 / FILES,
           stat_sub * 1e6 / FILES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parents_bookkeeping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subtree_gate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replica_drop_needs_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_store_gets_parents, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_cost, setup, teardown),
    };
    return cmocka_run_group_tests_name("subtree", tests, NULL, NULL);
}
