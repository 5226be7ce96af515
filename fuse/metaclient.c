/*
 * @file metaclient.c
 * See metaclient.h. Each call encodes its request with the generated
 * encoder, sends it through the pool and decodes the reply; a reply that
 * does not decode is TS_ERR_BADMSG, never trusted.
 *
 * The mount's session (SESSION_RENEW in proto.h): `holds` counts the opens
 * meta counts for this mount: one more when an OPEN (or MKNOD, CREATE_MANY
 * with open) succeeded, one fewer when its RELEASE is sent (a queued
 * release is still held). An open or release on its way holds holds_lock
 * for reading, a renewal for writing, so a renewal compares counts with
 * meta while none is in flight, and an announcement after meta restarted
 * can miss none. A queued create's sender takes holds_lock too, so nobody
 * waits for queued creates while holding it.
 */
#include "metaclient.h"

#include "inocount.h"
#include "log.h"
#include "relqueue.h"
#include "nsqueue.h"
#include "rpc.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

struct metaclient {
    struct rpc_pool *pool;
    struct relqueue *releases; /* NULL: releases are sent at once */
    struct nsqueue *queue;     /* NULL: unlinks are sent at once, creates not early */
    char machine[TS_MAX_NAME + 1];
    char metrics[256]; /* "" none; set before the keeper starts, read by it */
    uint64_t mount_id; /* names this mount's sockets for meta (DIR_LEASE in proto.h) */
    /* Unlinks answered before meta had them, and unlinks that waited for it
     * (logged at the end: how well the early path covered the workload). */
    atomic_uint_least64_t unlinks_early;
    atomic_uint_least64_t unlinks_waited;
    atomic_uint_least64_t creates_early;
    /*
     * The session. Lock order: holds_lock, then holds_mutex; lost_mutex
     * and keeper_mutex are taken with neither held.
     */
    pthread_rwlock_t holds_lock; /* read: an open or release on its way; write: a renewal */
    pthread_mutex_t holds_mutex; /* guards the three below (readers update them) */
    struct inocount *holds;      /* ino -> opens meta counts for this mount */
    uint64_t holds_total;        /* sum of the counts */
    uint64_t holds_fingerprint;  /* sum of count * ts_hold_mix(ino) (proto.h) */
    pthread_mutex_t lost_mutex;  /* guards lost_fn, lost_ctx */
    metaclient_lost_fn lost_fn;
    void *lost_ctx;
    pthread_mutex_t keeper_mutex; /* guards keeper_stop; keeper_wake signals it */
    pthread_cond_t keeper_wake;
    bool keeper_started;
    bool keeper_stop;
    pthread_t keeper;
    atomic_int lease_ms; /* what meta last said (0: not heard yet) */
    int timeout_ms;      /* of every request to meta */
    bool lease_warned;   /* the keeper's: the lease is short for timeout_ms */
};

/*
 * Set in the threads that send the queue and the leases' requests: they
 * never wait for the queue's creates (they are what sends them).
 */
static _Thread_local bool sends_queue;

static void metaclient_keeper_stop(struct metaclient *client);
static void metaclient_session_end(struct metaclient *client);

static int metaclient_session_init(struct metaclient *client)
{
    pthread_rwlockattr_t attr;
    pthread_condattr_t cond_attr;
    pthread_rwlockattr_init(&attr);
    /* Renewals must not starve behind a steady stream of opens. */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    client->holds = inocount_new();
    if (!client->holds) {
        pthread_rwlockattr_destroy(&attr);
        return -ENOMEM;
    }
    pthread_rwlock_init(&client->holds_lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    pthread_mutex_init(&client->holds_mutex, NULL);
    pthread_mutex_init(&client->lost_mutex, NULL);
    pthread_mutex_init(&client->keeper_mutex, NULL);
    pthread_condattr_init(&cond_attr);
    pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC);
    pthread_cond_init(&client->keeper_wake, &cond_attr);
    pthread_condattr_destroy(&cond_attr);
    return 0;
}

static void metaclient_session_fini(struct metaclient *client)
{
    inocount_destroy(&client->holds);
    pthread_rwlock_destroy(&client->holds_lock);
    pthread_mutex_destroy(&client->holds_mutex);
    pthread_mutex_destroy(&client->lost_mutex);
    pthread_mutex_destroy(&client->keeper_mutex);
    pthread_cond_destroy(&client->keeper_wake);
}

struct metaclient *metaclient_new(const char *endpoint, int timeout_ms, const char *machine)
{
    if (strlen(machine) > TS_MAX_NAME)
        return NULL;
    struct metaclient *client = calloc(1, sizeof(*client));
    if (!client)
        return NULL;
    memcpy(client->machine, machine, strlen(machine) + 1);
    client->timeout_ms = timeout_ms;
    if (metaclient_session_init(client) != 0) {
        free(client);
        return NULL;
    }
    client->pool = rpc_pool_new(endpoint, timeout_ms);
    /* Meta knows this mount's requests by their routing id: 'M' + mount id. */
    uint8_t name[1 + sizeof(client->mount_id)] = {'M'};
    while (client->mount_id == 0)
        if (getrandom(&client->mount_id, sizeof(client->mount_id), 0) !=
            (ssize_t)sizeof(client->mount_id))
            client->mount_id = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    memcpy(name + 1, &client->mount_id, sizeof(client->mount_id));
    if (!client->pool || rpc_pool_set_name(client->pool, name, sizeof(name)) != TS_OK) {
        rpc_pool_destroy(&client->pool);
        metaclient_session_fini(client);
        free(client);
        return NULL;
    }
    return client;
}

void metaclient_destroy(struct metaclient **clientp)
{
    if (!clientp || !*clientp)
        return;
    struct metaclient *client = *clientp;
    uint64_t early = atomic_load(&client->unlinks_early);
    uint64_t waited = atomic_load(&client->unlinks_waited);
    uint64_t creates = atomic_load(&client->creates_early);
    if (early + waited > 0)
        log_info("unlinks: %llu answered before tessera-meta had them, %llu waited for it",
                 (unsigned long long)early, (unsigned long long)waited);
    if (creates > 0)
        log_info("creates: %llu answered before tessera-meta had them (directory leases)",
                 (unsigned long long)creates);
    metaclient_keeper_stop(client);
    /* Releases first: each waits for the creates queued before it
     * (wait_creates), so the create queue must outlive the release thread. */
    relqueue_destroy(&client->releases); /* sends what is queued */
    nsqueue_destroy(&client->queue);     /* sends what is queued */
    metaclient_session_end(client);
    rpc_pool_destroy(&client->pool);
    metaclient_session_fini(client);
    free(client);
    *clientp = NULL;
}

const char *metaclient_machine(const struct metaclient *client) { return client->machine; }

int metaclient_set_metrics(struct metaclient *client, const char *address)
{
    if (strlen(address) >= sizeof(client->metrics))
        return -ENAMETOOLONG;
    memcpy(client->metrics, address, strlen(address) + 1);
    return 0;
}

/*
 * Before any request but the queue's own: the creates queued before it
 * must reach meta first, since it may be about a new inode or name.
 */
static void wait_creates(struct metaclient *client)
{
    if (client->queue && !sends_queue)
        nsqueue_wait_creates(client->queue);
}

/*
 * Before an open or release is sent: queued creates go first (outside the
 * lock, since their sender takes it), then holds_lock for reading, so no
 * renewal runs while it is on its way. Returns the thread's sends_queue
 * for holds_leave(): requests made inside wait for no create again.
 */
