/*
 * @file mountargs.h
 * tessera-mount's command line, parsed with libfuse's fuse_opt_parse, in
 * the two forms it is called with:
 *
 *   tessera-mount [--meta ENDPOINT] [--io-timeout-ms MS] ... [-o OPTS] [-f] MOUNTPOINT
 *   mount.tessera SOURCE MOUNTPOINT -o rw,meta_timeout_ms=2000,_netdev,...
 *
 * The second is how mount(8) runs a helper (`mount -t tessera`, `mount -t
 * fuse.tessera`, an fstab line): SOURCE is meta's endpoint (tcp://HOST:PORT,
 * also as tessera:tcp://HOST:PORT, what the mount shows as its source; or
 * "tessera" to use meta= or the default), and every --name option is also
 * an -o name=value option (dashes as underscores). Options only mount(8)
 * and fstab mean (_netdev, nofail, noauto, auto, user, users, nouser,
 * defaults, x-*, comment=) are dropped; every other -o option goes to FUSE,
 * and one libfuse does not take is refused while parsing.
 */
#ifndef TESSERA_FUSE_MOUNTARGS_H
#define TESSERA_FUSE_MOUNTARGS_H

#include "log.h"
#include "proto.h"

#include <stdint.h>

#define MOUNTARGS_DEFAULT_META "tcp://127.0.0.1:7400"

/* What parsing returns besides 0 (mount) and 2 (a usage error, printed). */
#define MOUNTARGS_HELP 1
#define MOUNTARGS_VERSION 3

struct mount_options {
    const char *meta;
    const char *mountpoint;
    char machine[TS_MAX_NAME + 1];
    long io_timeout_ms;
    long meta_timeout_ms;
    double attr_timeout;
    uint64_t memory_bytes;
    uint64_t memory_min_bytes; /* set before parsing: the least --memory accepted */
    long readahead_tiles;
    long io_threads;
    long statahead;
    long async_unlinks;
    long async_creates;
    long tile_streams;
    long array_direct; /* read-only array handles past the page cache (ops.c) */
    int foreground;
    int single_thread;
    int debug;
    int replace_dead;
    enum log_level log_level;
    const char *key_path;    /* --key FILE, -o key=FILE; NULL: plain ZeroMQ */
    const char *log_file;    /* --log-file FILE, -o log_file=FILE; NULL: stderr */
    const char *metrics;     /* --metrics [HOST:]PORT; NULL: no endpoint */
    char fuse_options[1024]; /* for FUSE: comma-separated */
    /* What fuse_opt_parse allocated (freed by mountargs_free). */
    char *given[32];
    char *positional[2];
    size_t positionals;
    int mode;               /* 0, MOUNTARGS_HELP or MOUNTARGS_VERSION, while parsing */
    const char *bad_option; /* after a usage error: the option whose value is wrong, if one */
};

/*
 * Sets the defaults (memory_min_bytes is kept), then parses argv into
 * *options: 0, MOUNTARGS_HELP, MOUNTARGS_VERSION, or 2 after printing a
 * usage error that names the option and the fix.
 */
int mountargs_parse(int argc, char **argv, struct mount_options *options);

/*
 * 0 when libfuse takes every option in fuse_options; else -1 after
 * libfuse named the unknown ones and this says where they came from.
 * mountargs_parse() runs it last.
 */
int mountargs_check_fuse_options(const struct mount_options *options);

/* Appends one option to fuse_options: 0, or -1 (said so) when they would not fit. */
int mountargs_add_fuse_option(struct mount_options *options, const char *option);

/*
 * tessera-mount's long options as a getopt table (names, and whether each
 * takes a value), made from the parser's own list: the keys a
 * configuration file may set (conffile.h). Not thread-safe on first call.
 */
struct option;
const struct option *mountargs_long_options(void);

/* Frees what parsing allocated; the strings in *options are gone then. */
void mountargs_free(struct mount_options *options);

#endif
