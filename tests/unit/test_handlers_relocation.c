/*
 * @file test_handlers_relocation.c
 * Unit tests of tessera-meta's access profiles, read copies and relocation
 * journal, against a real LMDB store in a fresh temporary directory per
 * case (metafixture.h): requests encoded with the generated ts_*_encode,
 * handed to the real handlers through handlers_table, replies decoded with
 * ts_*_decode. A few checks read the tables directly (through the store's
 * own functions) to see that nothing is left behind.
 */
#include "metafixture.h"
#include "profiles.h"
#include "proto.h"
#include "service.h"
#include "util.h"
#include "status.h"
#include "store.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#define TEST_UID 1000
#define TEST_GID 100
#define TEST_NODE_TIMEOUT_MS 60000
#define TILE_BYTES (1u << 20)

static int setup(void **state)
{
    return metafixture_setup(state, "test_handlers_relocation", TEST_NODE_TIMEOUT_MS, 0);
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

/* Asserts the last reply's text mentions `part`. */
static void assert_text(const struct metafixture *f, const char *part)
{
    if (!strstr(f->error_text, part))
        fail_msg("error text '%s' does not mention '%s'", f->error_text, part);
}

static struct ts_attr getattr(struct metafixture *f, uint64_t ino)
{
    struct ts_getattr_req m = {.ino = ino};
    struct ts_attr attr = {0};
    assert_int_equal(metafixture_attr_call(f, CALL(f, TS_OP_GETATTR, getattr_req, &m), &attr),
                     TS_OK);
    return attr;
}

static struct ts_attr make(struct metafixture *f, uint64_t parent, const char *name, uint32_t mode)
{
    struct ts_attr attr = {0};
    int status;
    if (S_ISDIR(mode)) {
        struct ts_mkdir_req m = {.parent = parent,
                                 .name = str(name),
                                 .mode = mode & 07777,
                                 .uid = TEST_UID,
                                 .gid = TEST_GID};
        status = CALL(f, TS_OP_MKDIR, mkdir_req, &m);
    } else if (S_ISLNK(mode)) {
        struct ts_symlink_req m = {.parent = parent,
                                   .name = str(name),
                                   .target = str("target"),
                                   .uid = TEST_UID,
                                   .gid = TEST_GID};
        status = CALL(f, TS_OP_SYMLINK, symlink_req, &m);
    } else {
        struct ts_mknod_req m = {
            .parent = parent, .name = str(name), .mode = mode, .uid = TEST_UID, .gid = TEST_GID};
        status = CALL(f, TS_OP_MKNOD, mknod_req, &m);
    }
    assert_int_equal(metafixture_attr_call(f, status, &attr), TS_OK);
    return attr;
}

static uint64_t make_file(struct metafixture *f, uint64_t parent, const char *name)
{
    return make(f, parent, name, S_IFREG | 0644).ino;
}

static int do_unlink(struct metafixture *f, uint64_t parent, const char *name)
{
    struct ts_name_req m = {.parent = parent, .name = str(name)};
    return CALL(f, TS_OP_UNLINK, name_req, &m);
}

static int truncate_to(struct metafixture *f, uint64_t ino, uint64_t size)
{
    struct ts_setattr_req m = {.ino = ino, .valid = TS_SET_SIZE, .size = size};
    return CALL(f, TS_OP_SETATTR, setattr_req, &m);
}

static int do_commit(struct metafixture *f, uint64_t ino, uint64_t min_size)
{
    struct ts_commit_req m = {.ino = ino, .min_size = min_size};
    return CALL(f, TS_OP_COMMIT, commit_req, &m);
}

/* ---- datanodes and garbage ---------------------------------------------- */

/*
 * HEARTBEAT as node `id` (0 = new) of `machine`; returns its id and copies
 * up to `cap` of its garbage records into garbage[] (their number into
 * *garbage_count when not NULL).
 */
/* A HEARTBEAT of node `id` (0 = new) of `machine`: half its 64 GiB used, nothing measured. */
static struct ts_heartbeat_req heartbeat_of(uint32_t id, const char *machine)
{
    return (struct ts_heartbeat_req){
        .node_id = id,
        .machine = str(machine),
        .address = str("tcp://127.0.0.1:7401"),
        .capacity = 64ull << 30,
        .free_bytes = 32ull << 30,
        .used_bytes = 32ull << 30,
        .deleted = {"", 0},
    };
}

static uint32_t heartbeat(struct metafixture *f, uint32_t id, const char *machine,
                          struct ts_tile_file_rec *garbage, uint32_t cap, uint32_t *garbage_count)
{
    struct ts_heartbeat_rep reply;
    struct ts_cursor cursor;
    struct ts_heartbeat_req m = heartbeat_of(id, machine);
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &m), TS_OK);
    assert_int_equal(ts_heartbeat_rep_decode(&reply, f->reply, f->reply_len), 0);
    ts_cursor_init(&cursor, reply.garbage.ptr, reply.garbage.len);
    for (uint32_t i = 0; i < reply.garbage_count && i < cap; i++)
        assert_int_equal(ts_tile_file_rec_read(&cursor, &garbage[i]), 0);
    if (garbage_count)
        *garbage_count = reply.garbage_count;
    return reply.node_id;
}

static uint32_t register_node(struct metafixture *f, const char *machine)
{
    return heartbeat(f, 0, machine, NULL, 0, NULL);
}

/* Whether node has (ino, tile, version) queued for deletion. */
static bool garbage_has(struct metafixture *f, uint32_t node, const char *machine, uint64_t ino,
                        uint64_t tile, uint64_t version)
{
    struct ts_tile_file_rec garbage[64];
    uint32_t count = 0;
    heartbeat(f, node, machine, garbage, 64, &count);
    for (uint32_t i = 0; i < count && i < 64; i++)
        if (garbage[i].ino == ino && garbage[i].tile == tile && garbage[i].version == version)
            return true;
    return false;
}

static uint32_t garbage_count_of(struct metafixture *f, uint32_t node, const char *machine)
{
    uint32_t count = 0;
    heartbeat(f, node, machine, NULL, 0, &count);
    return count;
}

/* ---- TILE_MAP ----------------------------------------------------------- */

static int tile_map(struct metafixture *f, uint64_t ino, uint64_t first, uint32_t count,
                    uint32_t allocate, uint32_t node, const char *machine,
                    struct ts_tile_map_rec *records)
{
    struct ts_tile_map_req m = {.ino = ino,
                                .first = first,
                                .count = count,
                                .allocate = allocate,
                                .node = node,
                                .machine = str(machine)};
    struct ts_tile_map_rep reply;
    struct ts_cursor cursor;
    int status = CALL(f, TS_OP_TILE_MAP, tile_map_req, &m);
    if (status != TS_OK)
        return status;
    assert_int_equal(ts_tile_map_rep_decode(&reply, f->reply, f->reply_len), 0);
    ts_cursor_init(&cursor, reply.tiles.ptr, reply.tiles.len);
    for (uint32_t i = 0; i < count; i++) {
        assert_int_equal(ts_tile_map_rec_read(&cursor, &records[i]), 0);
        for (uint32_t h = 0; h < records[i].holders; h++) {
            struct ts_replica_rec holder;
            assert_int_equal(ts_replica_rec_read(&cursor, &holder), 0);
            if (h == 0) { /* the first holder is the read source */
                assert_int_equal(holder.node, records[i].read_node);
                assert_int_equal(holder.version, records[i].read_version);
            }
        }
    }
    assert_int_equal(cursor.left, 0);
    return status;
}

/* The tile's record as `machine` sees it. */
static struct ts_tile_map_rec tile_of(struct metafixture *f, uint64_t ino, uint64_t tile,
                                      const char *machine)
{
    struct ts_tile_map_rec record;
    assert_int_equal(tile_map(f, ino, tile, 1, 0, 0, machine, &record), TS_OK);
    return record;
}

/* Allocates tiles [0, count) of ino on node (dynamic placement honours the named node). */
static void place_tiles(struct metafixture *f, uint64_t ino, uint32_t count, uint32_t node)
{
    struct ts_tile_map_rec records[16];
    assert_true(count <= 16);
    assert_int_equal(tile_map(f, ino, 0, count, 1, node, "", records), TS_OK);
    for (uint32_t i = 0; i < count; i++)
        assert_int_equal(records[i].node, node);
    assert_int_equal(do_commit(f, ino, (uint64_t)count * TILE_BYTES), TS_OK);
}

static int replica_drop(struct metafixture *f, uint64_t ino, uint64_t tile, uint32_t node,
                        uint64_t version)
{
    struct ts_replica_drop_req m = {
        .ino = ino, .tile = tile, .node = node, .version = version, .machine = str("")};
    return CALL(f, TS_OP_REPLICA_DROP, replica_drop_req, &m);
}

/* The holders of a tile as TILE_MAP lists them for no machine: their count. */
static uint32_t holders_of(struct metafixture *f, uint64_t ino, uint64_t tile,
                           struct ts_replica_rec *holders)
{
    struct ts_tile_map_req m = {.ino = ino, .first = tile, .count = 1, .machine = str("")};
    struct ts_tile_map_rep reply;
    struct ts_tile_map_rec record;
    struct ts_cursor cursor;
    assert_int_equal(CALL(f, TS_OP_TILE_MAP, tile_map_req, &m), TS_OK);
    assert_int_equal(ts_tile_map_rep_decode(&reply, f->reply, f->reply_len), 0);
    ts_cursor_init(&cursor, reply.tiles.ptr, reply.tiles.len);
    assert_int_equal(ts_tile_map_rec_read(&cursor, &record), 0);
    for (uint32_t h = 0; h < record.holders; h++)
        assert_int_equal(ts_replica_rec_read(&cursor, &holders[h]), 0);
    return record.holders;
}

/* Drops every replica but the primary of tiles first..first+count-1 (what a
 * writer's TILE_UNCOPY did before replica sets). */
static void drop_replicas(struct metafixture *f, uint64_t ino, uint64_t first, uint32_t count)
{
    for (uint64_t tile = first; tile < first + count; tile++) {
        struct ts_replica_rec holders[TS_MAX_HOLDERS];
        uint32_t n = holders_of(f, ino, tile, holders);
        uint32_t primary = tile_of(f, ino, tile, "").node;
        for (uint32_t h = 0; h < n; h++) {
            if (holders[h].node != primary)
                assert_int_equal(replica_drop(f, ino, tile, holders[h].node, holders[h].version),
                                 TS_OK);
        }
    }
}

/* ---- profiles ----------------------------------------------------------- */

static int profile_set(struct metafixture *f, uint64_t ino, uint32_t action, uint32_t *profiling)
{
    struct ts_profile_set_req m = {.ino = ino, .action = action};
    struct ts_profile_set_rep reply;
    int status = CALL(f, TS_OP_PROFILE_SET, profile_set_req, &m);
    if (status == TS_OK) {
        assert_int_equal(ts_profile_set_rep_decode(&reply, f->reply, f->reply_len), 0);
        if (profiling)
            *profiling = reply.profiling;
    }
    return status;
}

/* PROFILE_RECORD of count records from machine; *kept gets the reply's count. */
static int profile_record(struct metafixture *f, const char *machine,
                          const struct ts_profile_count_rec *records, uint32_t count,
                          uint32_t *kept)
{
    static uint8_t blob[TS_MAX_PROFILE_RECORDS * ts_profile_count_rec_bytes];
    struct ts_writer writer;
    struct ts_profile_record_rep reply;
    ts_writer_init(&writer, blob, sizeof(blob));
    for (uint32_t i = 0; i < count; i++)
        ts_profile_count_rec_write(&writer, &records[i]);
    assert_false(writer.failed);
    struct ts_profile_record_req m = {.machine = str(machine),
                                      .count = count,
                                      .records = {(const char *)blob, (uint32_t)writer.len}};
    int status = CALL(f, TS_OP_PROFILE_RECORD, profile_record_req, &m);
    if (status == TS_OK) {
        assert_int_equal(ts_profile_record_rep_decode(&reply, f->reply, f->reply_len), 0);
        if (kept)
            *kept = reply.kept;
    }
    return status;
}

