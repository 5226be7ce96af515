/*
 * @file test_toolmeta.c
 * The tool's decoders of meta's array records (tools/toolmeta.c):
 * PROFILE_GET records and MOVE_LIST journal entries, well-formed and not.
 */
#include "toolmeta.h"
#include "proto.h"
#include "status.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void write_profile_record(struct ts_writer *writer, uint64_t tile, const char *machine,
                                 uint64_t base)
{
    struct ts_profile_get_rec record = {.tile = tile,
                                        .machine = ts_str_of(machine),
                                        .reads = base,
                                        .writes = base + 1,
                                        .bytes_read = base + 2,
                                        .bytes_written = base + 3,
                                        .local_bytes = base + 4,
                                        .first_access_ns = base + 5};
    ts_profile_get_rec_write(writer, &record);
}

static void test_profile_records(void **state)
{
    uint8_t blob[512];
    struct ts_writer writer;
    struct toolmeta_access *records = NULL;
    size_t count = 0;
    (void)state;

    ts_writer_init(&writer, blob, sizeof(blob));
    write_profile_record(&writer, 3, "alpha", 10);
    write_profile_record(&writer, 4, "", 20);
    assert_false(writer.failed);
    struct ts_profile_get_rep reply = {.profiling = 1,
                                       .count = 2,
                                       .done = 1,
                                       .records = {(const char *)blob, (uint32_t)writer.len}};
    assert_int_equal(toolmeta_profile_decode(&reply, &records, &count), TS_OK);
    assert_int_equal(count, 2);
    assert_int_equal(records[0].tile, 3);
    assert_string_equal(records[0].machine, "alpha");
    assert_int_equal(records[0].reads, 10);
    assert_int_equal(records[0].writes, 11);
    assert_int_equal(records[0].bytes_read, 12);
    assert_int_equal(records[0].bytes_written, 13);
    assert_int_equal(records[0].local_bytes, 14);
    assert_int_equal(records[0].first_access_ns, 15);
    assert_string_equal(records[1].machine, "");
    assert_int_equal(records[1].first_access_ns, 25);
    free(records);

    /* A count the blob does not hold, a blob with bytes left over, a cut record. */
    reply.count = 3;
    assert_int_equal(toolmeta_profile_decode(&reply, &records, &count), TS_ERR_BADMSG);
    assert_null(records);
    reply.count = 1;
    assert_int_equal(toolmeta_profile_decode(&reply, &records, &count), TS_ERR_BADMSG);
    reply.count = 2;
    reply.records.len -= 1;
    assert_int_equal(toolmeta_profile_decode(&reply, &records, &count), TS_ERR_BADMSG);
    reply.count = 0;
    reply.records.len = 0;
    assert_int_equal(toolmeta_profile_decode(&reply, &records, &count), TS_OK);
    assert_int_equal(count, 0);
    /* A huge count is refused before anything is allocated. */
    reply.count = UINT32_MAX;
    reply.records.len = 100;
    assert_int_equal(toolmeta_profile_decode(&reply, &records, &count), TS_ERR_BADMSG);
}

static void test_long_machine_names_are_cut(void **state)
{
    uint8_t blob[1024];
    char name[400];
    struct ts_writer writer;
    struct toolmeta_access *records = NULL;
    size_t count = 0;
    (void)state;

    memset(name, 'm', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    ts_writer_init(&writer, blob, sizeof(blob));
    write_profile_record(&writer, 0, name, 1);
    struct ts_profile_get_rep reply = {.count = 1,
                                       .records = {(const char *)blob, (uint32_t)writer.len}};
    assert_int_equal(toolmeta_profile_decode(&reply, &records, &count), TS_OK);
    assert_int_equal(strlen(records[0].machine), TS_MAX_NAME);
    assert_int_equal(records[0].reads, 1);
    free(records);
}

static void test_move_records(void **state)
{
    uint8_t blob[2 * ts_move_rec_bytes];
    struct ts_writer writer;
    struct ts_move_rec *moves = NULL;
    size_t count = 0;
    (void)state;

    ts_writer_init(&writer, blob, sizeof(blob));
    for (uint64_t i = 0; i < 2; i++) {
        struct ts_move_rec move = {.ino = 100 + i,
                                   .tile = 7,
                                   .kind = TS_MOVE_MOVE,
                                   .from_node = 1,
                                   .to_node = 3,
                                   .version = 5,
                                   .new_version = 99,
                                   .started_sec = 1700000000,
                                   .state = i == 0 ? TS_MOVE_BEGUN : TS_MOVE_COMMITTED};
        ts_move_rec_write(&writer, &move);
    }
    assert_false(writer.failed);
    assert_int_equal(writer.len, sizeof(blob));
    struct ts_move_list_rep reply = {
        .count = 2, .done = 1, .records = {(const char *)blob, sizeof(blob)}};
    assert_int_equal(toolmeta_move_decode(&reply, &moves, &count), TS_OK);
    assert_int_equal(count, 2);
    assert_int_equal(moves[1].ino, 101);
    assert_int_equal(moves[1].tile, 7);
    assert_int_equal(moves[1].kind, TS_MOVE_MOVE);
    assert_int_equal(moves[1].from_node, 1);
    assert_int_equal(moves[1].to_node, 3);
    assert_int_equal(moves[1].version, 5);
    assert_int_equal(moves[1].new_version, 99);
    assert_int_equal(moves[1].started_sec, 1700000000);
    assert_int_equal(moves[0].state, TS_MOVE_BEGUN);
    assert_int_equal(moves[1].state, TS_MOVE_COMMITTED);
    free(moves);
    reply.count = 3;
    assert_int_equal(toolmeta_move_decode(&reply, &moves, &count), TS_ERR_BADMSG);
    assert_null(moves);
    /* Bytes left over after the records. */
    reply.count = 1;
    assert_int_equal(toolmeta_move_decode(&reply, &moves, &count), TS_ERR_BADMSG);
    assert_null(moves);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_records),
        cmocka_unit_test(test_long_machine_names_are_cut),
        cmocka_unit_test(test_move_records),
    };
    return cmocka_run_group_tests_name("toolmeta", tests, NULL, NULL);
}
