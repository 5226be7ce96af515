/*
 * @file nodes.c
 * See nodes.h. Record value (little-endian like the wire): u64 capacity,
 * u64 free, u64 used, u64 tiles, u16-length machine, u16-length address,
 * then u64 read_bytes_per_sec, u64 write_bytes_per_sec, u32 queue_depth,
 * u64 throttle_bytes_per_sec, u64 incarnation, u32 admin (records
 * written before those existed end after the address, the throttle or the
 * incarnation, and read as zeros).
 * The liveness table is a small array sorted by id: there is one entry per
 * datanode, a few hundred at most, and it is read far more than written.
 */
#include "nodes.h"

#include "log.h"
#include "proto.h"
#include "tile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NODES_LOAD_BYTES (3 * 8 + 4)
#define NODES_INCARNATION_BYTES 8
#define NODES_ADMIN_BYTES 4
/* The full record so far; a record of this size or less has no key (older ones are shorter). */
#define NODES_TAIL_BYTES (NODES_LOAD_BYTES + NODES_INCARNATION_BYTES + NODES_ADMIN_BYTES)
#define NODES_VALUE_MAX                                                                            \
    (4 * 8 + 2 * (2 + NODES_MAX_TEXT) + NODES_TAIL_BYTES + 2 + NODES_MAX_KEY_USER)

int nodes_get(struct store_txn *txn, uint32_t id, struct nodes_record *record)
{
    uint8_t key[4];
    MDB_val value;
    struct ts_cursor cursor;
    struct ts_str machine;
    struct ts_str address;
    struct ts_str key_user = {.ptr = "", .len = 0};
    int err;

    store_be32_put(key, id);
    err = store_get(txn, STORE_NODES, key, sizeof(key), &value);
    if (err < 0)
        return err;
    memset(record, 0, sizeof(*record));
    record->id = id;
    ts_cursor_init(&cursor, value.mv_data, value.mv_size);
    record->capacity = ts_cursor_u64(&cursor);
    record->free_bytes = ts_cursor_u64(&cursor);
    record->used_bytes = ts_cursor_u64(&cursor);
    record->tiles = ts_cursor_u64(&cursor);
    machine = ts_cursor_str(&cursor);
    address = ts_cursor_str(&cursor);
    bool with_key = cursor.left > NODES_TAIL_BYTES;
    if (cursor.left == NODES_LOAD_BYTES ||
        cursor.left == NODES_LOAD_BYTES + NODES_INCARNATION_BYTES ||
        cursor.left >= NODES_TAIL_BYTES) {
        record->read_bytes_per_sec = ts_cursor_u64(&cursor);
        record->write_bytes_per_sec = ts_cursor_u64(&cursor);
        record->queue_depth = ts_cursor_u32(&cursor);
        record->throttle_bytes_per_sec = ts_cursor_u64(&cursor);
    }
    if (cursor.left == NODES_INCARNATION_BYTES ||
        cursor.left == NODES_INCARNATION_BYTES + NODES_ADMIN_BYTES || with_key)
        record->incarnation = ts_cursor_u64(&cursor);
    if (cursor.left == NODES_ADMIN_BYTES || with_key)
        record->admin = ts_cursor_u32(&cursor);
    if (with_key)
        key_user = ts_cursor_str(&cursor);
    if (cursor.failed || cursor.left != 0 ||
        ts_str_copy(machine, record->machine, sizeof(record->machine)) < 0 ||
        ts_str_copy(address, record->address, sizeof(record->address)) < 0 ||
        ts_str_copy(key_user, record->key_user, sizeof(record->key_user)) < 0) {
        log_error("corrupt record of node %u", id);
        return -EIO;
    }
    return 0;
}

int nodes_put(struct store_txn *txn, const struct nodes_record *record)
{
    uint8_t key[4];
    uint8_t value[NODES_VALUE_MAX];
    struct ts_writer writer;

    store_be32_put(key, record->id);
    ts_writer_init(&writer, value, sizeof(value));
    ts_writer_u64(&writer, record->capacity);
    ts_writer_u64(&writer, record->free_bytes);
    ts_writer_u64(&writer, record->used_bytes);
    ts_writer_u64(&writer, record->tiles);
    ts_writer_str(&writer, ts_str_of(record->machine));
    ts_writer_str(&writer, ts_str_of(record->address));
    ts_writer_u64(&writer, record->read_bytes_per_sec);
    ts_writer_u64(&writer, record->write_bytes_per_sec);
    ts_writer_u32(&writer, record->queue_depth);
    ts_writer_u64(&writer, record->throttle_bytes_per_sec);
    ts_writer_u64(&writer, record->incarnation);
    ts_writer_u32(&writer, record->admin);
    if (record->key_user[0] != '\0')
        ts_writer_str(&writer, ts_str_of(record->key_user));
    if (writer.failed)
        return -EINVAL;
    return store_put(txn, STORE_NODES, key, sizeof(key), value, writer.len);
}