static bool holds_enter(struct metaclient *client)
{
    wait_creates(client);
    pthread_rwlock_rdlock(&client->holds_lock);
    bool was_sending = sends_queue;
    sends_queue = true;
    return was_sending;
}

static void holds_leave(struct metaclient *client, bool was_sending)
{
    sends_queue = was_sending;
    pthread_rwlock_unlock(&client->holds_lock);
}

/* One more open of ino that meta counts for this mount (holds_lock held). */
static void holds_add(struct metaclient *client, uint64_t ino)
{
    pthread_mutex_lock(&client->holds_mutex);
    /* Out of memory: meta counts it and we do not; the next renewal finds
     * the difference and announces what we count, which loses this open
     * in meta: worth a loud line. */
    if (inocount_add(client->holds, ino, 1) == 0) {
        client->holds_total++;
        client->holds_fingerprint += ts_hold_mix(ino);
    } else {
        log_error("inode %llu: out of memory counting an open; tessera-meta may delete the "
                  "file while it is open if it is unlinked",
                  (unsigned long long)ino);
    }
    pthread_mutex_unlock(&client->holds_mutex);
}

/* Up to n fewer opens of ino (a release sent, or opens meta lost). */
static void holds_take(struct metaclient *client, uint64_t ino, uint32_t n)
{
    pthread_mutex_lock(&client->holds_mutex);
    uint32_t held = inocount_get(client->holds, ino);
    uint32_t taken = held < n ? held : n;
    if (taken > 0) {
        inocount_sub(client->holds, ino, taken);
        client->holds_total -= taken;
        client->holds_fingerprint -= (uint64_t)taken * ts_hold_mix(ino);
    }
    pthread_mutex_unlock(&client->holds_mutex);
}

/*
 * A request refused with TS_ERR_LEASED touched a directory another mount
 * holds the lease on (meta/leases.h): meta has asked that mount for it
 * back and it gives it back within milliseconds, so the request is sent
 * again after METACLIENT_LEASED_RETRY_US, within the one deadline of the
 * call (timeout_ms). It is not sent again with less than
 * METACLIENT_LEASED_LAST_TRY_MS left: a last try with too little time to be
 * answered would turn the refusal, which names the cause, into a timeout,
 * which blames meta. (`tessera profile` keeps the same rule for
 * PROFILE_SET, tools/profile.c: the one request of the tools a lease refuses.)
 */
#define METACLIENT_LEASED_RETRY_US 1000
#define METACLIENT_LEASED_LAST_TRY_MS 100

/*
 * Whether a request answered `status` is sent again before deadline_ms:
 * then waits the pause and sets *timeout_ms to the time left.
 */
static bool leased_try_again(int status, int64_t deadline_ms, int *timeout_ms)
{
    int64_t left = deadline_ms - util_monotonic_ms();
    if (status != TS_ERR_LEASED || left < METACLIENT_LEASED_LAST_TRY_MS)
        return false;
    *timeout_ms = (int)left;
    nanosleep(&(struct timespec){0, METACLIENT_LEASED_RETRY_US * 1000}, NULL);
    return true;
}

/*
 * Sends an encoded request (len < 0: the encoder failed), again while it
 * is refused for a lease (leased_try_again).
 */
static int meta_call(struct metaclient *client, uint16_t op, const uint8_t *payload, int len,
                     struct rpc_reply *reply)
{
    int64_t deadline_ms = util_monotonic_ms() + client->timeout_ms;
    int timeout_ms = client->timeout_ms;
    int status;

    memset(reply, 0, sizeof(*reply));
    if (len < 0)
        return TS_ERR_INVAL;
    wait_creates(client);
    for (;;) {
        status = rpc_pool_call_within(client->pool, op, payload, (size_t)len, timeout_ms, reply);
        if (!leased_try_again(status, deadline_ms, &timeout_ms))
            break;
        rpc_reply_release(reply);
    }
    if (status == TS_ERR_TIMEDOUT)
        log_warn("%s: tessera-meta at %s did not answer in time (is it running?)",
                 ts_op_name(op), rpc_pool_endpoint(client->pool));
    return status;
}