struct profile_row {
    uint64_t tile;
    char machine[256];
    uint64_t reads;
    uint64_t writes;
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t local_bytes;
    uint64_t first_access_ns;
};

struct profile_page {
    uint32_t profiling;
    uint32_t count;
    uint32_t done;
    uint64_t next_tile;
};

/* PROFILE_GET; up to cap rows into rows[]. */
static int profile_get(struct metafixture *f, uint64_t ino, uint64_t first_tile,
                       uint32_t max_records, struct profile_page *page, struct profile_row *rows,
                       uint32_t cap)
{
    struct ts_profile_get_req m = {
        .ino = ino, .first_tile = first_tile, .max_records = max_records};
    struct ts_profile_get_rep reply;
    struct ts_cursor cursor;
    int status = CALL(f, TS_OP_PROFILE_GET, profile_get_req, &m);
    if (status != TS_OK)
        return status;
    assert_int_equal(ts_profile_get_rep_decode(&reply, f->reply, f->reply_len), 0);
    page->profiling = reply.profiling;
    page->count = reply.count;
    page->done = reply.done;
    page->next_tile = reply.next_tile;
    ts_cursor_init(&cursor, reply.records.ptr, reply.records.len);
    for (uint32_t i = 0; i < reply.count; i++) {
        struct profile_row row;
        struct ts_profile_get_rec record;
        assert_int_equal(ts_profile_get_rec_read(&cursor, &record), 0);
        row.tile = record.tile;
        assert_int_equal(ts_str_copy(record.machine, row.machine, sizeof(row.machine)), 0);
        row.reads = record.reads;
        row.writes = record.writes;
        row.bytes_read = record.bytes_read;
        row.bytes_written = record.bytes_written;
        row.local_bytes = record.local_bytes;
        row.first_access_ns = record.first_access_ns;
        if (i < cap)
            rows[i] = row;
    }
    assert_false(cursor.failed);
    assert_int_equal(cursor.left, 0);
    return status;
}

/* Rows of a table, read through the store. */
struct table_count {
    enum store_table table;
    uint64_t rows;
};

static int table_count_body(struct store_txn *txn, void *arg)
{
    struct table_count *count = arg;
    return store_entries(txn, count->table, &count->rows) == 0 ? TS_OK : TS_ERR_INTERNAL;
}

static uint64_t rows_of(struct metafixture *f, enum store_table table)
{
    struct table_count count = {table, 0};
    assert_int_equal(store_read(f->service->store, table_count_body, &count), TS_OK);
    return count.rows;
}

/* ---- the journal -------------------------------------------------------- */

static int move_begin(struct metafixture *f, uint64_t ino, uint64_t tile, uint64_t version,
                      uint32_t kind, uint32_t from, uint32_t to, uint64_t *new_version)
{
    struct ts_move_begin_req m = {.ino = ino,
                                  .tile = tile,
                                  .version = version,
                                  .kind = kind,
                                  .from_node = from,
                                  .to_node = to};
    struct ts_move_begin_rep reply;
    int status = CALL(f, TS_OP_MOVE_BEGIN, move_begin_req, &m);
    if (status == TS_OK) {
        assert_int_equal(ts_move_begin_rep_decode(&reply, f->reply, f->reply_len), 0);
        if (new_version)
            *new_version = reply.new_version;
    }
    return status;
}

static int move_end(struct metafixture *f, uint16_t op, uint64_t ino, uint64_t tile)
{
    struct ts_move_tile_req m = {.ino = ino, .tile = tile};
    int status = CALL(f, op, move_tile_req, &m);
    if (status == TS_OK)
        assert_int_equal(f->reply_len, 0);
    return status;
}

static int move_commit(struct metafixture *f, uint64_t ino, uint64_t tile)
{
    return move_end(f, TS_OP_MOVE_COMMIT, ino, tile);
}

static int move_abort(struct metafixture *f, uint64_t ino, uint64_t tile)
{
    return move_end(f, TS_OP_MOVE_ABORT, ino, tile);
}

/* The first MOVE_COMMIT (switches the map) and the second (finishes the entry). */
static void commit_and_finish(struct metafixture *f, uint64_t ino, uint64_t tile)
{
    assert_int_equal(move_commit(f, ino, tile), TS_OK);
    assert_int_equal(move_commit(f, ino, tile), TS_OK);
}

/* OPEN or RELEASE of ino, as a mount sends them. */
static void open_file(struct metafixture *f, uint64_t ino)
{
    struct ts_open_req m = {.ino = ino};
    assert_int_equal(CALL(f, TS_OP_OPEN, open_req, &m), TS_OK);
}

static void release_file(struct metafixture *f, uint64_t ino)
{
    struct ts_release_req m = {.ino = ino};
    assert_int_equal(CALL(f, TS_OP_RELEASE, release_req, &m), TS_OK);
}

/* MOVE_LIST; up to cap rows into rows[]; *done gets the reply's flag. */
static uint32_t move_list(struct metafixture *f, uint64_t after_ino, uint64_t after_tile,
                          uint32_t max_records, struct ts_move_rec *rows, uint32_t cap,
                          uint32_t *done)
{
    struct ts_move_list_req m = {
        .after_ino = after_ino, .after_tile = after_tile, .max_records = max_records};
    struct ts_move_list_rep reply;
    struct ts_cursor cursor;
    assert_int_equal(CALL(f, TS_OP_MOVE_LIST, move_list_req, &m), TS_OK);
    assert_int_equal(ts_move_list_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.records.len, (size_t)reply.count * ts_move_rec_bytes);
    ts_cursor_init(&cursor, reply.records.ptr, reply.records.len);
    for (uint32_t i = 0; i < reply.count && i < cap; i++)
        assert_int_equal(ts_move_rec_read(&cursor, &rows[i]), 0);
    if (done)
        *done = reply.done;
    return reply.count;
}

/* ---- profiles ----------------------------------------------------------- */

static void test_profile_start_inherit_stop(void **state)
{
    struct metafixture *f = *state;
    uint64_t dir = make(f, TS_ROOT_INO, "d", S_IFDIR | 0755).ino;
    uint64_t outside = make_file(f, TS_ROOT_INO, "outside");
    uint32_t profiling = 9;

    assert_int_equal(getattr(f, dir).flags & TS_ATTR_PROFILED, 0);
    assert_int_equal(profile_set(f, dir, TS_PROFILE_START, &profiling), TS_OK);
    assert_int_equal(profiling, 1);
    assert_true(getattr(f, dir).flags & TS_ATTR_PROFILED);

    /* Files and directories made in it later are profiled; the attr replies say so. */
    struct ts_attr file = make(f, dir, "f", S_IFREG | 0644);
    assert_true(file.flags & TS_ATTR_PROFILED);
    struct ts_attr sub = make(f, dir, "sub", S_IFDIR | 0755);
    assert_true(sub.flags & TS_ATTR_PROFILED);
    assert_true(make(f, sub.ino, "deep", S_IFREG | 0644).flags & TS_ATTR_PROFILED);
    assert_int_equal(make(f, dir, "link", S_IFLNK | 0777).flags & TS_ATTR_PROFILED, 0);
    assert_int_equal(make(f, dir, "fifo", S_IFIFO | 0644).flags & TS_ATTR_PROFILED, 0);
    struct ts_lookup_req lookup = {.parent = dir, .name = str("f")};
    struct ts_attr attr = {0};
    assert_int_equal(metafixture_attr_call(f, CALL(f, TS_OP_LOOKUP, lookup_req, &lookup), &attr),
                     TS_OK);
    assert_true(attr.flags & TS_ATTR_PROFILED);
    struct ts_open_req open = {.ino = file.ino};
    assert_int_equal(
        metafixture_open_call(f, CALL(f, TS_OP_OPEN, open_req, &open), &attr, NULL, 0), TS_OK);
    assert_true(attr.flags & TS_ATTR_PROFILED);
    assert_int_equal(getattr(f, outside).flags & TS_ATTR_PROFILED, 0);

    /* Not a change of the file: ctime stays. */
    struct ts_attr before = getattr(f, outside);
    assert_int_equal(profile_set(f, outside, TS_PROFILE_START, &profiling), TS_OK);
    assert_int_equal(profiling, 1);
    assert_int_equal(getattr(f, outside).ctime_nsec, before.ctime_nsec);
    assert_int_equal(getattr(f, outside).ctime_sec, before.ctime_sec);

    /* STOP on the directory: new files are not profiled, old ones stay as they are. */
    assert_int_equal(profile_set(f, dir, TS_PROFILE_STOP, &profiling), TS_OK);
    assert_int_equal(profiling, 0);
    assert_int_equal(getattr(f, dir).flags & TS_ATTR_PROFILED, 0);
    assert_int_equal(make(f, dir, "late", S_IFREG | 0644).flags & TS_ATTR_PROFILED, 0);
    assert_true(getattr(f, file.ino).flags & TS_ATTR_PROFILED);
    /* Twice is harmless. */
    assert_int_equal(profile_set(f, dir, TS_PROFILE_STOP, &profiling), TS_OK);
    assert_int_equal(profiling, 0);

    /* STOP on the file itself. */
    assert_int_equal(profile_set(f, file.ino, TS_PROFILE_STOP, &profiling), TS_OK);
    assert_int_equal(getattr(f, file.ino).flags, 0);

    /* Refusals name their cause. */
    uint64_t link = make(f, TS_ROOT_INO, "l", S_IFLNK | 0777).ino;
    assert_int_equal(profile_set(f, link, TS_PROFILE_START, NULL), TS_ERR_INVAL);
    assert_text(f, "regular file");
    assert_int_equal(profile_set(f, 9999, TS_PROFILE_START, NULL), TS_ERR_NOENT);
    assert_text(f, "9999");
    assert_int_equal(profile_set(f, dir, 7, NULL), TS_ERR_INVAL);
    assert_text(f, "unknown action 7");
}

