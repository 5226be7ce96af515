/* Unit tests for librarian/perfmodel.c: hand-computable cases. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "perfmodel.h"

/* Two datanodes on machines 1 and 2, one client on machine 0; disks 100
 * MB/s, links 1000 MB/s, no CPU cost, no latency. */
static void two_node_cluster(struct perfmodel_cluster *c)
{
    memset(c, 0, sizeof *c);
    c->n_nodes = 2;
    c->n_machines = 3;
    for (int i = 0; i < 2; i++)
        c->nodes[i] = (struct perfmodel_node){ .machine = i + 1,
            .disk_read_mbps = 100, .disk_write_mbps = 50, .sync_seconds = 0.5 };
    for (int m = 0; m < 3; m++)
        c->links[m] = (struct perfmodel_link){ .mbps = 1000 };
}

static char *bottleneck_name(const struct perfmodel_result *r)
{
    static char buf[64];
    perfmodel_resource_name(&r->resources[r->bottleneck], buf, sizeof buf);
    return buf;
}

/* 400 MB read, 4 MB tiles round-robin over two 100 MB/s disks: each disk
 * serves 200 MB = 2 s, they overlap, so 2 s (not 4 s) and disk-bound. */
static void test_read_disks_overlap(void **state)
{
    (void)state;
    struct perfmodel_cluster c;
    two_node_cluster(&c);
    struct perfmodel_workload w = { .op = PERFMODEL_READ, .bytes = 400000000,
        .tile_bytes = 4000000, .n_clients = 1, .copies = 1 };
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 2.0) < 1e-9);
    assert_true(strncmp(bottleneck_name(&r), "disk[", 5) == 0);
    /* The client's link carries all 400 MB at 1000 MB/s: 0.4 s busy. */
    int seen = 0;
    for (size_t i = 0; i < r.n_resources; i++)
        if (r.resources[i].kind == PERFMODEL_RES_LINK_IN &&
            r.resources[i].index == 0) {
            assert_true(fabs(r.resources[i].busy_s - 0.4) < 1e-9);
            seen = 1;
        }
    assert_true(seen);
    /* disk=inf: now the client's link (0.4 s) is the slowest resource. */
    struct perfmodel_whatif wi = { .disk_inf = 1 };
    assert_int_equal(perfmodel_predict(&c, &w, &wi, &r), 0);
    assert_true(fabs(r.total_s - 0.4) < 1e-9);
    assert_string_equal(bottleneck_name(&r), "link-in[0]");
}

/* The case: mount CPU bound.  2 us per request + 1 ns per byte at
 * the mount, 100 tiles of 4 MB: 100 * (2e-6 + 4e-2) = 4.0002 s, twice
 * the disks' 2 s, so the mount is the bottleneck. */
static void test_mount_cpu_bottleneck(void **state)
{
    (void)state;
    struct perfmodel_cluster c;
    two_node_cluster(&c);
    c.mount_cpu_per_request_s = 2e-6;
    c.mount_cpu_per_byte_s = 1e-8;
    struct perfmodel_workload w = { .op = PERFMODEL_READ, .bytes = 400000000,
        .tile_bytes = 4000000, .n_clients = 1, .copies = 1 };
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 4.0002) < 1e-9);
    assert_string_equal(bottleneck_name(&r), "mount-cpu[0]");
    /* Two clients split the mount work: 2.0001 s, now just above disk. */
    w.n_clients = 2;
    w.client_machine[1] = 0;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 2.0001) < 1e-9);
    struct perfmodel_whatif wi = { .cpu_inf = 1 };
    assert_int_equal(perfmodel_predict(&c, &w, &wi, &r), 0);
    assert_true(fabs(r.total_s - 2.0) < 1e-9);
}

/* Writes with two copies: every tile goes to both nodes, so each 50 MB/s
 * disk takes all 100 MB = 2 s; closing adds the 0.5 s final sync and the
 * start-up and closing each a 10 ms meta round trip: 2.52 s. */
static void test_write_copies_sync_and_meta(void **state)
{
    (void)state;
    struct perfmodel_cluster c;
    two_node_cluster(&c);
    c.meta_rtt_s = 0.01;
    struct perfmodel_workload w = { .op = PERFMODEL_WRITE, .bytes = 100000000,
        .tile_bytes = 1000000, .n_clients = 1, .copies = 2 };
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.startup_s - 0.01) < 1e-9);
    assert_true(fabs(r.closing_s - 0.51) < 1e-9);
    assert_true(fabs(r.total_s - 2.52) < 1e-9);
}

/* A client on the datanode's own machine skips the network. */
static void test_local_read_skips_link(void **state)
{
    (void)state;
    struct perfmodel_cluster c;
    two_node_cluster(&c);
    c.n_nodes = 1;
    c.links[1].mbps = 1; /* would dominate if used */
    struct perfmodel_workload w = { .op = PERFMODEL_READ, .bytes = 10000000,
        .tile_bytes = 1000000, .n_clients = 1, .client_machine = { 1 },
        .copies = 1 };
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 0.1) < 1e-9);
}

