/*
 * @file linkprobe.c
 * See linkprobe.h.
 */
#include "linkprobe.h"

#include "proto.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINKPROBE_TILE (1u << 20)
/* The mount takes a read starting within 4 tiles past the last one's end
 * for a stream: the file is long enough that the first (highest) remote
 * tile lies beyond that from offset 0. */
#define LINKPROBE_MIN_TILES 16u
#define LINKPROBE_WHO "tessera model calibrate"
#define LINKPROBE_WRONG_BYTES (-1)

struct linkprobe_stream {
    pthread_t thread;
    int fd;
    const uint64_t *tiles; /* remote tiles, highest first */
    size_t n_tiles, first, step;
    const unsigned char *pattern; /* what every tile holds */
    unsigned char *buf;
    int error; /* 0, an errno, or LINKPROBE_WRONG_BYTES */
};

static void *linkprobe_stream_run(void *arg)
{
    struct linkprobe_stream *s = arg;
    for (size_t i = s->first; i < s->n_tiles && s->error == 0; i += s->step) {
        ssize_t got = pread(s->fd, s->buf, LINKPROBE_TILE, (off_t)(s->tiles[i] * LINKPROBE_TILE));
        if (got < 0)
            s->error = errno;
        else if (got != LINKPROBE_TILE || memcmp(s->buf, s->pattern, LINKPROBE_TILE) != 0)
            s->error = LINKPROBE_WRONG_BYTES;
    }
    return NULL;
}

/* One pass: every remote tile read once; its seconds, or -1 (errno set)
 * or -2 (bytes read that were not written). */
static double linkprobe_pass(const char *path, const uint64_t *remote, size_t n_remote,
                             const unsigned char *pattern, unsigned char **bufs)
{
    struct linkprobe_stream streams[LINKPROBE_STREAMS];
    int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0)
        return -1.0;
    int64_t start_ns = util_monotonic_ns();
    size_t started = 0;
    int error = 0;
    for (size_t i = 0; i < LINKPROBE_STREAMS; i++) {
        streams[i] = (struct linkprobe_stream){.fd = fd,
                                               .tiles = remote,
                                               .n_tiles = n_remote,
                                               .first = i,
                                               .step = LINKPROBE_STREAMS,
                                               .pattern = pattern,
                                               .buf = bufs[i]};
        int rc = pthread_create(&streams[i].thread, NULL, linkprobe_stream_run, &streams[i]);
        if (rc != 0) {
            error = rc;
            break;
        }
        started++;
    }
    for (size_t i = 0; i < started; i++) {
        pthread_join(streams[i].thread, NULL);
        if (error == 0)
            error = streams[i].error;
    }
    double took = (double)(util_monotonic_ns() - start_ns) / 1e9;
    close(fd);
    if (error == LINKPROBE_WRONG_BYTES)
        return -2.0;
    if (error != 0) {
        errno = error;
        return -1.0;
    }
    return took;
}