/* Calls op and decodes an attribute reply. */
static int meta_call_attr(struct metaclient *client, uint16_t op, const uint8_t *payload, int len,
                          struct ts_attr *attr)
{
    struct rpc_reply reply;
    struct ts_attr_rep decoded;
    int status = meta_call(client, op, payload, len, &reply);
    if (status == TS_OK) {
        if (ts_attr_rep_decode(&decoded, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
        else if (attr)
            *attr = decoded.attr;
    }
    rpc_reply_release(&reply);
    return status;
}

/* Calls op whose reply carries no fields. */
static int meta_call_empty(struct metaclient *client, uint16_t op, const uint8_t *payload,
                           int len)
{
    struct rpc_reply reply;
    int status = meta_call(client, op, payload, len, &reply);
    rpc_reply_release(&reply);
    return status;
}

/* Requests here are small except SETXATTR, which has its own buffer. */
#define REQUEST_CAP 4096

/*
 * Calls op (an attribute reply decoded into attr unless attr is NULL; an
 * empty one otherwise) with GETATTR of each of dirs->ino[] pipelined
 * behind it in the same round trip (rpc_pool_call_many).
 */
static int meta_call_with_dirs(struct metaclient *client, uint16_t op, const uint8_t *payload,
                               int len, struct ts_attr *attr, struct metaclient_dirs *dirs)
{
    struct rpc_call calls[1 + METACLIENT_MAX_DIRS];
    struct rpc_reply replies[1 + METACLIENT_MAX_DIRS];
    int statuses[1 + METACLIENT_MAX_DIRS];
    uint8_t requests[METACLIENT_MAX_DIRS][16];
    struct ts_attr_rep decoded;
    uint32_t count = dirs ? dirs->count : 0;

    if (count == 0)
        return attr ? meta_call_attr(client, op, payload, len, attr)
                    : meta_call_empty(client, op, payload, len);
    for (uint32_t i = 0; i < METACLIENT_MAX_DIRS; i++)
        dirs->status[i] = TS_ERR_INVAL;
    if (len < 0 || count > METACLIENT_MAX_DIRS)
        return TS_ERR_INVAL;
    wait_creates(client);
    calls[0] = (struct rpc_call){op, payload, (size_t)len};
    for (uint32_t i = 0; i < count; i++) {
        struct ts_getattr_req request = {.ino = dirs->ino[i]};
        int request_len = ts_getattr_req_encode(&request, requests[i], sizeof(requests[i]));
        calls[1 + i] = (struct rpc_call){TS_OP_GETATTR, requests[i], (size_t)request_len};
    }
    /* Sent again only when the first call, the one that may change
     * something, was refused for a lease: then none of it was done. */
    int64_t deadline_ms = util_monotonic_ms() + client->timeout_ms;
    int timeout_ms = client->timeout_ms;
    for (;;) {
        int sent = rpc_pool_call_many_within(client->pool, calls, 1 + count, timeout_ms, replies,
                                             statuses);
        if (sent != TS_OK || !leased_try_again(statuses[0], deadline_ms, &timeout_ms))
            break;
        for (uint32_t i = 0; i < 1 + count; i++)
            rpc_reply_release(&replies[i]);
    }
    int status = statuses[0];
    if (status == TS_ERR_TIMEDOUT)
        log_warn("%s: tessera-meta at %s did not answer in time (is it running?)",
                 ts_op_name(op), rpc_pool_endpoint(client->pool));
    if (status == TS_OK && attr) {
        if (ts_attr_rep_decode(&decoded, replies[0].payload, replies[0].payload_len) != 0)
            status = TS_ERR_BADMSG;
        else
            *attr = decoded.attr;
    }
    for (uint32_t i = 0; i < count; i++) {
        dirs->status[i] = statuses[1 + i];
        if (dirs->status[i] != TS_OK)
            continue;
        if (ts_attr_rep_decode(&decoded, replies[1 + i].payload, replies[1 + i].payload_len) != 0)
            dirs->status[i] = TS_ERR_BADMSG;
        else
            dirs->attr[i] = decoded.attr;
    }
    for (uint32_t i = 0; i < 1 + count; i++)
        rpc_reply_release(&replies[i]);
    return status;
}

/*
 * Before a request about all of directory ino, or about inode ino: the
 * unlinks queued in it (or of it) must be done first, or the request could
 * list a name this mount already removed, or show an old link count.
 */
static void wait_unlinks_in(struct metaclient *client, uint64_t ino)
{
    if (client->queue)
        nsqueue_wait_for(client->queue, ino);
}

/* Before a request about one name: its own queued unlink must be done first. */
static void wait_unlink_of(struct metaclient *client, uint64_t parent, const char *name)
{
    if (client->queue)
        nsqueue_wait_name(client->queue, parent, name);
}

int metaclient_lookup(struct metaclient *client, uint64_t parent, const char *name,
                      struct ts_attr *attr)
{
    wait_unlink_of(client, parent, name);
    uint8_t buf[REQUEST_CAP];
    struct ts_lookup_req request = {.parent = parent, .name = ts_str_of(name)};
    return meta_call_attr(client, TS_OP_LOOKUP, buf,
                          ts_lookup_req_encode(&request, buf, sizeof(buf)), attr);
}

int metaclient_getattr(struct metaclient *client, uint64_t ino, struct ts_attr *attr)
{
    wait_unlinks_in(client, ino); /* a directory's nlink, size and mtime */
    uint8_t buf[REQUEST_CAP];
    struct ts_getattr_req request = {.ino = ino};
    return meta_call_attr(client, TS_OP_GETATTR, buf,
                          ts_getattr_req_encode(&request, buf, sizeof(buf)), attr);
}

int metaclient_setattr(struct metaclient *client, const struct ts_setattr_req *request,
                       struct ts_setattr_rep *reply_out)
{
    uint8_t buf[REQUEST_CAP];
    struct rpc_reply reply;
    int status = meta_call(client, TS_OP_SETATTR, buf,
                           ts_setattr_req_encode(request, buf, sizeof(buf)), &reply);
    if (status == TS_OK && ts_setattr_rep_decode(reply_out, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    return status;
}

int metaclient_mknod(struct metaclient *client, uint64_t parent, const char *name,
                     uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid, int open,
                     struct ts_attr *attr, struct metaclient_dirs *dirs)
{
    wait_unlink_of(client, parent, name);
    uint8_t buf[REQUEST_CAP];
    struct ts_mknod_req request = {.parent = parent,
                                   .name = ts_str_of(name),
                                   .mode = mode,
                                   .rdev = rdev,
                                   .uid = uid,
                                   .gid = gid,
                                   .open = open ? 1 : 0};
    int len = ts_mknod_req_encode(&request, buf, sizeof(buf));
    if (!open)
        return meta_call_with_dirs(client, TS_OP_MKNOD, buf, len, attr, dirs);
    struct ts_attr made;
    bool was_sending = holds_enter(client);
    int status = meta_call_with_dirs(client, TS_OP_MKNOD, buf, len, &made, dirs);
    if (status == TS_OK)
        holds_add(client, made.ino);
    holds_leave(client, was_sending);
    if (status == TS_OK && attr)
        *attr = made;
    return status;
}

int metaclient_mkdir(struct metaclient *client, uint64_t parent, const char *name,
                     uint32_t mode, uint32_t uid, uint32_t gid, struct ts_attr *attr,
                     struct metaclient_dirs *dirs)
{
    wait_unlink_of(client, parent, name);
    uint8_t buf[REQUEST_CAP];
    struct ts_mkdir_req request = {
        .parent = parent, .name = ts_str_of(name), .mode = mode, .uid = uid, .gid = gid};
    return meta_call_with_dirs(client, TS_OP_MKDIR, buf,
                               ts_mkdir_req_encode(&request, buf, sizeof(buf)), attr, dirs);
}

static int meta_name_op(struct metaclient *client, uint16_t op, uint64_t parent,
                        const char *name, struct metaclient_dirs *dirs)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_name_req request = {.parent = parent, .name = ts_str_of(name)};
    return meta_call_with_dirs(client, op, buf, ts_name_req_encode(&request, buf, sizeof(buf)),
                               NULL, dirs);
}

int metaclient_unlink(struct metaclient *client, uint64_t parent, const char *name,
                      struct metaclient_dirs *dirs)
{
    atomic_fetch_add(&client->unlinks_waited, 1);
    return meta_name_op(client, TS_OP_UNLINK, parent, name, dirs);
}

int metaclient_rmdir(struct metaclient *client, uint64_t parent, const char *name,
                     struct metaclient_dirs *dirs)
{
    if (client->queue) /* the directory removed may be one being emptied */
        nsqueue_wait_all(client->queue);
    return meta_name_op(client, TS_OP_RMDIR, parent, name, dirs);
}

int metaclient_rename(struct metaclient *client, uint64_t parent, const char *name,
                      uint64_t new_parent, const char *new_name, uint32_t flags,
                      struct metaclient_dirs *dirs)
{
    wait_unlink_of(client, parent, name);
    wait_unlink_of(client, new_parent, new_name);
    uint8_t buf[REQUEST_CAP];
    struct ts_rename_req request = {.parent = parent,
                                    .name = ts_str_of(name),
                                    .new_parent = new_parent,
                                    .new_name = ts_str_of(new_name),
                                    .flags = flags};
    return meta_call_with_dirs(client, TS_OP_RENAME, buf,
                               ts_rename_req_encode(&request, buf, sizeof(buf)), NULL, dirs);
}

int metaclient_link(struct metaclient *client, uint64_t ino, uint64_t new_parent,
                    const char *new_name, struct ts_attr *attr, struct metaclient_dirs *dirs)
{
    wait_unlink_of(client, new_parent, new_name);
    uint8_t buf[REQUEST_CAP];
    struct ts_link_req request = {
        .ino = ino, .new_parent = new_parent, .new_name = ts_str_of(new_name)};
    return meta_call_with_dirs(client, TS_OP_LINK, buf,
                               ts_link_req_encode(&request, buf, sizeof(buf)), attr, dirs);
}

int metaclient_symlink(struct metaclient *client, uint64_t parent, const char *name,
                       const char *target, uint32_t uid, uint32_t gid, struct ts_attr *attr,
                       struct metaclient_dirs *dirs)
{
    wait_unlink_of(client, parent, name);
    uint8_t buf[2 * REQUEST_CAP];
    struct ts_symlink_req request = {.parent = parent,
                                     .name = ts_str_of(name),
                                     .target = ts_str_of(target),
                                     .uid = uid,
                                     .gid = gid};
    return meta_call_with_dirs(client, TS_OP_SYMLINK, buf,
                               ts_symlink_req_encode(&request, buf, sizeof(buf)), attr, dirs);
}

int metaclient_readlink(struct metaclient *client, uint64_t ino, char *target, size_t cap)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_readlink_req request = {.ino = ino};
    struct ts_readlink_rep decoded;
    struct rpc_reply reply;
    int status = meta_call(client, TS_OP_READLINK, buf,
                           ts_readlink_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status == TS_OK) {
        if (ts_readlink_rep_decode(&decoded, reply.payload, reply.payload_len) != 0 ||
            ts_str_copy(decoded.target, target, cap) != 0)
            status = TS_ERR_BADMSG;
    }
    rpc_reply_release(&reply);
    return status;
}

int metaclient_readdir(struct metaclient *client, uint64_t ino, const char *after,
                       struct meta_dirent *entries, uint32_t max, uint32_t *count,
                       uint32_t *done)
{
    wait_unlinks_in(client, ino);
    uint8_t buf[REQUEST_CAP];
    struct ts_readdir_req request = {.ino = ino, .after = ts_str_of(after), .max_entries = max};
    struct ts_readdir_rep decoded;
    struct rpc_reply reply;
    struct ts_cursor cursor;
    int status = meta_call(client, TS_OP_READDIR, buf,
                           ts_readdir_req_encode(&request, buf, sizeof(buf)), &reply);
    *count = 0;
    *done = 1;
    if (status != TS_OK)
        goto out;
    if (ts_readdir_rep_decode(&decoded, reply.payload, reply.payload_len) != 0 ||
        decoded.count > max) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    ts_cursor_init(&cursor, decoded.entries.ptr, decoded.entries.len);
    for (uint32_t i = 0; i < decoded.count; i++) {
        struct ts_readdir_rec entry;
        if (ts_readdir_rec_read(&cursor, &entry) != 0 || entry.name.len == 0 ||
            ts_str_copy(entry.name, entries[i].name, sizeof(entries[i].name)) != 0) {
            status = TS_ERR_BADMSG;
            goto out;
        }
        entries[i].ino = entry.ino;
        entries[i].mode = entry.mode;
    }
    if (cursor.left != 0) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    *count = decoded.count;
    *done = decoded.done;
out:
    rpc_reply_release(&reply);
    return status;
}

int metaclient_readdirplus(struct metaclient *client, uint64_t ino, const char *from,
                           int inclusive, struct meta_direntplus *entries, uint32_t max,
                           uint32_t *count, uint32_t *done)
{
    wait_unlinks_in(client, ino);
    uint8_t buf[REQUEST_CAP];
    struct ts_readdirplus_req request = {.ino = ino,
                                         .after = ts_str_of(from),
                                         .inclusive = inclusive ? 1 : 0,
                                         .max_entries = max};
    struct ts_readdirplus_rep decoded;
    struct rpc_reply reply;
    struct ts_cursor cursor;
    int status = meta_call(client, TS_OP_READDIRPLUS, buf,
                           ts_readdirplus_req_encode(&request, buf, sizeof(buf)), &reply);
    *count = 0;
    *done = 1;
    if (status != TS_OK)
        goto out;
    if (ts_readdirplus_rep_decode(&decoded, reply.payload, reply.payload_len) != 0 ||
        decoded.count > max) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    ts_cursor_init(&cursor, decoded.entries.ptr, decoded.entries.len);
    for (uint32_t i = 0; i < decoded.count; i++) {
        struct ts_readdirplus_rec entry;
        if (ts_readdirplus_rec_read(&cursor, &entry) != 0 || entry.name.len == 0 ||
            memchr(entry.name.ptr, '\0', entry.name.len) ||
            ts_str_copy(entry.name, entries[i].name, sizeof(entries[i].name)) != 0) {
            status = TS_ERR_BADMSG;
            goto out;
        }
        entries[i].attr = entry.attr;
    }
    if (cursor.left != 0) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    *count = decoded.count;
    *done = decoded.done;
out:
    rpc_reply_release(&reply);
    return status;
}

int metaclient_open(struct metaclient *client, uint64_t ino, uint32_t flags, uint32_t truncate,
                    struct ts_attr *attr, char **array_spec)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_open_req request = {.ino = ino, .flags = flags, .truncate = truncate};
    struct ts_open_rep decoded;
    struct rpc_reply reply;
    int len = ts_open_req_encode(&request, buf, sizeof(buf));
    bool was_sending = holds_enter(client);
    int status = meta_call(client, TS_OP_OPEN, buf, len, &reply);
    bool opened = status == TS_OK;
    if (opened) {
        /* Held by meta now, whatever follows (undone below on failure). */
        holds_add(client, ino);
        if (ts_open_rep_decode(&decoded, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
    }
    holds_leave(client, was_sending);
    *array_spec = NULL;
    if (status == TS_OK) {
        *attr = decoded.attr;
        if ((decoded.attr.flags & TS_ATTR_ARRAY) && decoded.array_spec.len == 0)
            status = TS_ERR_BADMSG; /* an array file always has its text */
    }
    if (status == TS_OK && (decoded.attr.flags & TS_ATTR_ARRAY)) {
        *array_spec = strndup(decoded.array_spec.ptr, decoded.array_spec.len);
        if (!*array_spec)
            status = TS_ERR_NOMEM;
    }
    if (opened && status != TS_OK)
        metaclient_release(client, ino);
    rpc_reply_release(&reply);
    return status;
}

int metaclient_release(struct metaclient *client, uint64_t ino)
{
    uint8_t buf[REQUEST_CAP];
    if (client->releases && relqueue_push(client->releases, ino) == 0)
        return TS_OK;
    struct ts_release_req request = {.ino = ino};
    int len = ts_release_req_encode(&request, buf, sizeof(buf));
    /* Taken before the answer: one lost on its way is healed by a renewal,
     * which finds meta counting more than we do. */
    bool was_sending = holds_enter(client);
    holds_take(client, ino, 1);
    int status = meta_call_empty(client, TS_OP_RELEASE, buf, len);
    holds_leave(client, was_sending);
    return status;
}

int metaclient_release_many(struct metaclient *client, const uint64_t *inos, uint32_t count)
{
    size_t records_len = (size_t)count * ts_release_rec_bytes;
    size_t cap = records_len + REQUEST_CAP;
    struct ts_writer records;
    uint8_t *buf;
    int status;

    if (count == 0 || count > TS_MAX_RELEASES)
        return TS_ERR_INVAL;
    /* The records first, then the request they are copied into. */
    buf = malloc(records_len + cap);
    if (!buf)
        return TS_ERR_NOMEM;
    ts_writer_init(&records, buf, records_len);
    for (uint32_t i = 0; i < count; i++) {
        struct ts_release_rec record = {.ino = inos[i]};
        ts_release_rec_write(&records, &record);
    }
    struct ts_release_many_req request = {.count = count,
                                          .inos = {(const char *)buf, (uint32_t)records_len}};
    uint8_t *payload = buf + records_len;
    int len = ts_release_many_req_encode(&request, payload, cap);
    bool was_sending = holds_enter(client);
    for (uint32_t i = 0; i < count; i++)
        holds_take(client, inos[i], 1);
    status = meta_call_empty(client, TS_OP_RELEASE_MANY, payload, len);
    holds_leave(client, was_sending);
    free(buf);
    return status;
}

/* The queue's sender: one RELEASE_MANY per batch. */
static void metaclient_send_releases(void *ctx, const uint64_t *inos, uint32_t count)
{
    int status = metaclient_release_many(ctx, inos, count);
    if (status != TS_OK)
        log_warn("%u releases not delivered to tessera-meta (%s): the next renewal of this "
                 "mount's session tells it again what is open",
                 count, status_text(status));
}

int metaclient_defer_releases(struct metaclient *client, int delay_ms)
{
    if (client->releases)
        return TS_OK;
    client->releases = relqueue_new(metaclient_send_releases, client, delay_ms, TS_MAX_RELEASES);
    return client->releases ? TS_OK : TS_ERR_NOMEM;
}

/* Writes one queued change as its batch request's record (proto.h). */
typedef void (*record_fn)(struct ts_writer *records, const struct nsqueue_item *item);

/* UNLINK_MANY's record. */
static void unlink_record(struct ts_writer *records, const struct nsqueue_item *item)
{
    struct ts_unlink_rec record = {.parent = item->parent, .name = ts_str_of(item->name)};
    ts_unlink_rec_write(records, &record);
}
#define UNLINK_RECORD_MAX (ts_unlink_rec_bytes + TS_MAX_NAME)

/* CREATE_MANY's record. */
static void create_record(struct ts_writer *records, const struct nsqueue_item *item)
{
    struct ts_create_rec record = {.parent = item->parent,
                                   .ino = item->ino,
                                   .mode = item->mode,
                                   .uid = item->uid,
                                   .gid = item->gid,
                                   .time_sec = (int64_t)item->time.tv_sec,
                                   .time_nsec = (uint32_t)item->time.tv_nsec,
                                   .open = item->open,
                                   .name = ts_str_of(item->name)};
    ts_create_rec_write(records, &record);
}
#define CREATE_RECORD_MAX (ts_create_rec_bytes + TS_MAX_NAME)

/*
 * Sends count queued changes as one batch request (UNLINK_MANY, at most
 * TS_MAX_UNLINKS; CREATE_MANY, at most TS_MAX_CREATES): one request and
 * one metadata transaction instead of one each, which is most of what a
 * change costs meta. TS_OK with each record's outcome in statuses[], or the
 * request's failure (meta then did none of them).
 */
static int call_batch(struct metaclient *client, uint16_t op, const struct nsqueue_item *items,
                      uint32_t count, record_fn record, size_t record_max, int *statuses)
{
    size_t records_cap = (size_t)count * record_max;
    size_t request_cap = records_cap + REQUEST_CAP;
    uint8_t *buf = malloc(records_cap + request_cap);
    struct ts_writer records;
    struct rpc_reply reply;
    struct ts_statuses_rep decoded;
    struct ts_cursor cursor;
    if (!buf)
        return TS_ERR_NOMEM;
    ts_writer_init(&records, buf, records_cap);
    for (uint32_t i = 0; i < count; i++)
        record(&records, &items[i]);
    struct ts_batch_req request = {.count = count,
                                   .records = {(const char *)buf, (uint32_t)records.len}};
    uint8_t *payload = buf + records_cap;
    int status =
        meta_call(client, op, payload, ts_batch_req_encode(&request, payload, request_cap), &reply);
    if (status == TS_OK &&
        (ts_statuses_rep_decode(&decoded, reply.payload, reply.payload_len) != 0 ||
         decoded.count != count || decoded.statuses.len != count * ts_status_rec_bytes))
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        ts_cursor_init(&cursor, decoded.statuses.ptr, decoded.statuses.len);
        for (uint32_t i = 0; i < count; i++) {
            struct ts_status_rec record;
            (void)ts_status_rec_read(&cursor, &record); /* the length was checked */
            statuses[i] = (int)record.status;
        }
    }
    rpc_reply_release(&reply);
    free(buf);
    return status;
}

/* Sends a run of count (<= TS_MAX_UNLINKS) queued unlinks. */
static void send_unlinks(struct metaclient *client, const struct nsqueue_item *items,
                         uint32_t count)
{
    for (uint32_t done = 0; done < count;) {
        uint32_t n = count - done < TS_MAX_UNLINKS ? count - done : TS_MAX_UNLINKS;
        int statuses[TS_MAX_UNLINKS];
        int batch = call_batch(client, TS_OP_UNLINK_MANY, &items[done], n, unlink_record,
                               UNLINK_RECORD_MAX, statuses);
        for (uint32_t i = 0; i < n; i++) {
            const struct nsqueue_item *item = &items[done + i];
            /* The whole request failed (timed out, or a meta without
             * UNLINK_MANY): one at a time. NOENT: another mount, or a
             * request whose reply was lost, removed it. */
            int status = batch == TS_OK
                             ? statuses[i]
                             : meta_name_op(client, TS_OP_UNLINK, item->parent, item->name, NULL);
            if (status != TS_OK && status != TS_ERR_NOENT)
                log_warn("the unlink of \"%s\" in directory %llu, already answered, failed in "
                         "tessera-meta (%s): the file is still there; remove it again",
                         item->name, (unsigned long long)item->parent, status_text(status));
        }
        done += n;
    }
}

/*
 * One CREATE_MANY attempt, under holds_lock like any open: the created
 * files that are open (STALE: made by an earlier attempt whose reply was
 * lost) are held from now on.
 */
static int call_creates(struct metaclient *client, const struct nsqueue_item *items, uint32_t count,
                        int *statuses)
{
    pthread_rwlock_rdlock(&client->holds_lock);
    int batch = call_batch(client, TS_OP_CREATE_MANY, items, count, create_record,
                           CREATE_RECORD_MAX, statuses);
    for (uint32_t i = 0; batch == TS_OK && i < count; i++)
        if (items[i].open && (statuses[i] == TS_OK || statuses[i] == TS_ERR_STALE))
            holds_add(client, items[i].ino);
    pthread_rwlock_unlock(&client->holds_lock);
    return batch;
}

/*
 * How long the queue lets a batch grow while nobody waits for it: at
 * thousands of creates a second, tens per request instead of one or two,
 * which halves what meta spends per create (one transaction and one
 * request each).
 */
#define QUEUE_LINGER_MS 2

/* How long a batch of creates is sent again while meta cannot take it. */
#define CREATE_RETRY_MS 60000

/*
 * Sends a run of count queued creates. They were answered already and
 * their inodes may be in use, so a request that fails as a whole (meta
 * restarting) is sent again, with the same inode numbers, until it goes
 * through or CREATE_RETRY_MS have passed.
 */
static void send_creates(struct metaclient *client, const struct nsqueue_item *items,
                         uint32_t count)
{
    for (uint32_t done = 0; done < count;) {
        uint32_t n = count - done < TS_MAX_CREATES ? count - done : TS_MAX_CREATES;
        int statuses[TS_MAX_CREATES];
        int64_t give_up = util_monotonic_ms() + CREATE_RETRY_MS;
        int batch;
        while ((batch = call_creates(client, &items[done], n, statuses)) != TS_OK &&
               util_monotonic_ms() < give_up) {
            log_warn("%u creates answered under a lease not yet in tessera-meta (%s): sending "
                     "them again",
                     n, status_text(batch));
            nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
        }
        for (uint32_t i = 0; i < n; i++) {
            const struct nsqueue_item *item = &items[done + i];
            /* STALE: made already, by a request whose reply was lost. */
            int status = batch == TS_OK ? statuses[i] : batch;
            if (status != TS_OK && status != TS_ERR_STALE)
                log_error("the create of \"%s\" in directory %llu (inode %llu), already "
                          "answered, failed in tessera-meta (%s): the file is not there",
                          item->name, (unsigned long long)item->parent,
                          (unsigned long long)item->ino, status_text(status));
        }
        done += n;
    }
}

/* The queue's sender: each run of one kind in one request per batch, in order. */
static void metaclient_send_changes(void *ctx, const struct nsqueue_item *items, uint32_t count)
{
    struct metaclient *client = ctx;
    sends_queue = true;
    for (uint32_t done = 0; done < count;) {
        uint32_t run = 1;
        while (done + run < count && items[done + run].kind == items[done].kind)
            run++;
        if (items[done].kind == NSQUEUE_CREATE)
            send_creates(client, &items[done], run);
        else
            send_unlinks(client, &items[done], run);
        done += run;
    }
}

int metaclient_create_later(struct metaclient *client, const struct nsqueue_item *item)
{
    if (!client->queue || nsqueue_push_create(client->queue, item) != 0)
        return TS_ERR_INVAL;
    atomic_fetch_add(&client->creates_early, 1);
    return TS_OK;
}

bool metaclient_queues_changes(const struct metaclient *client) { return client->queue != NULL; }

int metaclient_dir_lease(struct metaclient *client, uint64_t dir, uint32_t action,
                         uint32_t want_inodes, struct ts_dir_lease_rep *reply_out)
{
    uint8_t buf[REQUEST_CAP];
    struct rpc_reply reply;
    struct ts_dir_lease_req request = {.dir = dir, .action = action, .want_inodes = want_inodes};
    bool was_sending = sends_queue;
    sends_queue = true; /* a lease's requests are about no new inode */
    int status = meta_call(client, TS_OP_DIR_LEASE, buf,
                           ts_dir_lease_req_encode(&request, buf, sizeof(buf)), &reply);
    sends_queue = was_sending;
    if (status == TS_OK && ts_dir_lease_rep_decode(reply_out, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    return status;
}

int metaclient_unlink_later(struct metaclient *client, uint64_t parent, const char *name,
                            uint64_t ino)
{
    if (!client->queue || nsqueue_push_unlink(client->queue, parent, name, ino) != 0)
        return TS_ERR_INVAL;
    atomic_fetch_add(&client->unlinks_early, 1);
    return TS_OK;
}

void metaclient_sync_dir(struct metaclient *client, uint64_t dir)
{
    wait_unlinks_in(client, dir);
}

int metaclient_defer_unlinks(struct metaclient *client, uint32_t max_pending)
{
    if (client->queue)
        return TS_OK;
    client->queue = nsqueue_new(metaclient_send_changes, client, max_pending, max_pending);
    if (!client->queue)
        return TS_ERR_NOMEM;
    nsqueue_set_linger(client->queue, QUEUE_LINGER_MS);
    return TS_OK;
}

int metaclient_cluster_id(struct metaclient *client, char *out, size_t cap)
{
    struct rpc_reply reply;
    struct ts_cluster_id_rep decoded;
    int status = meta_call(client, TS_OP_CLUSTER_ID, NULL, 0, &reply);
    if (status == TS_OK &&
        (ts_cluster_id_rep_decode(&decoded, reply.payload, reply.payload_len) != 0 ||
         ts_str_copy(decoded.cluster_id, out, cap) != 0))
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    return status;
}

int metaclient_statfs(struct metaclient *client, struct ts_statfs_rep *statfs)
{
    struct rpc_reply reply;
    int status = meta_call(client, TS_OP_STATFS, NULL, 0, &reply);
    if (status == TS_OK && ts_statfs_rep_decode(statfs, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    return status;
}

int metaclient_setxattr(struct metaclient *client, uint64_t ino, const char *name,
                        const void *value, size_t size, uint32_t flags)
{
    size_t cap = size + REQUEST_CAP;
    uint8_t *buf;
    int status;
    if (size > TS_MAX_XATTR_VALUE)
        return TS_ERR_RANGE;
    buf = malloc(cap);
    if (!buf)
        return TS_ERR_NOMEM;
    struct ts_setxattr_req request = {.ino = ino,
                                      .name = ts_str_of(name),
                                      .value = {value, (uint32_t)size},
                                      .flags = flags};
    status = meta_call_empty(client, TS_OP_SETXATTR, buf,
                             ts_setxattr_req_encode(&request, buf, cap));
    free(buf);
    return status;
}

/* Copies a reply blob into a fresh allocation. */
static int copy_blob(struct ts_str blob, void **out, size_t *size)
{
    *out = malloc(blob.len ? blob.len : 1);
    if (!*out)
        return TS_ERR_NOMEM;
    if (blob.len)
        memcpy(*out, blob.ptr, blob.len);
    *size = blob.len;
    return TS_OK;
}

int metaclient_getxattr(struct metaclient *client, uint64_t ino, const char *name,
                        void **value, size_t *size)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_getxattr_req request = {.ino = ino, .name = ts_str_of(name)};
    struct ts_getxattr_rep decoded;
    struct rpc_reply reply;
    int status = meta_call(client, TS_OP_GETXATTR, buf,
                           ts_getxattr_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status == TS_OK) {
        if (ts_getxattr_rep_decode(&decoded, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
        else
            status = copy_blob(decoded.value, value, size);
    }
    rpc_reply_release(&reply);
    return status;
}

int metaclient_listxattr(struct metaclient *client, uint64_t ino, char **names, size_t *size)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_listxattr_req request = {.ino = ino};
    struct ts_listxattr_rep decoded;
    struct rpc_reply reply;
    int status = meta_call(client, TS_OP_LISTXATTR, buf,
                           ts_listxattr_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status == TS_OK) {
        if (ts_listxattr_rep_decode(&decoded, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
        else
            status = copy_blob(decoded.names, (void **)names, size);
    }
    rpc_reply_release(&reply);
    return status;
}

int metaclient_removexattr(struct metaclient *client, uint64_t ino, const char *name)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_removexattr_req request = {.ino = ino, .name = ts_str_of(name)};
    return meta_call_empty(client, TS_OP_REMOVEXATTR, buf,
                           ts_removexattr_req_encode(&request, buf, sizeof(buf)));
}

int metaclient_tile_map(struct metaclient *client, uint64_t ino, uint64_t first, uint32_t count,
                        int allocate, uint32_t node, struct tile_location *locations)
{
    return metaclient_tile_map_sized(client, ino, first, count, allocate, node, locations, NULL);
}

/*
 * Decodes `count` tiles of a TILE_MAP reply (each record, then its holder
 * records) into locations[]: 0, or -1 when the bytes are not exactly that
 * (a holder count over TS_MAX_HOLDERS, a hole with holders, a tile without
 * any, bytes left over).
 */
static int metaclient_tile_records(struct ts_cursor *cursor, uint32_t count,
                                   struct tile_location *locations)
{
    for (uint32_t i = 0; i < count; i++) {
        struct ts_tile_map_rec record;
        if (ts_tile_map_rec_read(cursor, &record) != 0 || record.holders > TS_MAX_HOLDERS ||
            (record.node == 0) != (record.holders == 0))
            return -1;
        struct tile_location *location = &locations[i];
        memset(location, 0, sizeof(*location));
        location->node = record.node;
        location->version = record.version;
        location->holder_count = record.holders;
        location->read_node = record.read_node;
        location->read_version = record.read_version;
        location->flags = record.flags;
        for (uint32_t h = 0; h < record.holders; h++) {
            struct ts_replica_rec holder;
            if (ts_replica_rec_read(cursor, &holder) != 0 || holder.node == 0 ||
                (holder.token.len != 0 && holder.token.len != TILETOKEN_MAC_BYTES) ||
                (holder.token.len == 0) != (holder.token_expiry == 0))
                return -1;
            location->holders[h] =
                (struct tile_holder){.node = holder.node, .state = holder.state,
                                     .version = holder.version,
                                     .token_expiry = holder.token_expiry};
            if (holder.token.len)
                memcpy(location->holders[h].token, holder.token.ptr, holder.token.len);
        }
    }
    return cursor->failed || cursor->left != 0 ? -1 : 0;
}

int metaclient_tile_map_sized(struct metaclient *client, uint64_t ino, uint64_t first,
                              uint32_t count, int allocate, uint32_t node,
                              struct tile_location *locations, uint64_t *size)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_tile_map_req request = {.ino = ino,
                                      .first = first,
                                      .count = count,
                                      .allocate = allocate ? 1 : 0,
                                      .node = node,
                                      .machine = ts_str_of(client->machine)};
    struct ts_tile_map_rep decoded;
    struct rpc_reply reply;
    struct ts_cursor cursor;
    int status = meta_call(client, TS_OP_TILE_MAP, buf,
                           ts_tile_map_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status != TS_OK)
        goto out;
    if (ts_tile_map_rep_decode(&decoded, reply.payload, reply.payload_len) != 0 ||
        decoded.count != count) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    ts_cursor_init(&cursor, decoded.tiles.ptr, decoded.tiles.len);
    if (metaclient_tile_records(&cursor, count, locations) != 0)
        status = TS_ERR_BADMSG;
    else if (size)
        *size = decoded.size;
out:
    rpc_reply_release(&reply);
    return status;
}

int metaclient_replica_drop(struct metaclient *client, uint64_t ino, uint64_t tile, uint32_t node,
                            uint64_t version, struct tile_location *location)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_replica_drop_req request = {.ino = ino,
                                          .tile = tile,
                                          .node = node,
                                          .version = version,
                                          .machine = ts_str_of(client->machine)};
    struct ts_tile_map_rep decoded;
    struct rpc_reply reply;
    struct ts_cursor cursor;
    int status = meta_call(client, TS_OP_REPLICA_DROP, buf,
                           ts_replica_drop_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status == TS_OK && (ts_tile_map_rep_decode(&decoded, reply.payload, reply.payload_len) != 0 ||
                            decoded.count != 1))
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        ts_cursor_init(&cursor, decoded.tiles.ptr, decoded.tiles.len);
        if (metaclient_tile_records(&cursor, 1, location) != 0)
            status = TS_ERR_BADMSG;
    }
    rpc_reply_release(&reply);
    return status;
}

int metaclient_profile_record(struct metaclient *client, const uint8_t *records, uint32_t count,
                              uint32_t *kept)
{
    size_t records_len = (size_t)count * ts_profile_count_rec_bytes;
    size_t cap = records_len + REQUEST_CAP;
    struct ts_profile_record_req request = {.machine = ts_str_of(client->machine),
                                            .count = count,
                                            .records = {(const char *)records,
                                                        (uint32_t)records_len}};
    struct ts_profile_record_rep decoded;
    struct rpc_reply reply;
    uint8_t *buf;
    int status;

    *kept = 0;
    if (count > TS_MAX_PROFILE_RECORDS)
        return TS_ERR_TOOBIG;
    buf = malloc(cap);
    if (!buf)
        return TS_ERR_NOMEM;
    status = meta_call(client, TS_OP_PROFILE_RECORD, buf,
                       ts_profile_record_req_encode(&request, buf, cap), &reply);
    if (status == TS_OK) {
        if (ts_profile_record_rep_decode(&decoded, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
        else
            *kept = decoded.kept;
    }
    rpc_reply_release(&reply);
    free(buf);
    return status;
}

int metaclient_commit(struct metaclient *client, uint64_t ino, uint64_t min_size,
                      const struct timespec *mtime, int sync, struct ts_attr *attr)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_commit_req request = {.ino = ino,
                                    .min_size = min_size,
                                    .mtime_sec = mtime ? mtime->tv_sec : 0,
                                    .mtime_nsec = mtime ? (uint32_t)mtime->tv_nsec : 0,
                                    .sync = sync ? 1 : 0};
    return meta_call_attr(client, TS_OP_COMMIT, buf,
                          ts_commit_req_encode(&request, buf, sizeof(buf)), attr);
}

int metaclient_punch(struct metaclient *client, uint64_t ino, uint64_t first_tile,
                     uint64_t last_tile, struct ts_attr *attr)
{
    uint8_t buf[REQUEST_CAP];
    struct ts_punch_req request = {.ino = ino, .first_tile = first_tile, .last_tile = last_tile};
    return meta_call_attr(client, TS_OP_PUNCH, buf, ts_punch_req_encode(&request, buf, sizeof(buf)),
                          attr);
}

int metaclient_node_list(struct metaclient *client, struct meta_node **nodes, size_t *count)
{
    struct ts_node_list_rep decoded;
    struct rpc_reply reply;
    struct ts_cursor cursor;
    int status = meta_call(client, TS_OP_NODE_LIST, NULL, 0, &reply);
    *nodes = NULL;
    *count = 0;
    if (status != TS_OK)
        goto out;
    if (ts_node_list_rep_decode(&decoded, reply.payload, reply.payload_len) != 0 ||
        !ts_records_fit(decoded.count, decoded.nodes.len, ts_node_list_rec_bytes)) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    *nodes = calloc(decoded.count ? decoded.count : 1, sizeof(**nodes));
    if (!*nodes) {
        status = TS_ERR_NOMEM;
        goto out;
    }
    ts_cursor_init(&cursor, decoded.nodes.ptr, decoded.nodes.len);
    for (uint32_t i = 0; i < decoded.count; i++) {
        struct meta_node *node = &(*nodes)[i];
        struct ts_node_list_rec record;
        if (ts_node_list_rec_read(&cursor, &record) != 0 ||
            ts_str_copy(record.machine, node->machine, sizeof(node->machine)) != 0 ||
            ts_str_copy(record.address, node->address, sizeof(node->address)) != 0) {
            free(*nodes);
            *nodes = NULL;
            status = TS_ERR_BADMSG;
            goto out;
        }
        node->id = record.id;
        node->state = record.state;
        node->free_bytes = record.free_bytes;
    }
    *count = decoded.count;
out:
    rpc_reply_release(&reply);
    return status;
}

/* ---- the session: renewals and announcements ------------------------- */

void metaclient_on_lost(struct metaclient *client, metaclient_lost_fn fn, void *ctx)
{
    pthread_mutex_lock(&client->lost_mutex);
    client->lost_fn = fn;
    client->lost_ctx = ctx;
    pthread_mutex_unlock(&client->lost_mutex);
}

/*
 * Announces every open this mount holds (SESSION_HOLDS, as many requests
 * as it takes). Called with holds_lock held for writing. Inodes meta no
 * longer has are appended to lost[] (malloc'd, *lost_count of them).
 */
static int session_announce(struct metaclient *client, uint64_t **lost, size_t *lost_count,
                            uint64_t *announced)
{
    size_t total = inocount_size(client->holds);
    size_t at = 0;
    size_t sent = 0;
    int status = TS_OK;
    size_t chunk_max = total < TS_MAX_HOLDS ? total : TS_MAX_HOLDS;
    size_t records_cap = (chunk_max ? chunk_max : 1) * ts_hold_rec_bytes;
    uint8_t *buf = malloc(records_cap + records_cap + REQUEST_CAP);
    if (!buf)
        return TS_ERR_NOMEM;
    *announced = 0;
    do { /* at least once: an empty announcement still replaces what meta counts */
        uint32_t count = 0;
        uint64_t ino;
        uint32_t n;
        struct ts_writer records;
        ts_writer_init(&records, buf, records_cap);
        while (count < TS_MAX_HOLDS && inocount_next(client->holds, &at, &ino, &n)) {
            struct ts_hold_rec record = {.ino = ino, .count = n};
            ts_hold_rec_write(&records, &record);
            count++;
            *announced += n;
        }
        struct ts_session_holds_req request = {
            .first = sent == 0,
            .count = count,
            .records = {(const char *)buf, (uint32_t)records.len}};
        uint8_t *payload = buf + records_cap;
        struct rpc_reply reply;
        struct ts_session_holds_rep decoded;
        status = meta_call(
            client, TS_OP_SESSION_HOLDS, payload,
            ts_session_holds_req_encode(&request, payload, records_cap + REQUEST_CAP), &reply);
        if (status == TS_OK &&
            (ts_session_holds_rep_decode(&decoded, reply.payload, reply.payload_len) != 0 ||
             decoded.records.len != (uint64_t)decoded.count * ts_hold_rec_bytes))
            status = TS_ERR_BADMSG;
        if (status == TS_OK && decoded.count > 0) {
            uint64_t *grown = realloc(*lost, (*lost_count + decoded.count) * sizeof(**lost));
            if (!grown)
                status = TS_ERR_NOMEM;
            else
                *lost = grown;
            struct ts_cursor cursor;
            ts_cursor_init(&cursor, decoded.records.ptr, decoded.records.len);
            for (uint32_t i = 0; status == TS_OK && i < decoded.count; i++) {
                struct ts_hold_rec record;
                if (ts_hold_rec_read(&cursor, &record) != 0)
                    status = TS_ERR_BADMSG;
                else
                    (*lost)[(*lost_count)++] = record.ino;
            }
        }
        rpc_reply_release(&reply);
        sent += count;
    } while (status == TS_OK && sent < total);
    free(buf);
    return status;
}

/*
 * One renewal: SESSION_RENEW with what this mount counts; when meta does
 * not know the session or counts otherwise, the announcement. Opens of
 * inodes meta no longer has are dropped and handed to the lost callback.
 * TS_OK or the failure of a request (the caller tries again soon).
 */
static int session_renew(struct metaclient *client)
{
    uint8_t buf[REQUEST_CAP];
    struct rpc_reply reply;
    struct ts_session_renew_rep decoded;
    uint64_t *lost = NULL;
    size_t lost_count = 0;
    uint64_t announced = 0;
    bool announce = false;

    pthread_rwlock_wrlock(&client->holds_lock);
    bool was_sending = sends_queue;
    sends_queue = true; /* creates still queued are in neither count */
    pthread_mutex_lock(&client->holds_mutex);
    struct ts_session_renew_req request = {.holds = client->holds_total,
                                           .fingerprint = client->holds_fingerprint,
                                           .machine = ts_str_of(client->machine),
                                           .metrics = ts_str_of(client->metrics)};
    pthread_mutex_unlock(&client->holds_mutex);
    int status = meta_call(client, TS_OP_SESSION_RENEW, buf,
                           ts_session_renew_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status == TS_OK &&
        ts_session_renew_rep_decode(&decoded, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    if (status == TS_OK) {
        atomic_store(&client->lease_ms, (int)decoded.lease_ms);
        announce = decoded.state == TS_SESSION_ANNOUNCE;
        /* A renewal lost with a meta that died waits out the timeout; the
         * next must still come within the lease (or, after a restart of
         * meta, its grace), or meta may drop what this mount holds open. */
        if (!client->lease_warned && (int64_t)decoded.lease_ms < 2 * (int64_t)client->timeout_ms) {
            client->lease_warned = true;
            log_warn("tessera-meta's mount lease (%u ms) is under twice this mount's "
                     "--meta-timeout-ms (%d): a renewal that times out may cost this mount "
                     "its open unlinked files",
                     decoded.lease_ms, client->timeout_ms);
        }
    }
    if (announce)
        status = session_announce(client, &lost, &lost_count, &announced);
    for (size_t i = 0; i < lost_count; i++)
        holds_take(client, lost[i], UINT32_MAX);
    sends_queue = was_sending;
    pthread_rwlock_unlock(&client->holds_lock);

    if (announce && status == TS_OK && announced > 0)
        log_info("tessera-meta did not know this mount's opens (it restarted, or this mount "
                 "was cut off longer than its lease): announced %llu opens",
                 (unsigned long long)announced);
    if (lost_count > 0) {
        log_error("%zu open files were deleted by tessera-meta while this mount's lease had "
                  "expired: their reads and writes fail with EIO",
                  lost_count);
        pthread_mutex_lock(&client->lost_mutex);
        for (size_t i = 0; client->lost_fn && i < lost_count; i++)
            client->lost_fn(client->lost_ctx, lost[i]);
        pthread_mutex_unlock(&client->lost_mutex);
    }
    free(lost);
    return status;
}

/* How long after a failed renewal the next is tried. */
#define SESSION_RETRY_MS 500

static void *metaclient_keeper_main(void *arg)
{
    struct metaclient *client = arg;
    pthread_mutex_lock(&client->keeper_mutex);
    while (!client->keeper_stop) {
        pthread_mutex_unlock(&client->keeper_mutex);
        int status = session_renew(client);
        /* A renewal every quarter lease: one may be lost, or wait out a
         * meta timeout, and the next still comes in time. */
        int64_t wait_ms = atomic_load(&client->lease_ms) / 4;
        if (wait_ms <= 0)
            wait_ms = SESSION_RETRY_MS;
        if (status != TS_OK && wait_ms > SESSION_RETRY_MS)
            wait_ms = SESSION_RETRY_MS;
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += wait_ms / 1000;
        deadline.tv_nsec += (wait_ms % 1000) * 1000000;
        if (deadline.tv_nsec >= 1000000000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&client->keeper_mutex);
        while (!client->keeper_stop &&
               pthread_cond_timedwait(&client->keeper_wake, &client->keeper_mutex, &deadline) == 0)
            ;
    }
    pthread_mutex_unlock(&client->keeper_mutex);
    return NULL;
}

int metaclient_keep_session(struct metaclient *client)
{
    if (client->keeper_started)
        return TS_OK;
    if (pthread_create(&client->keeper, NULL, metaclient_keeper_main, client) != 0)
        return TS_ERR_NOMEM;
    client->keeper_started = true;
    return TS_OK;
}

static void metaclient_keeper_stop(struct metaclient *client)
{
    if (!client->keeper_started)
        return;
    pthread_mutex_lock(&client->keeper_mutex);
    client->keeper_stop = true;
    pthread_cond_signal(&client->keeper_wake);
    pthread_mutex_unlock(&client->keeper_mutex);
    pthread_join(client->keeper, NULL);
}

/* At unmount, every release sent: meta may forget the session now. */
static void metaclient_session_end(struct metaclient *client)
{
    uint8_t buf[REQUEST_CAP];
    struct rpc_reply reply;
    struct ts_session_renew_req request = {.ending = 1};
    if (!client->keeper_started)
        return;
    bool was_sending = sends_queue;
    sends_queue = true; /* nothing is queued any more */
    (void)meta_call(client, TS_OP_SESSION_RENEW, buf,
                    ts_session_renew_req_encode(&request, buf, sizeof(buf)), &reply);
    sends_queue = was_sending;
    rpc_reply_release(&reply);
}
