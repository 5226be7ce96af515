/*
 * @file ops.c
 * The libfuse low-level operations: each x_<op>() turns one kernel request
 * into calls to meta (metaclient) or the data path (datapath) and replies
 * exactly once. Status codes from the wire become errno only here, through
 * status_to_errno().
 *
 * The mount keeps no per-inode state except for open files (datapath), so
 * lookup counts need no bookkeeping: forget has nothing to drop. Inode
 * numbers are meta's, and FUSE_ROOT_ID is meta's root (1).
 *
 * Lookups are answered from the statahead windows (dentcache) when they
 * can be, else by meta; a name that does not exist is answered with a
 * negative entry the kernel may cache for the entry timeout. Every change
 * made through the mount is reported to the dentcache once meta has done
 * it, before the kernel is answered. Releases go to meta in the background
 * (metaclient_defer_releases): nothing waits for them.
 */
#include "ops.h"

#include "bdi.h"
#include "curve.h"
#include "fallocplan.h"
#include "keepcache.h"
#include "log.h"
#include "reqloop.h"
#include "status.h"
#include "tile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>

#define READDIR_BATCH 1024
/* Pieces a reply may have besides libfuse's header (UIO_MAXIOV is 1024). */
#define REPLY_MAX_PIECES 1000

static struct mount_state *mount_state_for_tuning;
static pthread_once_t tuning_once = PTHREAD_ONCE_INIT;

/*
 * 32 tiles: a lone cold reader keeps about that many tile reads in flight
 * on the datanodes. The kernel sends a window's requests when the reader
 * enters the window before it; at 16 tiles the datanodes finished a window
 * before dd had read the one before, and sat idle (traced: 0-1 reads in
 * flight 20 % of the time). Measured (2 GiB, caches dropped, alternated on
 * one cluster): dd read 961-1,300 MB/s against 785-913 at 16 tiles; 64
 * tiles no better than 32; four streams and cp out the same.
 */
#define READAHEAD_TILES 32

static void tune_after_init(void)
{
    bdi_raise_readahead(mount_state_for_tuning->mountpoint,
                        READAHEAD_TILES * TILE_DEFAULT_BYTES / 1024);
}

/* Every request but init comes after the kernel processed FUSE_INIT's reply. */
static struct mount_state *state_of(fuse_req_t req)
{
    pthread_once(&tuning_once, tune_after_init);
    return fuse_req_userdata(req);
}

static void attr_to_stat(const struct ts_attr *attr, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = attr->ino;
    st->st_mode = attr->mode;
    st->st_nlink = attr->nlink;
    st->st_uid = attr->uid;
    st->st_gid = attr->gid;
    st->st_rdev = attr->rdev;
    st->st_size = (off_t)attr->size;
    st->st_blocks = (blkcnt_t)attr->blocks;
    st->st_blksize = (blksize_t)(attr->tile_bytes ? attr->tile_bytes : TILE_DEFAULT_BYTES);
    st->st_atim.tv_sec = attr->atime_sec;
    st->st_atim.tv_nsec = attr->atime_nsec;
    st->st_mtim.tv_sec = attr->mtime_sec;
    st->st_mtim.tv_nsec = attr->mtime_nsec;
    st->st_ctim.tv_sec = attr->ctime_sec;
    st->st_ctim.tv_nsec = attr->ctime_nsec;
}

static void reply_status(fuse_req_t req, int status)
{
    fuse_reply_err(req, status == TS_OK ? 0 : status_to_errno(status));
}

