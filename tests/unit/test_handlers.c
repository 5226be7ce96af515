/*
 * @file test_handlers.c
 * Unit tests of tessera-meta against a real LMDB store in a fresh temporary
 * directory per case (metafixture.h). Every case goes through the public
 * contract: requests encoded with the generated ts_*_encode, handed to the
 * real handlers through handlers_table exactly as rpc_server_dispatch()
 * would after checking the header, and replies decoded with ts_*_decode.
 */
#include "handlers.h"
#include "metafixture.h"
#include "nodes.h"
#include "proto.h"
#include "service.h"
#include "status.h"
#include "store.h"
#include "util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define MiB (1u << 20)
#define TEST_UID 1000
#define TEST_GID 100
#define TEST_NODE_TIMEOUT_MS 60000

static int setup(void **state)
{
    return metafixture_setup(state, "test_handlers", TEST_NODE_TIMEOUT_MS, 0);
}

static int teardown(void **state)
{
    return metafixture_teardown(state);
}

/* ---- calling the handlers ----------------------------------------------- */

static struct ts_str str(const char *s)
{
    return ts_str_of(s);
}

static int do_lookup(struct metafixture *f, uint64_t parent, const char *name, struct ts_attr *attr)
{
    struct ts_lookup_req m = {.parent = parent, .name = str(name)};
    return metafixture_attr_call(f, CALL(f, TS_OP_LOOKUP, lookup_req, &m), attr);
}

static int do_getattr(struct metafixture *f, uint64_t ino, struct ts_attr *attr)
{
    struct ts_getattr_req m = {.ino = ino};
    return metafixture_attr_call(f, CALL(f, TS_OP_GETATTR, getattr_req, &m), attr);
}

static int do_mknod(struct metafixture *f, uint64_t parent, const char *name, uint32_t mode,
                    struct ts_attr *attr)
{
    struct ts_mknod_req m = {
        .parent = parent, .name = str(name), .mode = mode, .uid = TEST_UID, .gid = TEST_GID};
    return metafixture_attr_call(f, CALL(f, TS_OP_MKNOD, mknod_req, &m), attr);
}

static int do_mkdir(struct metafixture *f, uint64_t parent, const char *name, struct ts_attr *attr)
{
    struct ts_mkdir_req m = {
        .parent = parent, .name = str(name), .mode = 0755, .uid = TEST_UID, .gid = TEST_GID};
    return metafixture_attr_call(f, CALL(f, TS_OP_MKDIR, mkdir_req, &m), attr);
}

static int do_symlink(struct metafixture *f, uint64_t parent, const char *name, const char *target,
                      struct ts_attr *attr)
{
    struct ts_symlink_req m = {.parent = parent,
                               .name = str(name),
                               .target = str(target),
                               .uid = TEST_UID,
                               .gid = TEST_GID};
    return metafixture_attr_call(f, CALL(f, TS_OP_SYMLINK, symlink_req, &m), attr);
}

static int do_unlink(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_name_req m = {.parent = parent, .name = str(name)};
    return CALL(f, TS_OP_UNLINK, name_req, &m);
}

static int do_rmdir(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_name_req m = {.parent = parent, .name = str(name)};
    return CALL(f, TS_OP_RMDIR, name_req, &m);
}

static int do_rename(struct metafixture *f, uint64_t parent, const char *name, uint64_t new_parent,
                     const char *new_name, uint32_t flags)
{
    struct ts_rename_req m = {.parent = parent,
                              .name = str(name),
                              .new_parent = new_parent,
                              .new_name = str(new_name),
                              .flags = flags};
    return CALL(f, TS_OP_RENAME, rename_req, &m);
}

static int do_link(struct metafixture *f, uint64_t ino, uint64_t new_parent, const char *new_name,
                   struct ts_attr *attr)
{
    struct ts_link_req m = {.ino = ino, .new_parent = new_parent, .new_name = str(new_name)};
    return metafixture_attr_call(f, CALL(f, TS_OP_LINK, link_req, &m), attr);
}

static int do_open(struct metafixture *f, uint64_t ino)
{
    struct ts_open_req m = {.ino = ino};
    return metafixture_open_call(f, CALL(f, TS_OP_OPEN, open_req, &m), NULL, NULL, 0);
}

static int do_release(struct metafixture *f, uint64_t ino)
{
    struct ts_release_req m = {.ino = ino};
    return CALL(f, TS_OP_RELEASE, release_req, &m);
}

static int do_setattr(struct metafixture *f, const struct ts_setattr_req *m,
                      struct ts_setattr_rep *reply)
{
    int status = CALL(f, TS_OP_SETATTR, setattr_req, m);
    if (status == TS_OK && reply)
        assert_int_equal(ts_setattr_rep_decode(reply, f->reply, f->reply_len), 0);
    return status;
}

static int do_commit(struct metafixture *f, uint64_t ino, uint64_t min_size, uint32_t sync,
                     struct ts_attr *attr)
{
    struct ts_commit_req m = {.ino = ino, .min_size = min_size, .sync = sync};
    return metafixture_attr_call(f, CALL(f, TS_OP_COMMIT, commit_req, &m), attr);
}

/* TILE_MAP: nodes[]/versions[] get the count records. */
static int do_tile_map(struct metafixture *f, uint64_t ino, uint64_t first, uint32_t count,
                       uint32_t allocate, uint32_t *nodes, uint64_t *versions)
{
    struct ts_tile_map_req m = {.ino = ino, .first = first, .count = count, .allocate = allocate};
    struct ts_tile_map_rep reply;
    struct ts_cursor cursor;
    int status = CALL(f, TS_OP_TILE_MAP, tile_map_req, &m);
    if (status != TS_OK)
        return status;
    assert_int_equal(ts_tile_map_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.count, count);
    ts_cursor_init(&cursor, reply.tiles.ptr, reply.tiles.len);
    for (uint32_t i = 0; i < count; i++) {
        struct ts_tile_map_rec record;
        struct ts_replica_rec holder;
        assert_int_equal(ts_tile_map_rec_read(&cursor, &record), 0);
        nodes[i] = record.node;
        versions[i] = record.version;
        /* The fixture's files keep one holder: the primary, listed as the only one. */
        assert_int_equal(record.holders, record.node != 0 ? 1 : 0);
        if (record.holders == 1) {
            assert_int_equal(ts_replica_rec_read(&cursor, &holder), 0);
            assert_int_equal(holder.node, record.node);
            assert_int_equal(holder.version, record.version);
        }
        assert_int_equal(record.read_node, record.node);
        assert_int_equal(record.read_version, record.version);
    }
    return status;
}

struct garbage_seen {
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
};

/*
 * HEARTBEAT as node `id` (0 = new) reporting `deleted`; returns the id meta
 * gives and copies up to `cap` garbage records into garbage[] (their number
 * into *garbage_count).
 */
static uint32_t do_heartbeat(struct metafixture *f, uint32_t id, uint64_t capacity,
                             uint64_t free_bytes, const struct garbage_seen *deleted,
                             uint32_t deleted_count, struct garbage_seen *garbage, uint32_t cap,
                             uint32_t *garbage_count)
{
    static uint8_t deleted_blob[TS_MAX_GARBAGE * ts_tile_file_rec_bytes];
    struct ts_writer writer;
    struct ts_heartbeat_rep reply;
    struct ts_cursor cursor;

    ts_writer_init(&writer, deleted_blob, sizeof(deleted_blob));
    for (uint32_t i = 0; i < deleted_count; i++) {
        struct ts_tile_file_rec file = {
            .ino = deleted[i].ino, .tile = deleted[i].tile, .version = deleted[i].version};
        ts_tile_file_rec_write(&writer, &file);
    }
    struct ts_heartbeat_req m = {
        .node_id = id,
        .machine = str("machine"),
        .address = str("tcp://127.0.0.1:7401"),
        .capacity = capacity,
        .free_bytes = free_bytes,
        .used_bytes = capacity - free_bytes,
        .tiles = 0,
        .deleted_count = deleted_count,
        .deleted = {(const char *)deleted_blob, (uint32_t)writer.len},
    };
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &m), TS_OK);
    assert_int_equal(ts_heartbeat_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.garbage.len, (size_t)reply.garbage_count * ts_tile_file_rec_bytes);
    ts_cursor_init(&cursor, reply.garbage.ptr, reply.garbage.len);
    for (uint32_t i = 0; i < reply.garbage_count && i < cap; i++) {
        struct ts_tile_file_rec file;
        assert_int_equal(ts_tile_file_rec_read(&cursor, &file), 0);
        garbage[i] =
            (struct garbage_seen){.ino = file.ino, .tile = file.tile, .version = file.version};
    }
    if (garbage_count)
        *garbage_count = reply.garbage_count;
    assert_int_not_equal(reply.node_id, 0);
    return reply.node_id;
}

static uint32_t register_node(struct metafixture *f, uint64_t capacity, uint64_t free_bytes)
{
    return do_heartbeat(f, 0, capacity, free_bytes, NULL, 0, NULL, 0, NULL);
}

static uint32_t garbage_of(struct metafixture *f, uint32_t node, struct garbage_seen *garbage,
                           uint32_t cap)
{
    uint32_t count = 0;
    do_heartbeat(f, node, 64ull << 30, 32ull << 30, NULL, 0, garbage, cap, &count);
    return count;
}

static uint64_t make_file(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_attr attr = {0};
    assert_int_equal(do_mknod(f, parent, name, 0644, &attr), TS_OK);
    return attr.ino;
}

static uint64_t make_dir(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_attr attr = {0};
    assert_int_equal(do_mkdir(f, parent, name, &attr), TS_OK);
    return attr.ino;
}

static uint32_t nlink_of(struct metafixture *f, uint64_t ino)
{
    struct ts_attr attr = {0};
    assert_int_equal(do_getattr(f, ino, &attr), TS_OK);
    return attr.nlink;
}

static uint64_t ino_of(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_attr attr = {0};
    assert_int_equal(do_lookup(f, parent, name, &attr), TS_OK);
    return attr.ino;
}

/* ---- namespace ---------------------------------------------------------- */

static void test_create_lookup_getattr(void **state)
{
    struct metafixture *f = *state;
    struct ts_attr root_before, root_after, attr, found;
    char long_name[TS_MAX_NAME + 2];

    assert_int_equal(do_getattr(f, TS_ROOT_INO, &root_before), TS_OK);
    assert_int_equal(root_before.mode, S_IFDIR | 0755);
    assert_int_equal(root_before.nlink, 2);
    assert_int_equal(root_before.size, 4096);

    assert_int_equal(do_mknod(f, TS_ROOT_INO, "a", 0640, &attr), TS_OK);
    assert_true(attr.ino > TS_ROOT_INO);
    assert_int_equal(attr.mode, S_IFREG | 0640);
    assert_int_equal(attr.nlink, 1);
    assert_int_equal(attr.uid, TEST_UID);
    assert_int_equal(attr.gid, TEST_GID);
    assert_int_equal(attr.size, 0);
    assert_int_equal(attr.blocks, 0);
    assert_int_equal(attr.tile_bytes, MiB);
    assert_int_not_equal(attr.generation, 0);
    assert_true(attr.mtime_sec > 0);

    assert_int_equal(do_lookup(f, TS_ROOT_INO, "a", &found), TS_OK);
    assert_int_equal(found.ino, attr.ino);
    assert_int_equal(do_getattr(f, attr.ino, &found), TS_OK);
    metafixture_assert_attr_equal(&found, &attr);
    assert_int_equal(do_lookup(f, TS_ROOT_INO, ".", &found), TS_OK);
    assert_int_equal(found.ino, TS_ROOT_INO);

    /* The parent's mtime and ctime moved. */
    assert_int_equal(do_getattr(f, TS_ROOT_INO, &root_after), TS_OK);
    assert_true(root_after.mtime_sec > root_before.mtime_sec ||
                (root_after.mtime_sec == root_before.mtime_sec &&
                 root_after.mtime_nsec >= root_before.mtime_nsec));
    assert_int_equal(root_after.ctime_sec, root_after.mtime_sec);

    assert_int_equal(do_lookup(f, TS_ROOT_INO, "missing", NULL), TS_ERR_NOENT);
    assert_int_equal(do_getattr(f, 999999, NULL), TS_ERR_NOENT);
    assert_int_equal(do_mknod(f, TS_ROOT_INO, "a", 0644, NULL), TS_ERR_EXIST);
    assert_int_equal(do_mknod(f, TS_ROOT_INO, "", 0644, NULL), TS_ERR_INVAL);
    assert_int_equal(do_mknod(f, TS_ROOT_INO, "x/y", 0644, NULL), TS_ERR_INVAL);
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_int_equal(do_mknod(f, TS_ROOT_INO, long_name, 0644, NULL), TS_ERR_NAMETOOLONG);
    long_name[TS_MAX_NAME] = '\0';
    assert_int_equal(do_mknod(f, TS_ROOT_INO, long_name, 0644, NULL), TS_OK);
    assert_int_equal(do_mknod(f, attr.ino, "under-a-file", 0644, NULL), TS_ERR_NOTDIR);
    assert_int_equal(do_mknod(f, 999999, "orphan", 0644, NULL), TS_ERR_NOENT);
    assert_int_equal(do_mknod(f, TS_ROOT_INO, "dir", S_IFDIR | 0755, NULL), TS_ERR_INVAL);

    /* Special files keep their type and rdev. */
    assert_int_equal(do_mknod(f, TS_ROOT_INO, "fifo", S_IFIFO | 0600, &found), TS_OK);
    assert_int_equal(found.mode, S_IFIFO | 0600);
}

static void test_symlink_readlink(void **state)
{
    struct metafixture *f = *state;
    struct ts_readlink_req m;
    struct ts_readlink_rep reply;
    struct ts_attr attr = {0};
    char long_target[TS_MAX_SYMLINK + 2];

    assert_int_equal(do_symlink(f, TS_ROOT_INO, "link", "some/where", &attr), TS_OK);
    assert_int_equal(attr.mode, S_IFLNK | 0777);
    assert_int_equal(attr.size, strlen("some/where"));
    m.ino = attr.ino;
    assert_int_equal(CALL(f, TS_OP_READLINK, readlink_req, &m), TS_OK);
    assert_int_equal(ts_readlink_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.target.len, strlen("some/where"));
    assert_memory_equal(reply.target.ptr, "some/where", reply.target.len);

    m.ino = make_file(f, TS_ROOT_INO, "plain");
    assert_int_equal(CALL(f, TS_OP_READLINK, readlink_req, &m), TS_ERR_INVAL);
    assert_int_equal(do_symlink(f, TS_ROOT_INO, "empty", "", NULL), TS_ERR_INVAL);
    memset(long_target, 't', sizeof(long_target) - 1);
    long_target[sizeof(long_target) - 1] = '\0';
    assert_int_equal(do_symlink(f, TS_ROOT_INO, "long", long_target, NULL), TS_ERR_NAMETOOLONG);
    long_target[TS_MAX_SYMLINK] = '\0';
    assert_int_equal(do_symlink(f, TS_ROOT_INO, "long", long_target, &attr), TS_OK);
    assert_int_equal(attr.size, TS_MAX_SYMLINK);
}

