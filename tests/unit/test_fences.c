/*
 * @file test_fences.c
 * Unit tests of the datanode's tile fences (fences.c) against a real
 * retirements file in a fresh temporary directory per case, with the clock
 * moved by hand; and of TILE_FENCE and the fence checks of TILE_WRITE,
 * TILE_TRUNCATE and TILE_READ, called through nodehandlers_table with a real
 * tile store, as rpc_server_dispatch() would after checking the header.
 */
#include "crc32c.h"
#include "fences.h"
#include "nodehandlers.h"
#include "proto.h"
#include "status.h"
#include "tilestore.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

struct fixture {
    char dir[PATH_MAX];
    char retired_path[PATH_MAX + 32];
    struct fences *fences;
    struct tilestore *store;
    struct diskio *disk;
    struct nodehandlers_context context;
    uint8_t payload[1024];
    uint8_t reply[4096];
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    const char *tmp = getenv("TMPDIR");
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_fences.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fixture->dir))
        goto fail;
    snprintf(fixture->retired_path, sizeof(fixture->retired_path), "%s/%s", fixture->dir,
             FENCES_RETIRED_FILE);
    if (fences_open(fixture->dir, &fixture->fences) != 0 ||
        tilestore_open(fixture->dir, 0, &fixture->store) != 0 ||
        diskio_new(fixture->store, 0, &fixture->disk) != 0)
        goto fail;
    fixture->context.store = fixture->store;
    fixture->context.disk = fixture->disk;
    fixture->context.fences = fixture->fences;
    *state = fixture;
    return 0;
fail:
    diskio_destroy(&fixture->disk);
    tilestore_close(&fixture->store);
    fences_close(&fixture->fences);
    free(fixture);
    return -1;
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    nodehandlers_stats_fini(&fixture->context.stats);
    diskio_destroy(&fixture->disk);
    tilestore_close(&fixture->store);
    fences_close(&fixture->fences);
    nftw(fixture->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fixture);
    return 0;
}

/* Closes and reopens the fences, as a restart does. */
static void reopen(struct fixture *fixture)
{
    fences_close(&fixture->fences);
    assert_null(fixture->fences);
    assert_int_equal(fences_open(fixture->dir, &fixture->fences), 0);
    fixture->context.fences = fixture->fences;
}

static off_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

/* ---- fences ----------------------------------------------------------- */

static void test_freeze_until_lease_ends(void **state)
{
    struct fixture *fixture = *state;
    struct fences *fences = fixture->fences;

    assert_int_equal(fences_check(fences, 5, 1, 2, 1000), FENCES_OPEN);
    assert_int_equal(fences_freeze(fences, 5, 1, 2, 100, 1000), 0);
    assert_int_equal(fences_check(fences, 5, 1, 2, 1000), FENCES_FROZEN);
    assert_int_equal(fences_check(fences, 5, 1, 2, 1099), FENCES_FROZEN);
    /* Only that file: another version, tile or inode is not fenced. */
    assert_int_equal(fences_check(fences, 5, 1, 3, 1050), FENCES_OPEN);
    assert_int_equal(fences_check(fences, 5, 2, 2, 1050), FENCES_OPEN);
    assert_int_equal(fences_check(fences, 6, 1, 2, 1050), FENCES_OPEN);
    assert_int_equal(fences_frozen_count(fences, 1050), 1);
    /* The lease ends. */
    assert_int_equal(fences_check(fences, 5, 1, 2, 1100), FENCES_OPEN);
    assert_int_equal(fences_frozen_count(fences, 1100), 0);

    /* Asking again renews the lease from the new time. */
    assert_int_equal(fences_freeze(fences, 5, 1, 2, 100, 2000), 0);
    assert_int_equal(fences_freeze(fences, 5, 1, 2, 100, 2080), 0);
    assert_int_equal(fences_check(fences, 5, 1, 2, 2150), FENCES_FROZEN);
    assert_int_equal(fences_frozen_count(fences, 2150), 1);
    assert_int_equal(fences_check(fences, 5, 1, 2, 2180), FENCES_OPEN);

    /* A freeze is in memory only: a restart forgets it. */
    assert_int_equal(fences_freeze(fences, 5, 1, 2, 100, 3000), 0);
    reopen(fixture);
    assert_int_equal(fences_check(fixture->fences, 5, 1, 2, 3000), FENCES_OPEN);
    assert_int_equal(fences_freeze(fixture->fences, 0, 1, 2, 100, 3000), -EINVAL);
}

