/*
 * meta/metricsdir.c and METRICS_LIST: a datanode's heartbeat and a mount's
 * session renewal list their metrics endpoints; an empty one, a mount's
 * ending session and silence longer than TS_METRICS_ENDPOINT_FRESH_MS
 * drop them; the reply carries meta's own address and decodes record by
 * record; a request with a payload is refused.
 */
#include "metafixture.h"
#include "metricsdir.h"
#include "status.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_directory(void **state)
{
    (void)state;
    struct metricsdir *dir = metricsdir_new();
    size_t count;
    assert_non_null(dir);
    assert_int_equal(metricsdir_note(dir, TS_METRICS_DATANODE, 1, ts_str_of("d1"),
                                     ts_str_of("10.0.0.2:9401"), 1000),
                     0);
    assert_int_equal(metricsdir_note(dir, TS_METRICS_MOUNT, 1, ts_str_of("ws"),
                                     ts_str_of("10.0.0.9:9403"), 5000),
                     0);
    /* Same id, other kind: two entries; a new address replaces the old. */
    assert_int_equal(metricsdir_note(dir, TS_METRICS_DATANODE, 1, ts_str_of("d1"),
                                     ts_str_of("10.0.0.2:9501"), 3000),
                     0);
    const struct metricsdir_entry *entries = metricsdir_fresh(dir, 3000, 10000, &count);
    assert_int_equal(count, 2);
    assert_string_equal(entries[0].address, "10.0.0.2:9501");
    assert_string_equal(entries[1].machine, "ws");
    /* Silence past fresh_ms drops the datanode (last seen 3000), not the mount. */
    entries = metricsdir_fresh(dir, 13500, 10000, &count);
    assert_int_equal(count, 1);
    assert_int_equal(entries[0].kind, TS_METRICS_MOUNT);
    /* An empty address forgets; so does forget; unknown ones are fine. */
    assert_int_equal(
        metricsdir_note(dir, TS_METRICS_MOUNT, 1, ts_str_of("ws"), ts_str_of(""), 14000), 0);
    metricsdir_forget(dir, TS_METRICS_MOUNT, 42);
    metricsdir_fresh(dir, 14000, 10000, &count);
    assert_int_equal(count, 0);
    /* Too long for an entry. */
    char long_text[300];
    memset(long_text, 'a', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    assert_int_equal(
        metricsdir_note(dir, TS_METRICS_MOUNT, 2, ts_str_of("ws"), ts_str_of(long_text), 0),
        -ENAMETOOLONG);
    metricsdir_destroy(&dir);
    assert_null(dir);
    metricsdir_destroy(&dir);
}

/* METRICS_LIST's reply, records decoded into kinds[], ids[] and addresses[]. */
static size_t metrics_list(struct metafixture *f, struct ts_metrics_list_rep *reply,
                           uint32_t *kinds, uint64_t *ids, char (*addresses)[64], size_t cap)
{
    assert_int_equal(metafixture_call(f, TS_OP_METRICS_LIST, NULL, 0), TS_OK);
    assert_int_equal(ts_metrics_list_rep_decode(reply, f->reply, f->reply_len), 0);
    assert_true(reply->count <= cap);
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, reply->endpoints.ptr, reply->endpoints.len);
    for (uint32_t i = 0; i < reply->count; i++) {
        struct ts_metrics_endpoint_rec record;
        assert_int_equal(ts_metrics_endpoint_rec_read(&cursor, &record), 0);
        kinds[i] = record.kind;
        ids[i] = record.id;
        assert_int_equal(ts_str_copy(record.address, addresses[i], 64), 0);
    }
    assert_int_equal(cursor.left, 0);
    return reply->count;
}

static void test_handlers(void **state)
{
    struct metafixture *f = *state;
    struct ts_metrics_list_rep reply;
    uint32_t kinds[4];
    uint64_t ids[4];
    char addresses[4][64];

    assert_int_equal(metrics_list(f, &reply, kinds, ids, addresses, 4), 0);
    assert_int_equal(reply.meta.len, 0);
    snprintf(f->service->metrics_address, sizeof(f->service->metrics_address), "0.0.0.0:9400");

    struct ts_heartbeat_req beat = {.machine = ts_str_of("d1"),
                                    .address = ts_str_of("tcp://10.0.0.2:7401"),
                                    .capacity = 1ull << 30,
                                    .free_bytes = 1ull << 29,
                                    .metrics = ts_str_of("10.0.0.2:9401")};
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &beat), TS_OK);
    struct ts_heartbeat_rep beat_reply;
    assert_int_equal(ts_heartbeat_rep_decode(&beat_reply, f->reply, f->reply_len), 0);

    metafixture_send_as(f, 0x1234);
    struct ts_session_renew_req renew = {.machine = ts_str_of("ws"),
                                         .metrics = ts_str_of("10.0.0.9:9403")};
    assert_int_equal(CALL(f, TS_OP_SESSION_RENEW, session_renew_req, &renew), TS_OK);
    metafixture_send_as(f, 0);

    assert_int_equal(metrics_list(f, &reply, kinds, ids, addresses, 4), 2);
    assert_int_equal(reply.meta.len, strlen("0.0.0.0:9400"));
    assert_memory_equal(reply.meta.ptr, "0.0.0.0:9400", reply.meta.len);
    assert_int_equal(kinds[0], TS_METRICS_DATANODE);
    assert_int_equal(ids[0], beat_reply.node_id);
    assert_string_equal(addresses[0], "10.0.0.2:9401");
    assert_int_equal(kinds[1], TS_METRICS_MOUNT);
    assert_int_equal(ids[1], 0x1234);
    assert_string_equal(addresses[1], "10.0.0.9:9403");

    /* The mount's session ends: it leaves the list. A datanode restarted
     * without --metrics leaves it with its next heartbeat. */
    metafixture_send_as(f, 0x1234);
    struct ts_session_renew_req ending = {.ending = 1};
    assert_int_equal(CALL(f, TS_OP_SESSION_RENEW, session_renew_req, &ending), TS_OK);
    metafixture_send_as(f, 0);
    beat.node_id = beat_reply.node_id;
    beat.metrics = ts_str_of("");
    assert_int_equal(CALL(f, TS_OP_HEARTBEAT, heartbeat_req, &beat), TS_OK);
    assert_int_equal(metrics_list(f, &reply, kinds, ids, addresses, 4), 0);

    uint8_t junk[3] = {1, 2, 3};
    assert_int_equal(metafixture_call(f, TS_OP_METRICS_LIST, junk, sizeof(junk)), TS_ERR_BADMSG);
}

static int setup(void **state)
{
    return metafixture_setup(state, "test_metricsdir", 3000, 0);
}

static int teardown(void **state)
{
    return metafixture_teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directory),
        cmocka_unit_test_setup_teardown(test_handlers, setup, teardown),
    };
    return cmocka_run_group_tests_name("metricsdir", tests, NULL, NULL);
}