int nodes_list(struct store_txn *txn, struct nodes_record **records, size_t *count)
{
    struct nodes_record *list = NULL;
    size_t used = 0;
    size_t cap = 0;
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    int err;

    *records = NULL;
    *count = 0;
    err = store_cursor(txn, STORE_NODES, &cursor);
    if (err < 0)
        return err;
    err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_FIRST));
    while (err == 0) {
        if (key.mv_size != 4) {
            err = -EIO;
            break;
        }
        if (used == cap) {
            size_t new_cap = cap ? cap * 2 : 16;
            struct nodes_record *grown = realloc(list, new_cap * sizeof(*grown));
            if (!grown) {
                err = -ENOMEM;
                break;
            }
            list = grown;
            cap = new_cap;
        }
        err = nodes_get(txn, store_be32_get(key.mv_data), &list[used]);
        if (err < 0)
            break;
        used++;
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_NEXT));
    }
    mdb_cursor_close(cursor);
    if (err != -ENOENT) {
        free(list);
        return err;
    }
    *records = list;
    *count = used;
    return 0;
}

/* ---- liveness ---------------------------------------------------------- */

struct nodes_beat {
    uint32_t id;
    bool reported_up; /* "up" was logged and "down" not yet */
    int64_t last_ms;
    uint64_t drain_bytes_per_sec; /* how fast the backlog drains */
    uint64_t backlog_bytes;       /* as of backlog_ms */
    int64_t backlog_ms;
    struct nodes_integrity integrity; /* corrupt files counted here, scrub as reported */
    struct nodes_disk disk;           /* as last reported */
    double steady_write;              /* nodes_live_steady_note(): a decaying peak, 0 = none yet */
    int64_t steady_ms;                /* when steady_write was last updated */
    uint64_t steady_throttle;         /* the disk cap steady_write was measured under */
    bool steady_noted;                /* a report was taken: first_write is set */
    uint64_t first_write;             /* the first report: the node's start-up probe */
    bool worked;                      /* a report other than the probe's, or under a cap */
};

struct nodes_live {
    struct nodes_beat *beats; /* sorted by id */
    size_t count;
    size_t cap;
    int64_t timeout_ms;
    bool clock_started;
    int64_t clock_ms;       /* the latest now_ms meta passed in */
    int64_t awake_since_ms; /* when meta last came back from standing still */
};

struct nodes_live *nodes_live_new(int64_t timeout_ms)
{
    struct nodes_live *live = calloc(1, sizeof(*live));
    if (live)
        live->timeout_ms = timeout_ms;
    return live;
}

void nodes_live_destroy(struct nodes_live **livep)
{
    if (!livep || !*livep)
        return;
    free((*livep)->beats);
    free(*livep);
    *livep = NULL;
}

/* Index of id, or of where it would go; *found says which. */
static size_t nodes_live_find(const struct nodes_live *live, uint32_t id, bool *found)
{
    size_t low = 0;
    size_t high = live->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (live->beats[middle].id < id)
            low = middle + 1;
        else
            high = middle;
    }
    *found = low < live->count && live->beats[low].id == id;
    return low;
}

/* Node id's beat, or NULL if it never heartbeat since meta started. */
static struct nodes_beat *nodes_live_beat_of(const struct nodes_live *live, uint32_t id)
{
    bool found;
    size_t at = nodes_live_find(live, id, &found);
    return found ? &live->beats[at] : NULL;
}

/*
 * When meta last came back from standing still (NODES_STALL_MS in nodes.h),
 * as seen at now_ms: now_ms itself if this is the first call after a gap.
 */
static int64_t nodes_live_awake_since(const struct nodes_live *live, int64_t now_ms)
{
    if (live->clock_started && now_ms - live->clock_ms > NODES_STALL_MS)
        return now_ms;
    return live->awake_since_ms;
}