static void test_lease_default_and_cap(void **state)
{
    struct fixture *fixture = *state;
    struct fences *fences = fixture->fences;

    assert_int_equal(fences_freeze(fences, 7, 0, 1, 0, 0), 0);
    assert_int_equal(fences_check(fences, 7, 0, 1, FENCES_DEFAULT_LEASE_MS - 1), FENCES_FROZEN);
    assert_int_equal(fences_check(fences, 7, 0, 1, FENCES_DEFAULT_LEASE_MS), FENCES_OPEN);

    assert_int_equal(fences_freeze(fences, 7, 0, 1, UINT32_MAX, 0), 0);
    assert_int_equal(fences_check(fences, 7, 0, 1, FENCES_MAX_LEASE_MS - 1), FENCES_FROZEN);
    assert_int_equal(fences_check(fences, 7, 0, 1, FENCES_MAX_LEASE_MS), FENCES_OPEN);
}

static void test_lift(void **state)
{
    struct fixture *fixture = *state;
    struct fences *fences = fixture->fences;

    assert_int_equal(fences_freeze(fences, 9, 3, 4, 5000, 0), 0);
    assert_int_equal(fences_freeze(fences, 9, 3, 5, 5000, 0), 0);
    fences_lift(fences, 9, 3, 4);
    assert_int_equal(fences_check(fences, 9, 3, 4, 1), FENCES_OPEN);
    assert_int_equal(fences_check(fences, 9, 3, 5, 1), FENCES_FROZEN);
    fences_lift(fences, 9, 3, 4); /* nothing to lift: fine */
    fences_lift(fences, 1, 1, 1);

    /* A lift ends a freeze, never a retirement. */
    assert_int_equal(fences_retire(fences, 9, 3, 5), 0);
    fences_lift(fences, 9, 3, 5);
    assert_int_equal(fences_check(fences, 9, 3, 5, 1), FENCES_RETIRED);
}

static void test_retire_persists(void **state)
{
    struct fixture *fixture = *state;

    assert_int_equal(fences_retire(fixture->fences, 11, 0, 1), 0);
    assert_int_equal(fences_retire(fixture->fences, 11, 1, 1), 0);
    assert_int_equal(fences_retire(fixture->fences, UINT64_MAX, UINT64_MAX, UINT64_MAX), 0);
    assert_int_equal(fences_retire(fixture->fences, 0, 1, 1), -EINVAL);
    assert_int_equal(file_size(fixture->retired_path), 3 * FENCES_RECORD_BYTES);
    /* Retiring again changes nothing, not even the file. */
    assert_int_equal(fences_retire(fixture->fences, 11, 0, 1), 0);
    assert_int_equal(file_size(fixture->retired_path), 3 * FENCES_RECORD_BYTES);
    assert_int_equal(fences_retired_count(fixture->fences), 3);

    reopen(fixture);
    assert_int_equal(fences_retired_count(fixture->fences), 3);
    assert_int_equal(fences_check(fixture->fences, 11, 0, 1, 0), FENCES_RETIRED);
    assert_int_equal(fences_check(fixture->fences, 11, 1, 1, 0), FENCES_RETIRED);
    assert_int_equal(fences_check(fixture->fences, UINT64_MAX, UINT64_MAX, UINT64_MAX, 0),
                     FENCES_RETIRED);
    assert_int_equal(fences_check(fixture->fences, 11, 0, 2, 0), FENCES_OPEN);
    assert_int_equal(fences_check(fixture->fences, 11, 2, 1, 0), FENCES_OPEN);
}

static void test_many_retirements(void **state)
{
    struct fixture *fixture = *state;

    /* Enough to grow the set several times. */
    for (uint64_t i = 1; i <= 1000; i++)
        assert_int_equal(fences_retire(fixture->fences, i, i % 7, 3), 0);
    reopen(fixture);
    assert_int_equal(fences_retired_count(fixture->fences), 1000);
    for (uint64_t i = 1; i <= 1000; i++) {
        assert_int_equal(fences_check(fixture->fences, i, i % 7, 3, 0), FENCES_RETIRED);
        assert_int_equal(fences_check(fixture->fences, i, i % 7, 4, 0), FENCES_OPEN);
    }
}