static void test_mkdir_nlink(void **state)
{
    struct metafixture *f = *state;
    struct ts_attr attr = {0};
    uint64_t d, e;

    d = make_dir(f, TS_ROOT_INO, "d");
    assert_int_equal(nlink_of(f, TS_ROOT_INO), 3);
    assert_int_equal(nlink_of(f, d), 2);
    e = make_dir(f, d, "e");
    assert_int_equal(nlink_of(f, d), 3);
    assert_int_equal(do_lookup(f, e, "..", &attr), TS_OK);
    assert_int_equal(attr.ino, d);
    make_file(f, d, "file");
    assert_int_equal(nlink_of(f, d), 3);

    assert_int_equal(do_rmdir(f, TS_ROOT_INO, "d"), TS_ERR_NOTEMPTY);
    assert_int_equal(do_rmdir(f, d, "file"), TS_ERR_NOTDIR);
    assert_int_equal(do_unlink(f, d, "e"), TS_ERR_ISDIR);
    assert_int_equal(do_rmdir(f, d, "e"), TS_OK);
    assert_int_equal(do_getattr(f, e, NULL), TS_ERR_NOENT);
    assert_int_equal(nlink_of(f, d), 2);
    assert_int_equal(do_unlink(f, d, "file"), TS_OK);
    assert_int_equal(do_rmdir(f, TS_ROOT_INO, "d"), TS_OK);
    assert_int_equal(nlink_of(f, TS_ROOT_INO), 2);
    assert_int_equal(do_rmdir(f, TS_ROOT_INO, "d"), TS_ERR_NOENT);

    /* A directory removed while open takes no new entries. */
    d = make_dir(f, TS_ROOT_INO, "gone");
    assert_int_equal(do_open(f, d), TS_OK);
    assert_int_equal(do_rmdir(f, TS_ROOT_INO, "gone"), TS_OK);
    assert_int_equal(nlink_of(f, d), 0);
    assert_int_equal(do_mknod(f, d, "late", 0644, NULL), TS_ERR_NOENT);
    assert_int_equal(do_release(f, d), TS_OK);
    assert_int_equal(do_getattr(f, d, NULL), TS_ERR_NOENT);
}

static void test_setgid_directory(void **state)
{
    struct metafixture *f = *state;
    struct ts_setattr_req chmod = {.valid = TS_SET_MODE | TS_SET_GID, .mode = 02775, .gid = 50};
    struct ts_attr attr = {0};

    chmod.ino = make_dir(f, TS_ROOT_INO, "shared");
    assert_int_equal(do_setattr(f, &chmod, NULL), TS_OK);
    assert_int_equal(do_mkdir(f, chmod.ino, "sub", &attr), TS_OK);
    assert_int_equal(attr.gid, 50);
    assert_true(attr.mode & S_ISGID);
    assert_int_equal(do_mknod(f, chmod.ino, "file", 0644, &attr), TS_OK);
    assert_int_equal(attr.gid, 50);
    assert_false(attr.mode & S_ISGID);
}

static void test_link_counts_names(void **state)
{
    struct metafixture *f = *state;
    struct ts_attr attr = {0};
    uint64_t file = make_file(f, TS_ROOT_INO, "one");
    uint64_t dir = make_dir(f, TS_ROOT_INO, "dir");

    assert_int_equal(do_link(f, file, dir, "two", &attr), TS_OK);
    assert_int_equal(attr.nlink, 2);
    assert_int_equal(ino_of(f, dir, "two"), file);
    assert_int_equal(do_link(f, file, dir, "two", NULL), TS_ERR_EXIST);
    assert_int_equal(do_link(f, dir, TS_ROOT_INO, "dirlink", NULL), TS_ERR_PERM);
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "one"), TS_OK);
    assert_int_equal(nlink_of(f, file), 1);
    assert_int_equal(do_unlink(f, dir, "two"), TS_OK);
    assert_int_equal(do_getattr(f, file, NULL), TS_ERR_NOENT);
}

static void test_unlink_deletes_and_queues_garbage(void **state)
{
    struct metafixture *f = *state;
    struct garbage_seen garbage[8];
    uint32_t nodes[3];
    uint64_t versions[3];
    uint32_t node = register_node(f, 64ull << 30, 32ull << 30);
    uint64_t file = make_file(f, TS_ROOT_INO, "doomed");
    struct ts_attr attr = {0};

    assert_int_equal(do_tile_map(f, file, 0, 3, 1, nodes, versions), TS_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(nodes[i], node);
    assert_int_equal(do_commit(f, file, 3 * MiB - 100, 0, &attr), TS_OK);
    assert_int_equal(attr.size, 3 * MiB - 100);
    assert_int_equal(attr.blocks, (3 * MiB - 100 + 511) / 512);
    assert_int_equal(garbage_of(f, node, garbage, 8), 0);

    assert_int_equal(do_unlink(f, TS_ROOT_INO, "doomed"), TS_OK);
    assert_int_equal(do_getattr(f, file, NULL), TS_ERR_NOENT);
    assert_int_equal(do_lookup(f, TS_ROOT_INO, "doomed", NULL), TS_ERR_NOENT);
    assert_int_equal(garbage_of(f, node, garbage, 8), 3);
    for (uint64_t i = 0; i < 3; i++) {
        assert_int_equal(garbage[i].ino, file);
        assert_int_equal(garbage[i].tile, i);
        assert_int_equal(garbage[i].version, versions[i]);
    }
    /* Still listed until the node confirms; gone once it does. */
    assert_int_equal(garbage_of(f, node, garbage, 8), 3);
    do_heartbeat(f, node, 64ull << 30, 32ull << 30, garbage, 2, NULL, 0, NULL);
    assert_int_equal(garbage_of(f, node, garbage, 8), 1);
    assert_int_equal(garbage[0].tile, 2);
    do_heartbeat(f, node, 64ull << 30, 32ull << 30, garbage, 1, NULL, 0, NULL);
    assert_int_equal(garbage_of(f, node, garbage, 8), 0);
}

static void test_unlink_while_open(void **state)
{
    struct metafixture *f = *state;
    struct ts_attr attr = {0};
    uint64_t file = make_file(f, TS_ROOT_INO, "open");

    assert_int_equal(do_open(f, file), TS_OK);
    assert_int_equal(do_open(f, file), TS_OK);
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "open"), TS_OK);
    assert_int_equal(do_lookup(f, TS_ROOT_INO, "open", NULL), TS_ERR_NOENT);
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.nlink, 0);
    /* Writes to an unlinked open file still work. */
    assert_int_equal(do_commit(f, file, 10, 0, NULL), TS_OK);

    assert_int_equal(do_release(f, file), TS_OK);
    assert_int_equal(do_getattr(f, file, NULL), TS_OK);
    assert_int_equal(do_release(f, file), TS_OK);
    assert_int_equal(do_getattr(f, file, NULL), TS_ERR_NOENT);
    /* A release too many is harmless. */
    assert_int_equal(do_release(f, file), TS_OK);
    assert_int_equal(do_open(f, file), TS_ERR_NOENT);

    /* An orphan still open when meta stops outlives the start by a mount
     * lease (its holder may announce it), and then goes if nobody did. */
    file = make_file(f, TS_ROOT_INO, "open2");
    assert_int_equal(do_open(f, file), TS_OK);
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "open2"), TS_OK);
    metafixture_restart(f);
    service_tick(f->service);
    assert_int_equal(do_getattr(f, file, NULL), TS_OK);
    service_tick_at(f->service, util_monotonic_ms() + SESSIONS_DEFAULT_LEASE_MS);
    assert_int_equal(do_getattr(f, file, NULL), TS_ERR_NOENT);
}

/* MKNOD with open = 1 (create(2) in one round trip) holds the file open. */
static void test_mknod_open(void **state)
{
    struct metafixture *f = *state;
    struct ts_attr attr = {0};
    struct ts_mknod_req m = {.parent = TS_ROOT_INO,
                             .name = str("created"),
                             .mode = S_IFREG | 0644,
                             .uid = TEST_UID,
                             .gid = TEST_GID,
                             .open = 1};
    assert_int_equal(metafixture_attr_call(f, CALL(f, TS_OP_MKNOD, mknod_req, &m), &attr), TS_OK);
    uint64_t file = attr.ino;
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "created"), TS_OK);
    assert_int_equal(do_getattr(f, file, NULL), TS_OK); /* still open */
    assert_int_equal(do_release(f, file), TS_OK);
    assert_int_equal(do_getattr(f, file, NULL), TS_ERR_NOENT);
}

/* ---- rename ------------------------------------------------------------- */

static void test_rename_replace(void **state)
{
    struct metafixture *f = *state;
    uint64_t a = make_file(f, TS_ROOT_INO, "a");
    uint64_t b = make_file(f, TS_ROOT_INO, "b");
    struct ts_attr attr = {0};

    assert_int_equal(do_rename(f, TS_ROOT_INO, "a", TS_ROOT_INO, "b", 0), TS_OK);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "b"), a);
    assert_int_equal(do_lookup(f, TS_ROOT_INO, "a", NULL), TS_ERR_NOENT);
    assert_int_equal(do_getattr(f, b, NULL), TS_ERR_NOENT);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "a", TS_ROOT_INO, "c", 0), TS_ERR_NOENT);

    /* Renaming onto another name of the same inode changes nothing. */
    assert_int_equal(do_link(f, a, TS_ROOT_INO, "alias", NULL), TS_OK);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "b", TS_ROOT_INO, "alias", 0), TS_OK);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "b"), a);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "alias"), a);
    assert_int_equal(nlink_of(f, a), 2);

    /* Replacing an open file keeps it until its last release. */
    uint64_t c = make_file(f, TS_ROOT_INO, "c");
    assert_int_equal(do_open(f, c), TS_OK);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "alias", TS_ROOT_INO, "c", 0), TS_OK);
    assert_int_equal(do_getattr(f, c, &attr), TS_OK);
    assert_int_equal(attr.nlink, 0);
    assert_int_equal(do_release(f, c), TS_OK);
    assert_int_equal(do_getattr(f, c, NULL), TS_ERR_NOENT);
    assert_int_equal(nlink_of(f, a), 2);
}

static void test_rename_flags(void **state)
{
    struct metafixture *f = *state;
    uint64_t a = make_file(f, TS_ROOT_INO, "a");
    uint64_t b = make_file(f, TS_ROOT_INO, "b");

    assert_int_equal(do_rename(f, TS_ROOT_INO, "a", TS_ROOT_INO, "b", TS_RENAME_NOREPLACE),
                     TS_ERR_EXIST);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "a"), a);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "a", TS_ROOT_INO, "n", TS_RENAME_NOREPLACE), TS_OK);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "n"), a);

    assert_int_equal(do_rename(f, TS_ROOT_INO, "n", TS_ROOT_INO, "b", TS_RENAME_EXCHANGE), TS_OK);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "n"), b);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "b"), a);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "n", TS_ROOT_INO, "zz", TS_RENAME_EXCHANGE),
                     TS_ERR_NOENT);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "n", TS_ROOT_INO, "b", 0x4), TS_ERR_INVAL);
    assert_int_equal(
        do_rename(f, TS_ROOT_INO, "n", TS_ROOT_INO, "b", TS_RENAME_EXCHANGE | TS_RENAME_NOREPLACE),
        TS_ERR_INVAL);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "n", TS_ROOT_INO, "", 0), TS_ERR_INVAL);
}

static void test_rename_directories(void **state)
{
    struct metafixture *f = *state;
    uint64_t top = make_dir(f, TS_ROOT_INO, "top");
    uint64_t mid = make_dir(f, top, "mid");
    uint64_t low = make_dir(f, mid, "low");
    uint64_t other = make_dir(f, TS_ROOT_INO, "other");
    uint64_t full = make_dir(f, TS_ROOT_INO, "full");
    struct ts_attr attr = {0};

    make_file(f, full, "content");
    make_file(f, TS_ROOT_INO, "file");
    make_dir(f, TS_ROOT_INO, "empty");

    /* Into itself or its own subtree. */
    assert_int_equal(do_rename(f, TS_ROOT_INO, "top", top, "x", 0), TS_ERR_INVAL);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "top", low, "x", 0), TS_ERR_INVAL);
    assert_int_equal(do_rename(f, top, "mid", low, "x", TS_RENAME_EXCHANGE), TS_ERR_NOENT);
    /* Type rules. */
    assert_int_equal(do_rename(f, TS_ROOT_INO, "other", TS_ROOT_INO, "full", 0), TS_ERR_NOTEMPTY);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "other", TS_ROOT_INO, "file", 0), TS_ERR_NOTDIR);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "file", TS_ROOT_INO, "other", 0), TS_ERR_ISDIR);

    /* A directory over an empty one, in another parent: nlinks follow. */
    assert_int_equal(nlink_of(f, TS_ROOT_INO), 2 + 4);
    assert_int_equal(do_rename(f, mid, "low", TS_ROOT_INO, "empty", 0), TS_OK);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "empty"), low);
    assert_int_equal(nlink_of(f, mid), 2);
    assert_int_equal(nlink_of(f, TS_ROOT_INO), 2 + 4);
    assert_int_equal(do_lookup(f, low, "..", &attr), TS_OK);
    assert_int_equal(attr.ino, TS_ROOT_INO);

    /* Moving into a sibling: the parent pointer follows (loop check uses it). */
    assert_int_equal(do_rename(f, TS_ROOT_INO, "top", other, "top", 0), TS_OK);
    assert_int_equal(nlink_of(f, TS_ROOT_INO), 2 + 3);
    assert_int_equal(nlink_of(f, other), 3);
    assert_int_equal(do_rename(f, TS_ROOT_INO, "other", mid, "o", 0), TS_ERR_INVAL);

    /* Exchanging a directory and a file across parents. */
    assert_int_equal(do_rename(f, other, "top", TS_ROOT_INO, "file", TS_RENAME_EXCHANGE), TS_OK);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "file"), top);
    assert_int_equal(nlink_of(f, other), 2);
    assert_int_equal(nlink_of(f, TS_ROOT_INO), 2 + 4);
    assert_int_equal(do_lookup(f, top, "..", &attr), TS_OK);
    assert_int_equal(attr.ino, TS_ROOT_INO);
    /* Exchanging a directory with its own descendant. */
    assert_int_equal(do_rename(f, TS_ROOT_INO, "file", mid, "x", 0), TS_ERR_INVAL);
    make_file(f, mid, "deep");
    assert_int_equal(do_rename(f, TS_ROOT_INO, "file", mid, "deep", TS_RENAME_EXCHANGE),
                     TS_ERR_INVAL);
}

/* ---- readdir ------------------------------------------------------------ */