static double monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* An entry the kernel may keep `timeout` seconds (at most the mount's timeouts). */
static void fill_entry_for(fuse_req_t req, const struct ts_attr *attr, double timeout,
                           struct fuse_entry_param *entry)
{
    struct mount_state *state = state_of(req);
    memset(entry, 0, sizeof(*entry));
    entry->ino = attr->ino;
    entry->generation = attr->generation;
    entry->attr_timeout = timeout < state->attr_timeout ? timeout : state->attr_timeout;
    entry->entry_timeout = timeout < state->entry_timeout ? timeout : state->entry_timeout;
    attr_to_stat(attr, &entry->attr);
}

static void fill_entry(fuse_req_t req, const struct ts_attr *attr, struct fuse_entry_param *entry)
{
    fill_entry_for(req, attr, state_of(req)->attr_timeout, entry);
}

/*
 * Settles attr for a reply (datapath_settle_attr): what this mount wrote
 * and has not committed goes over it, and attributes older than some the
 * kernel already has are fetched again, so that no reply takes a file
 * back in time. A fresh answer from meta is never older than one handed
 * out before (meta's change counter only grows), so one more fetch is
 * enough. A status: the fetch's, when it failed.
 */
static int settle_attr(struct mount_state *state, struct ts_attr *attr)
{
    if (datapath_settle_attr(state->datapath, attr))
        return TS_OK;
    int status = metaclient_getattr(state->meta, attr->ino, attr);
    if (status == TS_OK)
        datapath_settle_fresh(state->datapath, attr);
    return status;
}

/* Replies with attr (settled: settle_attr), cacheable `timeout` s. */
static void reply_entry_for(fuse_req_t req, struct ts_attr *attr, double timeout)
{
    struct fuse_entry_param entry;
    int status = settle_attr(state_of(req), attr);
    if (status != TS_OK) {
        reply_status(req, status);
        return;
    }
    fill_entry_for(req, attr, timeout, &entry);
    fuse_reply_entry(req, &entry);
}

static void reply_entry(fuse_req_t req, int status, struct ts_attr *attr)
{
    if (status != TS_OK) {
        reply_status(req, status);
        return;
    }
    reply_entry_for(req, attr, state_of(req)->attr_timeout);
}

/* "No such name", cacheable by the kernel for `timeout` s (ino 0 = negative). */
static void reply_negative(fuse_req_t req, double timeout)
{
    struct fuse_entry_param entry;
    double limit = state_of(req)->entry_timeout;
    memset(&entry, 0, sizeof(entry));
    entry.entry_timeout = timeout < limit ? timeout : limit;
    fuse_reply_entry(req, &entry);
}

/* Replies with attr (settled: settle_attr), cacheable `timeout` s. */
static void reply_attr_for(fuse_req_t req, struct ts_attr *attr, double timeout)
{
    struct stat st;
    double limit = state_of(req)->attr_timeout;
    int status = settle_attr(state_of(req), attr);
    if (status != TS_OK) {
        reply_status(req, status);
        return;
    }
    attr_to_stat(attr, &st);
    fuse_reply_attr(req, &st, timeout < limit ? timeout : limit);
}

static void reply_attr(fuse_req_t req, struct ts_attr *attr)
{
    reply_attr_for(req, attr, state_of(req)->attr_timeout);
}

/* The directories a namespace change fetches the attributes of (metaclient_dirs). */
static struct metaclient_dirs dirs_of(uint64_t dir, uint64_t other_dir)
{
    struct metaclient_dirs dirs = {.count = 1, .ino = {dir, other_dir}};
    if (other_dir != 0 && other_dir != dir)
        dirs.count = 2;
    return dirs;
}

/* As dirs_of(dir, 0) for a change that adds an entry to dir: none to fetch
 * when the dentcache can derive dir's new attributes from the entry's. */
static struct metaclient_dirs dirs_adding_to(struct mount_state *state, uint64_t dir)
{
    struct metaclient_dirs dirs = dirs_of(dir, 0);
    if (dentcache_dir_attr_known(state->dentries, dir))
        dirs.count = 0;
    return dirs;
}

/* The file handle of an open regular file. */
static struct open_file *file_of(struct fuse_file_info *fi)
{
    return (struct open_file *)(uintptr_t)fi->fh;
}

/* The handle may write (its open flags, as open and release carry them). */
static bool handle_writes(const struct fuse_file_info *fi)
{
    return (fi->flags & O_ACCMODE) != O_RDONLY;
}

/* A write-only handle writes past the kernel's page cache (see open_file). */
static bool handle_direct(const struct fuse_file_info *fi)
{
    /* O_DIRECT too: without FOPEN_DIRECT_IO the kernel finishes a direct
     * read that came back shorter than the size it caches through the page
     * cache (generic_file_read_iter), whose pages may hold the zero fill of
     * an older short read: a reader on another mount then saw zeros where
     * a growing file had bytes (tests/integration/test_append_coherence.sh). */
    return (fi->flags & O_ACCMODE) == O_WRONLY || (fi->flags & O_DIRECT);
}

/*
 * A read-only handle of an array file reads past the page cache too. The
 * kernel's read-ahead follows the file's bytes: for a sub-block reader (a
 * quadrant read row by row) the bytes after each row segment are the other
 * blocks', so it fetched other hosts' tiles and at least twice the bytes
 * (issue 34: a buffered quadrant reader at 17 MB/s pulled 90 MB over its
 * link; O_DIRECT, 0 bytes). Past the page cache every read reaches the
 * mount, whose tile cache reads whole tiles and reads ahead along the
 * reader's own block (readpath.c, array_read_ahead). A shared mmap of such
 * a handle needs FUSE_CAP_DIRECT_IO_ALLOW_MMAP (libfuse 3.16, wanted in
 * x_init when there); without it only private mappings work, and
 * --array-direct 0 keeps array files in the page cache for such mounts.
 */
static bool array_reader_direct(const struct mount_state *state, const struct fuse_file_info *fi,
                                bool is_array)
{
    return state->array_direct && is_array && (fi->flags & O_ACCMODE) == O_RDONLY;
}

static void x_init(void *userdata, struct fuse_conn_info *conn)
{
    mount_state_for_tuning = userdata; /* before any other request runs */
    /* 1 MiB requests: one tile per request when aligned. */
    conn->max_write = TILE_DEFAULT_BYTES;
    conn->max_read = TILE_DEFAULT_BYTES;
    if (conn->capable & FUSE_CAP_ASYNC_READ)
        conn->want |= FUSE_CAP_ASYNC_READ;
    /* The kernel's read-ahead goes out as background requests; at the
     * default 12 (congested at 9) streams reading many tiles ahead find the
     * queue congested, and the kernel drops the read-ahead pages it had just
     * allocated. Room for 16 streams READAHEAD_TILES ahead. */
    conn->max_background = 16 * READAHEAD_TILES;
    conn->congestion_threshold = 12 * READAHEAD_TILES;
    /* No writeback cache: writes reach us in order, so errors and sizes stay
     * exact; no kernel-side locks: POSIX locks are local to a mount. */
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    /* The kernel clears set-user-ID and set-group-ID bits itself where it
     * can (buffered writes, truncate, chown), with the caller's
     * capabilities in view; what it cannot see (writes past its page
     * cache, truncation at open) the mount does: kill_privileges(). */
    conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
        conn->want |= FUSE_CAP_PARALLEL_DIROPS;
#ifdef FUSE_CAP_DIRECT_IO_ALLOW_MMAP
    /* Shared mappings of array files read past the cache (array_reader_direct). */
    if (conn->capable & FUSE_CAP_DIRECT_IO_ALLOW_MMAP)
        conn->want |= FUSE_CAP_DIRECT_IO_ALLOW_MMAP;
#endif
    /* Replies from a tile stream's pipe go on to the kernel by splice. */
    if (mount_state_for_tuning->streams && (conn->capable & FUSE_CAP_SPLICE_WRITE))
        conn->want |= FUSE_CAP_SPLICE_WRITE;
    log_info("ready: mounted (max_write %u)", conn->max_write);
}

/*
 * Statahead: fetches the window `fetch` advised, from name on, into the
 * entry cache. The entries (name itself first when it exists) are the
 * caller's to free; *timeout gets how long they may be cached. NULL when
 * the fetch failed.
 */
static struct meta_direntplus *statahead(struct mount_state *state,
                                         const struct dentcache_fetch *fetch, const char *name,
                                         uint32_t *count, double *timeout)
{
    struct meta_direntplus *entries = malloc(fetch->max_entries * sizeof(*entries));
    uint32_t done = 0;
    *count = 0;
    if (!entries)
        return NULL;
    int status = metaclient_readdirplus(state->meta, fetch->parent, name, 1, entries,
                                        fetch->max_entries, count, &done);
    if (status != TS_OK) {
        free(entries);
        return NULL;
    }
    *timeout = dentcache_install(state->dentries, fetch, name, entries, *count, done != 0);
    if (*timeout <= 0) /* not kept (changed meanwhile): as fresh as a LOOKUP's answer */
        *timeout = state->attr_timeout;
    return entries;
}

/* Answers the lookup of name from a statahead window. Returns false, having
 * replied nothing, when the fetch failed (the caller then asks meta). */
static bool lookup_statahead(fuse_req_t req, const struct dentcache_fetch *fetch, const char *name)
{
    uint32_t count;
    double timeout;
    struct meta_direntplus *entries = statahead(state_of(req), fetch, name, &count, &timeout);
    if (!entries)
        return false;
    if (count > 0 && strcmp(entries[0].name, name) == 0)
        reply_entry_for(req, &entries[0].attr, timeout);
    else
        reply_negative(req, timeout);
    free(entries);
    return true;
}

static void x_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct mount_state *state = state_of(req);
    struct dentcache_fetch fetch;
    struct ts_attr attr;
    double timeout = 0;
    if (strlen(name) > TS_MAX_NAME) {
        fuse_reply_err(req, ENAMETOOLONG);
        return;
    }
    switch (dentcache_lookup(state->dentries, parent, name, &attr, &timeout, &fetch)) {
    case DENTCACHE_FOUND: reply_entry_for(req, &attr, timeout); return;
    case DENTCACHE_ABSENT: reply_negative(req, timeout); return;
    case DENTCACHE_MISS: break;
    }
    if (fetch.max_entries > 0 && lookup_statahead(req, &fetch, name))
        return;
    int status = metaclient_lookup(state->meta, parent, name, &attr);
    if (status == TS_ERR_NOENT)
        reply_negative(req, state->entry_timeout);
    else
        reply_entry(req, status, &attr);
}