/* Four datanodes, one on each of machines 0-3; links 10 MB/s, disks and
 * CPU free: a transfer's time is the links'. */
static void four_host_cluster(struct perfmodel_cluster *c)
{
    memset(c, 0, sizeof *c);
    c->n_nodes = 4;
    c->n_machines = 4;
    for (int i = 0; i < 4; i++) {
        c->nodes[i] = (struct perfmodel_node){.machine = i};
        c->links[i] = (struct perfmodel_link){.mbps = 10};
    }
}

static double busy_of(const struct perfmodel_result *r, enum perfmodel_resource_kind kind,
                      int index)
{
    for (size_t i = 0; i < r->n_resources; i++)
        if (r->resources[i].kind == kind && r->resources[i].index == index)
            return r->resources[i].busy_s;
    return 0.0;
}

/*
 * As meta places copies (tile_map_writer_node): a tile whose primary is
 * on another machine than its writer's gets its second holder there, so
 * a copies=2 write from machine 0 sends each of 4 tiles over its link
 * once (not 6 of the 8 copies), and reading it back there crosses no link.
 */
static void test_writer_keeps_a_copy(void **state)
{
    (void)state;
    struct perfmodel_cluster c;
    four_host_cluster(&c);
    size_t holders[3];
    perfmodel_holders(&c, 2, 2, 0, holders);
    assert_int_equal(holders[0], 2);
    assert_int_equal(holders[1], 0);
    perfmodel_holders(&c, 0, 2, 0, holders); /* the primary is the writer's */
    assert_int_equal(holders[1], 1);
    perfmodel_holders(&c, 2, 3, 0, holders);
    assert_int_equal(holders[1], 0);
    assert_int_equal(holders[2], 3);
    perfmodel_holders(&c, 2, 2, -1, holders); /* writer unknown: the next node */
    assert_int_equal(holders[1], 3);

    struct perfmodel_workload w = {.op = PERFMODEL_WRITE,
                                   .bytes = 4000000,
                                   .tile_bytes = 1000000,
                                   .n_clients = 1,
                                   .client_machine = {0},
                                   .copies = 2,
                                   .writer_copies = 1};
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(busy_of(&r, PERFMODEL_RES_LINK_OUT, 0) - 0.4) < 1e-9);
    w.writer_copies = 0; /* on {0,1} {1,2} {2,3} {3,0}: 6 of 8 copies cross */
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(busy_of(&r, PERFMODEL_RES_LINK_OUT, 0) - 0.6) < 1e-9);

    w.op = PERFMODEL_READ;
    w.writer_copies = 1;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(busy_of(&r, PERFMODEL_RES_LINK_IN, 0) == 0.0);
    w.writer_copies = 0; /* from the primaries: 3 of 4 tiles over the link */
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(busy_of(&r, PERFMODEL_RES_LINK_IN, 0) - 0.3) < 1e-9);
}

/* Two mounts and two datanodes on one 2-core machine: each process's CPU
 * is below the machine's, but together they queue on its two cores. */
static void test_machine_cores_shared(void **state)
{
    (void)state;
    struct perfmodel_cluster c;
    two_node_cluster(&c);
    c.nodes[0].machine = c.nodes[1].machine = 0;
    c.nodes[0].disk_read_mbps = c.nodes[1].disk_read_mbps = 0; /* page cache */
    c.mount_cpu_per_byte_s = 1e-9;
    c.nodes[0].cpu_per_byte_s = c.nodes[1].cpu_per_byte_s = 1e-9;
    c.machine_cores[0] = 2;
    struct perfmodel_workload w = { .op = PERFMODEL_READ, .bytes = 400000000,
        .tile_bytes = 1000000, .n_clients = 2, .copies = 1 };
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    /* Each mount 0.2 s, each node 0.2 s; 0.8 s of CPU on 2 cores: 0.4 s. */
    assert_true(fabs(r.total_s - 0.4) < 1e-9);
    assert_string_equal(bottleneck_name(&r), "machine-cpu[0]");
    c.machine_cores[0] = 0;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 0.2) < 1e-9);
}

/* The client machine's CPU per byte, as measured, replaces the sum of the
 * mount's and the local datanodes' figures there (the application's and
 * the kernel's share were missing from it); a second copy's datanode work
 * is beyond what the copies=1 measure saw, so it still adds. */