static void test_readdir_pagination(void **state)
{
    struct metafixture *f = *state;
    enum { FILES = 1000 };
    static char seen[FILES][TS_MAX_NAME + 1];
    char after[TS_MAX_NAME + 1] = "";
    uint64_t dir = make_dir(f, TS_ROOT_INO, "many");
    uint32_t total = 0;
    int pages = 0;
    bool done = false;

    /* Created in a scrambled order; listed in name order. */
    for (uint32_t i = 0; i < FILES; i++) {
        char name[16];
        snprintf(name, sizeof(name), "f%04u", (i * 7919u) % FILES);
        make_file(f, dir, name);
    }
    make_dir(f, dir, "sub");
    while (!done) {
        struct ts_readdir_req m = {.ino = dir, .after = str(after), .max_entries = 64};
        struct ts_readdir_rep reply;
        struct ts_cursor cursor;
        assert_int_equal(CALL(f, TS_OP_READDIR, readdir_req, &m), TS_OK);
        assert_int_equal(ts_readdir_rep_decode(&reply, f->reply, f->reply_len), 0);
        assert_true(reply.count <= 64);
        /* Keep the entries: the lookups below reuse the reply buffer. */
        static uint8_t entries[64 * (ts_readdir_rec_bytes + TS_MAX_NAME)];
        assert_true(reply.entries.len <= sizeof(entries));
        memcpy(entries, reply.entries.ptr, reply.entries.len);
        ts_cursor_init(&cursor, entries, reply.entries.len);
        for (uint32_t i = 0; i < reply.count; i++) {
            struct ts_readdir_rec entry;
            assert_int_equal(ts_readdir_rec_read(&cursor, &entry), 0);
            uint64_t ino = entry.ino;
            uint32_t mode = entry.mode;
            char text[TS_MAX_NAME + 1];
            assert_int_equal(ts_str_copy(entry.name, text, sizeof(text)), 0);
            assert_true(strcmp(text, after) > 0);
            if (strcmp(text, "sub") == 0) {
                assert_int_equal(mode, S_IFDIR);
            } else {
                assert_int_equal(mode, S_IFREG);
                assert_true(total < FILES);
                snprintf(seen[total++], sizeof(seen[0]), "%s", text);
            }
            assert_int_equal(ino_of(f, dir, text), ino);
            snprintf(after, sizeof(after), "%s", text);
        }
        assert_int_equal(cursor.left, 0);
        done = reply.done != 0;
        assert_true(done || reply.count == 64);
        pages++;
    }
    assert_int_equal(total, FILES);
    assert_int_equal(pages, (FILES + 1 + 63) / 64);
    for (uint32_t i = 0; i < FILES; i++) {
        char expected[16];
        snprintf(expected, sizeof(expected), "f%04u", i);
        assert_string_equal(seen[i], expected);
    }

    /* max_entries 0 means "as many as fit"; a file is not a directory. */
    struct ts_readdir_req all = {.ino = dir, .after = str(""), .max_entries = 0};
    struct ts_readdir_rep reply;
    assert_int_equal(CALL(f, TS_OP_READDIR, readdir_req, &all), TS_OK);
    assert_int_equal(ts_readdir_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.count, FILES + 1);
    assert_int_equal(reply.done, 1);
    all.ino = ino_of(f, dir, "f0000");
    assert_int_equal(CALL(f, TS_OP_READDIR, readdir_req, &all), TS_ERR_NOTDIR);
    all.ino = 999999;
    assert_int_equal(CALL(f, TS_OP_READDIR, readdir_req, &all), TS_ERR_NOENT);
}

/* ---- setattr ------------------------------------------------------------ */

static void test_setattr_shrink(void **state)
{
    struct metafixture *f = *state;
    struct garbage_seen garbage[8];
    struct ts_setattr_rep reply;
    uint32_t nodes[4];
    uint64_t versions[4];
    uint32_t node = register_node(f, 64ull << 30, 32ull << 30);
    uint64_t file = make_file(f, TS_ROOT_INO, "shrinking");
    struct ts_setattr_req truncate = {.ino = file, .valid = TS_SET_SIZE};
    struct ts_attr before;

    assert_int_equal(do_tile_map(f, file, 0, 4, 1, nodes, versions), TS_OK);
    assert_int_equal(do_commit(f, file, 4 * MiB, 0, &before), TS_OK);
    assert_int_equal(before.blocks, 4 * MiB / 512);

    /* Into the middle of tile 1: tiles 2 and 3 go, tile 1 is to be cut. */
    truncate.size = MiB + MiB / 2;
    assert_int_equal(do_setattr(f, &truncate, &reply), TS_OK);
    assert_int_equal(reply.attr.size, MiB + MiB / 2);
    assert_int_equal(reply.attr.blocks, (MiB + MiB / 2) / 512);
    assert_int_equal(reply.cut_node, node);
    assert_int_equal(reply.cut_tile, 1);
    assert_int_equal(reply.cut_version, versions[1]);
    assert_int_equal(reply.cut_bytes, MiB / 2);
    assert_true(
        reply.attr.mtime_sec > before.mtime_sec ||
        (reply.attr.mtime_sec == before.mtime_sec && reply.attr.mtime_nsec >= before.mtime_nsec));

    assert_int_equal(do_tile_map(f, file, 0, 4, 0, nodes, versions), TS_OK);
    assert_int_equal(nodes[0], node);
    assert_int_equal(nodes[1], node);
    assert_int_equal(nodes[2], 0);
    assert_int_equal(nodes[3], 0);
    assert_int_equal(garbage_of(f, node, garbage, 8), 2);
    assert_int_equal(garbage[0].ino, file);
    assert_int_equal(garbage[0].tile, 2);
    assert_int_equal(garbage[1].tile, 3);

    /* On a tile boundary there is nothing to cut. */
    truncate.size = MiB;
    assert_int_equal(do_setattr(f, &truncate, &reply), TS_OK);
    assert_int_equal(reply.cut_node, 0);
    assert_int_equal(garbage_of(f, node, garbage, 8), 3);
    /* Growing cuts nothing and allocates nothing. */
    truncate.size = 10 * MiB;
    assert_int_equal(do_setattr(f, &truncate, &reply), TS_OK);
    assert_int_equal(reply.cut_node, 0);
    assert_int_equal(reply.attr.size, 10 * MiB);
    assert_int_equal(reply.attr.blocks, MiB / 512);

    /* Other attributes; the type bits of the mode stay. */
    struct ts_setattr_req chmod = {.ino = file,
                                   .valid =
                                       TS_SET_MODE | TS_SET_UID | TS_SET_MTIME | TS_SET_ATIME_NOW,
                                   .mode = S_IFDIR | 04711,
                                   .uid = 7,
                                   .mtime_sec = 12345,
                                   .mtime_nsec = 678};
    assert_int_equal(do_setattr(f, &chmod, &reply), TS_OK);
    assert_int_equal(reply.attr.mode, S_IFREG | 04711);
    assert_int_equal(reply.attr.uid, 7);
    assert_int_equal(reply.attr.mtime_sec, 12345);
    assert_int_equal(reply.attr.mtime_nsec, 678);
    assert_true(reply.attr.ctime_sec > 12345);
    assert_true(reply.attr.atime_sec > 12345);

    /* Tiles a writer allocated but never committed go with O_TRUNC (size 0 to 0). */
    uint64_t empty = make_file(f, TS_ROOT_INO, "uncommitted");
    struct ts_setattr_req to_zero = {.ino = empty, .valid = TS_SET_SIZE, .size = 0};
    assert_int_equal(do_tile_map(f, empty, 0, 2, 1, nodes, versions), TS_OK);
    assert_int_equal(do_setattr(f, &to_zero, &reply), TS_OK);
    assert_int_equal(reply.cut_node, 0);
    assert_int_equal(do_tile_map(f, empty, 0, 2, 0, nodes, versions), TS_OK);
    assert_int_equal(nodes[0], 0);
    assert_int_equal(nodes[1], 0);
    assert_int_equal(garbage_of(f, node, garbage, 8), 5);

    truncate.ino = TS_ROOT_INO;
    assert_int_equal(do_setattr(f, &truncate, NULL), TS_ERR_ISDIR);
    truncate.ino = 999999;
    assert_int_equal(do_setattr(f, &truncate, NULL), TS_ERR_NOENT);
}

/*
 * open(O_TRUNC) in one round trip: OPEN with truncate bits truncates to 0
 * (every tile to garbage, mtime now, set-user-ID gone with KILL_PRIV) in
 * the same transaction as the open, and refuses bits that are not a
 * truncation.
 */
static void test_open_truncates(void **state)
{
    struct metafixture *f = *state;
    struct garbage_seen garbage[8];
    uint32_t nodes[3];
    uint64_t versions[3];
    uint32_t node = register_node(f, 64ull << 30, 32ull << 30);
    uint64_t file = make_file(f, TS_ROOT_INO, "truncated");
    struct ts_setattr_req setuid = {.ino = file, .valid = TS_SET_MODE, .mode = 04755};
    struct ts_setattr_rep set;
    struct ts_attr before;
    struct ts_attr after;

    assert_int_equal(do_setattr(f, &setuid, &set), TS_OK);
    assert_int_equal(do_tile_map(f, file, 0, 3, 1, nodes, versions), TS_OK);
    assert_int_equal(do_commit(f, file, 3 * MiB, 0, &before), TS_OK);

    struct ts_open_req bad = {.ino = file, .truncate = TS_SET_SIZE | TS_SET_MODE};
    assert_int_equal(CALL(f, TS_OP_OPEN, open_req, &bad), TS_ERR_INVAL);
    bad.truncate = TS_SET_MTIME_NOW; /* no size: not a truncation */
    assert_int_equal(CALL(f, TS_OP_OPEN, open_req, &bad), TS_ERR_INVAL);
    assert_int_equal(do_getattr(f, file, &after), TS_OK);
    assert_int_equal(after.size, 3 * MiB); /* refused: nothing changed */

    struct ts_open_req open = {
        .ino = file, .truncate = TS_SET_SIZE | TS_SET_MTIME_NOW | TS_SET_KILL_PRIV};
    char spec[8] = "x";
    assert_int_equal(
        metafixture_open_call(f, CALL(f, TS_OP_OPEN, open_req, &open), &after, spec, sizeof(spec)),
        TS_OK);
    assert_string_equal(spec, ""); /* not an array file */
    assert_int_equal(after.size, 0);
    assert_int_equal(after.blocks, 0);
    assert_int_equal(after.mode, S_IFREG | 0755);
    assert_true(after.change > before.change);
    assert_true(after.mtime_sec > before.mtime_sec ||
                (after.mtime_sec == before.mtime_sec && after.mtime_nsec > before.mtime_nsec));
    assert_int_equal(do_tile_map(f, file, 0, 3, 0, nodes, versions), TS_OK);
    assert_int_equal(nodes[0] | nodes[1] | nodes[2], 0);
    assert_int_equal(garbage_of(f, node, garbage, 8), 3);
    /* Opened too: one release owed. */
    assert_int_equal(do_release(f, file), TS_OK);
}

/*
 * A writer truncating its own file sends its COMMIT with the SETATTR
 * (min_size, commit_mtime): applied first, so bytes its writes put past the
 * new end are cut as if committed, and mtime is the truncation's.
 */
static void test_setattr_carries_commit(void **state)
{
    struct metafixture *f = *state;
    uint32_t nodes[2];
    uint64_t versions[2];
    uint32_t node = register_node(f, 64ull << 30, 32ull << 30);
    uint64_t file = make_file(f, TS_ROOT_INO, "written");
    struct ts_setattr_rep reply;

    /* Meta knows size 0; the writer has 1.5 MiB written, then truncates to 1000. */
    assert_int_equal(do_tile_map(f, file, 0, 2, 1, nodes, versions), TS_OK);
    struct ts_setattr_req truncate = {.ino = file,
                                      .valid = TS_SET_SIZE,
                                      .size = 1000,
                                      .min_size = MiB + MiB / 2,
                                      .commit_mtime_sec = 1000,
                                      .commit_mtime_nsec = 5};
    assert_int_equal(do_setattr(f, &truncate, &reply), TS_OK);
    assert_int_equal(reply.attr.size, 1000);
    assert_int_equal(reply.cut_node, node);
    assert_int_equal(reply.cut_tile, 0);
    assert_int_equal(reply.cut_bytes, 1000);
    assert_true(reply.attr.mtime_sec > 1000); /* the size changed after the commit: now */
    assert_int_equal(do_tile_map(f, file, 0, 2, 0, nodes, versions), TS_OK);
    assert_int_equal(nodes[1], 0); /* tile 1 held only bytes past the new end */

    /* Truncating to the size the writes reached keeps their mtime. */
    truncate.size = 3000;
    truncate.min_size = 3000;
    assert_int_equal(do_setattr(f, &truncate, &reply), TS_OK);
    assert_int_equal(reply.attr.size, 3000);
    assert_int_equal(reply.attr.mtime_sec, 1000);
    assert_int_equal(reply.attr.mtime_nsec, 5);
    assert_int_equal(reply.cut_node, 0);

    truncate.commit_mtime_nsec = 1000000000;
    assert_int_equal(do_setattr(f, &truncate, NULL), TS_ERR_INVAL);

    /* Any setattr carries it (`tar` sets times, owner and mode of a file it
     * has just written): the size grows to the writes', and a time the
     * request sets wins over the writes' mtime. */
    struct ts_setattr_req times = {.ino = file,
                                   .valid = TS_SET_MTIME | TS_SET_ATIME,
                                   .atime_sec = 42,
                                   .mtime_sec = 43,
                                   .min_size = 5000,
                                   .commit_mtime_sec = 2000};
    assert_int_equal(do_setattr(f, &times, &reply), TS_OK);
    assert_int_equal(reply.attr.size, 5000);
    assert_int_equal(reply.attr.mtime_sec, 43);
    assert_int_equal(reply.attr.atime_sec, 42);
    struct ts_setattr_req mode = {
        .ino = file, .valid = TS_SET_MODE, .mode = 0600, .min_size = 6000, .commit_mtime_sec = 2001};
    assert_int_equal(do_setattr(f, &mode, &reply), TS_OK);
    assert_int_equal(reply.attr.size, 6000);
    assert_int_equal(reply.attr.mtime_sec, 2001);
    assert_int_equal(reply.attr.mode & 07777, 0600);
    /* A smaller size than meta's is no shrink: COMMIT only grows. */
    mode.min_size = 10;
    assert_int_equal(do_setattr(f, &mode, &reply), TS_OK);
    assert_int_equal(reply.attr.size, 6000);
    /* Only a regular file has writes to commit. */
    mode.ino = TS_ROOT_INO;
    assert_int_equal(do_setattr(f, &mode, NULL), TS_ERR_INVAL);
    mode.min_size = 1ull << 63;
    mode.ino = file;
    assert_int_equal(do_setattr(f, &mode, NULL), TS_ERR_FBIG);
}

/* TILE_MAP answers the file's size with the records. */
static void test_tile_map_answers_size(void **state)
{
    struct metafixture *f = *state;
    register_node(f, 64ull << 30, 32ull << 30);
    uint64_t file = make_file(f, TS_ROOT_INO, "sized");
    struct ts_tile_map_req m = {.ino = file, .first = 0, .count = 1, .allocate = 1};
    struct ts_tile_map_rep reply;
    struct ts_attr attr;

    assert_int_equal(do_commit(f, file, 12345, 0, &attr), TS_OK);
    assert_int_equal(CALL(f, TS_OP_TILE_MAP, tile_map_req, &m), TS_OK);
    assert_int_equal(ts_tile_map_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.size, 12345);
}

/* ---- tile map ----------------------------------------------------------- */

/*
 * HEARTBEAT as node `id` (0 = new) of a data directory with `incarnation`,
 * reporting `created` tile files. Returns meta's status; *node_id: the id
 * meta gave (on TS_OK).
 */