static void test_torn_tail_is_cut(void **state)
{
    struct fixture *fixture = *state;
    const uint8_t torn[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

    assert_int_equal(fences_retire(fixture->fences, 21, 0, 1), 0);
    assert_int_equal(fences_retire(fixture->fences, 22, 0, 1), 0);
    fences_close(&fixture->fences);

    /* A crash in the middle of an append leaves part of a record. */
    int fd = open(fixture->retired_path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, torn, sizeof(torn)), sizeof(torn));
    close(fd);

    reopen(fixture);
    assert_int_equal(fences_retired_count(fixture->fences), 2);
    assert_int_equal(fences_check(fixture->fences, 21, 0, 1, 0), FENCES_RETIRED);
    assert_int_equal(fences_check(fixture->fences, 22, 0, 1, 0), FENCES_RETIRED);
    assert_int_equal(file_size(fixture->retired_path), 2 * FENCES_RECORD_BYTES);

    /* The next append lands on a record boundary and survives a restart. */
    assert_int_equal(fences_retire(fixture->fences, 23, 0, 1), 0);
    reopen(fixture);
    assert_int_equal(fences_retired_count(fixture->fences), 3);
    assert_int_equal(fences_check(fixture->fences, 23, 0, 1, 0), FENCES_RETIRED);
}

static void test_damaged_record_is_skipped(void **state)
{
    struct fixture *fixture = *state;
    uint8_t byte;

    assert_int_equal(fences_retire(fixture->fences, 31, 0, 1), 0);
    assert_int_equal(fences_retire(fixture->fences, 32, 0, 1), 0);
    assert_int_equal(fences_retire(fixture->fences, 33, 0, 1), 0);
    fences_close(&fixture->fences);

    /* Flip one bit of the second record's tile field. */
    int fd = open(fixture->retired_path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &byte, 1, FENCES_RECORD_BYTES + 8), 1);
    byte ^= 0x10;
    assert_int_equal(pwrite(fd, &byte, 1, FENCES_RECORD_BYTES + 8), 1);
    close(fd);

    reopen(fixture);
    assert_int_equal(fences_retired_count(fixture->fences), 2);
    assert_int_equal(fences_check(fixture->fences, 31, 0, 1, 0), FENCES_RETIRED);
    assert_int_equal(fences_check(fixture->fences, 32, 0, 1, 0), FENCES_OPEN);
    assert_int_equal(fences_check(fixture->fences, 33, 0, 1, 0), FENCES_RETIRED);
    /* The records after it stay readable, and new ones follow them. */
    assert_int_equal(fences_retire(fixture->fences, 34, 0, 1), 0);
    reopen(fixture);
    assert_int_equal(fences_retired_count(fixture->fences), 3);
    assert_int_equal(fences_check(fixture->fences, 34, 0, 1, 0), FENCES_RETIRED);
}

/* ---- handlers --------------------------------------------------------- */

static struct rpc_request make_request(uint16_t op, const uint8_t *payload, size_t payload_len,
                                       const void *data, size_t data_len)
{
    struct rpc_request request = {
        .header = {.magic = TS_PROTO_MAGIC,
                   .version = TS_PROTO_VERSION,
                   .type = op,
                   .request_id = 1,
                   .payload_bytes = (uint32_t)payload_len,
                   .data_bytes = (uint32_t)data_len},
        .payload = payload,
        .payload_len = payload_len,
        .data = data,
        .data_len = data_len,
    };
    return request;
}

static struct rpc_response make_response(struct fixture *fixture)
{
    struct rpc_response response;
    memset(&response, 0, sizeof(response));
    response.payload = fixture->reply;
    response.payload_cap = sizeof(fixture->reply);
    return response;
}

static int call(struct fixture *fixture, uint16_t op, int payload_len, const void *data,
                size_t data_len, struct rpc_response *response)
{
    assert_true(payload_len >= 0);
    struct rpc_request request =
        make_request(op, fixture->payload, (size_t)payload_len, data, data_len);
    *response = make_response(fixture);
    assert_non_null(nodehandlers_table[op]);
    int status = nodehandlers_table[op](&fixture->context, &request, response);
    if (response->data && response->data_free)
        response->data_free(response->data, NULL);
    response->data = NULL;
    return status;
}

static int tile_write(struct fixture *fixture, uint64_t ino, uint64_t tile, uint64_t version,
                      const void *data, size_t len, struct rpc_response *response)
{
    struct ts_tile_write_req req = {
        .ino = ino, .tile = tile, .version = version, .offset = 0, .crc = crc32c(0, data, len)};
    int len_encoded = ts_tile_write_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    return call(fixture, TS_OP_TILE_WRITE, len_encoded, data, len, response);
}

