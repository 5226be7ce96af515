/*
 * @file diskio.c
 * See diskio.h. Each operation is measured from its start to the end of
 * its throttle wait: that is the busy time the emulated disk spent on it.
 * A failed operation is still waited out and timed (the disk did work),
 * but adds no bytes.
 */
#include "diskio.h"

#include "log.h"
#include "measure.h"
#include "throttle.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct diskio {
    struct tilestore *store;
    struct throttle throttle;
    struct measure_rate read;
    struct measure_rate write;
    diskio_wait_fn wait;
    void *wait_arg;
    uint32_t in_service;
    bool defer;           /* diskio_set_defer(): no wait, reply_at_ns instead */
    int64_t reply_at_ns;  /* the latest wait deferred since diskio_take_reply_at() */
    int64_t serial_done_ns; /* when the last deferred operation counts as done */
};

int64_t diskio_now_ns(void) { return util_monotonic_ns(); }

/* The default wait: sleep until the deadline. */
static void diskio_sleep(void *arg, int64_t until_ns)
{
    (void)arg;
    for (;;) {
        int64_t left = until_ns - diskio_now_ns();
        if (left <= 0)
            return;
        struct timespec nap = {.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
        nanosleep(&nap, NULL);
    }
}

int diskio_new(struct tilestore *store, uint64_t throttle_bytes_per_sec, struct diskio **diskp)
{
    struct diskio *disk = calloc(1, sizeof(*disk));
    *diskp = NULL;
    if (!disk)
        return -ENOMEM;
    disk->store = store;
    throttle_init(&disk->throttle, throttle_bytes_per_sec, DISKIO_THROTTLE_BURST_BYTES);
    disk->wait = diskio_sleep;
    *diskp = disk;
    return 0;
}

void diskio_destroy(struct diskio **diskp)
{
    if (!diskp || !*diskp)
        return;
    free(*diskp);
    *diskp = NULL;
}

void diskio_set_wait(struct diskio *disk, diskio_wait_fn wait, void *arg)
{
    disk->wait = wait ? wait : diskio_sleep;
    disk->wait_arg = wait ? arg : NULL;
}

/*
 * Waits out the throttle until until_ns, for at most DISKIO_MAX_WAIT_NS
 * from now; deferring, only notes that time for the reply instead.
 * Returns how long the operation that started at start_ns took, as the
 * measurement should count it.
 */
static int64_t diskio_wait(struct diskio *disk, int64_t until_ns, int64_t start_ns)
{
    int64_t now = diskio_now_ns();
    if (!disk->defer) {
        int64_t latest = now + DISKIO_MAX_WAIT_NS;
        disk->wait(disk->wait_arg, until_ns < latest ? until_ns : latest);
        return diskio_now_ns() - start_ns;
    }
    /* As if the operations still waited one after another (as the loop did):
     * each one starts when the one before it is done, and its cap counts
     * from then, so concurrent requests cannot beat the rate by all
     * hitting the cap, nor measure each other's waits as their own. */
    int64_t previous = disk->serial_done_ns;
    int64_t start = previous > now ? previous : now;
    int64_t latest = start + DISKIO_MAX_WAIT_NS;
    int64_t done = until_ns < latest ? until_ns : latest;
    if (done < now)
        done = now;
    disk->serial_done_ns = done;
    if (done > disk->reply_at_ns)
        disk->reply_at_ns = done;
    disk->wait(disk->wait_arg, now); /* the hook's chores (heartbeats), no waiting */
    return done - (start_ns > previous ? start_ns : previous);
}

void diskio_set_defer(struct diskio *disk, bool defer)
{
    disk->defer = defer;
}

int64_t diskio_take_reply_at(struct diskio *disk)
{
    if (!disk)
        return 0;
    int64_t at = disk->reply_at_ns;
    disk->reply_at_ns = 0;
    return at;
}

/*
 * Ends an operation that started at start_ns and moved `bytes` of disk I/O
 * (booked on the throttle): waits out the throttle, then adds the work to
 * `rate` (counted_bytes: what the average may count, 0 for a failure).
 */
static void diskio_finish(struct diskio *disk, struct measure_rate *rate, int64_t start_ns,
                          uint64_t bytes, uint64_t counted_bytes)
{
    int64_t until = throttle_book(&disk->throttle, bytes, start_ns);
    measure_add(rate, counted_bytes, diskio_wait(disk, until, start_ns));
    disk->in_service = 0;
}

int diskio_write(struct diskio *disk, uint64_t ino, uint64_t tile, uint64_t version,
                 uint64_t offset, const void *data, size_t len,
                 const struct tilecrc_payload *sums)
{
    int64_t start = diskio_now_ns();
    int rc;

    disk->in_service = 1;
    rc = tilestore_write_summed(disk->store, ino, tile, version, offset, data, len, sums);
    diskio_finish(disk, &disk->write, start, rc == 0 ? len : 0, rc == 0 ? len : 0);
    return rc;
}

int diskio_read(struct diskio *disk, uint64_t ino, uint64_t tile, uint64_t version, uint64_t offset,
                size_t length, void *buf, size_t *got)
{
    int64_t start = diskio_now_ns();
    int rc;

    disk->in_service = 1;
    *got = 0;
    rc = tilestore_read(disk->store, ino, tile, version, offset, length, buf, got);
    diskio_finish(disk, &disk->read, start, *got, rc == 0 ? *got : 0);
    return rc;
}

bool diskio_throttled(const struct diskio *disk) { return disk->throttle.bytes_per_sec != 0; }

void diskio_add_read(struct diskio *disk, int64_t start_ns, uint64_t bytes)
{
    measure_add(&disk->read, bytes, diskio_now_ns() - start_ns);
}

int diskio_receive(struct diskio *disk, uint64_t ino, uint64_t tile, uint64_t version,
                   uint64_t offset, const void *data, size_t len,
                   const struct tilecrc_payload *sums)
{
    int64_t start = diskio_now_ns();
    int rc = tilestore_write_summed(disk->store, ino, tile, version, offset, data, len, sums);
    /* Not throttled (streams are refused on a throttled disk), and no wait
     * hook: a stream's thread runs this. */
    measure_add(&disk->write, rc == 0 ? len : 0, diskio_now_ns() - start);
    return rc;
}

int diskio_sync(struct diskio *disk, uint64_t ino, uint64_t tile, uint64_t version)
{
    int64_t start = diskio_now_ns();
    int rc;

    disk->in_service = 1;
    rc = tilestore_sync(disk->store, ino, tile, version);
    diskio_finish(disk, &disk->write, start, 0, 0);
    return rc;
}

void diskio_add_sync(struct diskio *disk, int64_t start_ns)
{
    measure_add(&disk->write, 0, diskio_now_ns() - start_ns);
}

/* ---- the empirical test ------------------------------------------------- */

/* Fills buf with bytes no filesystem can compress away (xorshift). */
static void diskio_fill(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t state = seed | 1;
    for (size_t i = 0; i < len; i++) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        buf[i] = (uint8_t)state;
    }
}

