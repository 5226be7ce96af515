/* Unit tests for tools/modelworkload.c, tools/modelcluster.c and the pure
 * fit of tools/modelprobe.c: what `tessera model` is asked and told. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "modelcluster.h"
#include "modelprobe.h"
#include "modelworkload.h"

static void test_words(void **state)
{
    (void)state;
    struct modelworkload w;
    char err[256];
    char *words[] = { "op=write", "size=1G", "tile=256K", "clients=4", "nodes=3", "copies=2",
                      "mounts=2" };
    modelworkload_init(&w);
    assert_int_equal(modelworkload_parse_words(&w, 7, words, err, sizeof(err)), 0);
    assert_int_equal(w.op, PERFMODEL_WRITE);
    assert_int_equal(w.bytes, 1ull << 30);
    assert_int_equal(w.tile_bytes, 256u << 10);
    assert_int_equal(w.clients, 4);
    assert_int_equal(w.nodes, 3);
    assert_int_equal(w.copies, 2);
    assert_int_equal(w.mounts, 2);
    assert_int_equal(w.is_array, 0);

    char *bad[][1] = { { "op=append" }, { "size=lots" }, { "tile=0" }, { "clients=0" },
                       { "copies=99" }, { "colour=red" }, { "nodes" }, { "=4" },
                       { "layout=array:4x4" }, { "layout=array:4x4:f33" },
                       { "layout=array:4x4:f32:mesh=9" }, { "layout=striped" } };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        modelworkload_init(&w);
        err[0] = '\0';
        assert_int_equal(modelworkload_parse_words(&w, 1, bad[i], err, sizeof(err)), -1);
        assert_true(err[0] != '\0');
    }
}

/*
 * machines=: the machines the mounts are on, at least one mount each and
 * never more mounts than clients; malformed lists refused.
 */