static int tile_read(struct fixture *fixture, uint64_t ino, uint64_t tile, uint64_t version,
                     struct rpc_response *response)
{
    struct ts_tile_read_req req = {
        .ino = ino, .tile = tile, .version = version, .offset = 0, .length = 100};
    int len = ts_tile_read_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    return call(fixture, TS_OP_TILE_READ, len, NULL, 0, response);
}

static int tile_truncate(struct fixture *fixture, uint64_t ino, uint64_t tile, uint64_t version,
                         struct rpc_response *response)
{
    struct ts_tile_truncate_req req = {.ino = ino, .tile = tile, .version = version, .length = 3};
    int len = ts_tile_truncate_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    return call(fixture, TS_OP_TILE_TRUNCATE, len, NULL, 0, response);
}

static int tile_fence(struct fixture *fixture, uint64_t ino, uint64_t tile, uint64_t version,
                      uint32_t action, uint32_t lease_ms, struct ts_tile_fence_rep *reply)
{
    struct ts_tile_fence_req req = {
        .ino = ino, .tile = tile, .version = version, .action = action, .lease_ms = lease_ms};
    struct rpc_response response;
    int len = ts_tile_fence_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    int status = call(fixture, TS_OP_TILE_FENCE, len, NULL, 0, &response);
    memset(reply, 0, sizeof(*reply));
    if (status == TS_OK)
        assert_int_equal(ts_tile_fence_rep_decode(reply, response.payload, response.payload_len),
                         0);
    else
        assert_true(response.error_text[0] != '\0');
    return status;
}

static void test_handler_freeze_and_lift(void **state)
{
    struct fixture *fixture = *state;
    struct rpc_response response;
    struct ts_tile_fence_rep reply;
    uint8_t data[777];

    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 13);
    assert_int_equal(tile_write(fixture, 40, 2, 5, data, sizeof(data), &response), TS_OK);

    /* The reply carries the file as it is. */
    assert_int_equal(tile_fence(fixture, 40, 2, 5, TS_FENCE_FREEZE, 60000, &reply), TS_OK);
    assert_int_equal(reply.bytes, sizeof(data));
    assert_int_equal(reply.checksum, crc32c(0, data, sizeof(data)));

    /* Frozen: changes are refused with a text that says what to do; reads go on. */
    assert_int_equal(tile_write(fixture, 40, 2, 5, data, 10, &response), TS_ERR_STALE);
    assert_non_null(strstr(response.error_text, "being moved"));
    assert_non_null(strstr(response.error_text, "ask meta"));
    assert_non_null(strstr(response.error_text, "40.2.5"));
    assert_int_equal(tile_truncate(fixture, 40, 2, 5, &response), TS_ERR_STALE);
    assert_non_null(strstr(response.error_text, "being moved"));
    assert_int_equal(tile_read(fixture, 40, 2, 5, &response), TS_OK);
    /* Another version of the tile is not frozen. */
    assert_int_equal(tile_write(fixture, 40, 2, 6, data, 10, &response), TS_OK);

    /* The refused changes changed nothing. */
    assert_int_equal(tile_fence(fixture, 40, 2, 5, TS_FENCE_FREEZE, 0, &reply), TS_OK);
    assert_int_equal(reply.bytes, sizeof(data));
    assert_int_equal(reply.checksum, crc32c(0, data, sizeof(data)));

    assert_int_equal(tile_fence(fixture, 40, 2, 5, TS_FENCE_LIFT, 0, &reply), TS_OK);
    assert_int_equal(tile_write(fixture, 40, 2, 5, data, 10, &response), TS_OK);
    assert_int_equal(tile_truncate(fixture, 40, 2, 5, &response), TS_OK);
    assert_int_equal(tile_fence(fixture, 40, 2, 5, TS_FENCE_LIFT, 0, &reply), TS_OK);
    assert_int_equal(reply.bytes, 3);
    assert_int_equal(reply.checksum, crc32c(0, data, 3));
    assert_int_equal(fixture->context.stats.requests[TS_OP_TILE_FENCE], 4);
}