static int heartbeat_identity(struct metafixture *f, uint32_t id, uint64_t incarnation,
                              const struct garbage_seen *created, uint32_t created_count,
                              uint32_t *node_id)
{
    static uint8_t created_blob[TS_MAX_CREATED * ts_tile_file_rec_bytes];
    struct ts_writer writer;
    struct ts_heartbeat_rep reply;

    ts_writer_init(&writer, created_blob, sizeof(created_blob));
    for (uint32_t i = 0; i < created_count; i++) {
        struct ts_tile_file_rec file = {
            .ino = created[i].ino, .tile = created[i].tile, .version = created[i].version};
        ts_tile_file_rec_write(&writer, &file);
    }
    struct ts_heartbeat_req m = {
        .node_id = id,
        .machine = str("machine"),
        .address = str("tcp://127.0.0.1:7401"),
        .capacity = 64ull << 30,
        .free_bytes = 32ull << 30,
        .incarnation = incarnation,
        .created_count = created_count,
        .created = {(const char *)created_blob, (uint32_t)writer.len},
    };
    int status = CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &m);
    if (status == TS_OK) {
        assert_int_equal(ts_heartbeat_rep_decode(&reply, f->reply, f->reply_len), 0);
        *node_id = reply.node_id;
    }
    return status;
}

/* The address NODE_LIST gives for node id ("" when it is not listed). */
static void node_address(struct metafixture *f, uint32_t id, char *out, size_t cap)
{
    struct ts_node_list_rep reply;
    struct ts_cursor cursor;
    out[0] = '\0';
    assert_int_equal(metafixture_call(f, TS_OP_NODE_LIST, NULL, 0), TS_OK);
    assert_int_equal(ts_node_list_rep_decode(&reply, f->reply, f->reply_len), 0);
    ts_cursor_init(&cursor, reply.nodes.ptr, reply.nodes.len);
    for (uint32_t i = 0; i < reply.count; i++) {
        struct ts_node_list_rec record;
        assert_int_equal(ts_node_list_rec_read(&cursor, &record), 0);
        if (record.id == id)
            ts_str_copy(record.address, out, cap);
    }
}

/*
 * A node is bound to the key it first heartbeats with: the same id from
 * another key is refused (TS_ERR_PERM) and changes nothing; its own key
 * goes on, across a meta restart; the same data directory (identity) with
 * another key cannot be reclaimed either. Without keys nothing is checked.
 */
static void test_heartbeat_is_bound_to_its_key(void **state)
{
    struct metafixture *f = *state;
    uint32_t node = 0;
    uint32_t got = 0;
    char address[64];

    f->key_user = "datanode:n1";
    assert_int_equal(heartbeat_identity(f, 0, 0x1111, NULL, 0, &node), TS_OK);
    assert_true(node != 0);

    /* A stolen id: another datanode key claims node with a new address. */
    f->key_user = "datanode:thief";
    struct ts_heartbeat_req m = {
        .node_id = node,
        .machine = str("elsewhere"),
        .address = str("tcp://10.9.9.9:7401"),
        .capacity = 1ull << 50,
        .free_bytes = 1ull << 50,
        .incarnation = 0x1111,
    };
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &m), TS_ERR_PERM);
    assert_non_null(strstr(f->error_text, "cannot be taken over"));
    /* Nor by its data directory's identity, as a node without node.id. */
    assert_int_equal(heartbeat_identity(f, 0, 0x1111, NULL, 0, &got), TS_ERR_PERM);
    node_address(f, node, address, sizeof(address));
    assert_string_equal(address, "tcp://127.0.0.1:7401");

    /* Its own key, also after a restart (the binding is in the store). */
    metafixture_restart(f);
    f->key_user = "datanode:n1";
    assert_int_equal(heartbeat_identity(f, node, 0x1111, NULL, 0, &got), TS_OK);
    assert_int_equal(got, node);
    f->key_user = "datanode:thief";
    assert_int_equal(heartbeat_identity(f, node, 0x1111, NULL, 0, &got), TS_ERR_PERM);

    /* A link without keys has no key to check (a cluster run --insecure). */
    f->key_user = NULL;
    assert_int_equal(heartbeat_identity(f, node, 0x1111, NULL, 0, &got), TS_OK);
}

/* The TS_TILE_* flags of the tile's TILE_MAP record. */
static uint32_t tile_flags(struct metafixture *f, uint64_t ino, uint64_t tile)
{
    struct ts_tile_map_req m = {.ino = ino, .first = tile, .count = 1};
    struct ts_tile_map_rep reply;
    struct ts_cursor cursor;
    assert_int_equal(CALL(f, TS_OP_TILE_MAP, tile_map_req, &m), TS_OK);
    assert_int_equal(ts_tile_map_rep_decode(&reply, f->reply, f->reply_len), 0);
    ts_cursor_init(&cursor, reply.tiles.ptr, reply.tiles.len);
    struct ts_tile_map_rec record;
    assert_int_equal(ts_tile_map_rec_read(&cursor, &record), 0);
    return record.flags;
}

/*
 * A tile is TS_TILE_STORED once its holder reports its file at the
 * version meta records; reports of other versions, other nodes and holes
 * change nothing; a move keeps the mark (test_handlers_relocation.c).
 */
static void test_heartbeat_marks_stored(void **state)
{
    struct metafixture *f = *state;
    uint32_t nodes[3];
    uint64_t versions[3];
    uint32_t node = 0, other = 0;

    assert_int_equal(heartbeat_identity(f, 0, 0x1111, NULL, 0, &node), TS_OK);
    uint64_t file = make_file(f, TS_ROOT_INO, "written");
    assert_int_equal(do_tile_map(f, file, 0, 3, 1, nodes, versions), TS_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(nodes[i], node);
        assert_int_equal(tile_flags(f, file, (uint64_t)i), 0);
    }
    assert_int_equal(heartbeat_identity(f, 0, 0x2222, NULL, 0, &other), TS_OK);
    assert_int_not_equal(other, node);

    struct garbage_seen wrong[] = {
        {file, 1, versions[1] + 1000}, /* another version of tile 1 */
        {file, 7, versions[0]},        /* a hole */
        {file + 99, 0, versions[0]},   /* no such file */
    };
    assert_int_equal(heartbeat_identity(f, node, 0x1111, wrong, 3, &node), TS_OK);
    /* Tile 2 is node's, not other's. */
    struct garbage_seen not_theirs[] = {{file, 2, versions[2]}};
    assert_int_equal(heartbeat_identity(f, other, 0x2222, not_theirs, 1, &other), TS_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tile_flags(f, file, (uint64_t)i), 0);

    struct garbage_seen created[] = {{file, 0, versions[0]}, {file, 2, versions[2]}};
    assert_int_equal(heartbeat_identity(f, node, 0x1111, created, 2, &node), TS_OK);
    assert_int_equal(tile_flags(f, file, 0), TS_TILE_STORED);
    assert_int_equal(tile_flags(f, file, 1), 0);
    assert_int_equal(tile_flags(f, file, 2), TS_TILE_STORED);
    /* Reported again (a restarted datanode reports every file): no change. */
    assert_int_equal(heartbeat_identity(f, node, 0x1111, created, 2, &node), TS_OK);
    assert_int_equal(tile_flags(f, file, 0), TS_TILE_STORED);

    /* A tile dropped and placed again starts unwritten. */
    struct ts_setattr_req truncate = {.ino = file, .valid = TS_SET_SIZE, .size = 0};
    assert_int_equal(do_setattr(f, &truncate, NULL), TS_OK);
    assert_int_equal(do_tile_map(f, file, 0, 1, 1, nodes, versions), TS_OK);
    assert_int_equal(tile_flags(f, file, 0), 0);
}

/*
 * A registered node speaks only with the data directory it registered
 * with: another identity is refused (TS_ERR_STALE, with the reason and
 * the fix), a record without one adopts the first it sees, a new
 * directory at the same address registers as a new node, and a node's
 * directory without its node.id gets its id back.
 */
static void test_heartbeat_identity(void **state)
{
    struct metafixture *f = *state;
    uint32_t node = 0, again = 0, legacy = 0, fresh = 0;

    assert_int_equal(heartbeat_identity(f, 0, 0xabc, NULL, 0, &node), TS_OK);
    assert_int_equal(heartbeat_identity(f, node, 0xabc, NULL, 0, &again), TS_OK);
    assert_int_equal(again, node);
    assert_int_equal(heartbeat_identity(f, node, 0xdef, NULL, 0, &again), TS_ERR_STALE);
    assert_non_null(strstr(f->error_text, "is not the one node"));
    assert_non_null(strstr(f->error_text, "0000000000000def"));
    assert_non_null(strstr(f->error_text, "0000000000000abc"));
    /* No identity at all does not pass for the registered one either. */
    assert_int_equal(heartbeat_identity(f, node, 0, NULL, 0, &again), TS_ERR_STALE);
    /* The refused heartbeat changed nothing: the right one still passes. */
    assert_int_equal(heartbeat_identity(f, node, 0xabc, NULL, 0, &again), TS_OK);

    /* Registered before identities: adopts the first, then holds to it. */
    assert_int_equal(heartbeat_identity(f, 0, 0, NULL, 0, &legacy), TS_OK);
    assert_int_equal(heartbeat_identity(f, legacy, 0x77, NULL, 0, &again), TS_OK);
    assert_int_equal(heartbeat_identity(f, legacy, 0x78, NULL, 0, &again), TS_ERR_STALE);

    /* A wiped directory (no node.id) at the same address: a new node. */
    assert_int_equal(heartbeat_identity(f, 0, 0x999, NULL, 0, &fresh), TS_OK);
    assert_int_not_equal(fresh, node);
    assert_int_not_equal(fresh, legacy);

    /* A node's own directory that lost only its node.id: that node again. */
    assert_int_equal(heartbeat_identity(f, 0, 0xabc, NULL, 0, &again), TS_OK);
    assert_int_equal(again, node);
    assert_int_equal(heartbeat_identity(f, 0, 0x77, NULL, 0, &again), TS_OK);
    assert_int_equal(again, legacy);
}

static void test_tile_map_round_robin(void **state)
{
    struct metafixture *f = *state;
    enum { TILES = 400, NODES = 4 };
    static uint32_t nodes[TILES], again_nodes[TILES];
    static uint64_t versions[TILES], again_versions[TILES];
    uint32_t ids[NODES];
    uint32_t per_node[NODES] = {0};
    uint64_t file;
    struct ts_attr attr = {0};

    f->service->defaults.placement = TS_PLACEMENT_ROUNDROBIN;
    file = make_file(f, TS_ROOT_INO, "striped");
    /* No datanode yet. */
    assert_int_equal(do_tile_map(f, file, 0, 1, 1, nodes, versions), TS_ERR_NONODES);
    assert_int_equal(do_tile_map(f, file, 0, 1, 0, nodes, versions), TS_OK);
    assert_int_equal(nodes[0], 0);

    for (int i = 0; i < NODES; i++)
        ids[i] = register_node(f, 64ull << 30, 32ull << 30);
    for (int i = 1; i < NODES; i++)
        assert_int_not_equal(ids[i], ids[i - 1]);

    assert_int_equal(do_tile_map(f, file, 0, TILES, 1, nodes, versions), TS_OK);
    for (int t = 0; t < TILES; t++) {
        int found = 0;
        for (int i = 0; i < NODES; i++) {
            if (nodes[t] == ids[i]) {
                per_node[i]++;
                found = 1;
            }
        }
        assert_true(found);
        assert_int_not_equal(versions[t], 0);
        if (t > 0) /* neighbours never share a node */
            assert_int_not_equal(nodes[t], nodes[t - 1]);
        for (int u = 0; u < t; u++)
            assert_int_not_equal(versions[u], versions[t]);
    }
    for (int i = 0; i < NODES; i++)
        assert_int_equal(per_node[i], TILES / NODES);

    /* Stable: a second call returns the same map. */
    assert_int_equal(do_tile_map(f, file, 0, TILES, 1, again_nodes, again_versions), TS_OK);
    assert_memory_equal(again_nodes, nodes, sizeof(nodes));
    assert_memory_equal(again_versions, versions, sizeof(versions));
    /* The size did not change, blocks count only bytes below the size. */
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.size, 0);
    assert_int_equal(attr.blocks, 0);

    assert_int_equal(do_tile_map(f, file, 0, 0, 1, nodes, versions), TS_ERR_INVAL);
    assert_int_equal(do_tile_map(f, file, 0, TS_MAX_TILES_PER_MAP + 1, 0, nodes, versions),
                     TS_ERR_INVAL);
    assert_int_equal(do_tile_map(f, TS_ROOT_INO, 0, 1, 1, nodes, versions), TS_ERR_INVAL);
    assert_int_equal(do_tile_map(f, 999999, 0, 1, 1, nodes, versions), TS_ERR_NOENT);
    assert_int_equal(do_tile_map(f, file, UINT64_MAX - 1, 1, 1, nodes, versions), TS_ERR_FBIG);

    /* Full nodes: no space. */
    uint64_t other = make_file(f, TS_ROOT_INO, "full");
    for (int i = 0; i < NODES; i++)
        do_heartbeat(f, ids[i], 64ull << 30, 1000, NULL, 0, NULL, 0, NULL);
    assert_int_equal(do_tile_map(f, other, 0, 1, 1, nodes, versions), TS_ERR_NOSPC);
}

static void test_commit_grows_size_and_sets_mtime(void **state)
{
    struct metafixture *f = *state;
    struct ts_commit_req m;
    struct ts_attr attr = {0};
    uint64_t file = make_file(f, TS_ROOT_INO, "data");

    struct ts_attr before;
    assert_int_equal(do_getattr(f, file, &before), TS_OK);
    assert_int_equal(do_commit(f, file, 5000, 1, &attr), TS_OK);
    assert_int_equal(attr.size, 5000);
    /* Every change of the inode raises its change counter, and the reply
     * carries the raised one: the mount orders attributes by it. */
    assert_true(attr.change > before.change);
    uint64_t committed_change = attr.change;
    assert_int_equal(do_getattr(f, file, &before), TS_OK);
    assert_int_equal(before.change, committed_change); /* a read changes nothing */
    assert_int_equal(do_commit(f, file, 100, 0, &attr), TS_OK);
    assert_int_equal(attr.size, 5000);
    assert_true(attr.change > committed_change);
    m = (struct ts_commit_req){.ino = file, .min_size = 6000, .mtime_sec = 777, .mtime_nsec = 9};
    assert_int_equal(metafixture_attr_call(f, CALL(f, TS_OP_COMMIT, commit_req, &m), &attr), TS_OK);
    assert_int_equal(attr.size, 6000);
    assert_int_equal(attr.mtime_sec, 777);
    assert_int_equal(attr.ctime_sec, 777);
    assert_int_equal(attr.mtime_nsec, 9);
    assert_int_equal(do_commit(f, TS_ROOT_INO, 1, 0, NULL), TS_ERR_INVAL);
    assert_int_equal(do_commit(f, 999999, 1, 0, NULL), TS_ERR_NOENT);
}

/* The store syncs itself every second on a thread of its own (store.h):
 * nobody here calls store_sync() or service_tick(), and the request loop
 * never waits for it. A COMMIT with sync flushes before it answers. */