static void test_profile_record_and_get(void **state)
{
    struct metafixture *f = *state;
    uint64_t file = make_file(f, TS_ROOT_INO, "f");
    uint64_t quiet = make_file(f, TS_ROOT_INO, "quiet");
    uint32_t kept = 99;
    struct profile_page page;
    struct profile_row rows[8];

    assert_int_equal(profile_set(f, file, TS_PROFILE_START, NULL), TS_OK);
    struct ts_profile_count_rec first[] = {
        {file, 0, 1, 0, 4096, 0, 4096, 5000},
        {file, 1, 2, 1, 8192, 100, 0, 7000},
        {quiet, 0, 5, 5, 5, 5, 5, 5}, /* not profiled: dropped */
        {file, 2, 0, 3, 0, 300, 300, 0},
        {424242, 0, 1, 1, 1, 1, 1, 1}, /* no such inode: dropped */
    };
    assert_int_equal(profile_record(f, "alpha", first, 5, &kept), TS_OK);
    assert_int_equal(kept, 3);
    struct ts_profile_count_rec second[] = {
        {file, 0, 1, 0, 100, 0, 0, 4000}, /* earlier: the first access moves back */
        {file, 1, 1, 0, 10, 0, 0, 0},     /* 0 = not known: the first access stays */
    };
    assert_int_equal(profile_record(f, "alpha", second, 2, &kept), TS_OK);
    assert_int_equal(kept, 2);
    struct ts_profile_count_rec other[] = {{file, 1, 4, 0, 40, 0, 40, 9000}};
    assert_int_equal(profile_record(f, "beta", other, 1, &kept), TS_OK);
    assert_int_equal(kept, 1);
    /* An empty batch is fine. */
    assert_int_equal(profile_record(f, "beta", NULL, 0, &kept), TS_OK);
    assert_int_equal(kept, 0);

    assert_int_equal(profile_get(f, file, 0, 0, &page, rows, 8), TS_OK);
    assert_int_equal(page.profiling, 1);
    assert_int_equal(page.count, 4);
    assert_int_equal(page.done, 1);
    assert_int_equal(page.next_tile, 3);
    /* (tile, machine) order. */
    assert_int_equal(rows[0].tile, 0);
    assert_string_equal(rows[0].machine, "alpha");
    assert_int_equal(rows[0].reads, 2);
    assert_int_equal(rows[0].bytes_read, 4196);
    assert_int_equal(rows[0].local_bytes, 4096);
    assert_int_equal(rows[0].first_access_ns, 4000);
    assert_int_equal(rows[1].tile, 1);
    assert_string_equal(rows[1].machine, "alpha");
    assert_int_equal(rows[1].reads, 3);
    assert_int_equal(rows[1].writes, 1);
    assert_int_equal(rows[1].bytes_read, 8202);
    assert_int_equal(rows[1].bytes_written, 100);
    assert_int_equal(rows[1].first_access_ns, 7000);
    assert_int_equal(rows[2].tile, 1);
    assert_string_equal(rows[2].machine, "beta");
    assert_int_equal(rows[2].reads, 4);
    assert_int_equal(rows[2].first_access_ns, 9000);
    assert_int_equal(rows[3].tile, 2);
    assert_int_equal(rows[3].writes, 3);
    assert_int_equal(rows[3].bytes_written, 300);
    assert_int_equal(rows[3].first_access_ns, 0);

    /* From a later tile on. */
    assert_int_equal(profile_get(f, file, 2, 0, &page, rows, 8), TS_OK);
    assert_int_equal(page.count, 1);
    assert_int_equal(rows[0].tile, 2);
    assert_int_equal(page.done, 1);
    assert_int_equal(profile_get(f, file, 3, 0, &page, rows, 8), TS_OK);
    assert_int_equal(page.count, 0);
    assert_int_equal(page.done, 1);
    assert_int_equal(page.next_tile, 3);

    /* The unprofiled file has nothing; a missing one is NOENT. */
    assert_int_equal(profile_get(f, quiet, 0, 0, &page, rows, 8), TS_OK);
    assert_int_equal(page.profiling, 0);
    assert_int_equal(page.count, 0);
    assert_int_equal(page.done, 1);
    assert_int_equal(profile_get(f, 424242, 0, 0, &page, rows, 8), TS_ERR_NOENT);
}

static void test_profile_get_pages_whole_tiles(void **state)
{
    struct metafixture *f = *state;
    static const char *const machines[] = {"m1", "m2", "m3"};
    uint64_t file = make_file(f, TS_ROOT_INO, "f");
    struct ts_profile_count_rec records[10];
    struct profile_page page;
    struct profile_row rows[16];

    assert_int_equal(profile_set(f, file, TS_PROFILE_START, NULL), TS_OK);
    for (int m = 0; m < 3; m++) {
        for (uint64_t tile = 0; tile < 10; tile++)
            records[tile] = (struct ts_profile_count_rec){file, tile, tile + 1, 0, 1, 0, 0, 1};
        assert_int_equal(profile_record(f, machines[m], records, 10, NULL), TS_OK);
    }
    /* max 7: two whole tiles (6 records) a page, never a split tile. */
    uint64_t next = 0;
    uint32_t seen = 0;
    for (int pages = 0;; pages++) {
        assert_true(pages < 10);
        assert_int_equal(profile_get(f, file, next, 7, &page, rows, 16), TS_OK);
        assert_true(page.count <= 7);
        assert_int_equal(page.count % 3, 0);
        for (uint32_t i = 0; i < page.count; i++) {
            assert_int_equal(rows[i].tile, next + i / 3);
            assert_string_equal(rows[i].machine, machines[i % 3]);
            assert_int_equal(rows[i].reads, rows[i].tile + 1);
        }
        seen += page.count;
        next = page.next_tile;
        if (page.done)
            break;
        assert_int_equal(page.count, 6);
    }
    assert_int_equal(seen, 30);
    assert_int_equal(next, 10);

    /* A page smaller than one tile still carries that tile whole. */
    assert_int_equal(profile_get(f, file, 4, 2, &page, rows, 16), TS_OK);
    assert_int_equal(page.count, 3);
    assert_int_equal(page.done, 0);
    assert_int_equal(page.next_tile, 5);
    /* Exactly one tile's worth. */
    assert_int_equal(profile_get(f, file, 0, 3, &page, rows, 16), TS_OK);
    assert_int_equal(page.count, 3);
    assert_int_equal(page.next_tile, 1);
}

static void test_profile_reset_stop_reopen(void **state)
{
    struct metafixture *f = *state;
    uint64_t file = make_file(f, TS_ROOT_INO, "f");
    struct profile_page page;
    struct profile_row rows[4];
    uint32_t profiling = 9;
    uint32_t kept = 9;
    struct ts_profile_count_rec counts[] = {{file, 3, 1, 1, 10, 10, 0, 123}};

    assert_int_equal(profile_set(f, file, TS_PROFILE_START, NULL), TS_OK);
    assert_int_equal(profile_record(f, "alpha", counts, 1, &kept), TS_OK);
    assert_int_equal(kept, 1);

    /* The counts and the flag survive a restart of meta. */
    metafixture_reopen(f);
    assert_true(getattr(f, file).flags & TS_ATTR_PROFILED);
    assert_int_equal(profile_get(f, file, 0, 0, &page, rows, 4), TS_OK);
    assert_int_equal(page.count, 1);
    assert_int_equal(rows[0].tile, 3);
    assert_int_equal(rows[0].reads, 1);
    assert_int_equal(rows[0].first_access_ns, 123);

    /* RESET clears the counts and leaves profiling on. */
    assert_int_equal(profile_set(f, file, TS_PROFILE_RESET, &profiling), TS_OK);
    assert_int_equal(profiling, 1);
    assert_int_equal(profile_get(f, file, 0, 0, &page, rows, 4), TS_OK);
    assert_int_equal(page.count, 0);
    assert_int_equal(page.profiling, 1);
    assert_int_equal(rows_of(f, STORE_PROFILES), 0);
    assert_int_equal(profile_record(f, "alpha", counts, 1, &kept), TS_OK);
    assert_int_equal(kept, 1);

    /* After STOP, records are dropped; the counts so far stay for reading. */
    assert_int_equal(profile_set(f, file, TS_PROFILE_STOP, &profiling), TS_OK);
    assert_int_equal(profile_record(f, "alpha", counts, 1, &kept), TS_OK);
    assert_int_equal(kept, 0);
    assert_int_equal(profile_get(f, file, 0, 0, &page, rows, 4), TS_OK);
    assert_int_equal(page.profiling, 0);
    assert_int_equal(page.count, 1);
    assert_int_equal(rows[0].reads, 1);
    /* RESET of an unprofiled file leaves it unprofiled. */
    assert_int_equal(profile_set(f, file, TS_PROFILE_RESET, &profiling), TS_OK);
    assert_int_equal(profiling, 0);
    assert_int_equal(rows_of(f, STORE_PROFILES), 0);
}

static void test_profile_record_limits(void **state)
{
    struct metafixture *f = *state;
    uint64_t file = make_file(f, TS_ROOT_INO, "f");
    static struct ts_profile_count_rec many[TS_MAX_PROFILE_RECORDS];
    static uint8_t blob[(TS_MAX_PROFILE_RECORDS + 1) * ts_profile_count_rec_bytes];
    char long_name[PROFILES_MAX_MACHINE + 2];
    uint32_t kept = 0;
    struct profile_page page;

    assert_int_equal(profile_set(f, file, TS_PROFILE_START, NULL), TS_OK);
    /* The largest batch goes in one transaction. */
    for (uint32_t i = 0; i < TS_MAX_PROFILE_RECORDS; i++)
        many[i] = (struct ts_profile_count_rec){file, i, 1, 0, 512, 0, 0, 1};
    assert_int_equal(profile_record(f, "alpha", many, TS_MAX_PROFILE_RECORDS, &kept), TS_OK);
    assert_int_equal(kept, TS_MAX_PROFILE_RECORDS);
    assert_int_equal(rows_of(f, STORE_PROFILES), TS_MAX_PROFILE_RECORDS);
    /* A page asking for no limit stays inside the frame. */
    assert_int_equal(profile_get(f, file, 0, 0, &page, NULL, 0), TS_OK);
    assert_true(page.count > 0 && page.count < TS_MAX_PROFILE_RECORDS);
    assert_int_equal(page.done, 0);
    assert_int_equal(page.next_tile, page.count);

    /* One more than the limit, with a blob that matches. */
    struct ts_profile_record_req m = {.machine = str("alpha"),
                                      .count = TS_MAX_PROFILE_RECORDS + 1,
                                      .records = {(const char *)blob, sizeof(blob)}};
    assert_int_equal(CALL(f, TS_OP_PROFILE_RECORD, profile_record_req, &m), TS_ERR_INVAL);
    assert_text(f, "at most 16384");
    /* A blob that does not match its count. */
    m.count = 2;
    m.records.len = ts_profile_count_rec_bytes * 3;
    assert_int_equal(CALL(f, TS_OP_PROFILE_RECORD, profile_record_req, &m), TS_ERR_BADMSG);
    assert_text(f, "PROFILE_RECORD");
    m.records.len = ts_profile_count_rec_bytes * 2 - 1;
    assert_int_equal(CALL(f, TS_OP_PROFILE_RECORD, profile_record_req, &m), TS_ERR_BADMSG);
    /* Machine names: 1..255 bytes. */
    assert_int_equal(profile_record(f, "", many, 1, NULL), TS_ERR_INVAL);
    assert_text(f, "machine");
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_int_equal(profile_record(f, long_name, many, 1, NULL), TS_ERR_INVAL);
    long_name[PROFILES_MAX_MACHINE] = '\0';
    assert_int_equal(profile_record(f, long_name, many, 1, &kept), TS_OK);
    assert_int_equal(kept, 1);
}

/* ---- read copies -------------------------------------------------------- */

/* Nodes 1 (alpha), 2 (beta), 3 (beta); file "f" with `tiles` tiles on node 1. */
struct cluster {
    uint32_t alpha;
    uint32_t beta1;
    uint32_t beta2;
    uint64_t file;
    uint64_t version[4];
};

static void make_cluster(struct metafixture *f, struct cluster *c, uint32_t tiles)
{
    c->alpha = register_node(f, "alpha");
    c->beta1 = register_node(f, "beta");
    c->beta2 = register_node(f, "beta");
    c->file = make_file(f, TS_ROOT_INO, "f");
    place_tiles(f, c->file, tiles, c->alpha);
    for (uint32_t i = 0; i < tiles && i < 4; i++)
        c->version[i] = tile_of(f, c->file, i, "").version;
}

/*
 * A committed and finished copy of tile from `from` to `to`; returns the
 * copy's version, which the source holds the tile at too from then on
 * (its file was relinked: proto.h, "Relocation journal").
 */
static uint64_t add_copy(struct metafixture *f, uint64_t ino, uint64_t tile, uint64_t version,
                         uint32_t from, uint32_t to)
{
    uint64_t new_version = 0;
    assert_int_equal(move_begin(f, ino, tile, version, TS_MOVE_COPY, from, to, &new_version),
                     TS_OK);
    assert_true(new_version > version);
    commit_and_finish(f, ino, tile);
    return new_version;
}

