/*
 * @file modelprobe.c
 * See modelprobe.h.
 */
#include "modelprobe.h"

#include "linkprobe.h"

#include "proto.h"
#include "status.h"
#include "tile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define MODELPROBE_PINGS 31
/* A mount's cost per byte hidden behind other resources: not 0, which
 * perfmodel reads as "as reads" (writes) or "as linear files" (arrays). */
#define MODELPROBE_HIDDEN_BYTE_S 1e-15
/* A probe time at most this much above what the other resources take is
 * explained by them (modelprobe_fit_mount). */
#define MODELPROBE_EXPLAINED 1.05
/* Timed passes of each probe file (after one untimed). */
#define MODELPROBE_RUNS 5
#define MODELPROBE_WHO "tessera model calibrate"
/* Datanodes heartbeat every second: wait that long and a half. */
#define MODELPROBE_HEARTBEAT_WAIT_US 1500000

int modelprobe_load(struct rpc_client *meta, int timeout_ms, struct modelcalib *calib)
{
    struct ts_getxattr_req request = { .ino = TS_ROOT_INO,
        .name = { MODELCALIB_XATTR, (uint32_t)strlen(MODELCALIB_XATTR) } };
    uint8_t payload[512];
    struct rpc_reply reply;
    struct ts_getxattr_rep answer;
    *calib = (struct modelcalib){ 0 };
    int len = ts_getxattr_req_encode(&request, payload, sizeof(payload));
    if (len < 0)
        return TS_ERR_INTERNAL;
    int status = rpc_client_call(meta, TS_OP_GETXATTR, payload, (size_t)len, NULL, 0, timeout_ms,
                                 &reply);
    if (status == TS_OK && (ts_getxattr_rep_decode(&answer, reply.payload, reply.payload_len) != 0 ||
                            modelcalib_parse(answer.value.ptr, answer.value.len, calib) != 0)) {
        *calib = (struct modelcalib){ 0 };
        status = TS_ERR_BADMSG;
    }
    rpc_reply_release(&reply);
    return status;
}

int modelprobe_store(const char *mount, const struct modelcalib *calib)
{
    static char text[MODELCALIB_TEXT_MAX];
    if (modelcalib_format(calib, text, sizeof(text)) != 0)
        return -ERANGE;
    return setxattr(mount, MODELCALIB_XATTR, text, strlen(text), 0) == 0 ? 0 : -errno;
}

double modelprobe_fit_mount(const struct perfmodel_cluster *cluster, enum perfmodel_op op,
                            int array, uint64_t bytes, uint64_t tile_bytes, int client_machine,
                            double measured_s)
{
    static struct perfmodel_result result;
    struct perfmodel_cluster c = *cluster;
    c.mount_cpu_per_byte_s = 0.0;
    c.mount_write_cpu_per_byte_s = MODELPROBE_HIDDEN_BYTE_S;
    c.mount_array_read_per_byte_s = c.mount_array_write_per_byte_s = MODELPROBE_HIDDEN_BYTE_S;
    struct perfmodel_workload w = {.op = op,
                                   .bytes = bytes,
                                   .tile_bytes = tile_bytes,
                                   .n_clients = 1,
                                   .client_machine = {client_machine},
                                   .copies = 1,
                                   .array = array};
    /* Within a pass's noise of what the other resources take (a probe
     * bound by a 25 MB/s link, say), the time tells nothing of the
     * mount's CPU: fitting it would charge the link's time to the mount,
     * and then to every transfer that never crosses the link. */
    if (perfmodel_predict(&c, &w, NULL, &result) != 0 ||
        measured_s <= result.total_s * MODELPROBE_EXPLAINED)
        return -1.0;
    uint64_t tiles = (bytes + tile_bytes - 1) / tile_bytes;
    double mount_busy = measured_s - result.startup_s - result.closing_s -
                        (double)tiles * c.mount_cpu_per_request_s;
    return mount_busy > 0.0 ? mount_busy / (double)bytes : -1.0;
}