static void test_machines(void **state)
{
    (void)state;
    struct modelworkload w;
    char err[256];
    char *words[] = {"clients=4", "machines=host1,host2,host3,host4"};
    modelworkload_init(&w);
    assert_int_equal(modelworkload_mounts(&w), 1);
    assert_int_equal(modelworkload_parse_words(&w, 2, words, err, sizeof(err)), 0);
    assert_int_equal(w.n_machines, 4);
    assert_string_equal(w.machines[0], "host1");
    assert_string_equal(w.machines[3], "host4");
    assert_int_equal(modelworkload_mounts(&w), 4);
    char *more[] = {"mounts=8", "clients=8"};
    assert_int_equal(modelworkload_parse_words(&w, 2, more, err, sizeof(err)), 0);
    assert_int_equal(modelworkload_mounts(&w), 8);
    char *fewer[] = {"clients=2"};
    assert_int_equal(modelworkload_parse_words(&w, 1, fewer, err, sizeof(err)), 0);
    assert_int_equal(modelworkload_mounts(&w), 2);
    modelworkload_describe(&w, err, sizeof(err));
    assert_non_null(strstr(err, "on several machines"));

    char long_name[300];
    memset(long_name, 'h', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    char too_long[320];
    snprintf(too_long, sizeof(too_long), "machines=%s", long_name);
    char *bad[][1] = {{"machines="},   {"machines=a,,b"},
                      {"machines=a,"}, {"machines=,a"},
                      {too_long},      {"machines=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        modelworkload_init(&w);
        err[0] = '\0';
        assert_int_equal(modelworkload_parse_words(&w, 1, bad[i], err, sizeof(err)), -1);
        assert_non_null(strstr(err, "machines="));
    }
}

/* An array's size is its shape's; its tiles go to their chunks' homes. */
static void test_array_placement(void **state)
{
    (void)state;
    struct modelworkload w;
    char err[256];
    char *words[] = { "layout=array:4096x4096:f32:mesh=2x2", "tile=1M" };
    modelworkload_init(&w);
    assert_int_equal(modelworkload_parse_words(&w, 2, words, err, sizeof(err)), 0);
    assert_int_equal(w.is_array, 1);
    assert_int_equal(w.bytes, 4096ull * 4096 * 4);
    char *sized[] = { "size=1G" };
    assert_int_equal(modelworkload_parse_words(&w, 1, sized, err, sizeof(err)), -1);

    /* Four nodes on four machines: the 2x2 mesh's four chunks, one each. */
    int machines[4] = { 0, 1, 2, 3 };
    struct modelplacement p;
    assert_int_equal(modelworkload_place(&w, machines, 4, &p, err, sizeof(err)), 0);
    assert_int_equal(p.n_tiles, 64);
    unsigned per_node[4] = { 0 };
    uint64_t sum = 0;
    for (size_t t = 0; t < p.n_tiles; t++) {
        assert_true(p.tile_nodes[t] < 4);
        per_node[p.tile_nodes[t]]++;
        sum += p.tile_lens[t];
    }
    assert_int_equal(sum, w.bytes);
    for (int n = 0; n < 4; n++)
        assert_int_equal(per_node[n], 16);
    modelplacement_free(&p);

    /* A 2x1 mesh over four nodes: two chunks, so two nodes idle -- the
     * load the model sees is the placement's, not round-robin's. */
    char *narrow[] = { "layout=array:4096x4096:f32:mesh=2x1" };
    assert_int_equal(modelworkload_parse_words(&w, 1, narrow, err, sizeof(err)), 0);
    assert_int_equal(modelworkload_place(&w, machines, 4, &p, err, sizeof(err)), 0);
    memset(per_node, 0, sizeof(per_node));
    for (size_t t = 0; t < p.n_tiles; t++)
        per_node[p.tile_nodes[t]]++;
    int used = 0;
    for (int n = 0; n < 4; n++)
        used += per_node[n] > 0;
    assert_int_equal(used, 2);
    modelplacement_free(&p);

    /* Linear: no explicit placement. */
    modelworkload_init(&w);
    assert_int_equal(modelworkload_place(&w, machines, 4, &p, err, sizeof(err)), 0);
    assert_null(p.tile_nodes);
}

static void test_file(void **state)
{
    (void)state;
    char path[] = "/tmp/test_modelworkload.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "[workload]\nop = write\nsize = 64M\nclients = 2\n";
    assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
    close(fd);
    struct modelworkload w;
    char err[256];
    modelworkload_init(&w);
    int rc = modelworkload_read_file(&w, path, err, sizeof(err));
    assert_int_equal(rc, 0);
    assert_int_equal(w.op, PERFMODEL_WRITE);
    assert_int_equal(w.bytes, 64u << 20);
    assert_int_equal(w.clients, 2);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[workload]\nop = read\nspeed = 9\n", f);
    fclose(f);
    rc = modelworkload_read_file(&w, path, err, sizeof(err));
    unlink(path);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, ":3: unknown key speed"));
    assert_int_equal(modelworkload_read_file(&w, "/nonexistent/w.ini", err, sizeof(err)), -1);
}

static void test_whatif(void **state)
{
    (void)state;
    struct modelwhatif wi = { 0 };
    char err[256];
    assert_int_equal(modelwhatif_parse("disk=inf,net=inf,nodes=8,tile=4M", &wi, err, sizeof(err)), 0);
    assert_true(wi.inf.disk_inf && wi.inf.net_inf && !wi.inf.cpu_inf);
    assert_int_equal(wi.nodes, 8);
    assert_int_equal(wi.tile_bytes, 4u << 20);
    struct modelworkload w;
    modelworkload_init(&w);
    modelwhatif_apply(&wi, &w);
    assert_int_equal(w.nodes, 8);
    assert_int_equal(w.tile_bytes, 4u << 20);
    assert_int_equal(modelwhatif_parse("disk=fast", &wi, err, sizeof(err)), -1);
    assert_int_equal(modelwhatif_parse("nodes=0", &wi, err, sizeof(err)), -1);
}