static void test_tile_map_read_node(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    struct ts_tile_map_rec record;

    make_cluster(f, &c, 2);
    record = tile_of(f, c.file, 0, "beta");
    assert_int_equal(record.node, c.alpha);
    assert_int_equal(record.holders, 1);
    assert_int_equal(record.read_node, c.alpha);
    assert_int_equal(record.read_version, c.version[0]);

    uint64_t copy = add_copy(f, c.file, 0, c.version[0], c.alpha, c.beta2);
    /* beta reads its own copy; alpha its primary; others the primary. Both at the copy's
     * version: the primary's file was relinked to it. */
    record = tile_of(f, c.file, 0, "beta");
    assert_int_equal(record.node, c.alpha);
    assert_int_equal(record.version, copy);
    assert_int_equal(record.holders, 2);
    assert_int_equal(record.read_node, c.beta2);
    assert_int_equal(record.read_version, copy);
    record = tile_of(f, c.file, 0, "alpha");
    assert_int_equal(record.holders, 2);
    assert_int_equal(record.read_node, c.alpha);
    assert_int_equal(record.read_version, copy);
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, c.version[0]));
    /* No holder on gamma: either holder, the same every time
     * (test_tile_map_spreads_remote_reads); no machine named (a tool): the primary. */
    record = tile_of(f, c.file, 0, "gamma");
    uint32_t remote = record.read_node;
    assert_true(remote == c.alpha || remote == c.beta2);
    assert_int_equal(record.read_version, copy);
    assert_int_equal(tile_of(f, c.file, 0, "gamma").read_node, remote);
    record = tile_of(f, c.file, 0, "");
    assert_int_equal(record.read_node, c.alpha);
    assert_int_equal(record.holders, 2);

    /* A map over several tiles and a hole: each record its own. */
    struct ts_tile_map_rec records[3];
    assert_int_equal(tile_map(f, c.file, 0, 3, 0, 0, "beta", records), TS_OK);
    assert_int_equal(records[0].read_node, c.beta2);
    assert_int_equal(records[1].holders, 1);
    assert_int_equal(records[1].read_node, c.alpha);
    assert_int_equal(records[1].read_version, c.version[1]);
    assert_int_equal(records[2].node, 0);
    assert_int_equal(records[2].holders, 0);
    assert_int_equal(records[2].read_node, 0);
    assert_int_equal(records[2].read_version, 0);

    /* Two copies on beta: the lower node id serves. */
    uint64_t copy1 = add_copy(f, c.file, 0, copy, c.alpha, c.beta1);
    record = tile_of(f, c.file, 0, "beta");
    assert_int_equal(record.holders, 3);
    assert_int_equal(record.read_node, c.beta1);
    assert_int_equal(record.read_version, copy1);

    /* After a restart every node is down until it beats: the primary serves. */
    metafixture_reopen(f);
    record = tile_of(f, c.file, 0, "beta");
    assert_int_equal(record.holders, 3);
    assert_int_equal(record.read_node, c.alpha);
    heartbeat(f, c.beta2, "beta", NULL, 0, NULL);
    record = tile_of(f, c.file, 0, "beta");
    assert_int_equal(record.read_node, c.beta2);
    assert_int_equal(record.read_version, copy);
}

/* HEARTBEAT of a known node reporting its measured read throughput. */
static void heartbeat_read_speed(struct metafixture *f, uint32_t id, const char *machine,
                                 uint64_t read_bytes_per_sec)
{
    struct ts_heartbeat_req m = heartbeat_of(id, machine);
    m.read_bytes_per_sec = read_bytes_per_sec;
    m.write_bytes_per_sec = read_bytes_per_sec / 2;
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &m), TS_OK);
}

/* How many of tiles 0..count-1 a machine with no holder is sent to alpha and to beta2 for. */
static void remote_read_split(struct metafixture *f, const struct cluster *c, uint32_t count,
                              uint32_t *on_alpha, uint32_t *on_beta2)
{
    struct ts_tile_map_rec records[64];
    assert_true(count <= 64);
    assert_int_equal(tile_map(f, c->file, 0, count, 0, 0, "gamma", records), TS_OK);
    *on_alpha = *on_beta2 = 0;
    for (uint32_t i = 0; i < count; i++) {
        assert_int_equal(records[i].holders, 2);
        if (records[i].read_node == c->alpha)
            (*on_alpha)++;
        else if (records[i].read_node == c->beta2)
            (*on_beta2)++;
    }
    assert_int_equal(*on_alpha + *on_beta2, count);
}

/*
 * Readers on a machine without a holder spread over the holders that are
 * about as fast as the fastest (at least half its measured read speed),
 * by tile, the same tile always to the same holder; a holder under half
 * the fastest's speed is asked only after the others. (Ordering by speed
 * alone sent every reader to one node; readsource.c.)
 */
static void test_tile_map_spreads_remote_reads(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    enum { TILES = 16 }; /* make_cluster places at most 16 */
    uint32_t on_alpha, on_beta2, again_alpha, again_beta2;

    make_cluster(f, &c, TILES);
    for (uint64_t tile = 0; tile < TILES; tile++) {
        uint64_t version = tile_of(f, c.file, tile, "").version;
        add_copy(f, c.file, tile, version, c.alpha, c.beta2);
    }
    /* Equal speeds (none measured yet): about half each. */
    remote_read_split(f, &c, TILES, &on_alpha, &on_beta2);
    assert_true(on_alpha >= TILES / 4 && on_beta2 >= TILES / 4);
    remote_read_split(f, &c, TILES, &again_alpha, &again_beta2);
    assert_int_equal(again_alpha, on_alpha);
    /* beta2 at 60 % of alpha's speed: still a share. */
    heartbeat_read_speed(f, c.alpha, "alpha", 100000000);
    heartbeat_read_speed(f, c.beta2, "beta", 60000000);
    remote_read_split(f, &c, TILES, &on_alpha, &on_beta2);
    assert_true(on_alpha >= TILES / 4 && on_beta2 >= TILES / 4);
    /* beta2 under half alpha's speed: alpha serves every tile, beta2 is the fallback. */
    heartbeat_read_speed(f, c.beta2, "beta", 40000000);
    remote_read_split(f, &c, TILES, &on_alpha, &on_beta2);
    assert_int_equal(on_alpha, TILES);
    /* And the other way round. */
    heartbeat_read_speed(f, c.alpha, "alpha", 10000000);
    remote_read_split(f, &c, TILES, &on_alpha, &on_beta2);
    assert_int_equal(on_beta2, TILES);
    /* A machine with a holder still reads its own first. */
    struct ts_tile_map_rec records[TILES];
    assert_int_equal(tile_map(f, c.file, 0, TILES, 0, 0, "alpha", records), TS_OK);
    for (uint32_t i = 0; i < TILES; i++)
        assert_int_equal(records[i].read_node, c.alpha);
}

/*
 * copies=N allocation: replicas on machines no other holder is on, then on
 * datanodes no other holder is; fewer nodes than copies give as many
 * holders as there are nodes (under-replicated, not refused); TILE_MAP
 * lists every holder, the asking machine's first.
 */
static void test_tile_map_places_replicas(void **state)
{
    struct metafixture *f = *state;
    struct ts_replica_rec holders[TS_MAX_HOLDERS];
    struct ts_tile_map_rec records[8];
    uint32_t alpha = register_node(f, "alpha");
    uint32_t beta1 = register_node(f, "beta");
    uint32_t beta2 = register_node(f, "beta");

    f->service->defaults.copies = 2;
    uint64_t two = make_file(f, TS_ROOT_INO, "two");
    assert_int_equal(tile_map(f, two, 0, 8, 1, 0, "beta", records), TS_OK);
    for (uint64_t tile = 0; tile < 8; tile++) {
        assert_int_equal(holders_of(f, two, tile, holders), 2);
        /* One on alpha, one on beta: two machines. */
        assert_true((holders[0].node == alpha) != (holders[1].node == alpha));
        assert_int_not_equal(holders[0].version, holders[1].version);
        /* beta's mount reads its own machine's holder first. */
        assert_int_not_equal(records[tile].read_node, alpha);
        assert_int_equal(records[tile].holders, 2);
    }

    /* Three copies on two machines: the third on the other beta node. */
    f->service->defaults.copies = 3;
    uint64_t three = make_file(f, TS_ROOT_INO, "three");
    assert_int_equal(tile_map(f, three, 0, 4, 1, 0, "", records), TS_OK);
    for (uint64_t tile = 0; tile < 4; tile++) {
        assert_int_equal(holders_of(f, three, tile, holders), 3);
        uint32_t seen = 0;
        for (int h = 0; h < 3; h++)
            seen |= holders[h].node == alpha ? 1u : holders[h].node == beta1 ? 2u : 4u;
        assert_int_equal(seen, 7u);
    }
    (void)beta2;

    /* Four copies, three nodes: three holders, and the write goes on. */
    f->service->defaults.copies = 4;
    uint64_t four = make_file(f, TS_ROOT_INO, "four");
    assert_int_equal(tile_map(f, four, 0, 2, 1, 0, "", records), TS_OK);
    assert_int_equal(holders_of(f, four, 0, holders), 3);
    assert_int_equal(holders_of(f, four, 1, holders), 3);
}

static void test_replica_drop(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;

    make_cluster(f, &c, 3);
    uint64_t copy0 = add_copy(f, c.file, 0, c.version[0], c.alpha, c.beta1);
    uint64_t copy1 = add_copy(f, c.file, 1, c.version[1], c.alpha, c.beta1);
    uint64_t copy2 = add_copy(f, c.file, 2, c.version[2], c.alpha, c.beta2);
    assert_int_equal(garbage_count_of(f, c.beta1, "beta"), 0);

    drop_replicas(f, c.file, 1, 2);
    assert_int_equal(tile_of(f, c.file, 0, "beta").holders, 2);
    assert_int_equal(tile_of(f, c.file, 1, "beta").holders, 1);
    assert_int_equal(tile_of(f, c.file, 1, "beta").read_node, c.alpha);
    assert_int_equal(tile_of(f, c.file, 2, "beta").holders, 1);
    /* The primaries stay; the copies go to their nodes' garbage. */
    assert_int_equal(tile_of(f, c.file, 1, "").node, c.alpha);
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 1, copy1));
    assert_false(garbage_has(f, c.beta1, "beta", c.file, 0, copy0));
    assert_true(garbage_has(f, c.beta2, "beta", c.file, 2, copy2));
    /* alpha's garbage: only the old names its files had before the copies relinked them. */
    assert_int_equal(garbage_count_of(f, c.alpha, "alpha"), 3);
    for (uint64_t tile = 0; tile < 3; tile++)
        assert_true(garbage_has(f, c.alpha, "alpha", c.file, tile, c.version[tile]));
    /* Again: nothing left to drop, still fine. */
    drop_replicas(f, c.file, 1, 2);

    /* A stale version changes nothing and answers the set as it is. */
    assert_int_equal(replica_drop(f, c.file, 0, c.beta1, copy0 + 1000), TS_OK);
    assert_int_equal(tile_of(f, c.file, 0, "").holders, 2);
    assert_false(garbage_has(f, c.beta1, "beta", c.file, 0, copy0));
    /* The primary leaves: its replica becomes the primary, keeping the flags. */
    uint32_t flags = tile_of(f, c.file, 0, "").flags;
    assert_int_equal(replica_drop(f, c.file, 0, c.alpha, copy0), TS_OK);
    struct ts_tile_map_rep reply;
    struct ts_tile_map_rec answered;
    struct ts_cursor cursor;
    assert_int_equal(ts_tile_map_rep_decode(&reply, f->reply, f->reply_len), 0);
    ts_cursor_init(&cursor, reply.tiles.ptr, reply.tiles.len);
    assert_int_equal(ts_tile_map_rec_read(&cursor, &answered), 0);
    assert_int_equal(answered.node, c.beta1);
    assert_int_equal(answered.version, copy0);
    assert_int_equal(answered.holders, 1);
    assert_int_equal(answered.flags, flags);
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.beta1);
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, copy0));
    /* The last holder stays: the client's write fails instead. */
    assert_int_equal(replica_drop(f, c.file, 0, c.beta1, copy0), TS_ERR_BUSY);
    assert_text(f, "last holder");
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.beta1);

    /* Refusals. */
    assert_int_equal(replica_drop(f, c.file, 0, 0, copy0), TS_ERR_INVAL);
    assert_int_equal(replica_drop(f, TS_ROOT_INO, 0, c.alpha, 1), TS_ERR_INVAL);
    assert_text(f, "not a regular file");
    assert_int_equal(replica_drop(f, 4242, 0, c.alpha, 1), TS_ERR_NOENT);
}

