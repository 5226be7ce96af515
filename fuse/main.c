/*
 * @file main.c
 * tessera-mount: parses the command line, connects to meta, mounts the
 * filesystem with the low-level libfuse API and serves it with the
 * multithreaded loop until unmounted or signalled. Besides the request
 * threads, a profile thread sends the access counts of profiled files to
 * meta every second (profiler.h); it stops, and sends what is left, after
 * the kernel has released every file.
 */
#include "ops.h"

#include "beneath.h"
#include "conffile.h"
#include "curve.h"
#include "dirlease.h"
#include "keepcache.h"
#include "log.h"
#include "metrics.h"
#include "mountargs.h"
#include "mountmetrics.h"
#include "profiler.h"
#include "readiness.h"
#include "reqloop.h"
#include "status.h"
#include "tile.h"
#include "tilestream.h"
#include "util.h"
#include "version.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

/* How long a release may wait to share a request with later ones. */
#define RELEASE_DELAY_MS 10
/* Files whose page cache an open may keep: 48 bytes each. */
#define KEPT_PAGES_FILES 16384
/* Threads of the FUSE session; each keeps a buffer for a whole request. */
#define FUSE_THREADS 16
/* What --memory keeps for everything but tile buffers: the session threads'
 * request buffers, and the rest (code and libraries, ZeroMQ's queues,
 * per-file state, the profile's tables: about 23 MiB under load, measured
 * by test_memory_cap; libsystemd, libmicrohttpd and libinih, linked for
 * readiness, metrics and configuration files, added 3 MiB of it). */
#define MEMORY_RESERVE_BYTES                                                                       \
    (FUSE_THREADS * (TILE_DEFAULT_BYTES + REQMEM_HEADROOM + REQMEM_TAILROOM + 0ull) + (28ull << 20))
/* The least --memory: the reserve and 16 MiB of tile buffers. */
#define MEMORY_MIN_BYTES                                                                           \
    (((MEMORY_RESERVE_BYTES + (16ull << 20)) + (1ull << 20) - 1) & ~((1ull << 20) - 1))


#define MOUNT_DEFAULT_CONFIG CONFFILE_DIR "/mount.conf"

/* The tile buffers' share of the cap: what the reserve leaves, and at most
 * half of it (the share all figures in the README were measured with). */