static void test_calib_record(void **state)
{
    (void)state;
    struct modelcalib in = { .when = 1764300000, .mount_per_request_s = 2e-4,
        .mount_read_per_byte_s = 1.5e-9, .mount_write_per_byte_s = 3e-9, .meta_rtt_s = 1e-4,
        .n_nodes = 2 };
    in.client_cpu =
        (struct perfmodel_client_cpu){1.25e-9, 2.5e-9, 3e-5, 4e-5, 0.75e-9, 2e-9, 6e-9, 9e-9};
    in.mount_array_read_per_byte_s = 7e-9;
    in.mount_array_write_per_byte_s = 8e-9;
    in.nodes[0] = (struct modelcalib_node){ 3, 5e-5, 1e-9, 0.01 };
    in.nodes[1] = (struct modelcalib_node){ 9, 6e-5, 2e-9, 0.02 };
    in.n_links = 2;
    in.links[0] = (struct modelcalib_link){"host1", 24.5};
    in.links[1] = (struct modelcalib_link){"rack2-node07", 1180};
    char text[MODELCALIB_TEXT_MAX];
    assert_int_equal(modelcalib_format(&in, text, sizeof(text)), 0);
    struct modelcalib out;
    assert_int_equal(modelcalib_parse(text, strlen(text), &out), 0);
    assert_int_equal(out.when, in.when);
    assert_int_equal(out.n_nodes, 2);
    assert_int_equal(out.nodes[1].id, 9);
    assert_true(fabs(out.mount_write_per_byte_s - 3e-9) < 1e-18);
    assert_true(fabs(out.nodes[1].sync_s - 0.02) < 1e-12);
    assert_true(fabs(out.client_cpu.read_per_byte_s - 1.25e-9) < 1e-18);
    assert_true(fabs(out.client_cpu.write_per_byte_s - 2.5e-9) < 1e-18);
    assert_true(fabs(out.client_cpu.read_per_request_s - 3e-5) < 1e-15);
    assert_true(fabs(out.client_cpu.write_per_request_s - 4e-5) < 1e-15);
    assert_true(fabs(out.client_cpu.copy_per_byte_s - 0.75e-9) < 1e-18);
    assert_true(fabs(out.client_cpu.array_read_per_byte_s - 2e-9) < 1e-18);
    assert_true(fabs(out.client_cpu.array_write_per_byte_s - 6e-9) < 1e-18);
    assert_true(fabs(out.mount_array_read_per_byte_s - 7e-9) < 1e-18);
    assert_true(fabs(out.mount_array_write_per_byte_s - 8e-9) < 1e-18);
    assert_true(fabs(out.client_cpu.remote_read_per_byte_s - 9e-9) < 1e-18);
    assert_int_equal(out.n_links, 2);
    assert_string_equal(out.links[0].machine, "host1");
    assert_true(fabs(out.links[0].mbps - 24.5) < 1e-9);
    assert_string_equal(out.links[1].machine, "rack2-node07");
    assert_true(fabs(out.links[1].mbps - 1180) < 1e-9);
    /* A record from before the client line parses, with no client figure. */
    const char *old = "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\n";
    assert_int_equal(modelcalib_parse(old, strlen(old), &out), 0);
    assert_true(out.client_cpu.read_per_byte_s == 0.0 && out.client_cpu.write_per_byte_s == 0.0);
    assert_int_equal(out.n_links, 0);
    assert_true(out.client_cpu.remote_read_per_byte_s == 0.0);
    /* From the wire: anything malformed is refused, never half-taken. */
    const char *bad[] = {"",
                         "tessera-model 2\nwhen 1\nmount 0 0 0\nmeta 0\n",
                         "tessera-model 1\nwhen 1\nmount 0 0\nmeta 0\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta -1\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta nan\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nnode 1 0 0\n",
                         "tessera-model 1\nmount 0 0 0\nmeta 0\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nclient 1e-9 1e-9\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nclient 0 0 0 0 0\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nclient -1 0 0 0 0 0 0\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nlink host1\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nremote -1e-9\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nremote 1e-9 2e-9\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nlink host1 0\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nlink host1 -5\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nlink host1 25 x\n",
                         "tessera-model 1\nwhen 1\nmount 0 0 0\nmeta 0\nlink "
                         "a-machine-name-longer-than-sixty-three-characters-is-never-stored 25\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(modelcalib_parse(bad[i], strlen(bad[i]), &out), -1);
    assert_int_equal(modelcalib_parse("tessera-model 1\0", 16, &out), -1);
    assert_int_equal(modelcalib_format(&in, text, 20), -1);
}

static struct toolmeta_node node_on(uint32_t id, const char *machine, uint64_t read_bps,
                                    uint64_t throttle)
{
    struct toolmeta_node n = { .id = id, .state = TS_NODE_UP, .read_bytes_per_sec = read_bps,
                               .write_bytes_per_sec = read_bps,
                               .throttle_bytes_per_sec = throttle };
    snprintf(n.machine, sizeof(n.machine), "%s", machine);
    return n;
}

static void test_cluster_sources(void **state)
{
    (void)state;
    static struct modelcluster c;
    struct toolmeta_node nodes[3] = { node_on(1, "a", 500000000, 0),
                                      node_on(2, "b", 500000000, 40000000),
                                      node_on(3, "b", 0, 0) };
    nodes[2].state = TS_NODE_DOWN;
    assert_int_equal(modelcluster_build(nodes, 3, NULL, "a", 2, 0, &c), 0);
    assert_int_equal(c.model.n_nodes, 2); /* the down node is left out */
    assert_int_equal(c.node_ids[1], 2);
    assert_true(fabs(c.model.nodes[0].disk_read_mbps - 500) < 1e-9);
    assert_true(fabs(c.model.nodes[1].disk_read_mbps - 40) < 1e-9); /* its throttle */
    assert_int_equal(c.disk_source, MODELCLUSTER_HEARTBEAT);
    assert_int_equal(c.cpu_source, MODELCLUSTER_DEFAULT);
    assert_int_equal(c.client_machine, 0);
    assert_int_equal(c.model.machine_cores[0], 2);
    assert_true(fabs(c.model.meta_rtt_s - MODELCLUSTER_DEFAULT_META_RTT_S) < 1e-12);

    struct modelcalib calib = { .when = 5, .mount_per_request_s = 1e-5, .meta_rtt_s = 7e-5,
                                .n_nodes = 1 };
    calib.nodes[0] = (struct modelcalib_node){ 2, 3e-5, 1e-9, 0.02 };
    assert_int_equal(modelcluster_build(nodes, 3, &calib, "elsewhere", 0, 5, &c), 0);
    assert_int_equal(c.model.n_nodes, 5); /* nodes=5: the two, repeated */
    assert_int_equal(c.node_ids[3], 0);
    assert_true(fabs(c.model.nodes[1].cpu_per_request_s - 3e-5) < 1e-15);
    assert_true(fabs(c.model.nodes[0].cpu_per_request_s - MODELCLUSTER_DEFAULT_NODE_REQUEST_S) <
                1e-15);
    assert_int_equal(c.cpu_source, MODELCLUSTER_CALIBRATED);
    assert_int_equal(c.client_machine, 2); /* a third machine */
    assert_true(fabs(c.model.meta_rtt_s - 7e-5) < 1e-15);
    nodes[0].state = nodes[1].state = TS_NODE_DOWN;
    assert_int_equal(modelcluster_build(nodes, 3, NULL, "a", 2, 0, &c), -1);
}

/*
 * A machine's calibrated link is its own; a machine calibrate did not run
 * on gets the measured one (machines cabled alike), not the default; and a
 * read of tiles held on other machines is bound by it.
 */
static void test_cluster_links(void **state)
{
    (void)state;
    static struct modelcluster c;
    struct toolmeta_node nodes[4] = {
        node_on(1, "host1", 2000000000, 0), node_on(2, "host2", 2000000000, 0),
        node_on(3, "host3", 2000000000, 0), node_on(4, "host4", 2000000000, 0)};
    assert_int_equal(modelcluster_build(nodes, 4, NULL, "host1", 2, 0, &c), 0);
    assert_int_equal(c.model.n_machines, 4);
    for (size_t m = 0; m < 4; m++)
        assert_true(fabs(c.model.links[m].mbps - MODELCLUSTER_DEFAULT_LINK_MBPS) < 1e-9);

    struct modelcalib calib = {.when = 5, .meta_rtt_s = 1e-4, .n_links = 1};
    calib.links[0] = (struct modelcalib_link){"host1", 24};
    assert_int_equal(modelcluster_build(nodes, 4, &calib, "host1", 2, 0, &c), 0);
    for (size_t m = 0; m < 4; m++)
        assert_true(fabs(c.model.links[m].mbps - 24) < 1e-9);
    /* A profile's reader on a machine no datanode runs on: the same. */
    int reader = modelcluster_machine_index(&c, "laptop");
    assert_int_equal(reader, 4);
    assert_true(fabs(c.model.links[reader].mbps - 24) < 1e-9);
    /* Host 2's own measure wins over host 1's. */
    calib.n_links = 2;
    calib.links[1] = (struct modelcalib_link){"host2", 100};
    assert_int_equal(modelcluster_build(nodes, 4, &calib, "host1", 2, 0, &c), 0);
    assert_true(fabs(c.model.links[0].mbps - 24) < 1e-9);
    assert_true(fabs(c.model.links[1].mbps - 100) < 1e-9);
    assert_true(fabs(c.model.links[2].mbps - 24) < 1e-9);

    /* 96 MiB read round-robin from host 1: 72 MiB cross host 1's 24 MB/s link. */
    calib.n_links = 1;
    assert_int_equal(modelcluster_build(nodes, 4, &calib, "host1", 0, 0, &c), 0);
    struct perfmodel_workload w = {.op = PERFMODEL_READ,
                                   .bytes = 96u << 20,
                                   .tile_bytes = 1u << 20,
                                   .n_clients = 1,
                                   .client_machine = {c.client_machine},
                                   .copies = 1};
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&c.model, &w, NULL, &r), 0);
    assert_int_equal(r.resources[r.bottleneck].kind, PERFMODEL_RES_LINK_IN);
    double link_s = (72.0 * 1048576) / 24e6;
    assert_true(r.total_s >= link_s && r.total_s < link_s * 1.05);
    /* A probe that took the link's time and 3 % more says nothing of the
     * mount's CPU; 30 % more is the mount's. */
    assert_true(modelprobe_fit_mount(&c.model, PERFMODEL_READ, 0, 96u << 20, 1u << 20,
                                     c.client_machine, r.total_s * 1.03) < 0);
    assert_true(modelprobe_fit_mount(&c.model, PERFMODEL_READ, 0, 96u << 20, 1u << 20,
                                     c.client_machine, r.total_s * 1.3) > 0);
    /* A fit above the machine's whole CPU per byte is waiting, not the
     * mount's work: 33 ns/byte where the machine was busy 8.1. */
    assert_true(modelprobe_mount_plausible(33e-9, 8.1e-9) < 0);
    assert_true(fabs(modelprobe_mount_plausible(1.2e-9, 2.2e-9) - 1.2e-9) < 1e-18);
    assert_true(fabs(modelprobe_mount_plausible(33e-9, -1.0) - 33e-9) < 1e-18); /* unknown */
    assert_true(modelprobe_mount_plausible(-1.0, 2e-9) < 0);
}