/* A truncation drops the replicas of the tiles past the end with them and
 * keeps those of the tile it cuts: the client cuts every holder of it. */
static void test_truncate_keeps_replicas_of_cut_tile(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;

    make_cluster(f, &c, 3);
    uint64_t copy0 = add_copy(f, c.file, 0, c.version[0], c.alpha, c.beta1);
    uint64_t copy1 = add_copy(f, c.file, 1, c.version[1], c.alpha, c.beta1);
    uint64_t copy2 = add_copy(f, c.file, 2, c.version[2], c.alpha, c.beta1);
    /* Into tile 1: tile 2 goes with its replica, tile 1 keeps both holders. */
    assert_int_equal(truncate_to(f, c.file, TILE_BYTES + 100), TS_OK);
    assert_int_equal(tile_of(f, c.file, 0, "beta").holders, 2);
    assert_int_equal(tile_of(f, c.file, 1, "beta").holders, 2);
    assert_int_equal(tile_of(f, c.file, 1, "beta").node, c.alpha);
    assert_int_equal(tile_of(f, c.file, 2, "beta").node, 0);
    assert_false(garbage_has(f, c.beta1, "beta", c.file, 1, copy1));
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 2, copy2));
    assert_false(garbage_has(f, c.beta1, "beta", c.file, 0, copy0));
    /* alpha's file of tile 2 goes too, under the name the copy relinked it to. */
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 2, copy2));
    assert_int_equal(rows_of(f, STORE_COPIES), 2);
}

/* ---- the relocation journal --------------------------------------------- */

static void test_move_begin_resume_busy_list(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    struct ts_move_rec rows[4];
    uint64_t new_version = 0;
    uint64_t again = 0;
    uint32_t done = 0;

    make_cluster(f, &c, 1);
    assert_int_equal(
        move_begin(f, c.file, 0, c.version[0], TS_MOVE_MOVE, c.alpha, c.beta1, &new_version),
        TS_OK);
    assert_true(new_version > c.version[0]);
    /* Asking again resumes: the same target file. */
    assert_int_equal(move_begin(f, c.file, 0, c.version[0], TS_MOVE_MOVE, c.alpha, c.beta1, &again),
                     TS_OK);
    assert_int_equal(again, new_version);
    /* Another move of the same tile waits for this one. */
    assert_int_equal(move_begin(f, c.file, 0, c.version[0], TS_MOVE_COPY, c.alpha, c.beta2, NULL),
                     TS_ERR_BUSY);
    assert_text(f, "already in the journal");
    /* Nothing changed in the map yet. */
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.alpha);

    assert_int_equal(move_list(f, 0, 0, 0, rows, 4, &done), 1);
    assert_int_equal(done, 1);
    assert_int_equal(rows[0].ino, c.file);
    assert_int_equal(rows[0].tile, 0);
    assert_int_equal(rows[0].kind, TS_MOVE_MOVE);
    assert_int_equal(rows[0].from_node, c.alpha);
    assert_int_equal(rows[0].to_node, c.beta1);
    assert_int_equal(rows[0].version, c.version[0]);
    assert_int_equal(rows[0].new_version, new_version);
    assert_true(rows[0].started_sec > 0);
    assert_int_equal(rows[0].state, TS_MOVE_BEGUN);

    /* The journal survives a restart; the tool resumes where it was. */
    metafixture_reopen(f);
    assert_int_equal(move_list(f, 0, 0, 0, rows, 4, &done), 1);
    assert_int_equal(rows[0].new_version, new_version);
    assert_int_equal(move_begin(f, c.file, 0, c.version[0], TS_MOVE_MOVE, c.alpha, c.beta1, &again),
                     TS_OK);
    assert_int_equal(again, new_version);
    commit_and_finish(f, c.file, 0);
    assert_int_equal(move_list(f, 0, 0, 0, rows, 4, &done), 0);
    assert_int_equal(done, 1);
}

static void test_move_begin_checks(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;

    make_cluster(f, &c, 1);
    uint64_t v = c.version[0];
    assert_int_equal(move_begin(f, c.file, 0, v, TS_MOVE_MOVE, c.alpha, 77, NULL), TS_ERR_INVAL);
    assert_text(f, "no datanode 77");
    assert_int_equal(move_begin(f, c.file, 0, v, TS_MOVE_MOVE, 78, c.beta1, NULL), TS_ERR_INVAL);
    assert_text(f, "no datanode 78");
    assert_int_equal(move_begin(f, c.file, 0, v, TS_MOVE_MOVE, c.alpha, c.alpha, NULL),
                     TS_ERR_INVAL);
    assert_text(f, "same datanode");
    assert_int_equal(move_begin(f, c.file, 0, v, 9, c.alpha, c.beta1, NULL), TS_ERR_INVAL);
    assert_text(f, "kind");
    assert_int_equal(move_begin(f, c.file, 0, v, TS_MOVE_DROP, c.alpha, c.beta1, NULL),
                     TS_ERR_INVAL);
    assert_text(f, "to_node must be 0");
    assert_int_equal(move_begin(f, c.file, 0, v, TS_MOVE_COPY, c.alpha, 0, NULL), TS_ERR_INVAL);
    /* The holder must hold that version of that tile. */
    assert_int_equal(move_begin(f, c.file, 0, v + 100, TS_MOVE_MOVE, c.alpha, c.beta1, NULL),
                     TS_ERR_STALE);
    assert_text(f, "does not hold");
    assert_int_equal(move_begin(f, c.file, 0, v, TS_MOVE_MOVE, c.beta2, c.beta1, NULL),
                     TS_ERR_STALE);
    assert_int_equal(move_begin(f, c.file, 5, v, TS_MOVE_MOVE, c.alpha, c.beta1, NULL),
                     TS_ERR_STALE);
    assert_text(f, "hole");
    assert_int_equal(move_begin(f, 4242, 0, v, TS_MOVE_MOVE, c.alpha, c.beta1, NULL), TS_ERR_NOENT);
    assert_int_equal(move_begin(f, TS_ROOT_INO, 0, v, TS_MOVE_MOVE, c.alpha, c.beta1, NULL),
                     TS_ERR_INVAL);
    /* The only holder cannot be dropped. */
    assert_int_equal(move_begin(f, c.file, 0, v, TS_MOVE_DROP, c.alpha, 0, NULL), TS_ERR_INVAL);
    assert_text(f, "only copy");
    /* A target that holds the tile already. */
    uint64_t copied = add_copy(f, c.file, 0, v, c.alpha, c.beta1);
    assert_int_equal(move_begin(f, c.file, 0, copied, TS_MOVE_COPY, c.alpha, c.beta1, NULL),
                     TS_ERR_EXIST);
    assert_text(f, "already holds");
    /* None of it left an entry. */
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
}

static void test_move_commit_move_copy_drop(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    struct ts_tile_map_rec record;
    uint64_t moved = 0;

    make_cluster(f, &c, 1);
    /* Move the primary alpha -> beta1: writes go to beta1 now, alpha's file is garbage. */
    assert_int_equal(move_begin(f, c.file, 0, c.version[0], TS_MOVE_MOVE, c.alpha, c.beta1, &moved),
                     TS_OK);
    commit_and_finish(f, c.file, 0);
    record = tile_of(f, c.file, 0, "alpha");
    assert_int_equal(record.node, c.beta1);
    assert_int_equal(record.version, moved);
    assert_int_equal(record.holders, 1);
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, c.version[0]));
    assert_int_equal(garbage_count_of(f, c.beta1, "beta"), 0);

    /* Copy beta1 -> alpha, then move that copy alpha -> beta2. */
    uint64_t copy = add_copy(f, c.file, 0, moved, c.beta1, c.alpha);
    assert_int_equal(tile_of(f, c.file, 0, "alpha").read_node, c.alpha);
    assert_int_equal(tile_of(f, c.file, 0, "alpha").read_version, copy);
    uint64_t copy_moved = 0;
    assert_int_equal(move_begin(f, c.file, 0, copy, TS_MOVE_MOVE, c.alpha, c.beta2, &copy_moved),
                     TS_OK);
    commit_and_finish(f, c.file, 0);
    record = tile_of(f, c.file, 0, "alpha");
    assert_int_equal(record.node, c.beta1); /* the primary stays, relinked by the copy */
    assert_int_equal(record.version, copy);
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 0, moved));
    assert_int_equal(record.holders, 2);
    assert_int_equal(record.read_node, c.beta1);
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, copy));

    /* Drop the primary: its copy on beta2 is promoted. */
    assert_int_equal(move_begin(f, c.file, 0, copy, TS_MOVE_DROP, c.beta1, 0, NULL), TS_OK);
    commit_and_finish(f, c.file, 0);
    record = tile_of(f, c.file, 0, "");
    assert_int_equal(record.node, c.beta2);
    assert_int_equal(record.version, copy_moved);
    assert_int_equal(record.holders, 1);
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 0, copy));
    assert_false(garbage_has(f, c.beta2, "beta", c.file, 0, copy_moved));

    /* Drop a copy: the primary stays. */
    uint64_t extra = add_copy(f, c.file, 0, copy_moved, c.beta2, c.alpha);
    uint64_t none = 99;
    assert_int_equal(move_begin(f, c.file, 0, extra, TS_MOVE_DROP, c.alpha, 0, &none), TS_OK);
    assert_int_equal(none, 0);
    commit_and_finish(f, c.file, 0);
    record = tile_of(f, c.file, 0, "alpha");
    assert_int_equal(record.node, c.beta2);
    assert_int_equal(record.holders, 1);
    assert_int_equal(record.read_node, c.beta2);
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, extra));
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
    assert_int_equal(rows_of(f, STORE_COPIES), 0);

    /* A third commit finds nothing to commit or finish. */
    assert_int_equal(move_commit(f, c.file, 0), TS_ERR_NOENT);
    assert_text(f, "no relocation");
}

/* A HEARTBEAT of node reporting tile file (ino, tile, version) created. */
static void report_created(struct metafixture *f, uint32_t node, const char *machine, uint64_t ino,
                           uint64_t tile, uint64_t version)
{
    uint8_t record[ts_tile_file_rec_bytes];
    struct ts_writer writer;
    ts_writer_init(&writer, record, sizeof(record));
    struct ts_tile_file_rec file = {.ino = ino, .tile = tile, .version = version};
    ts_tile_file_rec_write(&writer, &file);
    struct ts_heartbeat_req m = {
        .node_id = node,
        .machine = str(machine),
        .address = str("tcp://127.0.0.1:7401"),
        .capacity = 64ull << 30,
        .free_bytes = 32ull << 30,
        .deleted = {"", 0},
        .created_count = 1,
        .created = {(const char *)record, sizeof(record)},
    };
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &m), TS_OK);
}