static void x_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    (void)ino;
    (void)nlookup;
    fuse_reply_none(req); /* no per-inode state to drop: see the file comment */
}

static void x_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct ts_attr attr;
    double timeout = 0;
    (void)fi;
    /* After this mount changed a directory, the kernel asks for its
     * attributes at once: they came with the change. */
    if (dentcache_getattr(state_of(req)->dentries, ino, &attr, &timeout)) {
        reply_attr_for(req, &attr, timeout);
        return;
    }
    int status = metaclient_getattr(state_of(req)->meta, ino, &attr);
    if (status != TS_OK) {
        reply_status(req, status);
        return;
    }
    reply_attr(req, &attr);
}

static void x_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *st, int to_set,
                      struct fuse_file_info *fi)
{
    struct ts_setattr_req request = {.ino = ino};
    struct ts_attr attr;
    (void)fi;

    if (to_set & FUSE_SET_ATTR_MODE) {
        request.valid |= TS_SET_MODE;
        request.mode = st->st_mode;
    }
    if (to_set & FUSE_SET_ATTR_UID) {
        request.valid |= TS_SET_UID;
        request.uid = st->st_uid;
    }
    if (to_set & FUSE_SET_ATTR_GID) {
        request.valid |= TS_SET_GID;
        request.gid = st->st_gid;
    }
    if (to_set & FUSE_SET_ATTR_SIZE) {
        request.valid |= TS_SET_SIZE;
        request.size = (uint64_t)st->st_size;
    }
    if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
        request.valid |= TS_SET_ATIME_NOW;
    } else if (to_set & FUSE_SET_ATTR_ATIME) {
        request.valid |= TS_SET_ATIME;
        request.atime_sec = st->st_atim.tv_sec;
        request.atime_nsec = (uint32_t)st->st_atim.tv_nsec;
    }
    if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
        request.valid |= TS_SET_MTIME_NOW;
    } else if (to_set & FUSE_SET_ATTR_MTIME) {
        request.valid |= TS_SET_MTIME;
        request.mtime_sec = st->st_mtim.tv_sec;
        request.mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
    }
    if (to_set & FUSE_SET_ATTR_CTIME)
        request.valid |= TS_SET_CTIME;
    int error = datapath_setattr(state_of(req)->datapath, &request, &attr);
    if (error != 0) {
        /* Even a failed setattr may have done part of its work (cut a tile). */
        dentcache_changed(state_of(req)->dentries, ino);
        fuse_reply_err(req, -error);
        return;
    }
    dentcache_attr_set(state_of(req)->dentries, &attr);
    reply_attr(req, &attr);
}

static void x_readlink(fuse_req_t req, fuse_ino_t ino)
{
    char target[TS_MAX_SYMLINK + 1];
    int status = metaclient_readlink(state_of(req)->meta, ino, target, sizeof(target));
    if (status != TS_OK) {
        reply_status(req, status);
        return;
    }
    fuse_reply_readlink(req, target);
}

static int name_too_long(fuse_req_t req, const char *name)
{
    if (strlen(name) <= TS_MAX_NAME)
        return 0;
    fuse_reply_err(req, ENAMETOOLONG);
    return 1;
}

static void x_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    struct mount_state *state = state_of(req);
    struct metaclient_dirs dirs = dirs_adding_to(state, parent);
    struct ts_attr attr;
    if (name_too_long(req, name))
        return;
    struct dentcache_ticket ticket = dentcache_ticket(state->dentries);
    int status = metaclient_mknod(state->meta, parent, name, mode, rdev, ctx->uid, ctx->gid, 0,
                                  &attr, &dirs);
    if (status == TS_OK)
        dentcache_added(state->dentries, parent, name, &attr, &dirs, ticket);
    reply_entry(req, status, &attr);
}

static void x_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    struct mount_state *state = state_of(req);
    struct metaclient_dirs dirs = dirs_adding_to(state, parent);
    struct ts_attr attr;
    if (name_too_long(req, name))
        return;
    struct dentcache_ticket ticket = dentcache_ticket(state->dentries);
    int status = metaclient_mkdir(state->meta, parent, name, mode | S_IFDIR, ctx->uid, ctx->gid,
                                  &attr, &dirs);
    if (status == TS_OK) {
        dentcache_added(state->dentries, parent, name, &attr, &dirs, ticket);
        dentcache_dir_made(state->dentries, attr.ino, ticket);
    }
    reply_entry(req, status, &attr);
}

/*
 * What a fresh answer says of name in parent: the entry cache's, or, when
 * it has none, that of a statahead window fetched for it if the names asked
 * for form a walk (an rm of many names in order, past what the kernel still
 * has cached, thus costs no meta round trip per name). False when nothing
 * fresh says the name exists.
 */
static bool entry_fresh(struct mount_state *state, uint64_t parent, const char *name,
                        struct ts_attr *attr)
{
    struct dentcache_fetch fetch;
    double timeout;
    uint32_t count;
    if (dentcache_peek(state->dentries, parent, name, attr))
        return true;
    enum dentcache_answer answer =
        dentcache_lookup(state->dentries, parent, name, attr, &timeout, &fetch);
    if (answer != DENTCACHE_MISS || fetch.max_entries == 0)
        return answer == DENTCACHE_FOUND;
    struct meta_direntplus *entries = statahead(state, &fetch, name, &count, &timeout);
    bool listed = entries && count > 0 && strcmp(entries[0].name, name) == 0;
    if (listed)
        *attr = entries[0].attr;
    free(entries);
    return listed;
}

/*
 * Queues the unlink of name (nsqueue.h), to be answered at once, when that
 * changes nothing anyone can see before meta has done it: the name is known
 * to be a file's only link (the link count of an inode with other names
 * would be seen through them), and the kernel's next question, the
 * directory's attributes, can be answered without meta too.
 */
static bool unlink_early(struct mount_state *state, uint64_t parent, const char *name)
{
    struct ts_attr attr;
    if (!dentcache_dir_attr_known(state->dentries, parent) ||
        !entry_fresh(state, parent, name, &attr) || S_ISDIR(attr.mode) || attr.nlink != 1)
        return false;
    return metaclient_unlink_later(state->meta, parent, name, attr.ino) == TS_OK;
}