static void test_handler_retire(void **state)
{
    struct fixture *fixture = *state;
    struct rpc_response response;
    struct ts_tile_fence_rep reply;
    uint8_t data[100] = {1, 2, 3};

    assert_int_equal(tile_write(fixture, 41, 0, 1, data, sizeof(data), &response), TS_OK);
    assert_int_equal(tile_fence(fixture, 41, 0, 1, TS_FENCE_RETIRE, 0, &reply), TS_OK);
    assert_int_equal(reply.bytes, sizeof(data));
    assert_int_equal(reply.checksum, crc32c(0, data, sizeof(data)));

    assert_int_equal(tile_read(fixture, 41, 0, 1, &response), TS_ERR_STALE);
    assert_non_null(strstr(response.error_text, "moved away"));
    assert_non_null(strstr(response.error_text, "ask meta"));
    assert_int_equal(tile_write(fixture, 41, 0, 1, data, 1, &response), TS_ERR_STALE);
    assert_int_equal(tile_truncate(fixture, 41, 0, 1, &response), TS_ERR_STALE);

    /* Meta's garbage deletion removes the file, not the retirement. */
    assert_int_equal(tilestore_delete(fixture->store, 41, 0, 1), 0);
    reopen(fixture);
    assert_int_equal(tile_read(fixture, 41, 0, 1, &response), TS_ERR_STALE);
    assert_int_equal(tile_fence(fixture, 41, 0, 1, TS_FENCE_LIFT, 0, &reply), TS_OK);
    assert_int_equal(reply.bytes, 0);
    assert_int_equal(reply.checksum, 0);
    assert_int_equal(tile_write(fixture, 41, 0, 1, data, 1, &response), TS_ERR_STALE);
}

static void test_handler_fence_of_missing_file(void **state)
{
    struct fixture *fixture = *state;
    struct ts_tile_fence_rep reply;

    assert_int_equal(tile_fence(fixture, 42, 9, 9, TS_FENCE_FREEZE, 10, &reply), TS_OK);
    assert_int_equal(reply.bytes, 0);
    assert_int_equal(reply.checksum, 0);
}

static void test_handler_fence_invalid(void **state)
{
    struct fixture *fixture = *state;
    struct ts_tile_fence_rep reply;
    struct rpc_response response;
    struct ts_tile_fence_req req = {.ino = 1, .tile = 1, .version = 1, .action = 1};

    assert_int_equal(tile_fence(fixture, 43, 0, 1, 3, 0, &reply), TS_ERR_INVAL);
    assert_int_equal(tile_fence(fixture, 43, 0, 1, UINT32_MAX, 0, &reply), TS_ERR_INVAL);
    assert_int_equal(tile_fence(fixture, 0, 0, 1, TS_FENCE_FREEZE, 0, &reply), TS_ERR_INVAL);
    assert_int_equal(fences_check(fixture->fences, 43, 0, 1, 0), FENCES_OPEN);

    int len = ts_tile_fence_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    assert_true(len > 0);
    assert_int_equal(call(fixture, TS_OP_TILE_FENCE, len - 1, NULL, 0, &response), TS_ERR_BADMSG);
    assert_true(response.error_text[0] != '\0');
    fixture->payload[len] = 0;
    assert_int_equal(call(fixture, TS_OP_TILE_FENCE, len + 1, NULL, 0, &response), TS_ERR_BADMSG);
    assert_int_equal(call(fixture, TS_OP_TILE_FENCE, 0, NULL, 0, &response), TS_ERR_BADMSG);
    assert_int_equal(fences_check(fixture->fences, 1, 1, 1, 0), FENCES_OPEN);
}

static void test_handler_without_fences(void **state)
{
    struct fixture *fixture = *state;
    struct ts_tile_fence_rep reply;
    struct rpc_response response;
    uint8_t data[4] = {4, 3, 2, 1};

    assert_int_equal(fences_retire(fixture->fences, 44, 0, 1), 0);
    fixture->context.fences = NULL;
    assert_int_equal(tile_fence(fixture, 44, 0, 1, TS_FENCE_FREEZE, 0, &reply), TS_ERR_NOTSUP);
    /* Without fences nothing is checked. */
    assert_int_equal(tile_write(fixture, 44, 0, 1, data, sizeof(data), &response), TS_OK);
    fixture->context.fences = fixture->fences;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_freeze_until_lease_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_default_and_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retire_persists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_retirements, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_record_is_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_freeze_and_lift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_retire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_fence_of_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_fence_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_without_fences, setup, teardown),
    };
    return cmocka_run_group_tests_name("fences", tests, NULL, NULL);
}
