/*
 * @file test_diskspace.c
 * Unit tests of librarian/diskspace: datanodes of one machine on one disk
 * count it once (capped by the disk's size and free space), --capacity
 * limits below the disk add up, the same disk id on two machines is two
 * disks, and a node without a disk id counts on its own.
 */
#include "diskspace.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

static void test_one_disk_four_datanodes(void **state)
{
    (void)state;
    struct diskspace_node nodes[4];
    for (int i = 0; i < 4; i++)
        nodes[i] = (struct diskspace_node){"vm", 42, 1000, 400, 1000, 400};
    struct diskspace_total total;
    diskspace_sum(nodes, 4, &total);
    assert_int_equal(total.capacity, 1000);
    assert_int_equal(total.free_bytes, 400);
    assert_int_equal(total.disks, 1);
}

static void test_limits_machines_and_unknown_disks(void **state)
{
    (void)state;
    const struct diskspace_node nodes[] = {
        {"a", 7, 1000, 400, 100, 60},  /* --capacity 100 on a's disk 7 */
        {"a", 7, 1000, 400, 300, 250}, /* --capacity 300 on the same disk */
        {"a", 9, 500, 50, 500, 50},    /* a's second disk */
        {"b", 7, 1000, 300, 1000, 300}, /* b's disk with the same id: another disk */
        {"b", 0, 0, 0, 80, 8},         /* no disk id: on its own */
        {"a", 7, 1000, 400, 900, 400},  /* a third node on a's disk 7: now over the disk */
    };
    struct diskspace_total total;
    diskspace_sum(nodes, 5, &total);
    assert_int_equal(total.capacity, 100 + 300 + 500 + 1000 + 80);
    assert_int_equal(total.free_bytes, 60 + 250 + 50 + 300 + 8);
    assert_int_equal(total.disks, 4);
    diskspace_sum(nodes, 6, &total);
    assert_int_equal(total.capacity, 1000 + 500 + 1000 + 80);   /* disk a/7 capped at its size */
    assert_int_equal(total.free_bytes, 400 + 50 + 300 + 8);     /* and at what it has free */
    assert_int_equal(total.disks, 4);
    diskspace_sum(nodes, 0, &total);
    assert_int_equal(total.capacity, 0);
    assert_int_equal(total.disks, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_disk_four_datanodes),
        cmocka_unit_test(test_limits_machines_and_unknown_disks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