static uint64_t tile_memory(uint64_t cap)
{
    uint64_t left = cap > MEMORY_RESERVE_BYTES ? cap - MEMORY_RESERVE_BYTES : 0;
    return left < cap / 2 ? left : cap / 2;
}

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera-mount [OPTIONS] MOUNTPOINT\n"
            "       mount.tessera SOURCE MOUNTPOINT [-o OPTION,...]\n"
            "Mounts a Tessera filesystem. The second form is how mount(8) runs it (mount -t\n"
            "tessera, mount -t fuse.tessera, or an fstab line such as\n"
            "  tcp://10.0.0.1:7400  /mnt/tessera  fuse.tessera  _netdev,allow_other  0 0):\n"
            "SOURCE is meta's endpoint (or tessera:ENDPOINT; or tessera with -o meta=), and\n"
            "every --name VALUE below is also -o name=VALUE (dashes or underscores). -o\n"
            "options for mount(8) and fstab only (_netdev, nofail, noauto, auto, user,\n"
            "users, nouser, defaults, x-*, comment=) are ignored; the others go to FUSE,\n"
            "and one FUSE does not know either fails the mount at once.\n\n"
            "Options:\n"
            "  --config FILE          read these options from FILE, an INI file with a\n"
            "                         [mount] section of `name = value` lines (flags win);\n"
            "                         default %s if it exists\n"
            "  --check-config         check the file and flags, then exit\n"
            "  --mountpoint DIR       MOUNTPOINT, for a configuration file\n"
            "  --fuse-options OPTS    more -o options, for a configuration file\n"
            "  --meta ENDPOINT        tessera-meta to use (default %s)\n"
            "  --io-timeout-ms MS     give up on a datanode silent for MS ms with EIO; a busy one\n"
            "                         (it answers a PING) gets up to 12 x MS (default 5000)\n"
            "  --meta-timeout-ms MS   give up on meta after MS ms with EIO (default 5000)\n"
            "  --attr-timeout SEC     seconds names and attributes may be cached, by the\n"
            "                         kernel and by statahead (default 1.0)\n"
            "  --memory SIZE          cap on the mount's resident memory, at least 61M\n"
            "                         (default 256M); tile buffers get what 44 MiB for the\n"
            "                         rest leaves, at most half\n"
            "  --readahead-tiles N    tiles read ahead of a sequential reader (default 6)\n"
            "  --io-threads N         tile transfers in flight at once (default 16)\n"
            "  --statahead N          most names (with attributes) fetched at once for a\n"
            "                         directory walk (default 1024; 0 = off: every lookup\n"
            "                         asks meta)\n"
            "  --async-unlinks N      most unlinks answered before meta has done them, sent\n"
            "                         in the background; later requests about their\n"
            "                         names or directories wait for them (default 256;\n"
            "                         0 = off)\n"
            "  --async-creates 0|1    answer creates of files in a directory this mount\n"
            "                         holds a lease on before meta has them (default 1;\n"
            "                         needs --async-unlinks above 0)\n"
            "  --array-direct 0|1     read-only handles of array files read past the page\n"
            "                         cache, read ahead along the reader's block (default\n"
            "                         1; 0: through the page cache, for shared mmap on\n"
            "                         libfuse before 3.16)\n"
            "  --tile-streams 0|1     move tiles to and from datanodes on this machine over\n"
            "                         their tile streams (Unix sockets, else TCP), spliced,\n"
            "                         not copied, on the way (default 1; needs pipes of\n"
            "                         2 MiB: as root it raises /proc/sys/fs/pipe-max-size\n"
            "                         to that if lower)\n"
            "  --machine NAME         this machine's name (default: the hostname)\n"
            "  --key FILE             this mount's key pair (tessera keys); server.pub is\n"
            "                         read from its directory: every link uses CURVE\n"
            "  --log-level LEVEL      error, warn, info or debug (default info)\n"
            "  --metrics [HOST:]PORT  serve Prometheus metrics at http://HOST:PORT/metrics\n"
            "                         (HOST defaults to 127.0.0.1; default: off)\n"
            "  --log-file FILE        append the log to FILE instead of stderr (also in the\n"
            "                         background); SIGHUP reopens it (after logrotate)\n"
            "  --replace-dead         MOUNTPOINT holds a FUSE mount whose process is gone:\n"
            "                         mount beneath it, then detach it, so the directory\n"
            "                         is never bare in between (root, Linux 6.5; else it\n"
            "                         is detached first); `tessera up` passes this\n"
            "  -o OPTIONS             FUSE mount options, e.g. allow_other,default_permissions,\n"
            "                         and any option above as name=VALUE\n"
            "  -f                     stay in the foreground\n"
            "  -s                     single-threaded (for debugging)\n"
            "  -d                     FUSE debug output (implies -f)\n"
            "  --help                 this text\n"
            "  --version              print the version, git revision and protocol\n",
            MOUNT_DEFAULT_CONFIG, MOUNTARGS_DEFAULT_META);
}

/* mountargs_parse() as a conffile_parse_fn; the context is the options. */
struct mount_parse {
    struct mount_options *options;
    const struct conffile *config;
};

static int mount_parse(int argc, char **argv, void *context, int *failed_arg)
{
    struct mount_parse *parse = context;
    mountargs_free(parse->options); /* a check parses again */
    int rc = mountargs_parse(argc, argv, parse->options);
    if (rc == 2 && parse->options->bad_option)
        *failed_arg = conffile_find(parse->config, parse->options->bad_option);
    return rc;
}

/* The profile's way to meta. */
static int profile_send_to_meta(void *context, const uint8_t *records, uint32_t count)
{
    uint32_t kept;
    return metaclient_profile_record(context, records, count, &kept);
}

/*
 * Background mode. ZeroMQ's threads do not survive fork(), so the process
 * forks before it opens any socket; the parent waits on a pipe for the
 * child's verdict (mounted or not) and exits with it, so `tessera-mount`
 * without -f still fails visibly when the mount fails.
 * Returns the write end of the pipe in the child (-1 in foreground mode).
 */
/* The data path's commit hook: statahead windows keep no attributes older
 * than this mount's own commit (datapath_config.committed). */
static void dentries_drop_attr(void *context, uint64_t ino)
{
    dentcache_changed(context, ino);
}