/* Moves meta's clock to now_ms, noting (and logging) a gap it stood still. */
static void nodes_live_advance(struct nodes_live *live, int64_t now_ms)
{
    int64_t awake_since = nodes_live_awake_since(live, now_ms);
    if (awake_since != live->awake_since_ms && live->count > 0)
        log_warn("meta stood still for %lld ms (its disk or CPU busy?): datanodes get %lld ms "
                 "from now to heartbeat before they count as down",
                 (long long)(now_ms - live->clock_ms), (long long)live->timeout_ms);
    live->awake_since_ms = awake_since;
    live->clock_ms = now_ms; /* monotonic */
    live->clock_started = true;
}

/* How long the node has been silent while meta could have heard it. */
static int64_t nodes_live_silent_ms(const struct nodes_live *live, const struct nodes_beat *beat,
                                    int64_t now_ms)
{
    int64_t awake_since = nodes_live_awake_since(live, now_ms);
    int64_t since = beat->last_ms > awake_since ? beat->last_ms : awake_since;
    return now_ms > since ? now_ms - since : 0;
}

int nodes_live_beat(struct nodes_live *live, uint32_t id, int64_t now_ms)
{
    nodes_live_advance(live, now_ms);
    bool found;
    size_t at = nodes_live_find(live, id, &found);
    if (!found) {
        if (live->count == live->cap) {
            size_t new_cap = live->cap ? live->cap * 2 : 16;
            struct nodes_beat *grown = realloc(live->beats, new_cap * sizeof(*grown));
            if (!grown)
                return -ENOMEM;
            live->beats = grown;
            live->cap = new_cap;
        }
        memmove(&live->beats[at + 1], &live->beats[at],
                (live->count - at) * sizeof(live->beats[0]));
        memset(&live->beats[at], 0, sizeof(live->beats[at]));
        live->beats[at].id = id;
        live->beats[at].reported_up = false;
        live->beats[at].drain_bytes_per_sec = NODES_ASSUMED_BYTES_PER_SEC;
        live->beats[at].backlog_ms = now_ms;
        live->count++;
    }
    live->beats[at].last_ms = now_ms;
    if (!live->beats[at].reported_up) {
        log_info("datanode %u is up", id);
        live->beats[at].reported_up = true;
    }
    return 0;
}

int64_t nodes_live_age_ms(const struct nodes_live *live, uint32_t id, int64_t now_ms)
{
    const struct nodes_beat *beat = nodes_live_beat_of(live, id);
    if (!beat)
        return -1;
    int64_t age = now_ms - beat->last_ms;
    return age < 0 ? 0 : age;
}

bool nodes_live_is_up(const struct nodes_live *live, uint32_t id, int64_t now_ms)
{
    const struct nodes_beat *beat = nodes_live_beat_of(live, id);
    return beat && nodes_live_silent_ms(live, beat, now_ms) < live->timeout_ms;
}

void nodes_live_check(struct nodes_live *live, int64_t now_ms)
{
    nodes_live_advance(live, now_ms);
    for (size_t i = 0; i < live->count; i++) {
        struct nodes_beat *beat = &live->beats[i];
        if (beat->reported_up && nodes_live_silent_ms(live, beat, now_ms) >= live->timeout_ms) {
            log_warn("datanode %u is down: no heartbeat for %lld ms", beat->id,
                     (long long)(now_ms - beat->last_ms));
            beat->reported_up = false;
        }
    }
}

/* ---- backlog ------------------------------------------------------------ */

/* The backlog of a beat drained from its time to now_ms. */
static uint64_t nodes_drained(const struct nodes_beat *beat, int64_t now_ms)
{
    int64_t elapsed_ms = now_ms - beat->backlog_ms;
    if (elapsed_ms <= 0 || beat->backlog_bytes == 0)
        return beat->backlog_bytes;
    /* In double: a day of draining at any speed must not overflow. */
    double drained = (double)beat->drain_bytes_per_sec * (double)elapsed_ms / 1000.0;
    if (drained >= (double)beat->backlog_bytes)
        return 0;
    return beat->backlog_bytes - (uint64_t)drained;
}