static void test_client_cpu_measured(void **state)
{
    (void)state;
    struct perfmodel_cluster c;
    two_node_cluster(&c);
    c.nodes[0].machine = c.nodes[1].machine = 0;
    c.nodes[0].disk_read_mbps = c.nodes[1].disk_read_mbps = 0;
    c.nodes[0].disk_write_mbps = c.nodes[1].disk_write_mbps = 0;
    c.nodes[0].sync_seconds = c.nodes[1].sync_seconds = 0;
    c.mount_cpu_per_byte_s = 1e-9;
    c.nodes[0].cpu_per_byte_s = c.nodes[1].cpu_per_byte_s = 1e-9;
    c.machine_cores[0] = 2;
    c.client_cpu.read_per_byte_s = 3e-9;
    c.client_cpu.write_per_byte_s = 5e-9;
    struct perfmodel_workload w = {.op = PERFMODEL_READ,
                                   .bytes = 400000000,
                                   .tile_bytes = 1000000,
                                   .n_clients = 2,
                                   .copies = 1};
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    /* 400 MB x 3 ns on 2 cores: 0.6 s, not the parts' 0.8 s / 2. */
    assert_true(fabs(r.total_s - 0.6) < 1e-9);
    assert_string_equal(bottleneck_name(&r), "machine-cpu[0]");
    /* A write with two copies: 400 MB x 5 ns / 2 = 1.0 s, plus the second
     * copy's datanode CPU, 400 MB x 1 ns / 2 = 0.2 s. */
    w.op = PERFMODEL_WRITE;
    w.copies = 2;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 1.2) < 1e-9);
    /* A further copy measured (2 ns/byte: 0.4 s) replaces the datanode's
     * figure, and 1 ms per request adds 400 x 1 ms / 2 = 0.2 s. */
    c.client_cpu.copy_per_byte_s = 2e-9;
    c.client_cpu.write_per_request_s = 1e-3;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 1.6) < 1e-9);
    /* An array file's write costs what the array probe measured (7 ns/byte,
     * per request included): 400 MB x 7 ns / 2 = 1.4 s, + 0.4 s for the copy. */
    c.client_cpu.array_write_per_byte_s = 7e-9;
    w.array = 1;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 1.8) < 1e-9);
    w.array = 0;
    /* On a machine of unknown cores the measure has nothing to share. */
    c.machine_cores[0] = 0;
    w.op = PERFMODEL_READ;
    w.copies = 1;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 0.2) < 1e-9);
}

/* Without read-ahead a client's tiles come one after another: 100 tiles
 * of 1 MB, each 10 ms of disk (100 MB/s) plus 2 ms of mount CPU, add up
 * to 1.2 s although the two disks overlapped would take 0.5 s. */
static void test_serial_chain(void **state)
{
    (void)state;
    struct perfmodel_cluster c;
    two_node_cluster(&c);
    c.mount_cpu_per_request_s = 2e-3;
    struct perfmodel_workload w = { .op = PERFMODEL_READ, .bytes = 100000000,
        .tile_bytes = 1000000, .n_clients = 1, .copies = 1 };
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 0.5) < 1e-9);
    w.serial = 1;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    /* Each tile also crosses the 1000 MB/s link: 1 ms more. */
    assert_true(fabs(r.total_s - 1.3) < 1e-9);
    assert_string_equal(bottleneck_name(&r), "chain[0]");
    /* Two serial clients run their chains side by side. */
    w.n_clients = 2;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    assert_true(fabs(r.total_s - 0.65) < 1e-9);
}

static void test_rejects_bad_input(void **state)
{
    (void)state;
    struct perfmodel_cluster c;
    two_node_cluster(&c);
    struct perfmodel_workload w = { .op = PERFMODEL_READ, .bytes = 1,
        .tile_bytes = 0, .n_clients = 1, .copies = 1 };
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), -1);
    w.tile_bytes = 1;
    w.copies = 3; /* more copies than nodes */
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), -1);
    w.copies = 1;
    w.client_machine[0] = 7; /* no such machine */
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), -1);
    w.client_machine[0] = 0;
    /* An explicit placement must name real nodes and sum to bytes. */
    uint32_t nodes[2] = { 0, 2 }, lens[2] = { 1, 1 };
    w.bytes = 2;
    w.n_tiles = 2;
    w.tile_nodes = nodes;
    w.tile_lens = lens;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), -1);
    nodes[1] = 1;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), 0);
    w.bytes = 3;
    assert_int_equal(perfmodel_predict(&c, &w, NULL, &r), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_disks_overlap),
        cmocka_unit_test(test_mount_cpu_bottleneck),
        cmocka_unit_test(test_write_copies_sync_and_meta),
        cmocka_unit_test(test_local_read_skips_link),
        cmocka_unit_test(test_writer_keeps_a_copy),
        cmocka_unit_test(test_machine_cores_shared),
        cmocka_unit_test(test_client_cpu_measured),
        cmocka_unit_test(test_serial_chain),
        cmocka_unit_test(test_rejects_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