static void x_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct mount_state *state = state_of(req);
    struct metaclient_dirs dirs = dirs_of(parent, 0);
    struct dentcache_ticket ticket = dentcache_ticket(state->dentries);
    if (unlink_early(state, parent, name)) {
        dentcache_unlinked_early(state->dentries, parent, name, ticket);
        fuse_reply_err(req, 0);
        return;
    }
    int status = metaclient_unlink(state->meta, parent, name, &dirs);
    if (status == TS_OK)
        dentcache_removed(state->dentries, parent, name, &dirs, ticket);
    reply_status(req, status);
}

static void x_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct mount_state *state = state_of(req);
    struct metaclient_dirs dirs = dirs_of(parent, 0);
    struct dentcache_ticket ticket = dentcache_ticket(state->dentries);
    int status = metaclient_rmdir(state->meta, parent, name, &dirs);
    if (status == TS_OK)
        dentcache_removed(state->dentries, parent, name, &dirs, ticket);
    reply_status(req, status);
}

static void x_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    struct mount_state *state = state_of(req);
    struct metaclient_dirs dirs = dirs_adding_to(state, parent);
    struct ts_attr attr;
    if (name_too_long(req, name))
        return;
    if (strlen(link) > TS_MAX_SYMLINK) {
        fuse_reply_err(req, ENAMETOOLONG);
        return;
    }
    struct dentcache_ticket ticket = dentcache_ticket(state->dentries);
    int status =
        metaclient_symlink(state->meta, parent, name, link, ctx->uid, ctx->gid, &attr, &dirs);
    if (status == TS_OK)
        dentcache_added(state->dentries, parent, name, &attr, &dirs, ticket);
    reply_entry(req, status, &attr);
}

static void x_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t new_parent,
                     const char *new_name, unsigned int flags)
{
    if (name_too_long(req, new_name))
        return;
    if (flags & ~(unsigned)(TS_RENAME_NOREPLACE | TS_RENAME_EXCHANGE)) {
        fuse_reply_err(req, EINVAL); /* RENAME_WHITEOUT is for overlay filesystems */
        return;
    }
    struct mount_state *state = state_of(req);
    struct metaclient_dirs dirs = dirs_of(parent, new_parent);
    struct dentcache_ticket ticket = dentcache_ticket(state->dentries);
    int status = metaclient_rename(state->meta, parent, name, new_parent, new_name, flags, &dirs);
    if (status == TS_OK)
        dentcache_renamed(state->dentries, parent, name, new_parent, new_name, &dirs, ticket);
    reply_status(req, status);
}

static void x_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char *new_name)
{
    struct mount_state *state = state_of(req);
    struct metaclient_dirs dirs = dirs_adding_to(state, new_parent);
    struct ts_attr attr;
    if (name_too_long(req, new_name))
        return;
    struct dentcache_ticket ticket = dentcache_ticket(state->dentries);
    int status = metaclient_link(state->meta, ino, new_parent, new_name, &attr, &dirs);
    if (status == TS_OK)
        dentcache_added(state->dentries, new_parent, new_name, &attr, &dirs, ticket);
    reply_entry(req, status, &attr);
}

/*
 * An array file's layout text into *array_spec (malloc'd), for a file MKNOD
 * created and opened: only a file created in a directory with an array hint
 * has one. Returns a project status.
 */
static int array_spec_fetch(struct mount_state *state, uint64_t ino, char **array_spec)
{
    void *value = NULL;
    size_t len = 0;
    int status = metaclient_getxattr(state->meta, ino, "user.tessera.array", &value, &len);
    *array_spec = status == TS_OK ? strndup(value, len) : NULL;
    free(value);
    return status == TS_OK && !*array_spec ? TS_ERR_NOMEM : status;
}

/*
 * Opens ino in the data path and fills fi, with meta's open done already
 * (by OPEN, or by MKNOD: then array_spec is fetched here for an array
 * file). Takes array_spec. Returns an errno; on failure meta's open is
 * undone.
 */
static int open_file(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                     struct ts_attr *attr, char *array_spec)
{
    struct mount_state *state = state_of(req);
    struct open_file *file;
    if ((attr->flags & TS_ATTR_ARRAY) && !array_spec) {
        int status = array_spec_fetch(state, ino, &array_spec);
        if (status != TS_OK) {
            metaclient_release(state->meta, ino);
            return status_to_errno(status);
        }
    }
    int error = datapath_open(state->datapath, attr, array_spec, handle_writes(fi), &file);
    free(array_spec);
    if (error != 0) {
        metaclient_release(state->meta, ino);
        return -error;
    }
    fi->fh = (uint64_t)(uintptr_t)file;
    /* Close-to-open for the size too: the kernel does not ask for
     * attributes at open, and would read (or append) up to a size it
     * cached before another mount changed the file. Attributes only: the
     * pages are keep_cache's business. */
    if (state->session && attrguard_outdated(state->attr_guard, attr))
        fuse_lowlevel_notify_inval_inode(state->session, ino, -1, 0);
    /* Close-to-open: the kernel drops the cached pages unless meta's
     * attributes say the file is as it was at the last open (keepcache.h). */
    fi->keep_cache = state->kept_pages && keepcache_open(state->kept_pages, attr);
    /* A write-only handle (dd, cp, shell redirections) writes past the page
     * cache: one copy of the bytes instead of two (dd writes ~25 % faster).
     * It cannot read or mmap, so nothing it does needs the cache; pages
     * other handles cached are dropped by x_write. An O_DIRECT handle asked
     * for no cache (see handle_direct; it cannot mmap either, as with
     * direct_io on any FUSE mount of kernels before 6.6). */
    fi->direct_io =
        handle_direct(fi) || array_reader_direct(state_of(req), fi, attr->flags & TS_ATTR_ARRAY);
    return 0;
}

/* The end of a handle the kernel had (or, interrupted, never got). */
static void release_handle(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct mount_state *state = state_of(req);
    bool writes = handle_writes(fi);
    datapath_release(state->datapath, file_of(fi), writes);
    /* Pages of a write that failed on its way must not be kept (keepcache.h). */
    if (writes && state->kept_pages)
        keepcache_forget(state->kept_pages, ino);
}

/*
 * Whether the caller may write a set-user-ID file and keep the bit: Linux
 * asks for CAP_FSETID, which a FUSE request does not carry; root has it.
 */
static bool caller_keeps_privileges(fuse_req_t req)
{
    return fuse_req_ctx(req)->uid == 0;
}

/*
 * What truncation at open(O_TRUNC) sets (OPEN's truncate bits): size 0,
 * and mtime and ctime now even when the file was empty (POSIX, and what
 * make's stamp rules need); set-user-ID and set-group-ID go unless the
 * caller may keep them.
 */