/*
 * A tile known written (TS_TILE_STORED) stays so when it moves, when its
 * primary is dropped for a copy; a copy's holder reporting its file marks
 * the tile too; a tile never reported stays unwritten through a move.
 */
static void test_moves_keep_stored(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    uint64_t moved = 0;

    make_cluster(f, &c, 2);
    report_created(f, c.alpha, "alpha", c.file, 0, c.version[0]);
    assert_int_equal(tile_of(f, c.file, 0, "").flags, TS_TILE_STORED);
    assert_int_equal(tile_of(f, c.file, 1, "").flags, 0);

    assert_int_equal(move_begin(f, c.file, 0, c.version[0], TS_MOVE_MOVE, c.alpha, c.beta1, &moved),
                     TS_OK);
    commit_and_finish(f, c.file, 0);
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.beta1);
    assert_int_equal(tile_of(f, c.file, 0, "").flags, TS_TILE_STORED);
    /* The old holder's late report of the old version changes nothing. */
    report_created(f, c.alpha, "alpha", c.file, 0, c.version[0]);
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.beta1);

    uint64_t moved1 = 0;
    assert_int_equal(
        move_begin(f, c.file, 1, c.version[1], TS_MOVE_MOVE, c.alpha, c.beta1, &moved1), TS_OK);
    commit_and_finish(f, c.file, 1);
    assert_int_equal(tile_of(f, c.file, 1, "").flags, 0);
    /* A copy's holder reports its file: the tile has bytes. */
    uint64_t copy1 = add_copy(f, c.file, 1, moved1, c.beta1, c.alpha);
    report_created(f, c.alpha, "alpha", c.file, 1, copy1 + 1); /* not the copy's version */
    assert_int_equal(tile_of(f, c.file, 1, "").flags, 0);
    report_created(f, c.alpha, "alpha", c.file, 1, copy1);
    assert_int_equal(tile_of(f, c.file, 1, "").flags, TS_TILE_STORED);

    /* Dropping the primary promotes a copy, which keeps the mark. */
    uint64_t copy0 = add_copy(f, c.file, 0, moved, c.beta1, c.alpha);
    assert_int_equal(move_begin(f, c.file, 0, copy0, TS_MOVE_DROP, c.beta1, 0, NULL), TS_OK);
    commit_and_finish(f, c.file, 0);
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.alpha);
    assert_int_equal(tile_of(f, c.file, 0, "").flags, TS_TILE_STORED);
}

static void test_move_committed_until_finished(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    struct ts_move_rec rows[2];
    uint64_t moved = 0;
    uint32_t done = 0;

    make_cluster(f, &c, 1);
    assert_int_equal(move_begin(f, c.file, 0, c.version[0], TS_MOVE_MOVE, c.alpha, c.beta1, &moved),
                     TS_OK);
    /* The first commit switches the map and queues the old file, as ever... */
    assert_int_equal(move_commit(f, c.file, 0), TS_OK);
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.beta1);
    assert_int_equal(tile_of(f, c.file, 0, "").version, moved);
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, c.version[0]));
    /* ...and keeps the entry, committed: the old file is not retired yet. */
    assert_int_equal(move_list(f, 0, 0, 0, rows, 2, &done), 1);
    assert_int_equal(rows[0].state, TS_MOVE_COMMITTED);
    assert_int_equal(rows[0].new_version, moved);

    /* No other relocation of the tile, not even the same one again. */
    assert_int_equal(move_begin(f, c.file, 0, c.version[0], TS_MOVE_MOVE, c.alpha, c.beta1, NULL),
                     TS_ERR_BUSY);
    assert_text(f, "committed");
    assert_int_equal(move_begin(f, c.file, 0, moved, TS_MOVE_COPY, c.beta1, c.beta2, NULL),
                     TS_ERR_BUSY);
    assert_text(f, "not retired yet");
    /* It cannot be undone: the target's file is the tile's now, not garbage. */
    assert_int_equal(move_abort(f, c.file, 0), TS_ERR_INVAL);
    assert_text(f, "cannot be undone");
    assert_int_equal(rows_of(f, STORE_JOURNAL), 1);
    assert_int_equal(garbage_count_of(f, c.beta1, "beta"), 0);
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.beta1);

    /* It outlives a restart; the second commit finishes it. */
    metafixture_reopen(f);
    assert_int_equal(move_list(f, 0, 0, 0, rows, 2, &done), 1);
    assert_int_equal(rows[0].state, TS_MOVE_COMMITTED);
    assert_int_equal(move_commit(f, c.file, 0), TS_OK);
    assert_int_equal(move_list(f, 0, 0, 0, rows, 2, &done), 0);
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.beta1);
    assert_int_equal(tile_of(f, c.file, 0, "").version, moved);
    assert_int_equal(garbage_count_of(f, c.beta1, "beta"), 0);
    assert_int_equal(move_commit(f, c.file, 0), TS_ERR_NOENT);
    /* Finished: the tile can move again. */
    assert_int_equal(move_begin(f, c.file, 0, moved, TS_MOVE_COPY, c.beta1, c.beta2, NULL), TS_OK);
    assert_int_equal(move_abort(f, c.file, 0), TS_OK);

    /* A committed entry goes with its file; its new file is freed as the tile's. */
    uint64_t back = 0;
    assert_int_equal(move_begin(f, c.file, 0, moved, TS_MOVE_MOVE, c.beta1, c.alpha, &back), TS_OK);
    assert_int_equal(move_commit(f, c.file, 0), TS_OK);
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "f"), TS_OK);
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, back));
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 0, moved));
}

/*
 * Copies of an open file are made like any other: the commit names the
 * source at the copy's version too and queues its old name (retired by the
 * executor), so a client that cached the old replica set is sent back to
 * meta before it writes again.
 */
static void test_copy_of_an_open_file(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    struct ts_replica_rec holders[TS_MAX_HOLDERS];
    uint64_t copy = 0;

    make_cluster(f, &c, 2);
    uint64_t v = c.version[0];
    report_created(f, c.alpha, "alpha", c.file, 0, v);
    uint32_t flags = tile_of(f, c.file, 0, "").flags;
    open_file(f, c.file);
    assert_int_equal(move_begin(f, c.file, 0, v, TS_MOVE_COPY, c.alpha, c.beta1, &copy), TS_OK);
    open_file(f, c.file); /* opened again between begin and commit */
    assert_int_equal(move_commit(f, c.file, 0), TS_OK);
    assert_int_equal(holders_of(f, c.file, 0, holders), 2);
    assert_int_equal(holders[0].node, c.alpha);
    assert_int_equal(holders[0].version, copy);
    assert_int_equal(holders[1].node, c.beta1);
    assert_int_equal(holders[1].version, copy);
    assert_int_equal(tile_of(f, c.file, 0, "").flags, flags);
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, v));
    assert_int_equal(move_commit(f, c.file, 0), TS_OK);
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
    /* A copy of a copy: the copy's holder, not the primary, takes the newer version. */
    uint64_t second = 0;
    assert_int_equal(move_begin(f, c.file, 0, copy, TS_MOVE_COPY, c.beta1, c.beta2, &second),
                     TS_OK);
    commit_and_finish(f, c.file, 0);
    assert_int_equal(holders_of(f, c.file, 0, holders), 3);
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.alpha);
    assert_int_equal(tile_of(f, c.file, 0, "").version, copy);
    for (int h = 1; h < 3; h++)
        assert_int_equal(holders[h].version, second);
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 0, copy));
    release_file(f, c.file);
    release_file(f, c.file);
}

/* The first of nodes[0..count) that is none of the tile's holders, or 0. */
static uint32_t node_not_holding(const uint32_t *nodes, uint32_t count,
                                 const struct ts_replica_rec *holders, uint32_t holder_count)
{
    for (uint32_t i = 0; i < count; i++) {
        bool holds = false;
        for (uint32_t h = 0; h < holder_count; h++)
            holds = holds || holders[h].node == nodes[i];
        if (!holds)
            return nodes[i];
    }
    return 0;
}

/*
 * A move keeps a tile within its holder bounds: no copy past TS_MAX_HOLDERS
 * (TS_ERR_TOOBIG), no drop under the file's copies (its own copies= here,
 * not the cluster's 1), refused at MOVE_BEGIN; a drop begun with room to
 * spare is aborted at MOVE_COMMIT when a client's REPLICA_DROP took the
 * room meanwhile; a MOVE at the floor is fine (it keeps the count).
 */
static void test_moves_keep_holder_bounds(void **state)
{
    struct metafixture *f = *state;
    struct ts_replica_rec holders[TS_MAX_HOLDERS];
    struct ts_tile_map_rec record;
    uint32_t nodes[TS_MAX_HOLDERS + 1];
    char machine[16];

    for (uint32_t i = 0; i < TS_MAX_HOLDERS + 1; i++) {
        snprintf(machine, sizeof(machine), "m%u", i);
        nodes[i] = register_node(f, machine);
    }
    uint64_t ino = make_file(f, TS_ROOT_INO, "three");
    static const char value[] = "copies=3";
    struct ts_setxattr_req set = {
        .ino = ino, .name = str("user.tessera.layout"), .value = {value, sizeof(value) - 1}};
    assert_int_equal(CALL(f, TS_OP_SETXATTR, setxattr_req, &set), TS_OK);
    assert_int_equal(tile_map(f, ino, 0, 1, 1, 0, "", &record), TS_OK);
    assert_int_equal(do_commit(f, ino, TILE_BYTES), TS_OK);
    assert_int_equal(holders_of(f, ino, 0, holders), 3);

    /* At its copies: no drop, of a replica or of the primary. */
    assert_int_equal(
        move_begin(f, ino, 0, holders[2].version, TS_MOVE_DROP, holders[2].node, 0, NULL),
        TS_ERR_INVAL);
    assert_text(f, "copies=3");
    assert_int_equal(
        move_begin(f, ino, 0, holders[0].version, TS_MOVE_DROP, holders[0].node, 0, NULL),
        TS_ERR_INVAL);
    assert_text(f, "under its copies");
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
    /* A move keeps three holders: allowed at the floor. */
    uint32_t spare = node_not_holding(nodes, TS_MAX_HOLDERS + 1, holders, 3);
    assert_int_not_equal(spare, 0);
    assert_int_equal(
        move_begin(f, ino, 0, holders[2].version, TS_MOVE_MOVE, holders[2].node, spare, NULL),
        TS_OK);
    commit_and_finish(f, ino, 0);
    assert_int_equal(holders_of(f, ino, 0, holders), 3);

    /* One above the floor: a drop begins; a client drops another holder
     * before the commit, which then aborts instead of going under. */
    uint32_t fourth = node_not_holding(nodes, TS_MAX_HOLDERS + 1, holders, 3);
    add_copy(f, ino, 0, holders[0].version, holders[0].node, fourth);
    assert_int_equal(holders_of(f, ino, 0, holders), 4);
    assert_int_equal(
        move_begin(f, ino, 0, holders[3].version, TS_MOVE_DROP, holders[3].node, 0, NULL), TS_OK);
    assert_int_equal(replica_drop(f, ino, 0, holders[1].node, holders[1].version), TS_OK);
    assert_int_equal(move_commit(f, ino, 0), TS_ERR_STALE);
    assert_text(f, "under its copies");
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
    assert_int_equal(holders_of(f, ino, 0, holders), 3);

    /* Copies up to TS_MAX_HOLDERS, then no more. */
    for (uint32_t count = 3; count < TS_MAX_HOLDERS; count++) {
        assert_int_equal(holders_of(f, ino, 0, holders), count);
        add_copy(f, ino, 0, holders[0].version, holders[0].node,
                 node_not_holding(nodes, TS_MAX_HOLDERS + 1, holders, count));
    }
    assert_int_equal(holders_of(f, ino, 0, holders), TS_MAX_HOLDERS);
    uint32_t outsider = node_not_holding(nodes, TS_MAX_HOLDERS + 1, holders, TS_MAX_HOLDERS);
    assert_int_equal(
        move_begin(f, ino, 0, holders[0].version, TS_MOVE_COPY, holders[0].node, outsider, NULL),
        TS_ERR_TOOBIG);
    assert_text(f, "TS_MAX_HOLDERS");
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
    /* Above the floor, drops go on down to it. */
    for (uint32_t left = TS_MAX_HOLDERS; left > 3; left--) {
        assert_int_equal(holders_of(f, ino, 0, holders), left);
        assert_int_equal(move_begin(f, ino, 0, holders[left - 1].version, TS_MOVE_DROP,
                                    holders[left - 1].node, 0, NULL),
                         TS_OK);
        commit_and_finish(f, ino, 0);
    }
    assert_int_equal(holders_of(f, ino, 0, holders), 3);
    assert_int_equal(
        move_begin(f, ino, 0, holders[1].version, TS_MOVE_DROP, holders[1].node, 0, NULL),
        TS_ERR_INVAL);
}