double modelprobe_mount_plausible(double fit, double machine_per_byte_s)
{
    if (fit < 0.0 || !(machine_per_byte_s > 0.0))
        return fit;
    return fit > machine_per_byte_s ? -1.0 : fit;
}

double modelprobe_fixed_cost(uint64_t small_bytes, double small_s, uint64_t big_bytes, double big_s)
{
    if (big_bytes <= small_bytes)
        return 0.0;
    double per_byte = (big_s - small_s) / (double)(big_bytes - small_bytes);
    double fixed = big_s - per_byte * (double)big_bytes;
    return fixed > 0.0 ? fixed : 0.0;
}

int modelprobe_client_cpu(const struct modelprobe_cpu_sample *big,
                          const struct modelprobe_cpu_sample *small, double two_copies_write,
                          struct perfmodel_client_cpu *out)
{
    if (!(big->read_per_byte_s > 0) || !(big->write_per_byte_s > 0) ||
        big->tile_bytes <= small->tile_bytes)
        return -1;
    /* Per byte at tile size T: p + q / T; two sizes give p and q. */
    double inverse = 1.0 / (double)small->tile_bytes - 1.0 / (double)big->tile_bytes;
    double measured[2][2] = {{big->read_per_byte_s, small->read_per_byte_s},
                             {big->write_per_byte_s, small->write_per_byte_s}};
    int small_known = small->read_per_byte_s > 0 && small->write_per_byte_s > 0;
    double per_byte[2], per_request[2];
    for (int op = 0; op < 2; op++) {
        double q = small_known ? (measured[op][1] - measured[op][0]) / inverse : 0;
        double p = measured[op][0] - q / (double)big->tile_bytes;
        if (q < 0 || p <= 0) { /* noise larger than the difference */
            q = 0;
            p = measured[op][0];
        }
        per_byte[op] = p;
        per_request[op] = q;
    }
    double copy = two_copies_write - big->write_per_byte_s;
    *out = (struct perfmodel_client_cpu){.read_per_byte_s = per_byte[0],
                                         .write_per_byte_s = per_byte[1],
                                         .read_per_request_s = per_request[0],
                                         .write_per_request_s = per_request[1],
                                         .copy_per_byte_s = copy > 0 ? copy : 0};
    return 0;
}

int modelprobe_split_remote(struct perfmodel_client_cpu *cpu, double remote_fraction,
                            double mixed_per_byte, double local_per_byte)
{
    if (!(remote_fraction > 0.0 && remote_fraction < 1.0) || !(local_per_byte > 0.0) ||
        !(mixed_per_byte > local_per_byte))
        return -1;
    double extra = (mixed_per_byte - local_per_byte) / remote_fraction;
    /* The per-byte part of a local read: its whole cost less the share
     * of the per-request cost (p = mixed - q / tile, so p - f * extra is
     * local - q / tile).  That share comes from the mixed probes, which a
     * remote byte makes dearer: it may be all of a local byte's cost, and
     * then some; a local byte costs its request then, and (almost)
     * nothing more, not "not measured" (0). */
    double local = cpu->read_per_byte_s - remote_fraction * extra;
    if (local < MODELPROBE_HIDDEN_BYTE_S)
        local = MODELPROBE_HIDDEN_BYTE_S;
    cpu->read_per_byte_s = local;
    cpu->remote_read_per_byte_s = local + extra;
    return 0;
}

void modelprobe_print_client_cpu(const char *label, const struct perfmodel_client_cpu *cpu,
                                 const char *suffix)
{
    printf("%s: read %.3f ns/byte + %.1f us/request, write %.3f ns/byte + %.1f us/request, "
           "%.3f ns/byte more per further copy; array files read %.3f, write %.3f ns/byte%s%s\n",
           label, cpu->read_per_byte_s * 1e9, cpu->read_per_request_s * 1e6,
           cpu->write_per_byte_s * 1e9, cpu->write_per_request_s * 1e6, cpu->copy_per_byte_s * 1e9,
           cpu->array_read_per_byte_s * 1e9, cpu->array_write_per_byte_s * 1e9, *suffix ? " " : "",
           suffix);
    if (cpu->remote_read_per_byte_s > 0)
        printf("%s: a byte read from another machine's datanode %.3f ns%s%s\n", label,
               cpu->remote_read_per_byte_s * 1e9, *suffix ? " " : "", suffix);
}