static uint32_t truncation_at_open(fuse_req_t req)
{
    uint32_t valid = TS_SET_SIZE | TS_SET_MTIME_NOW;
    if (!caller_keeps_privileges(req))
        valid |= TS_SET_KILL_PRIV;
    return valid;
}

static void x_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct ts_attr attr;
    int error = 0;
    struct mount_state *state = state_of(req);
    char *array_spec = NULL;
    if (fi->flags & O_TRUNC) {
        /* libfuse asks for atomic O_TRUNC: the truncation is ours to do,
         * with the open in one round trip. */
        error = -datapath_open_truncating(state->datapath, ino, (uint32_t)fi->flags,
                                          truncation_at_open(req), &attr, &array_spec);
        dentcache_changed(state->dentries, ino);
    } else {
        error = status_to_errno(
            metaclient_open(state->meta, ino, (uint32_t)fi->flags, 0, &attr, &array_spec));
    }
    if (error == 0)
        error = open_file(req, ino, fi, &attr, array_spec);
    if (error != 0) {
        fuse_reply_err(req, error);
        return;
    }
    if (fuse_reply_open(req, fi) == -ENOENT) /* interrupted: the kernel won't release */
        release_handle(req, ino, fi);
}

/*
 * Creates name under parent's lease (dirlease.h), answered before meta has
 * it, when that changes nothing anyone can see: the mount holds the lease,
 * a window fetched since its grant says the name is absent, and the
 * kernel's next question, the directory's attributes, can be answered
 * without meta too. True with *attr (the file exists and is open in meta's
 * eyes once the queue sends it).
 */
static bool create_early(struct mount_state *state, uint64_t parent, const char *name,
                         mode_t mode, const struct fuse_ctx *ctx, struct ts_attr *attr)
{
    return state->leases && dentcache_dir_attr_known(state->dentries, parent) &&
           dirlease_create(state->leases, parent, name, mode, ctx->uid, ctx->gid, attr) == TS_OK;
}

static void x_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     struct fuse_file_info *fi)
{
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    struct mount_state *state = state_of(req);
    struct ts_attr attr;
    struct fuse_entry_param entry;

    if (name_too_long(req, name))
        return;
    struct metaclient_dirs dirs = dirs_adding_to(state, parent);
    struct dentcache_ticket ticket = dentcache_ticket(state->dentries);
    int status = TS_OK;
    bool early = create_early(state, parent, name, mode, ctx, &attr);
    if (early) {
        dirs.count = 0; /* derived from the new entry (dentcache_added) */
    } else {
        status = metaclient_mknod(state->meta, parent, name, (mode & 07777) | S_IFREG, 0,
                                  ctx->uid, ctx->gid, 1, &attr, &dirs);
        if (status == TS_OK)
            dirlease_note_create(state->leases, parent);
    }
    int created = status == TS_OK;
    char *array_spec = NULL;
    if (status == TS_ERR_EXIST && !(fi->flags & O_EXCL)) {
        /* The kernel believed the name absent from an answer that was
         * stale (another mount created it since): open(2) without O_EXCL
         * opens the existing file. */
        status = metaclient_lookup(state->meta, parent, name, &attr);
        if (status == TS_OK && !S_ISREG(attr.mode))
            status = S_ISDIR(attr.mode) ? TS_ERR_ISDIR : TS_ERR_EXIST;
        if (status == TS_OK && (fi->flags & O_TRUNC)) {
            int error = datapath_open_truncating(state->datapath, attr.ino, (uint32_t)fi->flags,
                                                 truncation_at_open(req), &attr, &array_spec);
            status = error == 0 ? TS_OK : status_from_errno(error);
            dentcache_changed(state->dentries, attr.ino);
        } else if (status == TS_OK) {
            status = metaclient_open(state->meta, attr.ino, (uint32_t)fi->flags, 0, &attr,
                                     &array_spec);
        }
    }
    if (status != TS_OK) {
        reply_status(req, status);
        return;
    }
    if (created)
        dentcache_added(state->dentries, parent, name, &attr, &dirs, ticket);
    int error = open_file(req, attr.ino, fi, &attr, array_spec);
    if (error != 0) {
        fuse_reply_err(req, error);
        return;
    }
    if (created)
        datapath_file_created(state->datapath, (struct open_file *)(uintptr_t)fi->fh, &attr,
                              ctx->uid, early);
    datapath_settle_fresh(state->datapath, &attr);
    fill_entry(req, &attr, &entry);
    if (fuse_reply_create(req, &entry, fi) == -ENOENT)
        release_handle(req, attr.ino, fi);
}

/*
 * Puts the tile a read loaded for data sieving into the kernel's page
 * cache (datapath.h says when it may), so the reader's later reads of it
 * never reach the mount. Runs after the reply: until then the kernel keeps
 * the read's pages locked, and a store locks pages too. A store may wait
 * for pages other reads in flight hold; at most STORES_AT_ONCE threads
 * do, so the others are left to serve those reads (the loop has 16).
 */
#define STORES_AT_ONCE 4
static atomic_int stores_running;

static void store_sieved_tile(struct mount_state *state, fuse_ino_t ino,
                              struct datapath_read *result)
{
    struct datapath_store store;
    if (!state->session || !result->store_slot)
        return;
    if (atomic_fetch_add(&stores_running, 1) >= STORES_AT_ONCE)
        goto out;
    if (!datapath_store_begin(state->datapath, result, &store))
        goto out;
    struct fuse_bufvec bufv = FUSE_BUFVEC_INIT(store.length);
    bufv.buf[0].mem = (void *)store.data;
    int error = fuse_lowlevel_notify_store(state->session, ino, (off_t)store.offset, &bufv, 0);
    if (error != 0 && error != -ENOENT) /* ENOENT: the kernel forgot the inode */
        log_debug("inode %llu: storing %zu bytes at %llu in the page cache failed: %s",
                  (unsigned long long)ino, store.length, (unsigned long long)store.offset,
                  strerror(-error));
    if (datapath_store_end(state->datapath, result, &store))
        fuse_lowlevel_notify_inval_inode(state->session, ino, (off_t)store.offset,
                                         (off_t)store.length);
out:
    atomic_fetch_sub(&stores_running, 1);
}

/* Reads shorter than this skip the pipe: libfuse copies them out of it anyway. */
#define STREAM_MIN_READ_BYTES (64u << 10)