/*
 * 3/4 of a probe's bytes came from other machines and cost the machine
 * 7 ns/byte in all; an all-local read 1 ns/byte: a remote byte costs 8 ns
 * more than a local one, so of the 6.5 ns/byte per-byte part (the rest
 * per request) a local byte is 0.5 and a remote one 8.5.  The model then
 * charges a local copies=2 read the local figure.
 */
static void test_split_remote(void **state)
{
    (void)state;
    struct perfmodel_client_cpu cpu = {.read_per_byte_s = 6.5e-9, .write_per_byte_s = 8e-9};
    assert_int_equal(modelprobe_split_remote(&cpu, 0.75, 7e-9, 1e-9), 0);
    assert_true(fabs(cpu.read_per_byte_s - 0.5e-9) < 1e-18);
    assert_true(fabs(cpu.remote_read_per_byte_s - 8.5e-9) < 1e-18);
    assert_true(fabs(cpu.write_per_byte_s - 8e-9) < 1e-18);
    struct perfmodel_client_cpu same = {.read_per_byte_s = 6.5e-9};
    assert_int_equal(modelprobe_split_remote(&same, 0.0, 7e-9, 1e-9), -1);  /* one machine */
    assert_int_equal(modelprobe_split_remote(&same, 1.0, 7e-9, 1e-9), -1);  /* no local node */
    assert_int_equal(modelprobe_split_remote(&same, 0.75, 1e-9, 2e-9), -1); /* remote cheaper */
    assert_int_equal(modelprobe_split_remote(&same, 0.75, 7e-9, -1.0), -1); /* not measured */
    assert_true(same.read_per_byte_s == 6.5e-9 && same.remote_read_per_byte_s == 0.0);
    /* The per-request share (from the mixed probes) is all of a local
     * byte's cost and more: a local byte costs (almost) nothing beyond
     * its request, never "not measured". */
    assert_int_equal(modelprobe_split_remote(&same, 0.75, 8e-9, 1e-9), 0);
    assert_true(same.read_per_byte_s > 0 && same.read_per_byte_s < 1e-12);
    assert_true(fabs(same.remote_read_per_byte_s - 7e-9 / 0.75) < 1e-12);

    static struct modelcluster c;
    struct toolmeta_node nodes[4] = {
        node_on(1, "host1", 2000000000, 0), node_on(2, "host2", 2000000000, 0),
        node_on(3, "host3", 2000000000, 0), node_on(4, "host4", 2000000000, 0)};
    struct modelcalib calib = {.when = 5, .meta_rtt_s = 1e-4, .n_links = 1};
    calib.links[0] = (struct modelcalib_link){"host1", 1000};
    calib.client_cpu = cpu;
    assert_int_equal(modelcluster_build(nodes, 4, &calib, "host1", 1, 0, &c), 0);
    struct perfmodel_workload w = {.op = PERFMODEL_READ,
                                   .bytes = 64u << 20,
                                   .tile_bytes = 1u << 20,
                                   .n_clients = 1,
                                   .client_machine = {c.client_machine},
                                   .copies = 2,
                                   .writer_copies = 1};
    struct perfmodel_result local, remote;
    assert_int_equal(perfmodel_predict(&c.model, &w, NULL, &local), 0);
    w.copies = 1;
    assert_int_equal(perfmodel_predict(&c.model, &w, NULL, &remote), 0);
    double local_cpu = 0, remote_cpu = 0;
    for (size_t i = 0; i < local.n_resources; i++)
        if (local.resources[i].kind == PERFMODEL_RES_MACHINE_CPU)
            local_cpu = local.resources[i].busy_s;
    for (size_t i = 0; i < remote.n_resources; i++)
        if (remote.resources[i].kind == PERFMODEL_RES_MACHINE_CPU)
            remote_cpu = remote.resources[i].busy_s;
    assert_true(fabs(local_cpu - 0.5e-9 * (64u << 20)) < 1e-6);
    assert_true(fabs(remote_cpu - (0.25 * 0.5e-9 + 0.75 * 8.5e-9) * (64u << 20)) < 1e-6);
}