static double modelprobe_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds this machine has been busy (all CPUs, /proc/stat), or -1. */
static double modelprobe_machine_busy(void)
{
    unsigned long long user, nice, system, idle, iowait, irq, softirq;
    long ticks = sysconf(_SC_CLK_TCK);
    FILE *stat = fopen("/proc/stat", "re");
    int got = stat ? fscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system,
                            &idle, &iowait, &irq, &softirq)
                   : 0;
    if (stat)
        fclose(stat);
    if (got != 7 || ticks <= 0)
        return -1.0;
    return (double)(user + nice + system + irq + softirq) / (double)ticks;
}

static int modelprobe_by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double modelprobe_median(double *values, size_t n)
{
    qsort(values, n, sizeof(values[0]), modelprobe_by_value);
    return values[n / 2];
}

/* The median PING round trip to endpoint in seconds, or -1. */
static double modelprobe_ping(const char *endpoint, struct rpc_client *reuse, int timeout_ms)
{
    struct rpc_client *client = reuse ? reuse : rpc_client_new(endpoint);
    double rtt[MODELPROBE_PINGS];
    size_t n = 0;
    if (!client)
        return -1.0;
    for (int i = 0; i < MODELPROBE_PINGS + 1; i++) {
        struct rpc_reply reply;
        double start = modelprobe_now();
        int status = rpc_client_call(client, TS_OP_PING, NULL, 0, NULL, 0, timeout_ms, &reply);
        double took = modelprobe_now() - start;
        rpc_reply_release(&reply);
        if (status != TS_OK)
            break;
        if (i > 0) /* the first one pays the connection */
            rtt[n++] = took;
    }
    if (!reuse)
        rpc_client_destroy(&client);
    if (n == 0)
        return -1.0;
    return modelprobe_median(rtt, n);
}

/* A probe's medians, and the machine's busy CPU per byte over all timed
 * passes (-1 when /proc/stat cannot tell). */
struct modelprobe_times {
    double write_s, read_s;
    double write_cpu_per_byte_s, read_cpu_per_byte_s;
};

/*
 * Writes (with fsync) then reads back probe_bytes in dir: one pass
 * untimed, then MODELPROBE_RUNS timed ones, whose medians count.  The
 * first pass on a cluster pays what a workload in steady use does not:
 * memory the datanodes touch for the first time (on a VM that gives
 * freed memory back to its host, 3-4x slower), first connections.  The
 * median, as bench/model.sh measures workloads, not the best run.
 */
static int modelprobe_file(const char *dir, uint64_t probe_bytes, struct modelprobe_times *out)
{
    char path[4096 + 16];
    size_t chunk = 1u << 20;
    char *buf = malloc(chunk);
    double writes[MODELPROBE_RUNS], reads[MODELPROBE_RUNS];
    double write_cpu = 0.0, read_cpu = 0.0;
    int cpu_known = 1;
    int rc = -1;
    if (!buf)
        return -1;
    for (size_t i = 0; i < chunk; i++)
        buf[i] = (char)(i * 131u + 7u);
    snprintf(path, sizeof(path), "%s/probe", dir);
    for (int run = -1; run < MODELPROBE_RUNS; run++) {
        /* A new file each pass, as a workload makes them: an O_TRUNC of the
         * last pass's would time its truncate too. */
        if (unlink(path) != 0 && errno != ENOENT)
            goto out;
        double busy = modelprobe_machine_busy();
        double start = modelprobe_now();
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0)
            goto out;
        for (uint64_t done = 0; done < probe_bytes; done += chunk)
            if (write(fd, buf, chunk) != (ssize_t)chunk) {
                close(fd);
                goto out;
            }
        if (fsync(fd) != 0 || close(fd) != 0)
            goto out;
        double took = modelprobe_now() - start;
        double busy_end = modelprobe_machine_busy();
        cpu_known &= busy >= 0 && busy_end >= 0;
        if (run >= 0) {
            writes[run] = took;
            write_cpu += busy_end - busy;
        }
        /* Not from the page cache the write left: from the datanodes. */
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            goto out;
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
        /* Timed as a reader sees it: from its open to its close. */
        busy = modelprobe_machine_busy();
        start = modelprobe_now();
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            goto out;
        uint64_t got = 0;
        ssize_t n;
        while ((n = read(fd, buf, chunk)) > 0)
            got += (uint64_t)n;
        close(fd);
        took = modelprobe_now() - start;
        busy_end = modelprobe_machine_busy();
        cpu_known &= busy >= 0 && busy_end >= 0;
        if (n != 0 || got != probe_bytes)
            goto out;
        if (run >= 0) {
            reads[run] = took;
            read_cpu += busy_end - busy;
        }
    }
    out->write_s = modelprobe_median(writes, MODELPROBE_RUNS);
    out->read_s = modelprobe_median(reads, MODELPROBE_RUNS);
    double bytes = (double)probe_bytes * MODELPROBE_RUNS;
    out->write_cpu_per_byte_s = cpu_known ? write_cpu / bytes : -1.0;
    out->read_cpu_per_byte_s = cpu_known ? read_cpu / bytes : -1.0;
    rc = 0;