static void x_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                   struct fuse_file_info *fi)
{
    struct mount_state *state = state_of(req);
    struct datapath_read result;
    int pipe_read = -1, pipe_write = -1;
    /* O_DIRECT reads bypass the page cache, as do an array file's
     * read-only handles (array_reader_direct): nothing is stored for them. */
    bool buffered = !(fi->flags & O_DIRECT) &&
                    !array_reader_direct(state, fi, datapath_file_is_array(file_of(fi)));
    if (state->streams && size >= STREAM_MIN_READ_BYTES &&
        tilestream_pipe(state->streams, &pipe_read, &pipe_write) != 0)
        pipe_write = -1;
    ssize_t got = datapath_read(state->datapath, file_of(fi), size, (uint64_t)offset, buffered,
                                pipe_write, &result);
    bool size_refresh = result.size_refresh;
    if (got == -EPIPE && pipe_write >= 0) {
        /* A stream broke mid-reply: again, over ZeroMQ. */
        datapath_read_done(state->datapath, &result);
        tilestream_pipe_reset(state->streams);
        got = datapath_read(state->datapath, file_of(fi), size, (uint64_t)offset, buffered, -1,
                            &result);
        size_refresh = size_refresh || result.size_refresh;
    }
    /* The kernel would stop the next read at the size it has cached (it asks
     * for attributes only when they expired): it must ask again, and be
     * told before this reply lets the reader go on. */
    if (size_refresh && state->session)
        fuse_lowlevel_notify_inval_inode(state->session, ino, -1, 0);
    if (got < 0) {
        fuse_reply_err(req, (int)-got);
        if (result.piped)
            tilestream_pipe_reset(state->streams); /* bytes of the pieces before the failure */
    } else if (result.piped) {
        struct fuse_bufvec bufv = FUSE_BUFVEC_INIT((size_t)got);
        bufv.buf[0].flags = FUSE_BUF_IS_FD;
        bufv.buf[0].fd = pipe_read;
        if (fuse_reply_data(req, &bufv, 0) != 0)
            tilestream_pipe_reset(state->streams); /* it may not have taken them all */
    } else if (result.count < REPLY_MAX_PIECES) {
        fuse_reply_iov(req, result.iov, (int)result.count);
    } else {
        /* The kernel takes at most 1024 pieces per write (UIO_MAXIOV), one
         * of them libfuse's header: an array read of many short rows is
         * gathered into one buffer instead. */
        char *gathered = malloc((size_t)got ? (size_t)got : 1);
        size_t used = 0;
        for (size_t i = 0; gathered && i < result.count; i++) {
            memcpy(gathered + used, result.iov[i].iov_base, result.iov[i].iov_len);
            used += result.iov[i].iov_len;
        }
        if (gathered)
            fuse_reply_buf(req, gathered, used);
        else
            fuse_reply_err(req, ENOMEM);
        free(gathered);
    }
    datapath_read_replied(state->datapath, &result);
    if (got > 0 && buffered)
        store_sieved_tile(state, ino, &result);
    datapath_read_done(state->datapath, &result);
}

/*
 * A write by a caller without CAP_FSETID clears the file's set-user-ID and
 * set-group-ID bits first, as a local filesystem does. The kernel does so
 * itself for writes through its page cache; writes past it (write-only
 * handles) come here with the bits still set. Returns 0 or a negative
 * errno (the write must not go on with the bits kept).
 */
static int kill_privileges(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct mount_state *state = state_of(req);
    if (caller_keeps_privileges(req) ||
        !datapath_write_kills_privileges(state->datapath, file_of(fi)))
        return 0;
    struct ts_setattr_req request = {.ino = ino, .valid = TS_SET_KILL_PRIV};
    struct ts_attr attr;
    int error = datapath_setattr(state->datapath, &request, &attr);
    dentcache_changed(state->dentries, ino);
    /* The kernel still has the old mode: it asks again. */
    if (error == 0 && state->session)
        fuse_lowlevel_notify_inval_inode(state->session, ino, -1, 0);
    return error;
}

static void x_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t offset,
                    struct fuse_file_info *fi)
{
    struct mount_state *state = state_of(req);
    int error = kill_privileges(req, ino, fi);
    if (error != 0) {
        fuse_reply_err(req, -error);
        return;
    }
    struct reqmem_slot request;
    bool request_memory = reqloop_write_memory(buf, &request);
    ssize_t written = datapath_write(state->datapath, file_of(fi), buf, size, (uint64_t)offset,
                                     request_memory ? &request : NULL);
    /* A direct write leaves pages another handle cached of this range
     * stale (kernels since 6.6 drop them themselves, 6.1 does not): drop
     * them before the writer hears it is done. A handle opened after the
     * check finds the new bytes already (its open empties the cache, and
     * the datapath has them). */
    if (written > 0 && handle_direct(fi) && state->session &&
        datapath_file_shared(state->datapath, file_of(fi)))
        fuse_lowlevel_notify_inval_inode(state->session, ino, offset, (off_t)written);
    if (written < 0)
        fuse_reply_err(req, (int)-written);
    else
        fuse_reply_write(req, (size_t)written);
}

/* Zeros written at once by fallocate (a tile: what one write may carry). */
#define ZERO_CHUNK_BYTES TILE_DEFAULT_BYTES

/* Writes zeros over [offset, offset + length) through the data path. */
static int write_zeros(struct mount_state *state, struct open_file *file, uint64_t offset,
                       uint64_t length)
{
    char *zeros = calloc(1, ZERO_CHUNK_BYTES);
    if (!zeros)
        return -ENOMEM;
    int error = 0;
    while (error == 0 && length > 0) {
        size_t chunk = length < ZERO_CHUNK_BYTES ? (size_t)length : ZERO_CHUNK_BYTES;
        ssize_t written = datapath_write(state->datapath, file, zeros, chunk, offset, NULL);
        if (written < 0)
            error = (int)written;
        offset += chunk;
        length -= chunk;
    }
    free(zeros);
    return error;
}

/*
 * fallocate(2): see fallocplan.h for what each mode does here. The kernel
 * drops the page cache of a punched or zeroed range and sets the size it
 * caches itself once this succeeds.
 */
static void x_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                        struct fuse_file_info *fi)
{
    struct mount_state *state = state_of(req);
    struct open_file *file = file_of(fi);
    struct fallocplan plan;
    struct ts_attr attr;
    int error = kill_privileges(req, ino, fi);
    if (error == 0)
        error = fallocplan_make(mode, (uint64_t)offset, (uint64_t)length,
                                datapath_file_size(state->datapath, file),
                                datapath_file_tile_bytes(file), datapath_file_is_array(file),
                                &plan);
    if (error == 0 && plan.space_bytes > 0) {
        /* Checked, not reserved: tiles are allocated when written. */
        struct ts_statfs_rep statfs;
        int status = metaclient_statfs(state->meta, &statfs);
        if (status != TS_OK)
            error = -status_to_errno(status);
        else if (statfs.free_bytes < plan.space_bytes)
            error = -ENOSPC;
    }
    if (error == 0 && plan.drop)
        error = datapath_punch(state->datapath, file, plan.first_tile, plan.last_tile, &attr);
    for (int i = 0; error == 0 && i < plan.zero_count; i++)
        error = write_zeros(state, file, plan.zero[i].offset, plan.zero[i].length);
    if (error == 0 && plan.new_size > datapath_file_size(state->datapath, file)) {
        struct ts_setattr_req grow = {.ino = ino, .valid = TS_SET_SIZE, .size = plan.new_size};
        error = datapath_setattr(state->datapath, &grow, &attr);
    }
    if (error == 0)
        error = datapath_flush(state->datapath, file); /* size and mtime reach meta */
    dentcache_changed(state->dentries, ino);
    fuse_reply_err(req, -error);
}