/* The fit gives back the per-byte cost that produced a time. */
static void test_fit_mount(void **state)
{
    (void)state;
    static struct modelcluster c;
    struct toolmeta_node nodes[2] = { node_on(1, "a", 1000000000, 0),
                                      node_on(2, "a", 1000000000, 0) };
    assert_int_equal(modelcluster_build(nodes, 2, NULL, "a", 0, 0, &c), 0);
    struct perfmodel_cluster m = c.model;
    m.mount_cpu_per_byte_s = 4e-9;
    struct perfmodel_workload w = { .op = PERFMODEL_READ, .bytes = 64u << 20,
        .tile_bytes = 1u << 20, .n_clients = 1, .copies = 1 };
    struct perfmodel_result r;
    assert_int_equal(perfmodel_predict(&m, &w, NULL, &r), 0);
    assert_int_equal(r.resources[r.bottleneck].kind, PERFMODEL_RES_MOUNT_CPU);
    double fit =
        modelprobe_fit_mount(&c.model, PERFMODEL_READ, 0, 64u << 20, 1u << 20, 0, r.total_s);
    assert_true(fabs(fit - 4e-9) < 1e-15);
    /* A time the disks alone explain fits nothing. */
    assert_true(modelprobe_fit_mount(&c.model, PERFMODEL_READ, 0, 64u << 20, 1u << 20, 0, 1e-3) <
                0);
    /* An array file's fit is its own figure, the linear one left as it is. */
    m.mount_cpu_per_byte_s = 0;
    m.mount_array_read_per_byte_s = 6e-9;
    w.array = 1;
    assert_int_equal(perfmodel_predict(&m, &w, NULL, &r), 0);
    fit = modelprobe_fit_mount(&c.model, PERFMODEL_READ, 1, 64u << 20, 1u << 20, 0, r.total_s);
    assert_true(fabs(fit - 6e-9) < 1e-15);
}