static void test_background_sync(void **state)
{
    struct metafixture *f = *state;
    uint64_t file = make_file(f, TS_ROOT_INO, "synced");
    for (int waited_ms = 0; store_dirty(f->service->store) && waited_ms < 10000; waited_ms += 10)
        usleep(10 * 1000);
    assert_false(store_dirty(f->service->store));

    assert_int_equal(do_commit(f, file, 100, 0, NULL), TS_OK);
    assert_int_equal(do_commit(f, file, 200, 1, NULL), TS_OK);
    assert_false(store_dirty(f->service->store));
}

/* ---- xattrs ------------------------------------------------------------- */

static int do_setxattr(struct metafixture *f, uint64_t ino, const char *name, const char *value,
                       uint32_t flags)
{
    struct ts_setxattr_req m = {.ino = ino, .name = str(name), .value = str(value), .flags = flags};
    return CALL(f, TS_OP_SETXATTR, setxattr_req, &m);
}

static int do_getxattr(struct metafixture *f, uint64_t ino, const char *name, char *value,
                       size_t cap)
{
    struct ts_getxattr_req m = {.ino = ino, .name = str(name)};
    struct ts_getxattr_rep reply;
    int status = CALL(f, TS_OP_GETXATTR, getxattr_req, &m);
    if (status != TS_OK)
        return status;
    assert_int_equal(ts_getxattr_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(ts_str_copy(reply.value, value, cap), 0);
    return status;
}

static void test_user_xattrs_set_get_list_remove(void **state)
{
    struct metafixture *f = *state;
    struct ts_listxattr_req list = {.ino = make_file(f, TS_ROOT_INO, "x")};
    struct ts_removexattr_req remove = {.ino = list.ino, .name = str("user.a")};
    struct ts_listxattr_rep names;
    struct ts_attr before, after;
    uint64_t ino = list.ino;
    char value[64];
    static char big[TS_MAX_XATTR_VALUE + 2];

    assert_int_equal(do_getattr(f, ino, &before), TS_OK);
    assert_int_equal(do_setxattr(f, ino, "user.a", "one", TS_XATTR_CREATE), TS_OK);
    assert_int_equal(do_getattr(f, ino, &after), TS_OK);
    assert_true(after.ctime_sec > before.ctime_sec ||
                (after.ctime_sec == before.ctime_sec && after.ctime_nsec >= before.ctime_nsec));
    assert_int_equal(do_setxattr(f, ino, "user.a", "two", TS_XATTR_CREATE), TS_ERR_EXIST);
    assert_int_equal(do_setxattr(f, ino, "user.b", "two", TS_XATTR_REPLACE), TS_ERR_NODATA);
    assert_int_equal(do_setxattr(f, ino, "user.a", "three", TS_XATTR_REPLACE), TS_OK);
    assert_int_equal(do_setxattr(f, ino, "user.empty", "", 0), TS_OK);
    assert_int_equal(do_getxattr(f, ino, "user.a", value, sizeof(value)), TS_OK);
    assert_string_equal(value, "three");
    assert_int_equal(do_getxattr(f, ino, "user.empty", value, sizeof(value)), TS_OK);
    assert_string_equal(value, "");
    assert_int_equal(do_getxattr(f, ino, "user.missing", value, sizeof(value)), TS_ERR_NODATA);
    assert_int_equal(do_setxattr(f, ino, "trusted.a", "x", 0), TS_ERR_NOTSUP);
    assert_int_equal(do_getxattr(f, ino, "security.selinux", value, sizeof(value)), TS_ERR_NOTSUP);
    assert_int_equal(do_setxattr(f, 999999, "user.a", "x", 0), TS_ERR_NOENT);
    memset(big, 'v', sizeof(big) - 1);
    assert_int_equal(do_setxattr(f, ino, "user.big", big, 0), TS_ERR_RANGE);
    big[TS_MAX_XATTR_VALUE] = '\0';
    assert_int_equal(do_setxattr(f, ino, "user.big", big, 0), TS_OK);

    assert_int_equal(CALL(f, TS_OP_LISTXATTR, listxattr_req, &list), TS_OK);
    assert_int_equal(ts_listxattr_rep_decode(&names, f->reply, f->reply_len), 0);
    assert_int_equal(names.names.len, sizeof("user.a\0user.big\0user.empty"));
    assert_memory_equal(names.names.ptr, "user.a\0user.big\0user.empty", names.names.len);

    assert_int_equal(CALL(f, TS_OP_REMOVEXATTR, removexattr_req, &remove), TS_OK);
    assert_int_equal(CALL(f, TS_OP_REMOVEXATTR, removexattr_req, &remove), TS_ERR_NODATA);
    assert_int_equal(do_getxattr(f, ino, "user.a", value, sizeof(value)), TS_ERR_NODATA);

    /* They go with the inode. */
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "x"), TS_OK);
    assert_int_equal(CALL(f, TS_OP_LISTXATTR, listxattr_req, &list), TS_ERR_NOENT);
}

/* ---- layouts and placement ----------------------------------------------- */

#define LAYOUT "user.tessera.layout"
#define MB 1000000u

/* REMOVEXATTR of name on ino. */
static int do_removexattr(struct metafixture *f, uint64_t ino, const char *name)
{
    struct ts_removexattr_req m = {.ino = ino, .name = str(name)};
    return CALL(f, TS_OP_REMOVEXATTR, removexattr_req, &m);
}

/* A heartbeat of a known node that reports its load. */
static void heartbeat_load(struct metafixture *f, uint32_t id, uint64_t free_bytes,
                           uint64_t write_bytes_per_sec, uint32_t queue_depth,
                           uint64_t throttle_bytes_per_sec)
{
    struct ts_heartbeat_req m = {
        .node_id = id,
        .machine = str("machine"),
        .address = str("tcp://127.0.0.1:7401"),
        .capacity = 64ull << 30,
        .free_bytes = free_bytes,
        .read_bytes_per_sec = 2 * write_bytes_per_sec,
        .write_bytes_per_sec = write_bytes_per_sec,
        .queue_depth = queue_depth,
        .throttle_bytes_per_sec = throttle_bytes_per_sec,
    };
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &m), TS_OK);
}

/* TILE_MAP allocating count tiles from first, naming `node` (0 = none). */
static int tile_map_named(struct metafixture *f, uint64_t ino, uint64_t first, uint32_t count,
                          uint32_t node, uint32_t *nodes)
{
    struct ts_tile_map_req m = {
        .ino = ino, .first = first, .count = count, .allocate = 1, .node = node};
    struct ts_tile_map_rep reply;
    struct ts_cursor cursor;
    int status = CALL(f, TS_OP_TILE_MAP, tile_map_req, &m);
    if (status != TS_OK)
        return status;
    assert_int_equal(ts_tile_map_rep_decode(&reply, f->reply, f->reply_len), 0);
    ts_cursor_init(&cursor, reply.tiles.ptr, reply.tiles.len);
    for (uint32_t i = 0; i < count; i++) {
        struct ts_tile_map_rec record;
        struct ts_replica_rec holder;
        assert_int_equal(ts_tile_map_rec_read(&cursor, &record), 0);
        nodes[i] = record.node;
        for (uint32_t h = 0; h < record.holders; h++)
            assert_int_equal(ts_replica_rec_read(&cursor, &holder), 0);
    }
    return status;
}

static uint32_t count_on(const uint32_t *nodes, uint32_t count, uint32_t id)
{
    uint32_t on = 0;
    for (uint32_t i = 0; i < count; i++)
        on += nodes[i] == id;
    return on;
}