static int diskio_write_all(int fd, const uint8_t *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        done += (size_t)n;
    }
    return 0;
}

static int diskio_read_all(int fd, uint8_t *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = read(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        done += (size_t)n;
    }
    return 0;
}

/* Writes and fsyncs one probe file; *busy_ns is its time. */
static int diskio_probe_write(struct diskio *disk, const char *path, const uint8_t *buf,
                              int64_t *busy_ns)
{
    int64_t start = diskio_now_ns();
    int rc = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0)
        return -errno;
    rc = diskio_write_all(fd, buf, DISKIO_PROBE_BYTES);
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    close(fd);
    diskio_wait(disk, throttle_book(&disk->throttle, DISKIO_PROBE_BYTES, start), start);
    *busy_ns = diskio_now_ns() - start;
    return rc;
}

/* Reads one probe file back from the disk; *busy_ns is its time. */
static int diskio_probe_read(struct diskio *disk, const char *path, uint8_t *buf, int64_t *busy_ns)
{
    int64_t start;
    int rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    /* The pages are clean after fsync: drop them so the read goes to the disk. */
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    start = diskio_now_ns();
    rc = diskio_read_all(fd, buf, DISKIO_PROBE_BYTES);
    close(fd);
    diskio_wait(disk, throttle_book(&disk->throttle, DISKIO_PROBE_BYTES, start), start);
    *busy_ns = diskio_now_ns() - start;
    return rc;
}