/* Writes the probe file: tiles of `pattern`, synced. 0 or -1 (errno). */
static int linkprobe_write(const char *path, uint64_t tiles, const unsigned char *pattern)
{
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    for (uint64_t t = 0; t < tiles; t++) {
        if (write(fd, pattern, LINKPROBE_TILE) != LINKPROBE_TILE) {
            int saved = errno ? errno : EIO;
            close(fd);
            errno = saved;
            return -1;
        }
    }
    if (fsync(fd) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return close(fd);
}

/* The machine datanode `id` runs on, or NULL when meta did not list it. */
static const char *linkprobe_machine_of(const struct toolmeta_node *nodes, size_t count,
                                        uint32_t id)
{
    for (size_t i = 0; i < count; i++)
        if (nodes[i].id == id)
            return nodes[i].machine;
    return NULL;
}

/* The tiles of ino held on machines other than `machine`, highest first:
 * *n_remote of them in *remote (malloc'd). TS_OK or meta's status. */
static int linkprobe_remote_tiles(struct rpc_client *meta, int timeout_ms,
                                  const struct toolmeta_node *nodes, size_t count, uint64_t ino,
                                  uint64_t tiles, const char *machine, uint64_t **remote,
                                  size_t *n_remote)
{
    static uint32_t holder[TS_MAX_TILES_PER_MAP];
    static uint64_t versions[TS_MAX_TILES_PER_MAP]; /* asked for, not used */
    char error_text[256];
    *n_remote = 0;
    *remote = malloc(tiles * sizeof(**remote));
    if (!*remote)
        return TS_ERR_NOMEM;
    for (uint64_t first = 0; first < tiles; first += TS_MAX_TILES_PER_MAP) {
        uint32_t n =
            (uint32_t)(tiles - first < TS_MAX_TILES_PER_MAP ? tiles - first : TS_MAX_TILES_PER_MAP);
        int status = toolmeta_tile_map(meta, timeout_ms, ino, first, n, holder, versions, NULL,
                                       error_text, sizeof(error_text));
        if (status != TS_OK) {
            fprintf(stderr, "%s: TILE_MAP of the link probe: %s%s%s\n", LINKPROBE_WHO,
                    status_text(status), error_text[0] ? ": " : "", error_text);
            return status;
        }
        for (uint32_t i = 0; i < n; i++) {
            const char *where = linkprobe_machine_of(nodes, count, holder[i]);
            if (where && strcmp(where, machine) != 0)
                (*remote)[(*n_remote)++] = first + i;
        }
    }
    /* Highest first: see linkprobe.h. */
    for (size_t i = 0; i < *n_remote / 2; i++) {
        uint64_t swap = (*remote)[i];
        (*remote)[i] = (*remote)[*n_remote - 1 - i];
        (*remote)[*n_remote - 1 - i] = swap;
    }
    return TS_OK;
}

int linkprobe_measure(struct rpc_client *meta, int timeout_ms, const struct toolmeta_node *nodes,
                      size_t count, const char *dir, const char *machine, uint64_t probe_bytes,
                      int runs, double *pass_s, uint64_t *remote_bytes)
{
    char path[4096 + 16];
    unsigned char *pattern = NULL;
    unsigned char *bufs[LINKPROBE_STREAMS] = {0};
    uint64_t *remote = NULL;
    size_t n_remote = 0;
    int rc = -1;
    uint64_t tiles = probe_bytes / LINKPROBE_TILE;
    if (tiles < LINKPROBE_MIN_TILES)
        tiles = LINKPROBE_MIN_TILES;
    snprintf(path, sizeof(path), "%s/link", dir);
    /* O_DIRECT wants aligned buffers. */
    if (posix_memalign((void **)&pattern, 4096, LINKPROBE_TILE) != 0) {
        pattern = NULL;
        errno = ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < LINKPROBE_TILE; i++)
        pattern[i] = (unsigned char)(i * 131u + 11u);
    for (size_t i = 0; i < LINKPROBE_STREAMS; i++)
        if (posix_memalign((void **)&bufs[i], 4096, LINKPROBE_TILE) != 0) {
            bufs[i] = NULL;
            errno = ENOMEM;
            goto out;
        }
    if (linkprobe_write(path, tiles, pattern) != 0)
        goto out;
    struct stat st;
    if (stat(path, &st) != 0)
        goto out;
    if (linkprobe_remote_tiles(meta, timeout_ms, nodes, count, (uint64_t)st.st_ino, tiles, machine,
                               &remote, &n_remote) != TS_OK) {
        rc = -2; /* printed */
        goto out;
    }
    if (n_remote == 0) {
        rc = 0;
        goto out;
    }
    for (int run = -1; run < runs; run++) {
        double took = linkprobe_pass(path, remote, n_remote, pattern, bufs);
        if (took < -1.5) {
            fprintf(stderr, "%s: the link probe %s read back bytes it did not write\n",
                    LINKPROBE_WHO, path);
            rc = -2;
            goto out;
        }
        if (took < 0)
            goto out;
        if (run >= 0)
            pass_s[run] = took;
    }
    *remote_bytes = (uint64_t)n_remote * LINKPROBE_TILE;
    rc = 1;
out:
    if (rc == -1)
        fprintf(stderr, "%s: the link probe %s failed: %s\n", LINKPROBE_WHO, path, strerror(errno));
    unlink(path);
    free(remote);
    for (size_t i = 0; i < LINKPROBE_STREAMS; i++)
        free(bufs[i]);
    free(pattern);
    return rc < 0 ? -1 : rc;
}