/* flush, release and fsync commit written data: size and times change in meta. */
static void x_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    int error = datapath_flush(state_of(req)->datapath, file_of(fi));
    dentcache_changed(state_of(req)->dentries, ino);
    fuse_reply_err(req, -error);
}

static void x_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    release_handle(req, ino, fi);
    dentcache_changed(state_of(req)->dentries, ino);
    fuse_reply_err(req, 0);
}

static void x_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)datasync; /* the size is metadata a read needs: commit it either way */
    int error = datapath_fsync(state_of(req)->datapath, file_of(fi));
    dentcache_changed(state_of(req)->dentries, ino);
    fuse_reply_err(req, -error);
}

/* ---- directories ------------------------------------------------------ */

/*
 * A directory handle holds the listing read so far. Offsets handed to the
 * kernel are indexes into it (0 = ".", 1 = "..", 2.. = entries), so they
 * stay valid however the directory changes; a readdir from offset 0
 * starts a fresh listing (rewinddir). Batches read for readdirplus also
 * keep each entry's attributes (attrs, parallel to entries once a
 * readdirplus came; expires 0 where a batch came without them).
 */
struct dir_attr {
    struct ts_attr attr;
    double expires; /* monotonic seconds */
};

struct dir_handle {
    struct meta_dirent *entries;
    struct dir_attr *attrs;
    size_t count;
    size_t cap;
    int complete;
};

static void x_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct ts_attr attr;
    int status = metaclient_getattr(state_of(req)->meta, ino, &attr);
    if (status != TS_OK) {
        reply_status(req, status);
        return;
    }
    if (!S_ISDIR(attr.mode)) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    struct dir_handle *dir = calloc(1, sizeof(*dir));
    if (!dir) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    fi->fh = (uint64_t)(uintptr_t)dir;
    if (fuse_reply_open(req, fi) == -ENOENT)
        free(dir);
}

/* Makes room for one more batch (and its attributes with plus). A status. */
static int dir_grow(struct dir_handle *dir, bool plus)
{
    if (dir->count + READDIR_BATCH > dir->cap) {
        size_t new_cap = dir->cap ? dir->cap * 2 : READDIR_BATCH;
        while (new_cap < dir->count + READDIR_BATCH)
            new_cap *= 2;
        struct meta_dirent *grown = realloc(dir->entries, new_cap * sizeof(*grown));
        if (!grown)
            return TS_ERR_NOMEM;
        dir->entries = grown;
        if (dir->attrs) {
            struct dir_attr *attrs = realloc(dir->attrs, new_cap * sizeof(*attrs));
            if (!attrs)
                return TS_ERR_NOMEM;
            dir->attrs = attrs;
        }
        dir->cap = new_cap;
    }
    if (plus && !dir->attrs) {
        dir->attrs = calloc(dir->cap, sizeof(*dir->attrs));
        if (!dir->attrs)
            return TS_ERR_NOMEM;
    }
    return TS_OK;
}

/* Reads the next batch of entries with their attributes. A status. */
static int dir_fetch_plus(struct mount_state *state, fuse_ino_t ino, struct dir_handle *dir,
                          const char *after)
{
    uint32_t count = 0;
    uint32_t done = 0;
    struct meta_direntplus *batch = malloc(READDIR_BATCH * sizeof(*batch));
    if (!batch)
        return TS_ERR_NOMEM;
    double expires = monotonic_seconds() + state->attr_timeout;
    int status =
        metaclient_readdirplus(state->meta, ino, after, 0, batch, READDIR_BATCH, &count, &done);
    for (uint32_t i = 0; status == TS_OK && i < count; i++) {
        struct meta_dirent *entry = &dir->entries[dir->count + i];
        entry->ino = batch[i].attr.ino;
        entry->mode = batch[i].attr.mode;
        memcpy(entry->name, batch[i].name, sizeof(entry->name));
        dir->attrs[dir->count + i].attr = batch[i].attr;
        dir->attrs[dir->count + i].expires = expires;
    }
    free(batch);
    if (status != TS_OK)
        return status;
    dir->count += count;
    dir->complete = done || count == 0;
    return TS_OK;
}

/* Reads the next batch of the listing into dir (with attributes: plus). A status. */
static int dir_fetch(struct mount_state *state, fuse_ino_t ino, struct dir_handle *dir, bool plus)
{
    uint32_t count = 0;
    uint32_t done = 0;
    int status = dir_grow(dir, plus);
    if (status != TS_OK)
        return status;
    const char *after = dir->count ? dir->entries[dir->count - 1].name : "";
    if (plus)
        return dir_fetch_plus(state, ino, dir, after);
    status = metaclient_readdir(state->meta, ino, after, dir->entries + dir->count, READDIR_BATCH,
                                &count, &done);
    if (status != TS_OK)
        return status;
    if (dir->attrs)
        memset(dir->attrs + dir->count, 0, count * sizeof(*dir->attrs));
    dir->count += count;
    dir->complete = done || count == 0;
    return TS_OK;
}

/*
 * Adds the entry at `index` of the listing to buf as a plain or a plus
 * entry; returns the bytes it needs (more than `room`: nothing added).
 */
static size_t dir_add(fuse_req_t req, fuse_ino_t ino, struct dir_handle *dir, size_t index,
                      bool plus, char *buf, size_t room, double now)
{
    struct fuse_entry_param entry;
    const char *name;
    memset(&entry, 0, sizeof(entry));
    if (index == 0 || index == 1) {
        name = index == 0 ? "." : "..";
        /* glibc hides entries with inode 0; the kernel looks ".." up
         * itself, so its number here only needs to be non-zero. */
        entry.attr.st_ino = ino;
        entry.attr.st_mode = S_IFDIR;
    } else {
        const struct meta_dirent *dirent = &dir->entries[index - 2];
        const struct dir_attr *attr = dir->attrs ? &dir->attrs[index - 2] : NULL;
        name = dirent->name;
        entry.attr.st_ino = dirent->ino;
        entry.attr.st_mode = dirent->mode;
        /* Attributes older than some the kernel has are left out rather
         * than fetched again, as those of an expired batch are. */
        struct ts_attr settled = attr ? attr->attr : (struct ts_attr){0};
        if (plus && attr && attr->expires > now &&
            datapath_settle_attr(state_of(req)->datapath, &settled))
            fill_entry_for(req, &settled, attr->expires - now, &entry);
    }
    /* With plus, ino 0 tells the kernel: a name, no attributes to cache. */
    if (plus)
        return fuse_add_direntry_plus(req, buf, room, name, &entry, (off_t)(index + 1));
    return fuse_add_direntry(req, buf, room, name, &entry.attr, (off_t)(index + 1));
}

