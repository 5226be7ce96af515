/*
 * @file clusterconf.h
 * The settings of a local cluster, kept in STATE/cluster.conf.
 *
 * `tessera up` writes the file on its first run and reads it on every later
 * one, so `tessera up --state S` alone brings back the same cluster (same
 * ports, same data, same mountpoint); flags given to `up` override the file
 * and are saved. `down` and `status` read it to find the mount and meta.
 * The format is one `key=value` per line; `#` starts a comment line.
 */
#ifndef TESSERA_TOOLS_CLUSTERCONF_H
#define TESSERA_TOOLS_CLUSTERCONF_H

#include <limits.h>
#include <stddef.h>

#define CLUSTERCONF_FILE "cluster.conf"
#define CLUSTERCONF_DEFAULT_NODES 4
#define CLUSTERCONF_MAX_NODES 256
#define CLUSTERCONF_DEFAULT_PORT 7400
#define CLUSTERCONF_DEFAULT_HOST "127.0.0.1"
#define CLUSTERCONF_DEFAULT_IO_TIMEOUT_MS 5000
#define CLUSTERCONF_DEFAULT_LOG_LEVEL "info"
#define CLUSTERCONF_HOST_MAX 256

struct clusterconf {
    long nodes; /* datanodes node1..nodeN */
    long port;  /* meta's port; datanode i listens on port + i */
    char host[CLUSTERCONF_HOST_MAX];
    char mount[PATH_MAX]; /* absolute mountpoint; "" = STATE/mnt */
    long io_timeout_ms;   /* the mount's --io-timeout-ms */
    char log_level[16];   /* the daemons' --log-level */
};

/* The built-in settings (mount left empty: the caller picks STATE/mnt). */
void clusterconf_defaults(struct clusterconf *conf);

/*
 * The default state directory: $TESSERA_STATE, else $XDG_STATE_HOME/tessera,
 * else $HOME/.local/state/tessera. Returns 0, -ENOENT if none of those
 * variables is set, or -ENAMETOOLONG.
 */
int clusterconf_default_state_dir(char *out, size_t cap);

/*
 * Reads STATE/cluster.conf over *conf (keys missing from the file keep the
 * values already in conf). Returns 0, -ENOENT if there is no file, -EINVAL
 * after printing "FILE:LINE: ..." for a bad line, or another -errno.
 * Unknown keys are reported on stderr and skipped, so an older tessera can
 * read a newer file.
 */
int clusterconf_load(struct clusterconf *conf, const char *state_dir);

/*
 * Writes conf to STATE/cluster.conf atomically (temporary file, fsync,
 * rename). Returns 0 or -errno.
 */
int clusterconf_save(const struct clusterconf *conf, const char *state_dir);

/*
 * Checks the values that are not checked one at a time: the last
 * datanode's port must fit below 65536. Returns 0 or -EINVAL after printing
 * why, prefixed by `who` ("tessera up").
 */
int clusterconf_check(const struct clusterconf *conf, const char *who);

/* "tcp://HOST:PORT" of meta; 0 or -ENAMETOOLONG. */
int clusterconf_meta_endpoint(const struct clusterconf *conf, char *out, size_t cap);
/* "tcp://HOST:PORT+i" of datanode i (1-based); 0 or -ENAMETOOLONG. */
int clusterconf_node_endpoint(const struct clusterconf *conf, long node, char *out, size_t cap);

/*
 * Which meta a command that only talks to meta should ask: the cluster.conf
 * of state_dir when it is not "" (an error if it has none), else the
 * cluster.conf of the default state directory, falling back to
 * tcp://127.0.0.1:7400 when there is none. Fills endpoint[cap]; returns 0,
 * or exit code 1 after printing why, prefixed by `who` ("tessera status").
 */
int clusterconf_find_meta(const char *state_dir, char *endpoint, size_t cap, const char *who);

#endif