/*
 * The median of the probe files' times, times their number: one fsync that
 * waited behind another process's (four datanodes of one machine start and
 * probe at once) is not the disk's speed, and a seed 20 times too slow
 * kept a node's array homes off it until real work measured it again.
 */
static int64_t diskio_probe_total(int64_t ns[DISKIO_PROBE_FILES])
{
    for (int i = 1; i < DISKIO_PROBE_FILES; i++) {
        for (int j = i; j > 0 && ns[j - 1] > ns[j]; j--) {
            int64_t swap = ns[j];
            ns[j] = ns[j - 1];
            ns[j - 1] = swap;
        }
    }
    return ns[DISKIO_PROBE_FILES / 2] * DISKIO_PROBE_FILES;
}

int diskio_probe(struct diskio *disk, const char *data_dir)
{
    char paths[DISKIO_PROBE_FILES][4200];
    int64_t write_ns[DISKIO_PROBE_FILES] = {0};
    int64_t read_ns[DISKIO_PROBE_FILES] = {0};
    uint8_t *buf = malloc(DISKIO_PROBE_BYTES);
    int rc = 0;

    if (!buf)
        return -ENOMEM;
    for (int i = 0; i < DISKIO_PROBE_FILES; i++) {
        int len = snprintf(paths[i], sizeof(paths[i]), "%s/probe.%d", data_dir, i);
        if (len < 0 || (size_t)len >= sizeof(paths[i])) {
            free(buf);
            return -ENAMETOOLONG;
        }
    }
    for (int i = 0; i < DISKIO_PROBE_FILES && rc == 0; i++) {
        diskio_fill(buf, DISKIO_PROBE_BYTES, (uint64_t)diskio_now_ns() + (uint64_t)i);
        rc = diskio_probe_write(disk, paths[i], buf, &write_ns[i]);
    }
    for (int i = 0; i < DISKIO_PROBE_FILES && rc == 0; i++)
        rc = diskio_probe_read(disk, paths[i], buf, &read_ns[i]);
    for (int i = 0; i < DISKIO_PROBE_FILES; i++)
        unlink(paths[i]);
    free(buf);
    if (rc != 0)
        return rc;
    measure_seed(&disk->write, (uint64_t)DISKIO_PROBE_FILES * DISKIO_PROBE_BYTES,
                 diskio_probe_total(write_ns));
    measure_seed(&disk->read, (uint64_t)DISKIO_PROBE_FILES * DISKIO_PROBE_BYTES,
                 diskio_probe_total(read_ns));
    return 0;
}

/* ---- throttle and report ------------------------------------------------ */

void diskio_set_throttle(struct diskio *disk, uint64_t bytes_per_sec)
{
    throttle_set_rate(&disk->throttle, bytes_per_sec);
    measure_disk_changed(&disk->write, bytes_per_sec);
    measure_disk_changed(&disk->read, bytes_per_sec);
}

uint64_t diskio_throttle(const struct diskio *disk)
{
    return disk->throttle.bytes_per_sec;
}

void diskio_report(struct diskio *disk, struct diskio_report *report)
{
    measure_fold(&disk->write);
    measure_fold(&disk->read);
    report->read_bytes_per_sec = measure_bytes_per_sec(&disk->read);
    report->write_bytes_per_sec = measure_bytes_per_sec(&disk->write);
    report->throttle_bytes_per_sec = disk->throttle.bytes_per_sec;
    report->in_service = disk->in_service;
}