static void test_move_commit_stale(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    uint64_t target = 0;
    uint32_t done = 0;
    struct ts_move_rec rows[2];

    make_cluster(f, &c, 2);
    /* Truncated between begin and commit: a hole now. */
    assert_int_equal(
        move_begin(f, c.file, 1, c.version[1], TS_MOVE_MOVE, c.alpha, c.beta1, &target), TS_OK);
    assert_int_equal(truncate_to(f, c.file, TILE_BYTES), TS_OK);
    assert_int_equal(move_commit(f, c.file, 1), TS_ERR_STALE);
    assert_text(f, "hole");
    assert_text(f, "aborted");
    /* The entry is gone and the pulled copy is garbage. */
    assert_int_equal(move_list(f, 0, 0, 0, rows, 2, &done), 0);
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 1, target));

    /* Truncated to 0 and written again: another primary version. */
    assert_int_equal(
        move_begin(f, c.file, 0, c.version[0], TS_MOVE_COPY, c.alpha, c.beta2, &target), TS_OK);
    assert_int_equal(truncate_to(f, c.file, 0), TS_OK);
    place_tiles(f, c.file, 1, c.alpha);
    assert_int_equal(move_commit(f, c.file, 0), TS_ERR_STALE);
    assert_text(f, "does not hold");
    assert_true(garbage_has(f, c.beta2, "beta", c.file, 0, target));
    assert_int_equal(tile_of(f, c.file, 0, "beta").holders, 1);

    /* A copy source uncopied by a writer in between. */
    uint64_t v = tile_of(f, c.file, 0, "").version;
    uint64_t copy = add_copy(f, c.file, 0, v, c.alpha, c.beta1);
    v = copy; /* the primary's file too, relinked */
    assert_int_equal(move_begin(f, c.file, 0, copy, TS_MOVE_COPY, c.beta1, c.beta2, &target),
                     TS_OK);
    drop_replicas(f, c.file, 0, 1);
    assert_int_equal(move_commit(f, c.file, 0), TS_ERR_STALE);
    assert_true(garbage_has(f, c.beta2, "beta", c.file, 0, target));

    /* A drop of the primary whose copies went away in between. */
    v = add_copy(f, c.file, 0, v, c.alpha, c.beta1);
    assert_int_equal(move_begin(f, c.file, 0, v, TS_MOVE_DROP, c.alpha, 0, NULL), TS_OK);
    drop_replicas(f, c.file, 0, 1);
    assert_int_equal(move_commit(f, c.file, 0), TS_ERR_STALE);
    assert_text(f, "lose");
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.alpha);
    assert_int_equal(tile_of(f, c.file, 0, "").version, v);
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
}

static void test_move_abort(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    uint64_t target = 0;

    make_cluster(f, &c, 1);
    assert_int_equal(
        move_begin(f, c.file, 0, c.version[0], TS_MOVE_MOVE, c.alpha, c.beta1, &target), TS_OK);
    assert_int_equal(move_abort(f, c.file, 0), TS_OK);
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 0, target));
    /* The map never changed. */
    assert_int_equal(tile_of(f, c.file, 0, "").node, c.alpha);
    assert_int_equal(tile_of(f, c.file, 0, "").version, c.version[0]);
    assert_false(garbage_has(f, c.alpha, "alpha", c.file, 0, c.version[0]));
    assert_int_equal(move_abort(f, c.file, 0), TS_ERR_NOENT);
    assert_text(f, "no relocation");
    assert_int_equal(move_commit(f, c.file, 0), TS_ERR_NOENT);
    /* Begun again after an abort: a fresh target file. */
    uint64_t fresh = 0;
    assert_int_equal(move_begin(f, c.file, 0, c.version[0], TS_MOVE_MOVE, c.alpha, c.beta1, &fresh),
                     TS_OK);
    assert_true(fresh > target);
    assert_int_equal(move_abort(f, c.file, 0), TS_OK);
    /* A copy's abort throws away the source's relinked name too, and only that. */
    uint64_t copied = 0;
    assert_int_equal(
        move_begin(f, c.file, 0, c.version[0], TS_MOVE_COPY, c.alpha, c.beta2, &copied), TS_OK);
    assert_int_equal(move_abort(f, c.file, 0), TS_OK);
    assert_true(garbage_has(f, c.beta2, "beta", c.file, 0, copied));
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, copied));
    assert_false(garbage_has(f, c.alpha, "alpha", c.file, 0, c.version[0]));
    assert_int_equal(tile_of(f, c.file, 0, "").version, c.version[0]);
    /* A drop has no target file to throw away. */
    uint64_t kept = add_copy(f, c.file, 0, c.version[0], c.alpha, c.beta2);
    uint32_t before = garbage_count_of(f, c.alpha, "alpha");
    assert_int_equal(move_begin(f, c.file, 0, kept, TS_MOVE_DROP, c.alpha, 0, NULL), TS_OK);
    assert_int_equal(move_abort(f, c.file, 0), TS_OK);
    assert_int_equal(garbage_count_of(f, c.alpha, "alpha"), before);
}

static void test_move_list_paging(void **state)
{
    struct metafixture *f = *state;
    uint32_t from = register_node(f, "alpha");
    uint32_t to = register_node(f, "beta");
    uint64_t files[5];
    struct ts_move_rec rows[16];
    uint32_t done = 0;
    char name[16];

    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        files[i] = make_file(f, TS_ROOT_INO, name);
        place_tiles(f, files[i], 2, from);
        for (uint64_t tile = 0; tile < 2; tile++)
            assert_int_equal(move_begin(f, files[i], tile, tile_of(f, files[i], tile, "").version,
                                        TS_MOVE_COPY, from, to, NULL),
                             TS_OK);
    }
    metafixture_reopen(f);
    /* Pages of 3 in (ino, tile) order, each after the last one seen. */
    uint64_t after_ino = 0;
    uint64_t after_tile = 0;
    uint32_t seen = 0;
    for (int pages = 0; pages < 10; pages++) {
        uint32_t count = move_list(f, after_ino, after_tile, 3, rows, 16, &done);
        assert_true(count <= 3);
        for (uint32_t i = 0; i < count; i++) {
            assert_int_equal(rows[i].ino, files[(seen + i) / 2]);
            assert_int_equal(rows[i].tile, (seen + i) % 2);
        }
        seen += count;
        if (count > 0) {
            after_ino = rows[count - 1].ino;
            after_tile = rows[count - 1].tile;
        }
        if (done)
            break;
        assert_int_equal(count, 3);
    }
    assert_true(done);
    assert_int_equal(seen, 10);
    /* From the middle of a file. */
    assert_int_equal(move_list(f, files[2], 0, 0, rows, 16, &done), 5);
    assert_int_equal(rows[0].ino, files[2]);
    assert_int_equal(rows[0].tile, 1);
    assert_int_equal(done, 1);
    /* Exactly the rest: done. */
    assert_int_equal(move_list(f, files[3], 1, 2, rows, 16, &done), 2);
    assert_int_equal(done, 1);
}

static void test_unlink_drops_everything(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    uint64_t target = 0;
    struct ts_profile_count_rec counts[] = {{0, 0, 1, 0, 1, 0, 0, 1}};

    make_cluster(f, &c, 2);
    assert_int_equal(profile_set(f, c.file, TS_PROFILE_START, NULL), TS_OK);
    counts[0].ino = c.file;
    assert_int_equal(profile_record(f, "alpha", counts, 1, NULL), TS_OK);
    uint64_t copy = add_copy(f, c.file, 0, c.version[0], c.alpha, c.beta1);
    assert_int_equal(
        move_begin(f, c.file, 1, c.version[1], TS_MOVE_MOVE, c.alpha, c.beta2, &target), TS_OK);
    assert_int_equal(rows_of(f, STORE_PROFILES), 1);

    /* Still open: nothing goes yet. */
    struct ts_open_req open = {.ino = c.file};
    assert_int_equal(CALL(f, TS_OP_OPEN, open_req, &open), TS_OK);
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "f"), TS_OK);
    assert_int_equal(rows_of(f, STORE_JOURNAL), 1);
    struct ts_release_req release = {.ino = c.file};
    assert_int_equal(CALL(f, TS_OP_RELEASE, release_req, &release), TS_OK);

    assert_int_equal(rows_of(f, STORE_PROFILES), 0);
    assert_int_equal(rows_of(f, STORE_COPIES), 0);
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 0, c.version[0]));
    assert_true(garbage_has(f, c.alpha, "alpha", c.file, 1, c.version[1]));
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 0, copy));
    assert_true(garbage_has(f, c.beta2, "beta", c.file, 1, target));
    assert_int_equal(move_commit(f, c.file, 1), TS_ERR_NOENT);
}

static void test_orphan_reaped_at_start(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    uint64_t target = 0;

    make_cluster(f, &c, 1);
    uint64_t copy = add_copy(f, c.file, 0, c.version[0], c.alpha, c.beta1);
    assert_int_equal(move_begin(f, c.file, 0, copy, TS_MOVE_MOVE, c.beta1, c.beta2, &target),
                     TS_OK);
    struct ts_open_req open = {.ino = c.file};
    assert_int_equal(CALL(f, TS_OP_OPEN, open_req, &open), TS_OK);
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "f"), TS_OK);
    /* meta stops with the file open: a lease after the next start, nobody
     * having announced it, it goes with all it had. */
    metafixture_reopen(f);
    assert_int_equal(rows_of(f, STORE_COPIES), 0);
    assert_int_equal(rows_of(f, STORE_JOURNAL), 0);
    assert_true(garbage_has(f, c.beta1, "beta", c.file, 0, copy));
    assert_true(garbage_has(f, c.beta2, "beta", c.file, 0, target));
}

/* ---- TILE_RECONCILE and TILE_HOLDERS ------------------------------------- */

/* TILE_RECONCILE of one file held by node; returns its state, *mapped its mapped_version. */
static uint32_t reconcile_one(struct metafixture *f, uint32_t node, uint64_t ino, uint64_t tile,
                              uint64_t version, uint64_t *mapped)
{
    struct ts_tile_file_rec file = {.ino = ino, .tile = tile, .version = version};
    uint8_t record[ts_tile_file_rec_bytes];
    struct ts_tile_reconcile_rep reply;
    struct ts_reconcile_verdict_rec verdict;
    struct ts_writer writer;
    struct ts_cursor cursor;

    ts_writer_init(&writer, record, sizeof(record));
    ts_tile_file_rec_write(&writer, &file);
    assert_int_equal(writer.len, sizeof(record));
    struct ts_tile_reconcile_req m = {
        .node_id = node, .count = 1, .files = {(const char *)record, sizeof(record)}};
    assert_int_equal(CALL(f, TS_OP_TILE_RECONCILE, tile_reconcile_req, &m), TS_OK);
    assert_int_equal(ts_tile_reconcile_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.count, 1);
    assert_int_equal(reply.verdicts.len, ts_reconcile_verdict_rec_bytes);
    ts_cursor_init(&cursor, reply.verdicts.ptr, reply.verdicts.len);
    assert_int_equal(ts_reconcile_verdict_rec_read(&cursor, &verdict), 0);
    if (mapped)
        *mapped = verdict.mapped_version;
    return verdict.state;
}