out:
    if (rc != 0)
        fprintf(stderr, "%s: the probe file %s failed: %s\n", MODELPROBE_WHO, path,
                strerror(errno));
    unlink(path);
    free(buf);
    return rc;
}

/* A probe directory under mount whose files have tile_bytes tiles and
 * `copies` copies, round-robin, or are arrays (user.tessera.array hint
 * `array`, or NULL). */
static int modelprobe_dir(const char *mount, uint64_t tile_bytes, unsigned copies,
                          const char *array, char *dir, size_t cap)
{
    char layout[64];
    snprintf(dir, cap, "%s/.tessera-model-probe.%ld.%llu.%u%s", mount, (long)getpid(),
             (unsigned long long)tile_bytes, copies, array ? ".array" : "");
    snprintf(layout, sizeof(layout), "tile=%lluK copies=%u placement=roundrobin",
             (unsigned long long)(tile_bytes >> 10), copies);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    if (setxattr(dir, "user.tessera.layout", layout, strlen(layout), 0) != 0 ||
        (array && setxattr(dir, "user.tessera.array", array, strlen(array), 0) != 0)) {
        rmdir(dir);
        return -1;
    }
    return 0;
}

/* The mount's fit for one probe, checked against the machine's busy CPU
 * per byte during that same probe (its requests' share included). */
static double modelprobe_fit_probe(const struct modelcluster *cluster, enum perfmodel_op op,
                                   int array, uint64_t bytes, uint64_t tile_bytes,
                                   double measured_s, double machine_per_byte_s)
{
    return modelprobe_mount_plausible(modelprobe_fit_mount(&cluster->model, op, array, bytes,
                                                           tile_bytes, cluster->client_machine,
                                                           measured_s),
                                      machine_per_byte_s);
}

/*
 * This machine's link into calib (when datanodes run on other machines),
 * probed through a directory of 1 MiB tiles, one copy. 0, or -1 on an
 * error (printed).
 */
