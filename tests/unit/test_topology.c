/*
 * @file test_topology.c
 * Unit tests of the topology file parser (librarian/topology.c): the
 * documented example, rates and comments, and a line-numbered error for
 * each kind of bad line.
 */
#include "topology.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_documented_example(void **state)
{
    (void)state;
    const char *text = "# two racks\n"
                       "subcluster core\n"
                       "subcluster rack-a parent core link 125M\n"
                       "\n"
                       "subcluster rack-b link 1G parent core   # a comment\n"
                       "machine node1 rack-a\n"
                       "  machine node2\track-b\r\n"
                       "machine hub core";
    struct topology t;
    char error[128] = "";
    size_t v;

    assert_int_equal(topology_parse(text, &t, error, sizeof(error)), 0);
    assert_int_equal(t.subcluster_count, 3);
    assert_string_equal(t.subcluster_names[0], "core");
    assert_int_equal(t.parent[0], TOPOLOGY_ROOT);
    assert_int_equal(t.parent[1], 0);
    assert_int_equal(t.parent[2], 0);
    assert_true(t.link_bytes_per_sec[1] == 125e6);
    assert_true(t.link_bytes_per_sec[2] == 1e9);
    assert_int_equal(t.machine_count, 3);
    assert_int_equal(topology_subcluster_of(&t, "node1", &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(topology_subcluster_of(&t, "node2", &v), 0);
    assert_int_equal(v, 2);
    assert_int_equal(topology_subcluster_of(&t, "hub", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(topology_subcluster_of(&t, "elsewhere", &v), -ENOENT);
    assert_int_equal(topology_subcluster_index(&t, "rack-b", &v), 0);
    assert_int_equal(v, 2);
    topology_release(&t);
    assert_int_equal(t.subcluster_count, 0);
    topology_release(&t); /* twice is harmless */
}

static void test_default_rate(void **state)
{
    (void)state;
    struct topology t;
    assert_int_equal(topology_parse("subcluster a\nsubcluster b parent a\n", &t, NULL, 0), 0);
    assert_true(t.link_bytes_per_sec[1] == TOPOLOGY_DEFAULT_LINK_BYTES_PER_SEC);
    topology_release(&t);
}

/* Each bad file fails with -EINVAL and the message that names its line. */
static void test_errors_name_the_line(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"", "no subcluster: a topology needs at least a root"},
        {"# only a comment\n", "no subcluster: a topology needs at least a root"},
        {"subcluster a\nsubcluster b\n",
         "line 2: subcluster 'b' has no parent but 'a' is already the root"},
        {"subcluster a\nsubcluster a parent a\n", "line 2: subcluster 'a' declared twice"},
        {"subcluster a\nsubcluster b parent c\n",
         "line 2: parent 'c' is not a subcluster declared above"},
        {"subcluster a\n\nsubcluster b parent a link fast\n",
         "line 3: link rate 'fast' is not bytes/s like 125000000 or 125M"},
        {"subcluster a\nsubcluster b parent a link 0\n",
         "line 2: link rate '0' is not bytes/s like 125000000 or 125M"},
        {"subcluster a\nsubcluster b parent a link 12MM\n",
         "line 2: link rate '12MM' is not bytes/s like 125000000 or 125M"},
        {"subcluster a link 5\n", "line 1: the root 'a' has no link to give a rate"},
        {"subcluster a\nsubcluster b parent a parent a\n", "line 2: unexpected 'parent'"},
        {"subcluster a colour red\n", "line 1: unexpected 'colour'"},
        {"subcluster a parent\n", "line 1: expected 'subcluster NAME [parent NAME] [link RATE]'"},
        {"subcluster a\nmachine m\n", "line 2: expected 'machine NAME SUBCLUSTER'"},
        {"subcluster a\nmachine m b\n", "line 2: 'b' is not a subcluster declared above"},
        {"subcluster a\nmachine m a\nmachine m a\n", "line 3: machine 'm' declared twice"},
        {"machine m a\n", "line 1: 'a' is not a subcluster declared above"},
        {"subcluster a\nrack b\n",
         "line 2: unknown statement 'rack' (expected subcluster or machine)"},
        {"subcluster a b c d e f g\n", "line 1: too many words"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct topology t;
        char error[160] = "";
        assert_int_equal(topology_parse(cases[k].text, &t, error, sizeof(error)), -EINVAL);
        assert_string_equal(error, cases[k].message);
        assert_int_equal(t.subcluster_count, 0);
        assert_null(t.subcluster_names);
    }
}

static void test_long_name(void **state)
{
    (void)state;
    char text[TOPOLOGY_MAX_NAME + 40];
    char error[128] = "";
    struct topology t;
    memcpy(text, "subcluster ", 11);
    memset(text + 11, 'x', TOPOLOGY_MAX_NAME + 1);
    text[11 + TOPOLOGY_MAX_NAME + 1] = '\0';
    assert_int_equal(topology_parse(text, &t, error, sizeof(error)), -EINVAL);
    assert_string_equal(error, "line 1: a name longer than 255 bytes");
    text[11 + TOPOLOGY_MAX_NAME] = '\0';
    assert_int_equal(topology_parse(text, &t, error, sizeof(error)), 0);
    topology_release(&t);
}

/* Many subclusters and machines: the arrays grow past their first size. */
static void test_many_entries(void **state)
{
    (void)state;
    char text[8192];
    size_t used = 0;
    struct topology t;
    used += (size_t)snprintf(text + used, sizeof(text) - used, "subcluster s0\n");
    for (int k = 1; k < 40; k++)
        used +=
            (size_t)snprintf(text + used, sizeof(text) - used,
                             "subcluster s%d parent s%d\nmachine m%d s%d\n", k, (k - 1) / 2, k, k);
    assert_int_equal(topology_parse(text, &t, NULL, 0), 0);
    assert_int_equal(t.subcluster_count, 40);
    assert_int_equal(t.machine_count, 39);
    assert_int_equal(t.parent[39], 19);
    topology_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_documented_example),   cmocka_unit_test(test_default_rate),
        cmocka_unit_test(test_errors_name_the_line), cmocka_unit_test(test_long_name),
        cmocka_unit_test(test_many_entries),
    };
    return cmocka_run_group_tests_name("topology", tests, NULL, NULL);
}