static void dir_list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                     struct fuse_file_info *fi, bool plus)
{
    struct mount_state *state = state_of(req);
    struct dir_handle *dir = (struct dir_handle *)(uintptr_t)fi->fh;
    char *buf = malloc(size);
    size_t used = 0;
    size_t index = (size_t)offset;
    double now = monotonic_seconds();

    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (offset == 0) {
        dir->count = 0;
        dir->complete = 0;
        /* A listing often comes before a stat or an unlink of each name. */
        dentcache_walk_hint(state->dentries, ino);
    }
    for (;;) {
        if (index >= 2 && index - 2 >= dir->count && !dir->complete) {
            int status = dir_fetch(state, ino, dir, plus);
            if (status != TS_OK) {
                free(buf);
                reply_status(req, status);
                return;
            }
            now = monotonic_seconds();
        }
        if (index >= 2 && index - 2 >= dir->count)
            break;
        size_t need = dir_add(req, ino, dir, index, plus, buf + used, size - used, now);
        if (need > size - used)
            break;
        used += need;
        index++;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void x_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                      struct fuse_file_info *fi)
{
    dir_list(req, ino, size, offset, fi, false);
}

/* ls -l: the attributes come with the names, in READDIRPLUS batches. */
static void x_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                          struct fuse_file_info *fi)
{
    dir_list(req, ino, size, offset, fi, true);
}

static void x_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    struct dir_handle *dir = (struct dir_handle *)(uintptr_t)fi->fh;
    free(dir->entries);
    free(dir->attrs);
    free(dir);
    fuse_reply_err(req, 0);
}

static void x_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    (void)fi;
    /* Namespace changes are in meta's store once meta has them: wait for queued unlinks. */
    metaclient_sync_dir(state_of(req)->meta, ino);
    fuse_reply_err(req, 0);
}

static void x_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct ts_statfs_rep statfs;
    struct statvfs out;
    const uint64_t block = 4096;
    (void)ino;
    int status = metaclient_statfs(state_of(req)->meta, &statfs);
    if (status != TS_OK) {
        reply_status(req, status);
        return;
    }
    memset(&out, 0, sizeof(out));
    out.f_bsize = block;
    out.f_frsize = block;
    out.f_blocks = statfs.total_bytes / block;
    out.f_bfree = statfs.free_bytes / block;
    out.f_bavail = statfs.free_bytes / block;
    /* Inodes live in meta's store: there is no fixed table to run out of. */
    out.f_files = statfs.files + (1u << 30);
    out.f_ffree = 1u << 30;
    out.f_favail = 1u << 30;
    out.f_namemax = TS_MAX_NAME;
    fuse_reply_statfs(req, &out);
}

/* ---- extended attributes ---------------------------------------------- */

/*
 * Only user.* attributes are stored. The kernel asks for security.capability
 * before every write; answering other namespaces here saves meta that trip.
 */
static int xattr_namespace_stored(const char *name)
{
    return strncmp(name, "user.", 5) == 0;
}

static void x_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                       size_t size, int flags)
{
    if (!xattr_namespace_stored(name)) {
        fuse_reply_err(req, EOPNOTSUPP);
        return;
    }
    int status = metaclient_setxattr(state_of(req)->meta, ino, name, value, size, (uint32_t)flags);
    dentcache_changed(state_of(req)->dentries, ino); /* ctime, and layout flags */
    reply_status(req, status);
}

/* Replies with a value, its size (size 0) or ERANGE, as getxattr(2) wants. */
static void reply_xattr_value(fuse_req_t req, const void *value, size_t len, size_t size)
{
    if (size == 0)
        fuse_reply_xattr(req, len);
    else if (len > size)
        fuse_reply_err(req, ERANGE);
    else
        fuse_reply_buf(req, value, len);
}

static void x_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    void *value = NULL;
    size_t len = 0;
    /* Which cluster the inode is in, for the tools: the mount knows it, meta is not asked. */
    if (strcmp(name, TS_CLUSTER_XATTR) == 0 && state_of(req)->cluster) {
        const char *cluster = state_of(req)->cluster;
        reply_xattr_value(req, cluster, strlen(cluster), size);
        return;
    }
    if (strcmp(name, TS_KEYS_XATTR) == 0 && curve_enabled()) {
        reply_xattr_value(req, curve_key_dir(), strlen(curve_key_dir()), size);
        return;
    }
    if (!xattr_namespace_stored(name)) {
        fuse_reply_err(req, ENODATA);
        return;
    }
    int status = metaclient_getxattr(state_of(req)->meta, ino, name, &value, &len);
    if (status != TS_OK)
        reply_status(req, status);
    else
        reply_xattr_value(req, value, len, size);
    free(value);
}

static void x_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    char *names = NULL;
    size_t len = 0;
    int status = metaclient_listxattr(state_of(req)->meta, ino, &names, &len);
    if (status != TS_OK)
        reply_status(req, status);
    else
        reply_xattr_value(req, names, len, size);
    free(names);
}

static void x_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    int status = metaclient_removexattr(state_of(req)->meta, ino, name);
    dentcache_changed(state_of(req)->dentries, ino);
    reply_status(req, status);
}

const struct fuse_lowlevel_ops tessera_ops = {
    .init = x_init,
    .lookup = x_lookup,
    .forget = x_forget,
    .getattr = x_getattr,
    .setattr = x_setattr,
    .readlink = x_readlink,
    .mknod = x_mknod,
    .mkdir = x_mkdir,
    .unlink = x_unlink,
    .rmdir = x_rmdir,
    .symlink = x_symlink,
    .rename = x_rename,
    .link = x_link,
    .open = x_open,
    .read = x_read,
    .write = x_write,
    .flush = x_flush,
    .release = x_release,
    .fsync = x_fsync,
    .fallocate = x_fallocate,
    .opendir = x_opendir,
    .readdir = x_readdir,
    .readdirplus = x_readdirplus,
    .releasedir = x_releasedir,
    .fsyncdir = x_fsyncdir,
    .statfs = x_statfs,
    .setxattr = x_setxattr,
    .getxattr = x_getxattr,
    .listxattr = x_listxattr,
    .removexattr = x_removexattr,
    .create = x_create,
};
