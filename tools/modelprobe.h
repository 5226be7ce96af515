/*
 * @file modelprobe.h
 * `tessera model calibrate`: a few seconds of probes turned into the
 * model's figures (modelcluster.h) and stored in meta, as the root
 * directory's attribute MODELCALIB_XATTR, set through the mount (SETXATTR
 * is a mount's request; an admin key may read it with GETXATTR), so no
 * new request and no new role:
 * - meta round trip: the median of PINGs to meta;
 * - each datanode's per-request CPU: half the median PING round trip to
 *   it (the other half is the tool's and the wire's);
 * - through the mount: probe files written (with their final fsync) and
 *   read back, one pass untimed and five timed: 1 MiB tiles, 128 KiB
 *   tiles, a quarter of the size, two copies, an array file.  This
 *   machine's busy CPU during them (/proc/stat) gives its CPU per byte,
 *   per request and per further copy (perfmodel_client_cpu); the sizes a
 *   write's fixed cost (the nodes' sync); the mount's per-byte cost for
 *   each direction, linear and array, is what makes the model predict the
 *   probe's time when the mount is the busiest resource, and almost 0
 *   when another resource already explains the time (to within 5 %);
 * - this machine's link, when datanodes run on other machines: a probe
 *   file's tiles held there read with O_DIRECT, LINKPROBE_STREAMS
 *   at once, highest offset first (so the mount sees no stream to read
 *   ahead of and fetches each tile once, over the link).
 * Datanode disk rates are not stored: they come live from heartbeats.
 */
#ifndef TESSERA_TOOLS_MODELPROBE_H
#define TESSERA_TOOLS_MODELPROBE_H

#include "modelcluster.h"
#include "rpc.h"
#include "toolmeta.h"

#include <stddef.h>
#include <stdint.h>

/* The stored calibration: TS_OK, TS_ERR_NODATA when none is stored,
 * TS_ERR_BADMSG when it does not parse, or the call's failure. */
int modelprobe_load(struct rpc_client *meta, int timeout_ms, struct modelcalib *calib);

/* Stores calib as the attribute of the mount's root; 0 or -errno. */
int modelprobe_store(const char *mount, const struct modelcalib *calib);

/*
 * The mount's per-byte CPU (seconds) that makes the model's prediction of
 * a `bytes` transfer by one client on `cluster` (of an array file if
 * `array`, its tiles spread round-robin) take measured_s; -1 when the
 * other resources already take that long, or within 5 % of it.  Pure
 * (for tests).
 */
double modelprobe_fit_mount(const struct perfmodel_cluster *cluster, enum perfmodel_op op,
                            int array, uint64_t bytes, uint64_t tile_bytes, int client_machine,
                            double measured_s);

/*
 * A fit of the mount's CPU per byte (modelprobe_fit_mount), or -1 when it
 * is more than the machine's whole busy CPU per byte during the same
 * probe (machine_per_byte_s, its requests' share included; 0 or less:
 * not measured, anything goes): the mount is one of the machine's
 * processes, so such a fit explains waiting (a slow link's, say), not
 * the mount's work, and a what-if net=inf would still find the mount as
 * slow as the link.  Pure (for tests).
 */
double modelprobe_mount_plausible(double fit, double machine_per_byte_s);

/*
 * What a transfer costs whatever its size (a write's create, final fsync
 * and commit; a read's open and first tile), from the same probe at two
 * sizes: the time line through (small_bytes, small_s) and (big_bytes,
 * big_s) at 0 bytes, never below 0.  Pure (for tests).
 */
double modelprobe_fixed_cost(uint64_t small_bytes, double small_s, uint64_t big_bytes,
                             double big_s);

/* One probe's busy CPU per byte on this machine, at one tile size. */
struct modelprobe_cpu_sample {
    uint64_t tile_bytes;
    double read_per_byte_s, write_per_byte_s;
};

/*
 * This machine's CPU for a transfer (perfmodel.h) from the probes' CPU per
 * byte at two tile sizes (big and small: per byte = p + q / tile, so p per
 * byte and q per request) and, if two_copies_write > 0, a copies=2 write
 * at big's tile size (what it costs beyond one copy).  0, or -1 when big
 * has no measure.  Pure (for tests).
 */
int modelprobe_client_cpu(const struct modelprobe_cpu_sample *big,
                          const struct modelprobe_cpu_sample *small, double two_copies_write,
                          struct perfmodel_client_cpu *out);

/*
 * Splits the machine's CPU per byte read (cpu->read_per_byte_s, from a
 * round-robin probe with remote_fraction of its bytes from other
 * machines' datanodes, whose CPU per byte was mixed_per_byte) into a
 * local byte's and a remote byte's (remote_read_per_byte_s), given the
 * CPU per byte of a read of the same tile size whose bytes were all
 * local (local_per_byte).  0; -1 (cpu untouched) when there is nothing
 * to split (every byte local, or every byte remote, or a remote byte no
 * dearer).  Pure (for tests).
 */
int modelprobe_split_remote(struct perfmodel_client_cpu *cpu, double remote_fraction,
                            double mixed_per_byte, double local_per_byte);

/* "LABEL: read ... ns/byte + ... us/request, write ..., ... per further copy SUFFIX"
 * and, when measured, a line with a remote byte's read. */
void modelprobe_print_client_cpu(const char *label, const struct perfmodel_client_cpu *cpu,
                                 const char *suffix);

/* Probes, stores and prints the figures; returns the exit code.  machine:
 * the mount's (its --machine), whose link the probe measures. */
int modelprobe_calibrate(struct rpc_client *meta, int timeout_ms, const struct toolmeta_node *nodes,
                         size_t count, const char *mount, const char *machine,
                         uint64_t probe_bytes);

#endif