/* A transfer's fixed cost: the time line of two probe sizes at 0 bytes. */
static void test_fixed_cost(void **state)
{
    (void)state;
    /* 10 ms + 1 ns/byte: 16 MB in 26 ms, 64 MB in 74 ms. */
    assert_true(fabs(modelprobe_fixed_cost(16000000, 0.026, 64000000, 0.074) - 0.010) < 1e-12);
    /* Noise that makes the small probe relatively slower is never negative. */
    assert_true(modelprobe_fixed_cost(16000000, 0.010, 64000000, 0.074) == 0.0);
    assert_true(modelprobe_fixed_cost(64000000, 0.074, 64000000, 0.074) == 0.0);
}

/* This machine's CPU from the probes: per byte p + q / tile at two tile
 * sizes gives p and q; a copies=2 write what a further copy costs. */
static void test_client_cpu(void **state)
{
    (void)state;
    /* Reads: 1 ns/byte + 100 us/request; writes: 2 ns/byte + 200 us/request. */
    double big_tile = 1 << 20, small_tile = 128 << 10;
    struct modelprobe_cpu_sample big = {1u << 20, 1e-9 + 100e-6 / big_tile,
                                        2e-9 + 200e-6 / big_tile};
    struct modelprobe_cpu_sample small = {128u << 10, 1e-9 + 100e-6 / small_tile,
                                          2e-9 + 200e-6 / small_tile};
    struct perfmodel_client_cpu cpu;
    assert_int_equal(modelprobe_client_cpu(&big, &small, big.write_per_byte_s + 1.5e-9, &cpu), 0);
    assert_true(fabs(cpu.read_per_byte_s - 1e-9) < 1e-15);
    assert_true(fabs(cpu.read_per_request_s - 100e-6) < 1e-12);
    assert_true(fabs(cpu.write_per_byte_s - 2e-9) < 1e-15);
    assert_true(fabs(cpu.write_per_request_s - 200e-6) < 1e-12);
    assert_true(fabs(cpu.copy_per_byte_s - 1.5e-9) < 1e-15);
    /* Smaller tiles measured cheaper (noise): all of it per byte, none per request. */
    small.read_per_byte_s = 0.5e-9;
    assert_int_equal(modelprobe_client_cpu(&big, &small, -1, &cpu), 0);
    assert_true(cpu.read_per_request_s == 0 && cpu.read_per_byte_s == big.read_per_byte_s);
    assert_true(cpu.copy_per_byte_s == 0);
    /* No measure (no /proc/stat): nothing. */
    big.read_per_byte_s = -1;
    assert_int_equal(modelprobe_client_cpu(&big, &small, -1, &cpu), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words),           cmocka_unit_test(test_machines),
        cmocka_unit_test(test_array_placement), cmocka_unit_test(test_file),
        cmocka_unit_test(test_whatif),          cmocka_unit_test(test_calib_record),
        cmocka_unit_test(test_cluster_sources), cmocka_unit_test(test_cluster_links),
        cmocka_unit_test(test_split_remote),    cmocka_unit_test(test_fit_mount),
        cmocka_unit_test(test_fixed_cost),      cmocka_unit_test(test_client_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