int nodes_live_load(struct nodes_live *live, uint32_t id, uint64_t write_bytes_per_sec,
                    uint32_t queue_depth, int64_t now_ms)
{
    struct nodes_beat *beat = nodes_live_beat_of(live, id);
    if (!beat)
        return -ENOENT;
    uint64_t backlog = nodes_drained(beat, now_ms);
    uint64_t queued = (uint64_t)queue_depth * TILE_DEFAULT_BYTES;
    beat->backlog_bytes = backlog > queued ? backlog : queued;
    beat->backlog_ms = now_ms;
    beat->drain_bytes_per_sec =
        write_bytes_per_sec > 0 ? write_bytes_per_sec : NODES_ASSUMED_BYTES_PER_SEC;
    return 0;
}

int nodes_live_steady_note(struct nodes_live *live, uint32_t id, uint64_t write_bytes_per_sec,
                           uint64_t throttle_bytes_per_sec, int64_t now_ms)
{
    struct nodes_beat *beat = nodes_live_beat_of(live, id);
    if (!beat)
        return -ENOENT;
    double reported = (double)write_bytes_per_sec;
    if (!beat->steady_noted)
        beat->first_write = write_bytes_per_sec;
    beat->steady_noted = true;
    /* Under a cap the measure is at most the cap from the first report on. */
    if (write_bytes_per_sec != beat->first_write || throttle_bytes_per_sec != 0)
        beat->worked = true;
    if (beat->steady_write <= 0 || beat->steady_throttle != throttle_bytes_per_sec) {
        /* The first report, or a disk given a new cap: what was held
         * measured a disk that no longer exists. */
        beat->steady_write = reported;
    } else {
        double elapsed_s = now_ms > beat->steady_ms ? (double)(now_ms - beat->steady_ms) / 1000.0
                                                    : 0.0;
        double held = beat->steady_write * exp(-elapsed_s / NODES_STEADY_DECAY_S);
        beat->steady_write = reported > held ? reported : held;
    }
    beat->steady_ms = now_ms;
    beat->steady_throttle = throttle_bytes_per_sec;
    return 0;
}

uint64_t nodes_live_steady_write(const struct nodes_live *live, uint32_t id)
{
    const struct nodes_beat *beat = nodes_live_beat_of(live, id);
    if (!beat || beat->steady_write <= 0)
        return 0;
    if (!beat->worked)
        return PLACEMENT_SPEED_UNPROVEN;
    return (uint64_t)(beat->steady_write + 0.5);
}

int nodes_live_integrity(struct nodes_live *live, uint32_t id, uint64_t corrupt_added,
                         const struct nodes_integrity *scrub)
{
    struct nodes_beat *beat = nodes_live_beat_of(live, id);
    if (!beat)
        return -ENOENT;
    struct nodes_integrity *integrity = &beat->integrity;
    uint64_t corrupt_files = integrity->corrupt_files + corrupt_added;
    *integrity = *scrub;
    integrity->corrupt_files = corrupt_files;
    return 0;
}

void nodes_live_integrity_get(const struct nodes_live *live, uint32_t id,
                              struct nodes_integrity *integrity)
{
    const struct nodes_beat *beat = nodes_live_beat_of(live, id);
    if (beat)
        *integrity = beat->integrity;
    else
        memset(integrity, 0, sizeof(*integrity));
}

int nodes_live_disk(struct nodes_live *live, uint32_t id, const struct nodes_disk *disk)
{
    struct nodes_beat *beat = nodes_live_beat_of(live, id);
    if (!beat)
        return -ENOENT;
    beat->disk = *disk;
    return 0;
}

void nodes_live_disk_get(const struct nodes_live *live, uint32_t id, struct nodes_disk *disk)
{
    const struct nodes_beat *beat = nodes_live_beat_of(live, id);
    if (beat)
        *disk = beat->disk;
    else
        memset(disk, 0, sizeof(*disk));
}

uint64_t nodes_live_backlog(const struct nodes_live *live, uint32_t id, int64_t now_ms)
{
    const struct nodes_beat *beat = nodes_live_beat_of(live, id);
    return beat ? nodes_drained(beat, now_ms) : 0;
}

int nodes_live_set_backlog(struct nodes_live *live, uint32_t id, uint64_t backlog_bytes,
                           int64_t now_ms)
{
    struct nodes_beat *beat = nodes_live_beat_of(live, id);
    if (!beat)
        return -ENOENT;
    beat->backlog_bytes = backlog_bytes;
    beat->backlog_ms = now_ms;
    return 0;
}