static void test_tile_reconcile(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    uint64_t mapped = 0;

    make_cluster(f, &c, 3);
    /* The primary itself; an older and a newer version of it are garbage. */
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 0, c.version[0], &mapped),
                     TS_RECONCILE_MAPPED);
    assert_int_equal(mapped, c.version[0]);
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 1, c.version[0], &mapped),
                     TS_RECONCILE_UNMAPPED);
    assert_int_equal(mapped, c.version[1]);
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 0, c.version[2], &mapped),
                     TS_RECONCILE_UNMAPPED);
    /* A hole, on a node with nothing mapped. */
    assert_int_equal(reconcile_one(f, c.beta1, c.file, 7, c.version[1], &mapped),
                     TS_RECONCILE_UNMAPPED);
    assert_int_equal(mapped, 0);
    /* The primary's file on another node: perhaps this node under a new id. */
    assert_int_equal(reconcile_one(f, c.beta1, c.file, 0, c.version[0], NULL),
                     TS_RECONCILE_ELSEWHERE);

    /* A read copy is mapped on its node, and elsewhere for the others. */
    uint64_t copy = add_copy(f, c.file, 0, c.version[0], c.alpha, c.beta1);
    assert_int_equal(reconcile_one(f, c.beta1, c.file, 0, copy, &mapped), TS_RECONCILE_MAPPED);
    assert_int_equal(mapped, copy);
    assert_int_equal(reconcile_one(f, c.beta2, c.file, 0, copy, NULL), TS_RECONCILE_ELSEWHERE);

    /* A move in progress: its target's new file and its source's are both busy. */
    uint64_t target = 0;
    assert_int_equal(
        move_begin(f, c.file, 1, c.version[1], TS_MOVE_MOVE, c.alpha, c.beta2, &target), TS_OK);
    assert_int_equal(reconcile_one(f, c.beta2, c.file, 1, target, NULL), TS_RECONCILE_MOVING);
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 1, c.version[1], NULL), TS_RECONCILE_MAPPED);
    assert_int_equal(move_commit(f, c.file, 1), TS_OK);
    /* Committed, not finished: the old file is queued and still named by the journal. */
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 1, c.version[1], NULL), TS_RECONCILE_MOVING);
    assert_int_equal(reconcile_one(f, c.beta2, c.file, 1, target, NULL), TS_RECONCILE_MAPPED);
    assert_int_equal(move_commit(f, c.file, 1), TS_OK);
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 1, c.version[1], NULL), TS_RECONCILE_QUEUED);
    /* Once the node confirms the deletion, the name is free: unmapped. */
    struct ts_tile_file_rec garbage[16];
    uint32_t garbage_count = 0;
    heartbeat(f, c.alpha, "alpha", garbage, 16, &garbage_count);
    uint8_t deleted[16 * ts_tile_file_rec_bytes];
    struct ts_writer writer;
    ts_writer_init(&writer, deleted, sizeof(deleted));
    for (uint32_t i = 0; i < garbage_count && i < 16; i++)
        ts_tile_file_rec_write(&writer, &garbage[i]);
    struct ts_heartbeat_req confirm = {
        .node_id = c.alpha,
        .machine = str("alpha"),
        .address = str("tcp://127.0.0.1:7401"),
        .deleted_count = garbage_count,
        .deleted = {(const char *)deleted, (uint32_t)writer.len},
    };
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &confirm), TS_OK);
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 1, c.version[1], NULL),
                     TS_RECONCILE_UNMAPPED);

    /* What this meta never issued is never called garbage. */
    assert_int_equal(reconcile_one(f, c.alpha, c.file + 1000, 0, c.version[0], NULL),
                     TS_RECONCILE_UNISSUED);
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 0, target + 1000, NULL),
                     TS_RECONCILE_UNISSUED);
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 0, 0, NULL), TS_RECONCILE_UNISSUED);

    /* A deleted file's tiles, once their garbage is gone, are unmapped. */
    assert_int_equal(do_unlink(f, TS_ROOT_INO, "f"), TS_OK);
    assert_int_equal(reconcile_one(f, c.alpha, c.file, 2, c.version[2], NULL), TS_RECONCILE_QUEUED);
}

static void test_tile_reconcile_invalid(void **state)
{
    struct metafixture *f = *state;
    uint8_t records[2 * ts_tile_file_rec_bytes] = {0};

    /* A count that does not match the records. */
    struct ts_tile_reconcile_req m = {
        .node_id = 1, .count = 1, .files = {(const char *)records, sizeof(records)}};
    assert_int_equal(CALL(f, TS_OP_TILE_RECONCILE, tile_reconcile_req, &m), TS_ERR_BADMSG);
    /* No node. */
    m.node_id = 0;
    m.count = 2;
    assert_int_equal(CALL(f, TS_OP_TILE_RECONCILE, tile_reconcile_req, &m), TS_ERR_INVAL);
    /* Too many. */
    m.node_id = 1;
    m.count = TS_MAX_RECONCILE_FILES + 1;
    m.files.len = 0;
    assert_int_equal(CALL(f, TS_OP_TILE_RECONCILE, tile_reconcile_req, &m), TS_ERR_BADMSG);
    /* A node meta does not know: refused, so it deletes nothing. */
    m.count = 0;
    assert_int_equal(CALL(f, TS_OP_TILE_RECONCILE, tile_reconcile_req, &m), TS_ERR_NOENT);
    assert_text(f, "not registered");
    /* None at all is a fine question with an empty answer. */
    m.node_id = register_node(f, "alpha");
    assert_int_equal(CALL(f, TS_OP_TILE_RECONCILE, tile_reconcile_req, &m), TS_OK);
}

struct holder_row {
    uint64_t tile;
    uint32_t node;
    uint64_t version;
    uint32_t kind;
};

/* TILE_HOLDERS of tiles [first, first+count); returns the number of rows. */
static uint32_t tile_holders(struct metafixture *f, uint64_t ino, uint64_t first, uint32_t count,
                             struct holder_row *rows, uint32_t cap)
{
    struct ts_tile_holders_req m = {.ino = ino, .first = first, .count = count};
    struct ts_tile_holders_rep reply;
    assert_int_equal(CALL(f, TS_OP_TILE_HOLDERS, tile_holders_req, &m), TS_OK);
    assert_int_equal(ts_tile_holders_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.holders.len, reply.count * ts_tile_holder_rec_bytes);
    assert_true(reply.count <= cap);
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, reply.holders.ptr, reply.holders.len);
    for (uint32_t i = 0; i < reply.count; i++) {
        struct ts_tile_holder_rec record;
        assert_int_equal(ts_tile_holder_rec_read(&cursor, &record), 0);
        rows[i] = (struct holder_row){record.tile, record.node, record.version, record.kind};
    }
    return reply.count;
}

static void test_tile_holders(void **state)
{
    struct metafixture *f = *state;
    struct cluster c;
    struct holder_row rows[8];

    make_cluster(f, &c, 2);
    uint64_t copy_b2 = add_copy(f, c.file, 0, c.version[0], c.alpha, c.beta2);
    uint64_t copy_b1 = add_copy(f, c.file, 0, copy_b2, c.alpha, c.beta1);
    /* Tile 0: primary, then copies by node; tile 1: primary; tile 2: a hole. */
    assert_int_equal(tile_holders(f, c.file, 0, 3, rows, 8), 4);
    assert_int_equal(rows[0].tile, 0);
    assert_int_equal(rows[0].node, c.alpha);
    assert_int_equal(rows[0].version, copy_b1);
    assert_int_equal(rows[0].kind, TS_HOLDER_PRIMARY);
    assert_int_equal(rows[1].node, c.beta1);
    assert_int_equal(rows[1].version, copy_b1);
    assert_int_equal(rows[1].kind, TS_HOLDER_COPY);
    assert_int_equal(rows[2].node, c.beta2);
    assert_int_equal(rows[2].version, copy_b2);
    assert_int_equal(rows[2].kind, TS_HOLDER_COPY);
    assert_int_equal(rows[3].tile, 1);
    assert_int_equal(rows[3].node, c.alpha);
    assert_int_equal(rows[3].kind, TS_HOLDER_PRIMARY);
    /* A range of one tile sees only its own. */
    assert_int_equal(tile_holders(f, c.file, 1, 1, rows, 8), 1);
    assert_int_equal(rows[0].tile, 1);
    /* Uncopied: the primary alone. */
    drop_replicas(f, c.file, 0, 1);
    assert_int_equal(tile_holders(f, c.file, 0, 1, rows, 8), 1);

    struct ts_tile_holders_req bad = {.ino = c.file, .first = 0, .count = 0};
    assert_int_equal(CALL(f, TS_OP_TILE_HOLDERS, tile_holders_req, &bad), TS_ERR_INVAL);
    bad.count = TS_MAX_TILES_PER_MAP + 1;
    assert_int_equal(CALL(f, TS_OP_TILE_HOLDERS, tile_holders_req, &bad), TS_ERR_INVAL);
}

static void test_malformed_payloads_refused(void **state)
{
    struct metafixture *f = *state;
    static const uint16_t ops[] = {TS_OP_REPLICA_DROP, TS_OP_PROFILE_SET, TS_OP_PROFILE_RECORD,
                                   TS_OP_PROFILE_GET, TS_OP_MOVE_BEGIN,  TS_OP_MOVE_COMMIT,
                                   TS_OP_MOVE_ABORT,  TS_OP_MOVE_LIST};
    uint8_t bytes[3] = {1, 2, 3};

    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        assert_int_equal(metafixture_call(f, ops[i], bytes, sizeof(bytes)), TS_ERR_BADMSG);
        assert_text(f, ts_op_name(ops[i]));
        assert_int_equal(metafixture_call(f, ops[i], bytes, 0), TS_ERR_BADMSG);
    }
    /* A string length past the end of the frame. */
    uint8_t record[] = {0xff, 0xff, 'a', 0, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(metafixture_call(f, TS_OP_PROFILE_RECORD, record, sizeof(record)),
                     TS_ERR_BADMSG);
    /* A MOVE_COMMIT with a trailing byte. */
    struct ts_move_tile_req m = {.ino = 1, .tile = 2};
    size_t len = metafixture_encoded_length(
        ts_move_tile_req_encode(&m, f->request, METAFIXTURE_PAYLOAD_CAP));
    f->request[len] = 0;
    assert_int_equal(metafixture_call(f, TS_OP_MOVE_COMMIT, f->request, len + 1), TS_ERR_BADMSG);
    /* The store still serves. */
    assert_int_equal(getattr(f, TS_ROOT_INO).ino, TS_ROOT_INO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_profile_start_inherit_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_record_and_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_get_pages_whole_tiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_reset_stop_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_record_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_map_read_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_map_spreads_remote_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replica_drop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_map_places_replicas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_keeps_replicas_of_cut_tile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_begin_resume_busy_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_begin_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_commit_move_copy_drop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_committed_until_finished, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_of_an_open_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_commit_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moves_keep_holder_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moves_keep_stored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_list_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlink_drops_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_orphan_reaped_at_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_reconcile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_reconcile_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_holders, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_payloads_refused, setup, teardown),
    };
    return cmocka_run_group_tests_name("handlers_relocation", tests, NULL, NULL);
}