static void test_layout_xattr(void **state)
{
    struct metafixture *f = *state;
    uint64_t file = make_file(f, TS_ROOT_INO, "f");
    struct ts_attr attr = {0};
    char value[128];
    uint32_t nodes[4];
    uint64_t versions[4];

    /* Every file has one: the effective layout, defaults filled in. */
    assert_int_equal(do_getxattr(f, file, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=1M copies=1 placement=dynamic");
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.tile_bytes, 1u << 20);
    assert_int_equal(attr.copies, 1);
    assert_int_equal(attr.placement, TS_PLACEMENT_DYNAMIC);

    /* Strict parsing: each of these is refused and changes nothing. */
    static const char *const bad[] = {
        "",
        "   ",
        "tile",
        "tile=",
        "tile=3K",
        "tile=1000",
        "tile=32M",
        "tile=1G",
        "tile=-4K",
        "tile=+4K",
        "tile=4KB",
        "tile=1M tile=2M",
        "copies=5",
        "copies=0",
        "copies=1x",
        "placement=fast",
        "placement=Static",
        "stripe=4",
        "tile=1M,placement=static",
        "=1M",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(do_setxattr(f, file, LAYOUT, bad[i], 0), TS_ERR_INVAL);
        assert_true(f->error_text[0] != '\0');
    }
    assert_int_equal(do_getxattr(f, file, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=1M copies=1 placement=dynamic");

    /* Before the first tile a file takes any layout; keys not given stay. */
    assert_int_equal(do_setxattr(f, file, LAYOUT, " tile=4M\tplacement=static\n", 0), TS_OK);
    assert_int_equal(do_setxattr(f, file, LAYOUT, "copies=1", TS_XATTR_REPLACE), TS_OK);
    assert_int_equal(do_getxattr(f, file, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=4M copies=1 placement=static");
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.tile_bytes, 4u << 20);
    assert_int_equal(attr.placement, TS_PLACEMENT_STATIC);
    assert_int_equal(do_setxattr(f, file, LAYOUT, "tile=64KiB", 0), TS_OK);
    assert_int_equal(do_setxattr(f, file, LAYOUT, "tile=4M", 0), TS_OK);
    /* It always exists, so "create" fails. */
    assert_int_equal(do_setxattr(f, file, LAYOUT, "tile=4M", TS_XATTR_CREATE), TS_ERR_EXIST);

    /* Once the file has a tile the layout is fixed; the same one is accepted. */
    register_node(f, 64ull << 30, 32ull << 30);
    assert_int_equal(do_tile_map(f, file, 0, 1, 1, nodes, versions), TS_OK);
    assert_int_equal(do_setxattr(f, file, LAYOUT, "tile=1M", 0), TS_ERR_BUSY);
    assert_int_equal(do_setxattr(f, file, LAYOUT, "placement=roundrobin", 0), TS_ERR_BUSY);
    assert_int_equal(do_removexattr(f, file, LAYOUT), TS_ERR_BUSY);
    assert_int_equal(do_setxattr(f, file, LAYOUT, "tile=4M copies=1 placement=static", 0), TS_OK);
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.tile_bytes, 4u << 20);

    /* Not listed: copying a tree's xattrs must not pin the copies' layout. */
    struct ts_listxattr_req list = {.ino = file};
    struct ts_listxattr_rep names;
    assert_int_equal(CALL(f, TS_OP_LISTXATTR, listxattr_req, &list), TS_OK);
    assert_int_equal(ts_listxattr_rep_decode(&names, f->reply, f->reply_len), 0);
    assert_int_equal(names.names.len, 0);

    /* A truncate to 0 frees the tiles, and with them the layout. */
    struct ts_setattr_req truncate = {.ino = file, .valid = TS_SET_SIZE, .size = 0};
    assert_int_equal(do_setattr(f, &truncate, NULL), TS_OK);
    assert_int_equal(do_removexattr(f, file, LAYOUT), TS_OK);
    assert_int_equal(do_getxattr(f, file, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=1M copies=1 placement=dynamic");

    /* Symlinks and special files hold no data and have no layout. */
    uint64_t link;
    assert_int_equal(do_symlink(f, TS_ROOT_INO, "l", "f", &attr), TS_OK);
    link = attr.ino;
    assert_int_equal(do_getxattr(f, link, LAYOUT, value, sizeof(value)), TS_ERR_NODATA);
    assert_int_equal(do_setxattr(f, link, LAYOUT, "tile=1M", 0), TS_ERR_INVAL);
    assert_int_equal(do_removexattr(f, link, LAYOUT), TS_ERR_NODATA);
    assert_int_equal(do_getxattr(f, 999999, LAYOUT, value, sizeof(value)), TS_ERR_NOENT);

    /* The layout lives in the inode record: it survives a restart. */
    assert_int_equal(do_setxattr(f, file, LAYOUT, "tile=256K placement=roundrobin", 0), TS_OK);
    metafixture_reopen(f);
    assert_int_equal(do_getxattr(f, file, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=256K copies=1 placement=roundrobin");
}

static void test_layout_inheritance(void **state)
{
    struct metafixture *f = *state;
    uint64_t dir = make_dir(f, TS_ROOT_INO, "d");
    uint64_t before = make_file(f, dir, "before");
    struct ts_attr attr = {0};
    char value[128];

    /* A directory shows what its new files would get. */
    assert_int_equal(do_getxattr(f, dir, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=1M copies=1 placement=dynamic");
    assert_int_equal(do_setxattr(f, dir, LAYOUT, "tile=256K placement=roundrobin", 0), TS_OK);
    assert_int_equal(do_getxattr(f, dir, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=256K copies=1 placement=roundrobin");
    assert_int_equal(do_getattr(f, dir, &attr), TS_OK);
    assert_int_equal(attr.tile_bytes, 256u << 10);
    assert_int_equal(attr.placement, TS_PLACEMENT_ROUNDROBIN);

    /* New files and subdirectories inherit it, down the tree. */
    uint64_t file = make_file(f, dir, "file");
    uint64_t sub = make_dir(f, dir, "sub");
    uint64_t deep = make_file(f, sub, "deep");
    for (int i = 0; i < 3; i++) {
        uint64_t ino = i == 0 ? file : i == 1 ? sub : deep;
        assert_int_equal(do_getxattr(f, ino, LAYOUT, value, sizeof(value)), TS_OK);
        assert_string_equal(value, "tile=256K copies=1 placement=roundrobin");
    }
    assert_int_equal(do_lookup(f, sub, "deep", &attr), TS_OK);
    assert_int_equal(attr.tile_bytes, 256u << 10);
    /* Files that existed before keep theirs. */
    assert_int_equal(do_getxattr(f, before, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=1M copies=1 placement=dynamic");

    /* A directory's layout can change at any time; only new files follow. */
    assert_int_equal(do_setxattr(f, dir, LAYOUT, "placement=static", 0), TS_OK);
    uint64_t later = make_file(f, dir, "later");
    assert_int_equal(do_getxattr(f, later, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=256K copies=1 placement=static");
    assert_int_equal(do_getxattr(f, file, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=256K copies=1 placement=roundrobin");

    /* Removing it brings the defaults back for what is created next. */
    assert_int_equal(do_removexattr(f, dir, LAYOUT), TS_OK);
    uint64_t plain = make_file(f, dir, "plain");
    assert_int_equal(do_getxattr(f, plain, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=1M copies=1 placement=dynamic");

    /* "default" follows the cluster's default, an explicit policy does not. */
    f->service->defaults.placement = TS_PLACEMENT_STATIC;
    assert_int_equal(do_getattr(f, plain, &attr), TS_OK);
    assert_int_equal(attr.placement, TS_PLACEMENT_STATIC);
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.placement, TS_PLACEMENT_ROUNDROBIN);
    assert_int_equal(do_setxattr(f, dir, LAYOUT, "placement=default", 0), TS_OK);
    assert_int_equal(do_getxattr(f, dir, LAYOUT, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "tile=1M copies=1 placement=static");
}

/* Static placement by measured write throughput, through TILE_MAP. */
static void test_tile_map_static(void **state)
{
    struct metafixture *f = *state;
    static uint32_t nodes[300];
    uint32_t fast = register_node(f, 64ull << 30, 32ull << 30);
    uint32_t slow = register_node(f, 64ull << 30, 32ull << 30);
    uint32_t other = register_node(f, 64ull << 30, 32ull << 30);
    uint64_t file = make_file(f, TS_ROOT_INO, "static");

    heartbeat_load(f, fast, 32ull << 30, 40 * MB, 0, 40 * MB);
    heartbeat_load(f, slow, 32ull << 30, 20 * MB, 0, 20 * MB);
    heartbeat_load(f, other, 32ull << 30, 40 * MB, 0, 0);
    assert_int_equal(do_setxattr(f, file, LAYOUT, "placement=static", 0), TS_OK);

    /* 100 tiles at once: finish times even out at 40:20:40. */
    assert_int_equal(tile_map_named(f, file, 0, 100, 0, nodes), TS_OK);
    assert_int_equal(count_on(nodes, 100, fast), 40);
    assert_int_equal(count_on(nodes, 100, slow), 20);
    assert_int_equal(count_on(nodes, 100, other), 40);
    /*
     * Request by request: meta remembers the backlog it placed, so a writer
     * asking one tile at a time (faster than the disks drain) gets the same
     * split, within a tile of drain.
     */
    for (uint32_t t = 100; t < 300; t++)
        assert_int_equal(tile_map_named(f, file, t, 1, 0, &nodes[t - 100]), TS_OK);
    assert_in_range(count_on(nodes, 200, fast), 78, 82);
    assert_in_range(count_on(nodes, 200, slow), 38, 42);
    assert_in_range(count_on(nodes, 200, other), 78, 82);

    /* The measurements reach NODE_LIST. */
    struct ts_node_list_rep list;
    struct ts_cursor cursor;
    assert_int_equal(metafixture_call(f, TS_OP_NODE_LIST, NULL, 0), TS_OK);
    assert_int_equal(ts_node_list_rep_decode(&list, f->reply, f->reply_len), 0);
    ts_cursor_init(&cursor, list.nodes.ptr, list.nodes.len);
    for (uint32_t i = 0; i < list.count; i++) {
        struct ts_node_list_rec node;
        assert_int_equal(ts_node_list_rec_read(&cursor, &node), 0);
        assert_int_equal(node.write_bytes_per_sec, node.id == slow ? 20 * MB : 40 * MB);
        assert_int_equal(node.read_bytes_per_sec, 2 * node.write_bytes_per_sec);
        assert_int_equal(node.queue_depth, 0);
        assert_int_equal(node.throttle_bytes_per_sec,
                         node.id == other ? 0 : node.write_bytes_per_sec);
    }
    assert_int_equal(cursor.left, 0);
}

/* Dynamic placement: the writer names the node; meta falls back when it cannot. */
static void test_tile_map_dynamic_named(void **state)
{
    struct metafixture *f = *state;
    uint32_t nodes[8];
    uint32_t a = register_node(f, 64ull << 30, 32ull << 30);
    uint32_t b = register_node(f, 64ull << 30, 32ull << 30);
    uint64_t file = make_file(f, TS_ROOT_INO, "dynamic");
    uint64_t pinned = make_file(f, TS_ROOT_INO, "roundrobin");

    /* The default policy is dynamic: a batch for node b lands on b. */
    assert_int_equal(tile_map_named(f, file, 0, 8, b, nodes), TS_OK);
    assert_int_equal(count_on(nodes, 8, b), 8);
    assert_int_equal(tile_map_named(f, file, 8, 3, a, nodes), TS_OK);
    assert_int_equal(count_on(nodes, 3, a), 3);
    /* Existing tiles keep their node whoever is named. */
    assert_int_equal(tile_map_named(f, file, 6, 4, a, nodes), TS_OK);
    assert_int_equal(nodes[0], b);
    assert_int_equal(nodes[1], b);
    assert_int_equal(nodes[2], a);

    /* A full node cannot take the batch: it goes to the others. */
    heartbeat_load(f, b, 1000, 40 * MB, 0, 0);
    assert_int_equal(tile_map_named(f, file, 20, 4, b, nodes), TS_OK);
    assert_int_equal(count_on(nodes, 4, a), 4);
    /* A node meta never registered is an error. */
    assert_int_equal(tile_map_named(f, file, 30, 1, 999, nodes), TS_ERR_INVAL);
    /* Every node full: no space. */
    heartbeat_load(f, a, 1000, 40 * MB, 0, 0);
    assert_int_equal(tile_map_named(f, file, 30, 1, a, nodes), TS_ERR_NOSPC);

    /* A file that asked for round-robin gets it, whatever node is named. */
    heartbeat_load(f, a, 32ull << 30, 40 * MB, 0, 0);
    heartbeat_load(f, b, 32ull << 30, 40 * MB, 0, 0);
    assert_int_equal(do_setxattr(f, pinned, LAYOUT, "placement=roundrobin", 0), TS_OK);
    assert_int_equal(tile_map_named(f, pinned, 0, 4, a, nodes), TS_OK);
    assert_int_equal(count_on(nodes, 4, a), 2);
    assert_int_equal(count_on(nodes, 4, b), 2);
}

/* Meta's tick each second from `from` to `to`: node id stays up throughout. */
static void tick_while_up(struct nodes_live *live, uint32_t id, int64_t from, int64_t to)
{
    for (int64_t now = from; now <= to; now += 1000) {
        nodes_live_check(live, now);
        assert_true(nodes_live_is_up(live, id, now));
    }
}

/* A node silent for the timeout while meta ticks each second goes down. */
static void test_liveness_timeout(void **state)
{
    (void)state;
    struct nodes_live *live = nodes_live_new(3000);
    assert_non_null(live);
    assert_false(nodes_live_is_up(live, 7, 0)); /* never heard of */
    assert_int_equal(nodes_live_beat(live, 7, 0), 0);
    assert_true(nodes_live_is_up(live, 7, 0));
    tick_while_up(live, 7, 1000, 2000);
    nodes_live_check(live, 3000);
    assert_false(nodes_live_is_up(live, 7, 3000));
    assert_int_equal(nodes_live_age_ms(live, 7, 3000), 3000);
    assert_int_equal(nodes_live_beat(live, 7, 3500), 0); /* back */
    assert_true(nodes_live_is_up(live, 7, 3500));
    nodes_live_destroy(&live);
}

/*
 * Meta standing still (no call for 4 s: a store write stuck behind the
 * disk) is not the nodes' silence: the first call after the gap finds the
 * node up, and it goes down only after the timeout of listening since.
 */
static void test_liveness_meta_stall(void **state)
{
    (void)state;
    struct nodes_live *live = nodes_live_new(3000);
    assert_non_null(live);
    assert_int_equal(nodes_live_beat(live, 7, 0), 0);
    nodes_live_check(live, 1000);
    assert_true(nodes_live_is_up(live, 7, 5000)); /* a placement right after the stall */
    nodes_live_check(live, 5000);
    assert_true(nodes_live_is_up(live, 7, 5000));
    assert_int_equal(nodes_live_age_ms(live, 7, 5000), 5000); /* the display stays true */
    tick_while_up(live, 7, 6000, 7000);
    nodes_live_check(live, 8000); /* 3 s of listening without a beat */
    assert_false(nodes_live_is_up(live, 7, 8000));
    nodes_live_destroy(&live);
}

/* The backlog meta keeps per node drains at the node's speed. */
static void test_backlog_model(void **state)
{
    (void)state;
    struct nodes_live *live = nodes_live_new(3000);
    assert_non_null(live);
    assert_int_equal(nodes_live_backlog(live, 5, 0), 0);
    assert_int_equal(nodes_live_set_backlog(live, 5, MB, 0), -ENOENT);
    assert_int_equal(nodes_live_beat(live, 5, 0), 0);
    assert_int_equal(nodes_live_load(live, 5, 10 * MB, 0, 0), 0);
    assert_int_equal(nodes_live_set_backlog(live, 5, 10 * MB, 1000), 0);
    assert_int_equal(nodes_live_backlog(live, 5, 1000), 10 * MB);
    assert_int_equal(nodes_live_backlog(live, 5, 1500), 5 * MB); /* 0.5 s at 10 MB/s */
    assert_int_equal(nodes_live_backlog(live, 5, 2000), 0);
    assert_int_equal(nodes_live_backlog(live, 5, 99000), 0);
    /* Reading does not drain: the state moves only when set. */
    assert_int_equal(nodes_live_backlog(live, 5, 1500), 5 * MB);
    /* A reported queue is work the node has: at least that many tiles. */
    assert_int_equal(nodes_live_load(live, 5, 10 * MB, 2, 5000), 0);
    assert_int_equal(nodes_live_backlog(live, 5, 5000), 2u << 20);
    /* A node that has not measured itself drains at the assumed rate. */
    assert_int_equal(nodes_live_load(live, 5, 0, 0, 6000), 0);
    assert_int_equal(nodes_live_set_backlog(live, 5, NODES_ASSUMED_BYTES_PER_SEC, 6000), 0);
    assert_int_equal(nodes_live_backlog(live, 5, 6500), NODES_ASSUMED_BYTES_PER_SEC / 2);
    nodes_live_destroy(&live);
}

/*
 * A node's steady write throughput holds its peak over a dip of the
 * two-second measure, decays when the node stays slow, starts over when
 * its disk gets a new cap, and is unproven while only its start-up probe
 * has measured it.
 */
static void test_steady_write_holds_peak(void **state)
{
    (void)state;
    struct nodes_live *live = nodes_live_new(3000);
    assert_non_null(live);
    assert_int_equal(nodes_live_steady_note(live, 5, 100 * MB, 0, 0), -ENOENT);
    assert_int_equal(nodes_live_beat(live, 5, 0), 0);
    assert_int_equal(nodes_live_steady_write(live, 5), 0); /* no report yet */
    /* The first report is the start-up probe's: unproven until another comes. */
    assert_int_equal(nodes_live_steady_note(live, 5, 100 * MB, 0, 0), 0);
    assert_true(nodes_live_steady_write(live, 5) == PLACEMENT_SPEED_UNPROVEN);
    assert_int_equal(nodes_live_steady_note(live, 5, 100 * MB, 0, 500), 0);
    assert_true(nodes_live_steady_write(live, 5) == PLACEMENT_SPEED_UNPROVEN);
    /* Three seconds at a twentieth: still above 85 % of the peak. */
    for (int64_t ms = 1000; ms <= 3000; ms += 1000)
        assert_int_equal(nodes_live_steady_note(live, 5, 5 * MB, 0, ms), 0);
    uint64_t held = nodes_live_steady_write(live, 5);
    assert_true(held > 85 * MB && held < 100 * MB);
    /* A higher report is the new peak at once. */
    assert_int_equal(nodes_live_steady_note(live, 5, 120 * MB, 0, 4000), 0);
    assert_int_equal(nodes_live_steady_write(live, 5), 120 * MB);
    /* A minute of reports at a twentieth: within 10 % of them (e^-3 of the peak above). */
    for (int64_t ms = 5000; ms <= 64000; ms += 1000)
        assert_int_equal(nodes_live_steady_note(live, 5, 6 * MB, 0, ms), 0);
    held = nodes_live_steady_write(live, 5);
    assert_true(held >= 6 * MB && held < 6 * MB + 6 * MB / 10 + 120 * MB / 19);
    /* A new cap: the next report replaces what was held. */
    assert_int_equal(nodes_live_steady_note(live, 5, 200 * MB, 0, 65000), 0);
    assert_int_equal(nodes_live_steady_note(live, 5, 25 * MB, 25 * MB, 66000), 0);
    assert_int_equal(nodes_live_steady_write(live, 5), 25 * MB);
    /* A node capped from its first report on is measured by its cap. */
    assert_int_equal(nodes_live_beat(live, 6, 0), 0);
    assert_int_equal(nodes_live_steady_note(live, 6, 2 * MB, 2 * MB, 0), 0);
    assert_int_equal(nodes_live_steady_write(live, 6), 2 * MB);
    nodes_live_destroy(&live);
}

/* ---- nodes -------------------------------------------------------------- */

static void test_statfs_and_node_list(void **state)
{
    struct metafixture *f = *state;
    struct ts_statfs_rep statfs;
    struct ts_node_list_rep list;
    struct ts_cursor cursor;
    uint32_t first, adopted, next;

    make_file(f, TS_ROOT_INO, "one");
    make_dir(f, TS_ROOT_INO, "two");
    first = do_heartbeat(f, 0, 100, 10, NULL, 0, NULL, 0, NULL);
    /* A node meta never saw (wiped store) keeps its id. */
    adopted = do_heartbeat(f, 77, 200, 20, NULL, 0, NULL, 0, NULL);
    assert_int_equal(adopted, 77);
    next = do_heartbeat(f, 0, 1000, 100, NULL, 0, NULL, 0, NULL);
    assert_true(next > 77);
    assert_int_not_equal(first, next);

    assert_int_equal(metafixture_call(f, TS_OP_STATFS, NULL, 0), TS_OK);
    assert_int_equal(ts_statfs_rep_decode(&statfs, f->reply, f->reply_len), 0);
    assert_int_equal(statfs.total_bytes, 1300);
    assert_int_equal(statfs.free_bytes, 130);
    assert_int_equal(statfs.nodes_up, 3);
    assert_int_equal(statfs.files, 3);

    assert_int_equal(metafixture_call(f, TS_OP_NODE_LIST, NULL, 0), TS_OK);
    assert_int_equal(ts_node_list_rep_decode(&list, f->reply, f->reply_len), 0);
    assert_int_equal(list.count, 3);
    ts_cursor_init(&cursor, list.nodes.ptr, list.nodes.len);
    for (uint32_t i = 0; i < list.count; i++) {
        struct ts_node_list_rec node;
        assert_int_equal(ts_node_list_rec_read(&cursor, &node), 0);
        assert_int_equal(node.read_bytes_per_sec, 0); /* not reported */
        assert_int_equal(node.write_bytes_per_sec, 0);
        assert_int_equal(node.queue_depth, 0);
        assert_int_equal(node.throttle_bytes_per_sec, 0);
        assert_int_equal(node.state, TS_NODE_UP);
        assert_true(node.heartbeat_age_ms < TEST_NODE_TIMEOUT_MS);
        assert_int_equal(node.machine.len, strlen("machine"));
        assert_int_equal(node.address.len, strlen("tcp://127.0.0.1:7401"));
        if (node.id == 77)
            assert_int_equal(node.capacity, 200);
    }
    assert_int_equal(cursor.left, 0);

    /* After a restart nodes are known but down until they heartbeat. */
    metafixture_reopen(f);
    assert_int_equal(metafixture_call(f, TS_OP_STATFS, NULL, 0), TS_OK);
    assert_int_equal(ts_statfs_rep_decode(&statfs, f->reply, f->reply_len), 0);
    assert_int_equal(statfs.nodes_up, 0);
    assert_int_equal(statfs.total_bytes, 0);
    assert_int_equal(metafixture_call(f, TS_OP_NODE_LIST, NULL, 0), TS_OK);
    assert_int_equal(ts_node_list_rep_decode(&list, f->reply, f->reply_len), 0);
    assert_int_equal(list.count, 3);
    ts_cursor_init(&cursor, list.nodes.ptr, list.nodes.len);
    struct ts_node_list_rec down;
    assert_int_equal(ts_node_list_rec_read(&cursor, &down), 0);
    assert_int_equal(down.state, TS_NODE_DOWN);
}

/* A heartbeat from machine naming its data directory's disk (TS_DISK_FIELDS). */
static uint32_t disk_heartbeat(struct metafixture *f, const char *machine, uint64_t disk_id,
                               uint64_t capacity, uint64_t free_bytes)
{
    struct ts_heartbeat_rep reply;
    struct ts_heartbeat_req m = {.machine = str(machine),
                                 .address = str("tcp://127.0.0.1:7401"),
                                 .capacity = capacity,
                                 .free_bytes = free_bytes,
                                 .disk_id = disk_id,
                                 .disk_bytes = 1000,
                                 .disk_free = 400};
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &m), TS_OK);
    assert_int_equal(ts_heartbeat_rep_decode(&reply, f->reply, f->reply_len), 0);
    return reply.node_id;
}

/*
 * df must not count a disk once per datanode on it: three datanodes of
 * one machine on one disk are that disk once; the same disk id on another
 * machine is another disk. NODE_LIST gives each node's disk.
 */
static void test_statfs_counts_a_shared_disk_once(void **state)
{
    struct metafixture *f = *state;
    struct ts_statfs_rep statfs;
    for (int i = 0; i < 3; i++)
        assert_int_not_equal(disk_heartbeat(f, "vm", 42, 1000, 400), 0);
    assert_int_not_equal(disk_heartbeat(f, "other", 42, 1000, 300), 0);
    assert_int_equal(metafixture_call(f, TS_OP_STATFS, NULL, 0), TS_OK);
    assert_int_equal(ts_statfs_rep_decode(&statfs, f->reply, f->reply_len), 0);
    assert_int_equal(statfs.nodes_up, 4);
    assert_int_equal(statfs.total_bytes, 2000);
    assert_int_equal(statfs.free_bytes, 700);

    struct ts_node_list_rep list;
    struct ts_cursor cursor;
    assert_int_equal(metafixture_call(f, TS_OP_NODE_LIST, NULL, 0), TS_OK);
    assert_int_equal(ts_node_list_rep_decode(&list, f->reply, f->reply_len), 0);
    assert_int_equal(list.count, 4);
    ts_cursor_init(&cursor, list.nodes.ptr, list.nodes.len);
    for (uint32_t i = 0; i < list.count; i++) {
        struct ts_node_list_rec node;
        assert_int_equal(ts_node_list_rec_read(&cursor, &node), 0);
        assert_int_equal(node.disk_id, 42);
        assert_int_equal(node.disk_bytes, 1000);
        assert_int_equal(node.disk_free, 400);
    }
}

static void test_ping(void **state)
{
    struct metafixture *f = *state;
    struct ts_ping_rep reply;
    assert_int_equal(metafixture_call(f, TS_OP_PING, NULL, 0), TS_OK);
    assert_int_equal(ts_ping_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.role.len, 4);
    assert_memory_equal(reply.role.ptr, "meta", 4);
    assert_true(reply.uptime_ms <= (uint64_t)util_process_age_ms());
}

/* The cluster id: 32 hex digits, the same after a restart, another for another store. */
static void test_cluster_id(void **state)
{
    struct metafixture *f = *state;
    struct ts_cluster_id_rep reply;
    char first[TS_CLUSTER_ID_HEX + 1];
    char other_dir[] = "/tmp/tessera-test-store-other.XXXXXX";
    struct service *other = NULL;

    assert_int_equal(metafixture_call(f, TS_OP_CLUSTER_ID, NULL, 0), TS_OK);
    assert_int_equal(ts_cluster_id_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.cluster_id.len, TS_CLUSTER_ID_HEX);
    assert_int_equal(ts_str_copy(reply.cluster_id, first, sizeof(first)), 0);
    assert_int_equal(strspn(first, "0123456789abcdef"), TS_CLUSTER_ID_HEX);
    assert_string_equal(f->service->cluster_id, first);

    metafixture_reopen(f);
    assert_string_equal(f->service->cluster_id, first);

    assert_non_null(mkdtemp(other_dir));
    assert_int_equal(service_open(other_dir, TEST_NODE_TIMEOUT_MS, &other), 0);
    assert_string_not_equal(other->cluster_id, first);
    service_close(&other);
    metafixture_remove_tree(other_dir);
}

/* ---- persistence -------------------------------------------------------- */

static void test_persistence(void **state)
{
    struct metafixture *f = *state;
    uint32_t nodes[3], again_nodes[3];
    uint64_t versions[3], again_versions[3];
    struct ts_attr file_before, file_after, dir_attr;
    char value[16];
    uint32_t node = register_node(f, 64ull << 30, 32ull << 30);
    uint64_t dir = make_dir(f, TS_ROOT_INO, "keep");
    uint64_t sub = make_dir(f, dir, "sub");
    uint64_t file = make_file(f, sub, "file");

    (void)node;
    assert_int_equal(do_tile_map(f, file, 0, 3, 1, nodes, versions), TS_OK);
    assert_int_equal(do_commit(f, file, 3 * MiB, 1, &file_before), TS_OK);
    assert_int_equal(do_setxattr(f, file, "user.k", "v", 0), TS_OK);
    assert_int_equal(do_symlink(f, dir, "ln", "sub/file", NULL), TS_OK);
    assert_int_equal(do_getattr(f, file, &file_before), TS_OK);
    assert_int_equal(file_before.size, 3 * MiB);

    metafixture_reopen(f);
    assert_int_equal(ino_of(f, TS_ROOT_INO, "keep"), dir);
    assert_int_equal(ino_of(f, dir, "sub"), sub);
    assert_int_equal(do_lookup(f, sub, "file", &file_after), TS_OK);
    metafixture_assert_attr_equal(&file_after, &file_before);
    assert_int_equal(do_getattr(f, dir, &dir_attr), TS_OK);
    assert_int_equal(dir_attr.nlink, 3);
    assert_int_equal(do_getxattr(f, file, "user.k", value, sizeof(value)), TS_OK);
    assert_string_equal(value, "v");
    assert_int_equal(do_tile_map(f, file, 0, 3, 0, again_nodes, again_versions), TS_OK);
    assert_memory_equal(again_nodes, nodes, sizeof(nodes));
    assert_memory_equal(again_versions, versions, sizeof(versions));
    /* Counters survived: new inodes and versions are fresh. */
    assert_true(make_file(f, TS_ROOT_INO, "new") > file);
    /* The rename loop check still knows the parents. */
    assert_int_equal(do_rename(f, TS_ROOT_INO, "keep", sub, "x", 0), TS_ERR_INVAL);
}

/* ---- malformed payloads ------------------------------------------------- */

/* A well-formed request for each opcode, encoded into buf; returns its length. */
static size_t valid_request(uint16_t op, uint8_t *buf, size_t cap)
{
    int len = -1;
    switch (op) {
    case TS_OP_PING:
    case TS_OP_CLUSTER_ID:
    case TS_OP_STATFS:
    case TS_OP_NODE_LIST:
    case TS_OP_HEALTH:
    case TS_OP_METRICS_LIST: return 0;
    case TS_OP_NODE_ADMIN: {
        struct ts_node_admin_req m = {.node_id = 1, .admin = TS_NODE_DRAINING};
        len = ts_node_admin_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_REPAIR_SCAN: {
        struct ts_repair_scan_req m = {.max_steps = 64, .replace_after_ms = 1000};
        len = ts_repair_scan_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_LOOKUP: {
        struct ts_lookup_req m = {.parent = 1, .name = str("n")};
        len = ts_lookup_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_GETATTR: {
        struct ts_getattr_req m = {.ino = 1};
        len = ts_getattr_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_SETATTR: {
        struct ts_setattr_req m = {.ino = 1};
        len = ts_setattr_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_MKNOD: {
        struct ts_mknod_req m = {.parent = 1, .name = str("n")};
        len = ts_mknod_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_MKDIR: {
        struct ts_mkdir_req m = {.parent = 1, .name = str("n")};
        len = ts_mkdir_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_UNLINK:
    case TS_OP_RMDIR: {
        struct ts_name_req m = {.parent = 1, .name = str("n")};
        len = ts_name_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_RENAME: {
        struct ts_rename_req m = {
            .parent = 1, .name = str("n"), .new_parent = 1, .new_name = str("m")};
        len = ts_rename_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_LINK: {
        struct ts_link_req m = {.ino = 1, .new_parent = 1, .new_name = str("m")};
        len = ts_link_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_SYMLINK: {
        struct ts_symlink_req m = {.parent = 1, .name = str("n"), .target = str("t")};
        len = ts_symlink_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_READLINK: {
        struct ts_readlink_req m = {.ino = 1};
        len = ts_readlink_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_READDIR: {
        struct ts_readdir_req m = {.ino = 1, .after = str(""), .max_entries = 10};
        len = ts_readdir_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_OPEN: {
        struct ts_open_req m = {.ino = 1};
        len = ts_open_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_RELEASE: {
        struct ts_release_req m = {.ino = 1};
        len = ts_release_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_RELEASE_MANY: {
        static const uint8_t one_ino[8] = {1};
        struct ts_release_many_req m = {.count = 1, .inos = {(const char *)one_ino, 8}};
        len = ts_release_many_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_UNLINK_MANY: {
        /* parent 1, name "n" (u16 length 1) */
        static const uint8_t one_name[11] = {1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 'n'};
        struct ts_batch_req m = {.count = 1, .records = {(const char *)one_name, 11}};
        len = ts_batch_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_DIR_LEASE: {
        struct ts_dir_lease_req m = {.dir = 1, .action = TS_LEASE_GET};
        len = ts_dir_lease_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_CREATE_MANY: {
        /* parent 1, ino 5, mode S_IFREG, uid, gid, time, open, name "n" */
        static const uint8_t one[47] = {1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0,
                                        0, 0x80, 0, 0, [36] = 0, [43] = 1, 0, 1, 'n'};
        struct ts_batch_req m = {.count = 1, .records = {(const char *)one, 47}};
        len = ts_batch_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_READDIRPLUS: {
        struct ts_readdirplus_req m = {.ino = 1, .after = str("a"), .max_entries = 10};
        len = ts_readdirplus_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_SETXATTR: {
        struct ts_setxattr_req m = {.ino = 1, .name = str("user.n"), .value = str("v")};
        len = ts_setxattr_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_GETXATTR: {
        struct ts_getxattr_req m = {.ino = 1, .name = str("user.n")};
        len = ts_getxattr_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_LISTXATTR: {
        struct ts_listxattr_req m = {.ino = 1};
        len = ts_listxattr_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_REMOVEXATTR: {
        struct ts_removexattr_req m = {.ino = 1, .name = str("user.n")};
        len = ts_removexattr_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_SESSION_RENEW: {
        struct ts_session_renew_req m = {.holds = 1};
        len = ts_session_renew_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_SESSION_HOLDS: {
        uint8_t record[ts_hold_rec_bytes];
        struct ts_hold_rec hold = {.ino = 1, .count = 1};
        struct ts_writer writer;
        ts_writer_init(&writer, record, sizeof(record));
        ts_hold_rec_write(&writer, &hold);
        struct ts_session_holds_req m = {
            .first = 1, .count = 1, .records = {(const char *)record, sizeof(record)}};
        len = ts_session_holds_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_TILE_MAP: {
        struct ts_tile_map_req m = {.ino = 1, .count = 1};
        len = ts_tile_map_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_COMMIT: {
        struct ts_commit_req m = {.ino = 1};
        len = ts_commit_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_PUNCH: {
        struct ts_punch_req m = {.ino = 1, .first_tile = 0, .last_tile = 1};
        len = ts_punch_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_HEARTBEAT: {
        struct ts_heartbeat_req m = {.machine = str("m"), .address = str("tcp://x:1")};
        len = ts_heartbeat_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_REPLICA_DROP: {
        struct ts_replica_drop_req m = {.ino = 1, .node = 1};
        len = ts_replica_drop_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_PROFILE_SET: {
        struct ts_profile_set_req m = {.ino = 1, .action = TS_PROFILE_START};
        len = ts_profile_set_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_PROFILE_RECORD: {
        struct ts_profile_record_req m = {.machine = str("m")};
        len = ts_profile_record_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_PROFILE_GET: {
        struct ts_profile_get_req m = {.ino = 1};
        len = ts_profile_get_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_MOVE_BEGIN: {
        struct ts_move_begin_req m = {.ino = 1, .version = 1, .kind = 1, .from_node = 1};
        len = ts_move_begin_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_MOVE_COMMIT:
    case TS_OP_MOVE_ABORT: {
        struct ts_move_tile_req m = {.ino = 1};
        len = ts_move_tile_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_MOVE_LIST: {
        struct ts_move_list_req m = {.max_records = 1};
        len = ts_move_list_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_APPLY_LOCK: {
        struct ts_apply_lock_req m = {.action = TS_APPLY_LOCK_QUERY};
        len = ts_apply_lock_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_TILE_RECONCILE: {
        struct ts_tile_reconcile_req m = {.node_id = 1};
        len = ts_tile_reconcile_req_encode(&m, buf, cap);
        break;
    }
    case TS_OP_TILE_HOLDERS: {
        struct ts_tile_holders_req m = {.ino = 1, .count = 1};
        len = ts_tile_holders_req_encode(&m, buf, cap);
        break;
    }
    default: fail_msg("no valid request for opcode %u", op);
    }
    assert_true(len >= 0);
    return (size_t)len;
}

static void expect_bad(struct metafixture *f, uint16_t op, const uint8_t *payload, size_t len)
{
    assert_int_equal(metafixture_call(f, op, payload, len), TS_ERR_BADMSG);
    assert_non_null(strstr(f->error_text, ts_op_name(op)));
}

static void test_malformed_payloads(void **state)
{
    struct metafixture *f = *state;
    uint8_t valid[512];
    uint8_t garbage[8];
    uint32_t seed = 12345;
    int served = 0;

    for (uint16_t op = 0; op < TS_OP_MAX; op++) {
        size_t len;
        if (!handlers_table[op])
            continue;
        served++;
        len = valid_request(op, valid, sizeof(valid) - 1);
        if (len >= sizeof(valid))
            fail_msg("request of opcode %u too long", op);
        /* Trailing bytes. */
        valid[len % sizeof(valid)] = 0;
        expect_bad(f, op, valid, len + 1);
        /* Truncated, at every length short of the whole. */
        for (size_t cut = 0; cut < len; cut++)
            expect_bad(f, op, valid, cut);
        /* Random bytes too short for any request that has fields. */
        for (int round = 0; round < 50; round++) {
            size_t garbage_len = 1 + round % 7;
            for (size_t i = 0; i < garbage_len; i++) {
                seed = seed * 1103515245u + 12345u;
                garbage[i] = (uint8_t)(seed >> 16);
            }
            expect_bad(f, op, garbage, garbage_len);
        }
        /* The well-formed one gets some answer, never a crash. */
        (void)metafixture_call(f, op, valid, len);
    }
    assert_int_equal(served, 48);

    /* A string length pointing past the end. */
    uint8_t lookup[] = {1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 'a'};
    expect_bad(f, TS_OP_LOOKUP, lookup, sizeof(lookup));

    /* A heartbeat whose count disagrees with its blob. */
    struct ts_heartbeat_req heartbeat = {.machine = str("m"),
                                         .address = str("tcp://x:1"),
                                         .deleted_count = 2,
                                         .deleted = {(const char *)valid, ts_tile_file_rec_bytes}};
    size_t heartbeat_len = metafixture_encoded_length(
        ts_heartbeat_req_encode(&heartbeat, f->request, METAFIXTURE_PAYLOAD_CAP));
    expect_bad(f, TS_OP_HEARTBEAT, f->request, heartbeat_len);

    /* The store still serves after all of it. */
    struct ts_readdir_req list = {.ino = TS_ROOT_INO, .after = str(""), .max_entries = 10};
    struct ts_readdir_rep reply;
    assert_int_equal(CALL(f, TS_OP_READDIR, readdir_req, &list), TS_OK);
    assert_int_equal(ts_readdir_rep_decode(&reply, f->reply, f->reply_len), 0);
}

/* ---- array files (user.tessera.array) -------------------------------------- */

#define ARRAY "user.tessera.array"

static void test_array_xattr(void **state)
{
    struct metafixture *f = *state;
    uint64_t file = make_file(f, TS_ROOT_INO, "a");
    struct ts_attr attr = {0};
    char value[600];
    uint32_t nodes[64] = {0};
    uint64_t versions[64];

    /* A plain file has none and is not flagged. */
    assert_int_equal(do_getxattr(f, file, ARRAY, value, sizeof(value)), TS_ERR_NODATA);
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, 0);

    /* Bad specs are refused with a reason, and change nothing. */
    static const char *const bad[] = {
        "",
        "f32",
        "f32 64x64",
        "f32 64x64 BLOCK",
        "f32 64x64 BLOCK,BLOCK",
        "f33 64x64 BLOCK,BLOCK mesh=2x2",
        "f32 64x0 BLOCK,BLOCK mesh=2x2",
        "f32 64x64 BLOCK,* mesh=2x2",
        "f32 64x64 *,* mesh=2",
        "f32 64x64 BLOCK,BLOCK mesh=2x2 subchunk=last",
        "f32 64x64 BLOCK,BLOCK mesh=2x2 threshold=32M",
        "f32 64x64 BLOCK,BLOCK mesh=2x2 threshold=1M threshold=2M",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(do_setxattr(f, file, ARRAY, bad[i], 0), TS_ERR_INVAL);
        assert_true(strstr(f->error_text, ARRAY) != NULL);
    }
    assert_int_equal(do_getxattr(f, file, ARRAY, value, sizeof(value)), TS_ERR_NODATA);
    assert_int_equal(do_removexattr(f, file, ARRAY), TS_ERR_NODATA);
    assert_int_equal(do_setxattr(f, file, ARRAY, "u8 16 BLOCK mesh=2", TS_XATTR_REPLACE),
                     TS_ERR_NODATA);

    /* The threshold defaults to the file's tile size; getxattr shows the canonical text. */
    assert_int_equal(do_setxattr(f, file, LAYOUT, "tile=64K", 0), TS_OK);
    assert_int_equal(do_setxattr(f, file, ARRAY, "  f32 64x64x64 block,BLOCK,block mesh=2x2x2\n",
                                 TS_XATTR_CREATE),
                     TS_OK);
    assert_int_equal(do_getxattr(f, file, ARRAY, value, sizeof(value)), TS_OK);
    assert_string_equal(value,
                        "f32 64x64x64 BLOCK,BLOCK,BLOCK mesh=2x2x2 subchunk=same threshold=64K");
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, TS_ATTR_ARRAY);
    assert_int_equal(do_setxattr(f, file, ARRAY, "u8 16 BLOCK mesh=2", TS_XATTR_CREATE),
                     TS_ERR_EXIST);
    /* An empty file may change it, and an explicit threshold wins. */
    assert_int_equal(
        do_setxattr(f, file, ARRAY, "f32 64x64x64 BLOCK,BLOCK,BLOCK mesh=2x2x2 threshold=128K", 0),
        TS_OK);
    assert_int_equal(do_getxattr(f, file, ARRAY, value, sizeof(value)), TS_OK);
    assert_string_equal(value,
                        "f32 64x64x64 BLOCK,BLOCK,BLOCK mesh=2x2x2 subchunk=same threshold=128K");
    /* OPEN answers the same text, so an open needs no GETXATTR. */
    struct ts_open_req open = {.ino = file};
    assert_int_equal(metafixture_open_call(f, CALL(f, TS_OP_OPEN, open_req, &open), &attr, value,
                                           sizeof(value)),
                     TS_OK);
    assert_string_equal(value,
                        "f32 64x64x64 BLOCK,BLOCK,BLOCK mesh=2x2x2 subchunk=same threshold=128K");
    assert_int_equal(do_release(f, file), TS_OK);
    /* 1 MiB of f32 in 8 chunks of 128 KiB: 8 tiles of 32x32x32. */

    /* Not listed, like user.tessera.layout. */
    struct ts_listxattr_req list = {.ino = file};
    struct ts_listxattr_rep names;
    assert_int_equal(do_setxattr(f, file, "user.other", "x", 0), TS_OK);
    assert_int_equal(CALL(f, TS_OP_LISTXATTR, listxattr_req, &list), TS_OK);
    assert_int_equal(ts_listxattr_rep_decode(&names, f->reply, f->reply_len), 0);
    assert_int_equal(names.names.len, strlen("user.other") + 1);

    /* TILE_MAP takes the array's tile indices, whatever the size so far. */
    register_node(f, 64ull << 30, 32ull << 30);
    assert_int_equal(do_tile_map(f, file, 7, 1, 1, nodes, versions), TS_OK);
    assert_int_not_equal(nodes[0], 0);
    assert_int_equal(do_tile_map(f, file, 0, 8, 0, nodes, versions), TS_OK);
    assert_int_equal(do_tile_map(f, file, 8, 1, 1, nodes, versions), TS_ERR_FBIG);
    assert_int_equal(do_tile_map(f, file, 4, 5, 0, nodes, versions), TS_ERR_FBIG);

    /* With a tile the layout is fixed (the same text is harmless). */
    assert_int_equal(do_setxattr(f, file, ARRAY, "u8 16 BLOCK mesh=2", 0), TS_ERR_BUSY);
    assert_true(strstr(f->error_text, "already has data") != NULL);
    assert_int_equal(do_removexattr(f, file, ARRAY), TS_ERR_BUSY);
    assert_int_equal(
        do_setxattr(f, file, ARRAY, "f32 64x64x64 BLOCK,BLOCK,BLOCK mesh=2x2x2 threshold=128K", 0),
        TS_OK);

    /* Sizes: up to the array's, never past it; shrinking only to 0. */
    assert_int_equal(do_commit(f, file, MiB, 0, &attr), TS_OK);
    assert_int_equal(attr.size, MiB);
    assert_int_equal(do_commit(f, file, MiB + 1, 0, NULL), TS_ERR_FBIG);
    struct ts_setattr_req resize = {.ino = file, .valid = TS_SET_SIZE, .size = MiB + 1};
    assert_int_equal(do_setattr(f, &resize, NULL), TS_ERR_FBIG);
    resize.size = 4096;
    assert_int_equal(do_setattr(f, &resize, NULL), TS_ERR_INVAL);
    assert_true(strstr(f->error_text, "truncated to 0") != NULL);
    resize.size = MiB; /* the same size: nothing moves */
    assert_int_equal(do_setattr(f, &resize, NULL), TS_OK);
    assert_int_equal(do_tile_map(f, file, 7, 1, 0, nodes, versions), TS_OK);
    assert_int_not_equal(nodes[0], 0);
    resize.size = 0; /* drops every tile, keeps the layout */
    assert_int_equal(do_setattr(f, &resize, NULL), TS_OK);
    assert_int_equal(do_tile_map(f, file, 0, 8, 0, nodes, versions), TS_OK);
    for (int i = 0; i < 8; i++)
        assert_int_equal(nodes[i], 0);
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, TS_ATTR_ARRAY);
    resize.size = MiB / 2; /* growing leaves holes */
    assert_int_equal(do_setattr(f, &resize, NULL), TS_OK);

    /* Growing by setattr counts as data: the layout is fixed again. */
    assert_int_equal(do_removexattr(f, file, ARRAY), TS_ERR_BUSY);
    resize.size = 0;
    assert_int_equal(do_setattr(f, &resize, NULL), TS_OK);

    /* Removed from an empty file: linear again. */
    assert_int_equal(do_removexattr(f, file, ARRAY), TS_OK);
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, 0);
    assert_int_equal(do_getxattr(f, file, ARRAY, value, sizeof(value)), TS_ERR_NODATA);
    assert_int_equal(do_tile_map(f, file, 100, 1, 0, nodes, versions), TS_OK);

    /* Symlinks take none. */
    assert_int_equal(do_symlink(f, TS_ROOT_INO, "l", "a", &attr), TS_OK);
    assert_int_equal(do_setxattr(f, attr.ino, ARRAY, "u8 16 BLOCK mesh=2", 0), TS_ERR_INVAL);
    assert_int_equal(do_getxattr(f, attr.ino, ARRAY, value, sizeof(value)), TS_ERR_NODATA);
}

static void test_array_busy_after_write(void **state)
{
    struct metafixture *f = *state;
    uint64_t file = make_file(f, TS_ROOT_INO, "written");
    uint32_t nodes[4];
    uint64_t versions[4];
    struct ts_attr attr = {0};
    char value[600];

    /* A linear file that has been written cannot become an array. */
    register_node(f, 64ull << 30, 32ull << 30);
    assert_int_equal(do_tile_map(f, file, 0, 1, 1, nodes, versions), TS_OK);
    assert_int_equal(do_commit(f, file, 10, 0, NULL), TS_OK);
    assert_int_equal(do_setxattr(f, file, ARRAY, "u8 16 BLOCK mesh=2", 0), TS_ERR_BUSY);
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, 0);
    assert_int_equal(do_getxattr(f, file, ARRAY, value, sizeof(value)), TS_ERR_NODATA);
    /* Nor one that has a size but no tile yet (a sparse truncate). */
    uint64_t sparse = make_file(f, TS_ROOT_INO, "sparse");
    struct ts_setattr_req grow = {.ino = sparse, .valid = TS_SET_SIZE, .size = 4096};
    assert_int_equal(do_setattr(f, &grow, NULL), TS_OK);
    assert_int_equal(do_setxattr(f, sparse, ARRAY, "u8 16 BLOCK mesh=2", 0), TS_ERR_BUSY);
}

static void test_array_inheritance(void **state)
{
    struct metafixture *f = *state;
    uint64_t dir = make_dir(f, TS_ROOT_INO, "arrays");
    uint64_t before = make_file(f, dir, "before");
    struct ts_attr attr = {0};
    char value[600];

    assert_int_equal(do_getxattr(f, dir, ARRAY, value, sizeof(value)), TS_ERR_NODATA);
    assert_int_equal(do_setxattr(f, dir, ARRAY, "f64 32x32 BLOCK,* mesh=4", 0), TS_OK);
    /* The directory shows it resolved with its own tile size. */
    assert_int_equal(do_getxattr(f, dir, ARRAY, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "f64 32x32 BLOCK,* mesh=4 subchunk=same threshold=1M");
    assert_int_equal(do_getattr(f, dir, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, 0);
    /* A directory's tile size decides the threshold of the files created later. */
    assert_int_equal(do_setxattr(f, dir, LAYOUT, "tile=4K", 0), TS_OK);
    assert_int_equal(do_getxattr(f, dir, ARRAY, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "f64 32x32 BLOCK,* mesh=4 subchunk=same threshold=4K");

    uint64_t file = make_file(f, dir, "file");
    uint64_t sub = make_dir(f, dir, "sub");
    uint64_t deep = make_file(f, sub, "deep");
    for (int i = 0; i < 2; i++) {
        uint64_t ino = i == 0 ? file : deep;
        assert_int_equal(do_getattr(f, ino, &attr), TS_OK);
        assert_int_equal(attr.flags & TS_ATTR_ARRAY, TS_ATTR_ARRAY);
        assert_int_equal(do_getxattr(f, ino, ARRAY, value, sizeof(value)), TS_OK);
        assert_string_equal(value, "f64 32x32 BLOCK,* mesh=4 subchunk=same threshold=4K");
    }
    /* Files that existed before, and other types, stay as they were. */
    assert_int_equal(do_getattr(f, before, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, 0);
    assert_int_equal(do_symlink(f, dir, "link", "file", &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, 0);
    assert_int_equal(do_mknod(f, dir, "fifo", S_IFIFO | 0600, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, 0);

    /* Everything survives a restart. */
    metafixture_reopen(f);
    assert_int_equal(do_getattr(f, file, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, TS_ATTR_ARRAY);
    assert_int_equal(do_getxattr(f, file, ARRAY, value, sizeof(value)), TS_OK);
    assert_string_equal(value, "f64 32x32 BLOCK,* mesh=4 subchunk=same threshold=4K");

    /* Removing it from the directory: new files are linear. */
    assert_int_equal(do_removexattr(f, dir, ARRAY), TS_OK);
    assert_int_equal(do_removexattr(f, dir, ARRAY), TS_ERR_NODATA);
    uint64_t plain = make_file(f, dir, "plain");
    assert_int_equal(do_getattr(f, plain, &attr), TS_OK);
    assert_int_equal(attr.flags & TS_ATTR_ARRAY, 0);

    /* Unlinking an array file removes its record with it. */
    assert_int_equal(do_unlink(f, dir, "file"), TS_OK);
    assert_int_equal(do_getxattr(f, file, ARRAY, value, sizeof(value)), TS_ERR_NOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_lookup_getattr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_readlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mkdir_nlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setgid_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_counts_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlink_deletes_and_queues_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlink_while_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mknod_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_replace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_flags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_directories, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readdir_pagination, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setattr_shrink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_truncates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setattr_carries_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_map_answers_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_map_round_robin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_marks_stored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_is_bound_to_its_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_grows_size_and_sets_mtime, setup, teardown),
        cmocka_unit_test_setup_teardown(test_background_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_xattrs_set_get_list_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layout_xattr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layout_inheritance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_map_static, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_map_dynamic_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backlog_model, setup, teardown),
        cmocka_unit_test(test_steady_write_holds_peak),
        cmocka_unit_test_setup_teardown(test_liveness_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_liveness_meta_stall, setup, teardown),
        cmocka_unit_test_setup_teardown(test_statfs_counts_a_shared_disk_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_statfs_and_node_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_persistence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_payloads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_array_xattr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_array_busy_after_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_array_inheritance, setup, teardown),
    };
    return cmocka_run_group_tests_name("handlers", tests, NULL, NULL);
}
