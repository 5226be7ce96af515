/*
 * @file test_metatarget.c
 * Unit tests of tools/metatarget.c's reading of the tessera.cluster
 * attribute: "ID ENDPOINT" with a 32-hex-digit id and a one-word endpoint,
 * read from the bytes getxattr(2) returns (no NUL); anything else refused.
 */
#include "metatarget.h"

#include "proto.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define CLUSTER_ID "0123456789abcdef0123456789ABCDEF"

static int parse(const char *value, char *id, char *endpoint)
{
    return metatarget_parse_cluster(value, strlen(value), id, TS_CLUSTER_ID_HEX + 1, endpoint,
                                    METATARGET_ENDPOINT_MAX);
}

static void test_id_and_endpoint_split(void **state)
{
    char id[TS_CLUSTER_ID_HEX + 1];
    char endpoint[METATARGET_ENDPOINT_MAX];
    (void)state;
    assert_int_equal(parse(CLUSTER_ID " tcp://127.0.0.1:7400", id, endpoint), 0);
    assert_string_equal(id, CLUSTER_ID);
    assert_string_equal(endpoint, "tcp://127.0.0.1:7400");
    assert_int_equal(parse(CLUSTER_ID " ipc:///run/tessera/meta", id, endpoint), 0);
    assert_string_equal(endpoint, "ipc:///run/tessera/meta");
}

static void test_value_without_nul(void **state)
{
    char value[] = CLUSTER_ID " tcp://h:1XXXX"; /* getxattr's bytes, then other memory */
    char id[TS_CLUSTER_ID_HEX + 1];
    char endpoint[METATARGET_ENDPOINT_MAX];
    (void)state;
    assert_int_equal(metatarget_parse_cluster(value, TS_CLUSTER_ID_HEX + 10, id, sizeof(id),
                                              endpoint, sizeof(endpoint)),
                     0);
    assert_string_equal(endpoint, "tcp://h:1");
}

static void test_malformed_values_refused(void **state)
{
    char id[TS_CLUSTER_ID_HEX + 1];
    char endpoint[METATARGET_ENDPOINT_MAX];
    (void)state;
    assert_int_equal(parse("", id, endpoint), -EINVAL);
    assert_int_equal(parse(CLUSTER_ID, id, endpoint), -EINVAL);
    assert_int_equal(parse(CLUSTER_ID " ", id, endpoint), -EINVAL);
    assert_int_equal(parse(CLUSTER_ID " tcp://a:1 tcp://b:2", id, endpoint), -EINVAL);
    assert_int_equal(parse("0123 tcp://a:1", id, endpoint), -EINVAL);
    assert_int_equal(parse(CLUSTER_ID "0 tcp://a:1", id, endpoint), -EINVAL);
    assert_int_equal(parse("0123456789abcdef0123456789abcdeg tcp://a:1", id, endpoint), -EINVAL);
    assert_int_equal(metatarget_parse_cluster(CLUSTER_ID " tcp://a:1", TS_CLUSTER_ID_HEX + 10, id,
                                              sizeof(id), endpoint, 5),
                     -ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_and_endpoint_split),
        cmocka_unit_test(test_value_without_nul),
        cmocka_unit_test(test_malformed_values_refused),
    };
    return cmocka_run_group_tests_name("metatarget", tests, NULL, NULL);
}