static int modelprobe_link(struct rpc_client *meta, int timeout_ms,
                           const struct toolmeta_node *nodes, size_t count, const char *mount,
                           const char *machine, uint64_t probe_bytes, struct modelcalib *calib)
{
    char dir[4096];
    double passes[MODELPROBE_RUNS];
    uint64_t remote_bytes = 0;
    if (modelprobe_dir(mount, 1u << 20, 1, NULL, dir, sizeof(dir)) != 0) {
        fprintf(stderr, "%s: cannot make the probe directory %s: %s\n", MODELPROBE_WHO, dir,
                strerror(errno));
        return -1;
    }
    int measured = linkprobe_measure(meta, timeout_ms, nodes, count, dir, machine, probe_bytes,
                                     MODELPROBE_RUNS, passes, &remote_bytes);
    rmdir(dir);
    if (measured < 0)
        return -1;
    if (measured == 0) {
        printf("link: no datanode runs on another machine than %s; nothing to measure\n", machine);
        return 0;
    }
    double seconds = modelprobe_median(passes, MODELPROBE_RUNS);
    double mbps = (double)remote_bytes / 1e6 / seconds;
    printf("link of %s: %.1f MB/s (%.1f MB of tiles other machines hold, read in %.3f s)\n",
           machine, mbps, (double)remote_bytes / 1e6, seconds);
    if (strlen(machine) >= MODELCALIB_MACHINE_MAX || strpbrk(machine, " \t\n")) {
        printf("link: not stored: the machine name %s is longer than %d characters or holds "
               "white space (give --machine)\n",
               machine, MODELCALIB_MACHINE_MAX - 1);
        return 0;
    }
    struct modelcalib_link *link = &calib->links[0];
    snprintf(link->machine, sizeof(link->machine), "%s", machine);
    link->mbps = mbps;
    calib->n_links = 1;
    return 0;
}