static int daemon_fork(int foreground)
{
    int pipe_fds[2];
    if (foreground)
        return -1;
    if (pipe(pipe_fds) != 0) {
        perror("tessera-mount: pipe");
        exit(1);
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("tessera-mount: fork");
        exit(1);
    }
    if (pid > 0) {
        char verdict = 1;
        close(pipe_fds[1]);
        if (read(pipe_fds[0], &verdict, 1) != 1)
            verdict = 1;
        _exit(verdict);
    }
    close(pipe_fds[0]);
    setsid();
    return pipe_fds[1];
}

/* Tells the waiting parent the outcome and detaches from the terminal. */
static void daemon_report(int report_fd, int exit_code)
{
    char verdict = (char)exit_code;
    if (report_fd < 0)
        return;
    if (write(report_fd, &verdict, 1) != 1)
        log_warn("could not report to the parent process");
    close(report_fd);
    if (exit_code != 0)
        return;
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
        dup2(null_fd, STDIN_FILENO);
        dup2(null_fd, STDOUT_FILENO);
        if (!log_has_file()) /* stderr is the --log-file: it stays */
            dup2(null_fd, STDERR_FILENO);
        if (null_fd > STDERR_FILENO)
            close(null_fd);
    }
    if (chdir("/") != 0)
        log_warn("chdir / failed");
}