int modelprobe_calibrate(struct rpc_client *meta, int timeout_ms, const struct toolmeta_node *nodes,
                         size_t count, const char *mount, const char *machine, uint64_t probe_bytes)
{
    static struct modelcalib calib;
    static struct modelcluster cluster;
    /* Whole 4 MiB: the small probe is a quarter, written 1 MiB at a time. */
    probe_bytes -= probe_bytes % (4u << 20);
    if (probe_bytes < (4u << 20))
        probe_bytes = 4u << 20;
    calib = (struct modelcalib){ .when = (int64_t)time(NULL),
        .mount_per_request_s = MODELCLUSTER_DEFAULT_MOUNT_REQUEST_S,
        .mount_read_per_byte_s = MODELCLUSTER_DEFAULT_MOUNT_BYTE_S,
        .mount_write_per_byte_s = MODELCLUSTER_DEFAULT_MOUNT_BYTE_S };
    calib.meta_rtt_s = modelprobe_ping(NULL, meta, timeout_ms);
    if (calib.meta_rtt_s < 0) {
        fprintf(stderr, "%s: meta does not answer PING\n", MODELPROBE_WHO);
        return 1;
    }
    printf("meta: %.1f us per round trip\n", calib.meta_rtt_s * 1e6);
    for (size_t i = 0; i < count && calib.n_nodes < PERFMODEL_MAX_NODES; i++) {
        if (nodes[i].state != TS_NODE_UP || nodes[i].admin != TS_NODE_ACTIVE)
            continue;
        double rtt = modelprobe_ping(nodes[i].address, NULL, timeout_ms);
        if (rtt < 0) {
            fprintf(stderr, "%s: datanode %u at %s does not answer PING; left out\n",
                    MODELPROBE_WHO, nodes[i].id, nodes[i].address);
            continue;
        }
        calib.nodes[calib.n_nodes++] = (struct modelcalib_node){ .id = nodes[i].id,
            .cpu_per_request_s = rtt / 2, .cpu_per_byte_s = MODELCLUSTER_DEFAULT_NODE_BYTE_S,
            .sync_s = MODELCLUSTER_DEFAULT_SYNC_S };
        printf("datanode %u: %.1f us per round trip\n", nodes[i].id, rtt * 1e6);
    }
    {
        /* Two tile sizes tell a per-request cost from a per-byte cost; two
         * sizes of file tell a transfer's fixed cost from both; a second
         * copy what one more copy costs.  The fit below weighs probes 0-2
         * as copies=1 transfers. */
        /* Probe 4: an array file of probe_bytes, rows of 4096 f32. */
        const uint64_t tiles[5] = {1u << 20, 128u << 10, 1u << 20, 1u << 20, 1u << 20};
        const uint64_t sizes[5] = {probe_bytes, probe_bytes, probe_bytes / 4, probe_bytes,
                                   probe_bytes};
        const unsigned copies[5] = {1, 1, 1, 2, 1};
        /* Its chunks over the datanodes, as the fit's round-robin has them. */
        char array_hint[96];
        snprintf(array_hint, sizeof(array_hint),
                 "f32 %llux4096 BLOCK,BLOCK mesh=1x%zu threshold=1M",
                 (unsigned long long)(probe_bytes / (4 * 4096)),
                 calib.n_nodes < 1   ? 1
                 : calib.n_nodes > 8 ? 8
                                     : calib.n_nodes);
        const char *arrays[5] = {NULL, NULL, NULL, NULL, array_hint};
        int with_copies = calib.n_nodes >= 2;
        struct modelprobe_times probe[5];
        /* First: the fits below then see the link as it is. */
        uint64_t link_bytes = probe_bytes / 4 > (16u << 20) ? probe_bytes / 4 : 16u << 20;
        if (modelprobe_link(meta, timeout_ms, nodes, count, mount, machine, link_bytes, &calib) !=
            0)
            return 1;
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        for (int i = 0; i < 5; i++) {
            char dir[4096];
            if (i == 3 && !with_copies) {
                probe[i] = (struct modelprobe_times){.write_cpu_per_byte_s = -1.0};
                continue;
            }
            if (modelprobe_dir(mount, tiles[i], copies[i], arrays[i], dir, sizeof(dir)) != 0) {
                fprintf(stderr, "%s: cannot make the probe directory %s: %s\n", MODELPROBE_WHO,
                        dir, strerror(errno));
                return 1;
            }
            int rc = modelprobe_file(dir, sizes[i], &probe[i]);
            rmdir(dir);
            if (rc != 0)
                return 1;
            printf("probe through %s, %s%llu KiB tiles, %u %s: %.1f MB written in %.3f s, read "
                   "in %.3f s\n",
                   mount, arrays[i] ? "an array file, " : "", (unsigned long long)(tiles[i] >> 10),
                   copies[i], copies[i] == 1 ? "copy" : "copies", (double)sizes[i] / 1e6,
                   probe[i].write_s, probe[i].read_s);
        }
        /* The fit weighs the disks as the probe left them: a heartbeat later. */
        struct toolmeta_node *fresh = NULL;
        size_t fresh_count = 0;
        usleep(MODELPROBE_HEARTBEAT_WAIT_US);
        if (toolmeta_node_list(meta, timeout_ms, &fresh, &fresh_count, NULL, 0) == TS_OK) {
            nodes = fresh;
            count = fresh_count;
        }
        int built = modelcluster_build(nodes, count, &calib, machine,
                                       cores > 0 ? (unsigned)cores : 0, 0, &cluster);
        free(fresh);
        if (built != 0) {
            fprintf(stderr, "%s: no datanode is up\n", MODELPROBE_WHO);
            return 1;
        }
        /* A write's fixed cost beyond open's and close's meta round trips
         * is the closing's sync (perfmodel.c), the same on every node. */
        double write_fixed =
            modelprobe_fixed_cost(sizes[2], probe[2].write_s, sizes[0], probe[0].write_s);
        double read_fixed =
            modelprobe_fixed_cost(sizes[2], probe[2].read_s, sizes[0], probe[0].read_s);
        double sync_s = write_fixed - 2 * calib.meta_rtt_s;
        if (sync_s < 0)
            sync_s = 0;
        for (size_t i = 0; i < cluster.model.n_nodes; i++)
            cluster.model.nodes[i].sync_seconds = sync_s;
        for (size_t i = 0; i < calib.n_nodes; i++)
            calib.nodes[i].sync_s = sync_s;
        printf("fixed cost of a transfer: write %.1f ms (sync %.1f ms), read %.1f ms\n",
               write_fixed * 1e3, sync_s * 1e3, read_fixed * 1e3);
        /* This machine's CPU per byte and per request; the mount's fit below
         * then explains only what that CPU does not. */
        struct modelprobe_cpu_sample big = {tiles[0], probe[0].read_cpu_per_byte_s,
                                            probe[0].write_cpu_per_byte_s};
        struct modelprobe_cpu_sample small = {tiles[1], probe[1].read_cpu_per_byte_s,
                                              probe[1].write_cpu_per_byte_s};
        if (modelprobe_client_cpu(&big, &small, probe[3].write_cpu_per_byte_s, &calib.client_cpu) ==
            0) {
            calib.client_cpu.array_read_per_byte_s =
                probe[4].read_cpu_per_byte_s > 0 ? probe[4].read_cpu_per_byte_s : 0.0;
            calib.client_cpu.array_write_per_byte_s =
                probe[4].write_cpu_per_byte_s > 0 ? probe[4].write_cpu_per_byte_s : 0.0;
            /* Probe 0 read a round-robin file, remote_fraction of it from
             * other machines; probe 3's copies=2 file has a copy of every
             * tile here (the writer's), so its read was all local. */
            size_t remote = 0;
            for (size_t i = 0; i < cluster.model.n_nodes; i++)
                remote += cluster.model.nodes[i].machine != cluster.client_machine;
            modelprobe_split_remote(&calib.client_cpu,
                                    (double)remote / (double)cluster.model.n_nodes,
                                    probe[0].read_cpu_per_byte_s, probe[3].read_cpu_per_byte_s);
            cluster.model.client_cpu = calib.client_cpu;
            char label[64];
            snprintf(label, sizeof(label), "this machine's CPU (%ld cores)", cores);
            modelprobe_print_client_cpu(label, &calib.client_cpu, "");
        }
        /* Per request: what the smaller tiles cost beyond the larger ones. */
        double extra =
            ((probe[1].write_s - probe[0].write_s) + (probe[1].read_s - probe[0].read_s)) / 2;
        double more_requests = (double)(probe_bytes / tiles[1]) - (double)(probe_bytes / tiles[0]);
        cluster.model.mount_cpu_per_request_s = extra > 0 ? extra / more_requests : 0.0;
        calib.mount_per_request_s = cluster.model.mount_cpu_per_request_s;
        double w = modelprobe_fit_probe(&cluster, PERFMODEL_WRITE, 0, probe_bytes, tiles[0],
                                        probe[0].write_s, probe[0].write_cpu_per_byte_s);
        double r = modelprobe_fit_probe(&cluster, PERFMODEL_READ, 0, probe_bytes, tiles[0],
                                        probe[0].read_s, probe[0].read_cpu_per_byte_s);
        double aw = modelprobe_fit_probe(&cluster, PERFMODEL_WRITE, 1, probe_bytes, tiles[4],
                                         probe[4].write_s, probe[4].write_cpu_per_byte_s);
        double ar = modelprobe_fit_probe(&cluster, PERFMODEL_READ, 1, probe_bytes, tiles[4],
                                         probe[4].read_s, probe[4].read_cpu_per_byte_s);
        /* When the other resources already take a probe's time, the
         * mount's bytes hide behind them: (almost) 0, not a default that
         * would make the mount the bottleneck the probe says it is not. */
        calib.mount_write_per_byte_s = w >= 0 ? w : MODELPROBE_HIDDEN_BYTE_S;
        calib.mount_read_per_byte_s = r >= 0 ? r : 0.0;
        calib.mount_array_write_per_byte_s = aw >= 0 ? aw : MODELPROBE_HIDDEN_BYTE_S;
        calib.mount_array_read_per_byte_s = ar >= 0 ? ar : MODELPROBE_HIDDEN_BYTE_S;
        printf("mount: %.1f us per request, read %.3f ns/byte%s, write %.3f ns/byte%s; array "
               "files read %.3f, write %.3f ns/byte\n",
               calib.mount_per_request_s * 1e6, calib.mount_read_per_byte_s * 1e9,
               r >= 0 ? "" : " (not the bottleneck)", calib.mount_write_per_byte_s * 1e9,
               w >= 0 ? "" : " (not the bottleneck)", calib.mount_array_read_per_byte_s * 1e9,
               calib.mount_array_write_per_byte_s * 1e9);
    }
    int err = modelprobe_store(mount, &calib);
    if (err != 0) {
        fprintf(stderr, "%s: storing the calibration through %s failed: %s\n", MODELPROBE_WHO,
                mount, strerror(-err));
        return 1;
    }
    printf("stored in meta (%s); tessera model show lists it\n", MODELCALIB_XATTR);
    return 0;
}