int main(int argc, char **argv)
{
    struct mount_options options = {0};
    struct mount_state state = {0};
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    struct fuse_session *session = NULL;
    struct profiler *profile = NULL;
    int exit_code = 1;

    struct conffile config;
    struct mount_parse parse = {&options, &config};
    options.memory_min_bytes = MEMORY_MIN_BYTES;
    int parsed = conffile_load(argc, argv, "tessera-mount", "mount", mountargs_long_options(),
                               MOUNT_DEFAULT_CONFIG, &config);
    if (parsed == 0)
        parsed = conffile_parse(&config, "tessera-mount", mount_parse, &parse);
    bool checking = config.checking;
    conffile_free(&config); /* the options hold copies of what they need */
    if (checking && parsed == 0) {
        mountargs_free(&options);
        return 0;
    }
    if (parsed == MOUNTARGS_HELP || parsed == MOUNTARGS_VERSION) {
        if (parsed == MOUNTARGS_HELP)
            usage(stdout);
        else
            version_print(stdout, "tessera-mount");
        mountargs_free(&options);
        return 0;
    }
    if (parsed != 0) {
        mountargs_free(&options);
        return 2;
    }
    log_init("tessera-mount", options.log_level);
    if (options.log_file) {
        int err = log_set_file(options.log_file);
        if (err != 0) {
            fprintf(stderr, "tessera-mount: cannot open --log-file %s: %s\n", options.log_file,
                    strerror(-err));
            mountargs_free(&options);
            return 1;
        }
    }
    /* Before libfuse's handlers, which then leave SIGHUP to it (SIGTERM still unmounts). */
    readiness_reopen_log_on_sighup();
    if (curve_setup(options.key_path, false, false) != 0)
        return 1;
    /* Tile buffers are 1 MiB: without this glibc maps and unmaps each one,
     * and every use pays page faults and zeroing again. The memory cap
     * (--memory) bounds what the heap keeps. */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
    /* Few heaps: a buffer freed into one heap is not reused by threads of
     * another, and glibc's default (8 per CPU) left the mount 14 MiB above
     * its cap in test_memory_cap (with 4: 42-52 MiB under a 64 MiB cap). */
    mallopt(M_ARENA_MAX, 4);
    int report_fd = daemon_fork(options.foreground);

    /* Large requests: the kernel sends up to a whole tile per read/write. The
     * source names meta, so `tessera up` can tell its own dead mount from
     * another one (an endpoint with a comma stays out of the option list). */
    char fsname[300];
    bool meta_in_fsname = strpbrk(options.meta, ",\\") == NULL;
    snprintf(fsname, sizeof(fsname), "fsname=tessera%s%s", meta_in_fsname ? ":" : "",
             meta_in_fsname ? options.meta : "");
    if (mountargs_add_fuse_option(&options, fsname) != 0 ||
        mountargs_add_fuse_option(&options, "subtype=tessera,max_read=1048576") != 0) {
        mountargs_free(&options);
        return 2;
    }
    if (fuse_opt_add_arg(&args, argv[0]) != 0 || fuse_opt_add_arg(&args, "-o") != 0 ||
        fuse_opt_add_arg(&args, options.fuse_options) != 0 ||
        (options.debug && fuse_opt_add_arg(&args, "-d") != 0)) {
        log_error("out of memory");
        goto out;
    }

    state.attr_timeout = options.attr_timeout;
    state.array_direct = options.array_direct != 0;
    state.mountpoint = options.mountpoint;
    state.entry_timeout = options.attr_timeout;
    state.meta = metaclient_new(options.meta, (int)options.meta_timeout_ms, options.machine);
    /* Nothing waits for a release: they go in batches (relqueue.h). */
    if (state.meta && metaclient_defer_releases(state.meta, RELEASE_DELAY_MS) != TS_OK)
        metaclient_destroy(&state.meta);
    if (state.meta && options.async_unlinks > 0 &&
        metaclient_defer_unlinks(state.meta, (uint32_t)options.async_unlinks) != TS_OK)
        metaclient_destroy(&state.meta);
    /* Meta lists the endpoint for `tessera stats` (METRICS_LIST); for
     * 0.0.0.0 the machine's name is the best address this mount knows. */
    char metrics_announced[256];
    if (state.meta && options.metrics &&
        metrics_announced_address(options.metrics, options.machine, metrics_announced,
                                  sizeof(metrics_announced)) == 0)
        (void)metaclient_set_metrics(state.meta, metrics_announced);
    /* Meta keeps this mount's opens (unlinked files open here) only under
     * a lease the mount renews, and learns them again after a restart. */
    if (state.meta && metaclient_keep_session(state.meta) != TS_OK)
        metaclient_destroy(&state.meta);
    if (state.meta)
        state.dentries = dentcache_new(options.attr_timeout, (uint32_t)options.statahead, NULL);
    if (state.dentries && options.async_creates && options.async_unlinks > 0) {
        state.leases = dirlease_new(state.meta, state.dentries);
        if (!state.leases)
            dentcache_destroy(&state.dentries);
    }
    if (state.dentries)
        state.nodes = nodedir_new(state.meta, (int)options.io_timeout_ms);
    /* Optional: without it every open drops the file's cached pages. */
    state.kept_pages = keepcache_new(KEPT_PAGES_FILES);
    if (state.nodes)
        state.workers = workers_new((int)options.io_threads);
    if (state.workers && options.tile_streams && tilestream_setup())
        state.streams = tilestream_new(state.nodes, (int)options.io_timeout_ms);
    struct profiler_config profiler_config = {
        .slots = PROFILE_DEFAULT_SLOTS,
        .max_records = TS_MAX_PROFILE_RECORDS,
        .interval_ms = PROFILE_INTERVAL_MS,
        .send = profile_send_to_meta,
        .send_context = state.meta,
    };
    if (state.workers)
        profile = profiler_new(&profiler_config);
    /* Attributes older than the newest handed out may still come in for
     * the attribute timeout (caches) plus meta's (replies): attrguard.h. */
    state.attr_guard =
        attrguard_new(options.attr_timeout + (double)options.meta_timeout_ms / 1000 + 1, NULL);
    struct datapath_config datapath_config = {
        .memory_bytes = tile_memory(options.memory_bytes),
        .readahead_tiles = (uint32_t)options.readahead_tiles,
        .io_timeout_ms = (int)options.io_timeout_ms,
        .profile = profile,
        .streams = state.streams,
        .committed = dentries_drop_attr,
        .committed_context = state.dentries,
        .guard = state.attr_guard,
    };
    if (profile && state.attr_guard)
        state.datapath = datapath_new(state.meta, state.nodes, state.workers, &datapath_config);
    if (!state.datapath) {
        log_error("cannot set up the client (out of memory or bad --meta %s)", options.meta);
        goto out;
    }
    struct ts_attr root;
    int status = metaclient_getattr(state.meta, FUSE_ROOT_ID, &root);
    if (status != TS_OK) {
        log_error("cannot reach tessera-meta at %s: %s (is it running? start the cluster with "
                  "`tessera up` or pass --meta)",
                  options.meta, status_text(status));
        goto out;
    }

    /* Named by every inode's tessera.cluster, so a tool given a path knows its meta. */
    char cluster_id[TS_CLUSTER_ID_HEX + 1];
    char cluster[TS_CLUSTER_ID_HEX + 2 + 512];
    status = metaclient_cluster_id(state.meta, cluster_id, sizeof(cluster_id));
    if (status == TS_OK) {
        snprintf(cluster, sizeof(cluster), "%s %s", cluster_id, options.meta);
        state.cluster = cluster;
    } else {
        log_warn("tessera-meta at %s does not say which cluster it serves (%s): files here have "
                 "no %s",
                 options.meta, status_text(status), TS_CLUSTER_XATTR);
    }

    session = fuse_session_new(&args, &tessera_ops, sizeof(tessera_ops), &state);
    if (!session)
        goto out;
    state.session = session; /* before any request: the loop starts below */
    if (fuse_set_signal_handlers(session) != 0)
        goto out_session;
    const char *mount_target = options.mountpoint;
    char fuse_fd_path[32];
    int beneath_fd = -1;
    if (options.replace_dead) {
        if (beneath_replace(options.mountpoint, options.fuse_options, &beneath_fd) == 0) {
            snprintf(fuse_fd_path, sizeof(fuse_fd_path), "/dev/fd/%d", beneath_fd);
            mount_target = fuse_fd_path; /* libfuse takes the connection as it is */
        } else {
            log_warn("detaching the dead mount at %s first: the directory is bare until the "
                     "new mount is made",
                     options.mountpoint);
            if (umount2(options.mountpoint, MNT_DETACH) != 0)
                log_warn("cannot detach %s: %s", options.mountpoint, strerror(errno));
        }
    }
    if (fuse_session_mount(session, mount_target) != 0) {
        log_error("cannot mount on %s (does it exist? is something else mounted there? try "
                  "fusermount3 -u %s)",
                  options.mountpoint, options.mountpoint);
        goto out_signals;
    }
    log_info("mounting %s from %s as machine %s (datanode timeout %ld ms)", options.mountpoint,
             options.meta, options.machine, options.io_timeout_ms);

    /* In the process that serves (after the fork): its thread must not be lost. */
    struct metrics_server *metrics = NULL;
    if (options.metrics) {
        int err = metrics_server_start(options.metrics, mountmetrics_collect, NULL, &metrics);
        if (err != 0) {
            log_error("cannot serve metrics on %s: %s", options.metrics, strerror(-err));
            goto out_unmount;
        }
        log_info("metrics: http://%s/metrics", options.metrics);
    }
    daemon_report(report_fd, 0);
    report_fd = -1;
    readiness_ready("mounted %s from %s", options.mountpoint, options.meta);
    if (options.single_thread)
        exit_code = fuse_session_loop(session) == 0 ? 0 : 1;
    else
        exit_code = reqloop_run(session, FUSE_THREADS, TILE_DEFAULT_BYTES) == 0 ? 0 : 1;
    metrics_server_stop(&metrics);
    log_info("unmounted %s", options.mountpoint);
    readiness_stopping();
out_unmount:
    if (beneath_fd >= 0)
        beneath_unmount(options.mountpoint, beneath_fd);
    fuse_session_unmount(session);
out_signals:
    fuse_remove_signal_handlers(session);
    /* Unmounted: what is left sends queued creates, unlinks and releases to
     * meta, so a stop signal now (`tessera down` sends one right after the
     * unmount) waits for it instead of losing them. */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
out_session:
    fuse_session_destroy(session);
out:
    workers_destroy(&state.workers); /* finishes queued jobs before the rest goes */
    datapath_destroy(&state.datapath);
    tilestream_destroy(&state.streams);
    profiler_destroy(&profile); /* sends the last counts: meta is still there */
    nodedir_destroy(&state.nodes);
    dirlease_destroy(&state.leases);  /* returns the leases once their creates are sent */
    metaclient_destroy(&state.meta); /* sends the releases still queued */
    if (state.dentries) {
        struct dentcache_stats stats;
        dentcache_stats(state.dentries, &stats);
        log_debug("statahead: %llu found, %llu absent, %llu to meta, %llu windows fetched, "
                  "%llu kept",
                  (unsigned long long)stats.found, (unsigned long long)stats.absent,
                  (unsigned long long)stats.misses, (unsigned long long)stats.fetches,
                  (unsigned long long)stats.installed);
    }
    dentcache_destroy(&state.dentries);
    keepcache_destroy(&state.kept_pages);
    attrguard_destroy(&state.attr_guard);
    fuse_opt_free_args(&args);
    daemon_report(report_fd, exit_code);
    mountargs_free(&options);
    return exit_code;
}
