/*
 * @file nullfs.c
 * nullfs: the do-nothing FUSE filesystem that bench/run.sh measures as the
 * ceiling of what a FUSE filesystem can do on this machine. It keeps a real
 * namespace in memory (directories, files, symlinks, modes, owners, sizes,
 * times) so that dd, cp, fio, tar x, rsync -a, rm -rf and the metadata
 * benchmark see a consistent filesystem, but it stores no data: writes are
 * acknowledged and discarded (only the file size grows), reads return zeros
 * (so git clone and make, which read back what they wrote, fail on it).
 *
 * It is mounted the way tessera-mount is: low-level API, multithreaded loop,
 * 1 MiB max_write and max_read, default_permissions. Any gap between the two
 * in the same run is then Tessera's own cost, not the kernel's.
 *
 * Design: one node per name (there are no hard links), so a node is also its
 * directory entry. The fuse_ino_t of a node is its address, as in libfuse's
 * passthrough_ll; st_ino is a serial number. Names are found through one hash
 * table keyed by (parent, name); a directory lists its children through a
 * doubly linked sibling list, snapshotted at opendir so that readdir offsets
 * stay stable while rm -rf unlinks. A node lives until it is unlinked and the
 * kernel has forgotten every lookup of it. One mutex guards everything: the
 * work under it is a few pointer moves, far below the cost of a FUSE round trip.
 */
#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NULLFS_IO_BYTES (1024 * 1024) /* max_write, max_read, max_readahead */
#define NULLFS_MAX_NAME 255
#define NULLFS_INITIAL_BUCKETS 1024
#define NULLFS_CAPACITY_BYTES (1ULL << 40) /* what statfs claims: 1 TiB free */

struct nullfs_node {
    struct nullfs_node *hash_next; /* chain in nullfs.buckets */
    struct nullfs_node *parent;    /* NULL for the root and once unlinked */
    struct nullfs_node *first_child, *next_sibling, *prev_sibling;
    char *name;       /* "" for the root */
    char *target;     /* a symlink's target; NULL for anything else */
    uint64_t serial;  /* st_ino */
    uint64_t lookups; /* the kernel's references; the root's never count */
    mode_t mode;
    uid_t uid;
    gid_t gid;
    nlink_t nlink; /* 0 once unlinked; 2 + subdirectories for a directory */
    off_t size;
    struct timespec atime, mtime, ctime;
};

/* A directory listing taken at opendir: readdir serves it by index. */
struct nullfs_listing {
    size_t count;
    struct nullfs_listing_entry {
        uint64_t serial;
        mode_t mode;
        char *name;
    } entries[];
};

struct nullfs {
    pthread_mutex_t lock; /* guards every field and every node */
    struct nullfs_node root;
    struct nullfs_node **buckets;
    size_t bucket_count; /* a power of two */
    size_t name_count;   /* nodes in the hash table */
    uint64_t next_serial;
    double timeout; /* entry and attribute timeout handed to the kernel, s */
    bool writeback_cache;
};

/* Zeros that every read returns: a read replies with a prefix of this. */
static const char nullfs_zeros[NULLFS_IO_BYTES];

static struct nullfs *nullfs_of(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

static struct nullfs_node *node_of(struct nullfs *fs, fuse_ino_t ino)
{
    return ino == FUSE_ROOT_ID ? &fs->root : (struct nullfs_node *)(uintptr_t)ino;
}

static fuse_ino_t ino_of(struct nullfs *fs, struct nullfs_node *node)
{
    return node == &fs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)node;
}

static struct timespec now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts;
}

/* FNV-1a over the parent's address and the name. */
static size_t name_hash(const struct nullfs_node *parent, const char *name)
{
    uint64_t hash = 14695981039346656037ULL;
    uintptr_t parent_bits = (uintptr_t)parent;
    for (size_t i = 0; i < sizeof(parent_bits); i++) {
        hash ^= (parent_bits >> (8 * i)) & 0xff;
        hash *= 1099511628211ULL;
    }
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        hash ^= *c;
        hash *= 1099511628211ULL;
    }
    return (size_t)hash;
}

/* Caller holds fs->lock. Returns the child named NAME of PARENT, or NULL. */
static struct nullfs_node *names_find(struct nullfs *fs, struct nullfs_node *parent,
                                      const char *name)
{
    size_t bucket = name_hash(parent, name) & (fs->bucket_count - 1);
    for (struct nullfs_node *node = fs->buckets[bucket]; node; node = node->hash_next) {
        if (node->parent == parent && strcmp(node->name, name) == 0)
            return node;
    }
    return NULL;
}

/* Caller holds fs->lock. Doubles the table; on allocation failure keeps the
 * old one (longer chains, still correct). */
static void names_grow(struct nullfs *fs)
{
    size_t count = fs->bucket_count * 2;
    struct nullfs_node **buckets = calloc(count, sizeof(*buckets));
    if (!buckets)
        return;
    for (size_t i = 0; i < fs->bucket_count; i++) {
        struct nullfs_node *node = fs->buckets[i];
        while (node) {
            struct nullfs_node *next = node->hash_next;
            size_t bucket = name_hash(node->parent, node->name) & (count - 1);
            node->hash_next = buckets[bucket];
            buckets[bucket] = node;
            node = next;
        }
    }
    free(fs->buckets);
    fs->buckets = buckets;
    fs->bucket_count = count;
}

/* Caller holds fs->lock. Links NODE (name and parent set) into the hash
 * table and its parent's child list. */
static void names_insert(struct nullfs *fs, struct nullfs_node *node)
{
    if (fs->name_count >= fs->bucket_count)
        names_grow(fs);
    size_t bucket = name_hash(node->parent, node->name) & (fs->bucket_count - 1);
    node->hash_next = fs->buckets[bucket];
    fs->buckets[bucket] = node;
    fs->name_count++;

    struct nullfs_node *parent = node->parent;
    node->prev_sibling = NULL;
    node->next_sibling = parent->first_child;
    if (parent->first_child)
        parent->first_child->prev_sibling = node;
    parent->first_child = node;
    if (S_ISDIR(node->mode))
        parent->nlink++;
}

/* Caller holds fs->lock. Undoes names_insert; the node keeps its name and
 * parent pointer, which the caller then changes or clears. */
static void names_remove(struct nullfs *fs, struct nullfs_node *node)
{
    size_t bucket = name_hash(node->parent, node->name) & (fs->bucket_count - 1);
    struct nullfs_node **link = &fs->buckets[bucket];
    while (*link != node)
        link = &(*link)->hash_next;
    *link = node->hash_next;
    fs->name_count--;

    struct nullfs_node *parent = node->parent;
    if (node->prev_sibling)
        node->prev_sibling->next_sibling = node->next_sibling;
    else
        parent->first_child = node->next_sibling;
    if (node->next_sibling)
        node->next_sibling->prev_sibling = node->prev_sibling;
    if (S_ISDIR(node->mode))
        parent->nlink--;
}

/* Caller holds fs->lock. Frees NODE once nothing refers to it any more. */
static void node_release_if_unused(struct nullfs *fs, struct nullfs_node *node)
{
    if (node == &fs->root || node->nlink > 0 || node->lookups > 0)
        return;
    free(node->name);
    free(node->target);
    free(node);
}

/* Caller holds fs->lock. Removes a name; the node goes when forgotten. */
static void node_unlink(struct nullfs *fs, struct nullfs_node *node)
{
    names_remove(fs, node);
    node->parent = NULL;
    node->nlink = 0;
    node->ctime = now();
    node_release_if_unused(fs, node);
}

static void node_to_stat(const struct nullfs_node *node, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = node->serial;
    st->st_mode = node->mode;
    st->st_nlink = node->nlink;
    st->st_uid = node->uid;
    st->st_gid = node->gid;
    st->st_size = node->size;
    st->st_blksize = NULLFS_IO_BYTES;
    st->st_blocks = (node->size + 511) / 512;
    st->st_atim = node->atime;
    st->st_mtim = node->mtime;
    st->st_ctim = node->ctime;
}

/* Caller holds fs->lock. Fills ENTRY and counts the lookup it hands out. */
static void node_to_entry(struct nullfs *fs, struct nullfs_node *node,
                          struct fuse_entry_param *entry)
{
    memset(entry, 0, sizeof(*entry));
    entry->ino = ino_of(fs, node);
    entry->attr_timeout = fs->timeout;
    entry->entry_timeout = fs->timeout;
    node_to_stat(node, &entry->attr);
    if (node != &fs->root)
        node->lookups++;
}

static void x_init(void *userdata, struct fuse_conn_info *conn)
{
    struct nullfs *fs = userdata;
    /* libfuse 3.14 fails the mount with EPROTO unless max_read here matches
     * the max_read mount option. */
    conn->max_write = NULLFS_IO_BYTES;
    conn->max_read = NULLFS_IO_BYTES;
    conn->max_readahead = NULLFS_IO_BYTES;
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
        conn->want |= FUSE_CAP_PARALLEL_DIROPS;
    if (fs->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
        conn->want |= FUSE_CAP_WRITEBACK_CACHE;
    else
        conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    fprintf(stderr, "nullfs: ready: max_write %u, max_read %u, writeback cache %s\n",
            conn->max_write, conn->max_read,
            (conn->want & FUSE_CAP_WRITEBACK_CACHE) ? "on" : "off");
}

static void x_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct nullfs *fs = nullfs_of(req);
    struct fuse_entry_param entry;
    pthread_mutex_lock(&fs->lock);
    struct nullfs_node *node = names_find(fs, node_of(fs, parent), name);
    if (node)
        node_to_entry(fs, node, &entry);
    pthread_mutex_unlock(&fs->lock);
    if (!node) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    fuse_reply_entry(req, &entry);
}

static void forget_one(struct nullfs *fs, fuse_ino_t ino, uint64_t nlookup)
{
    struct nullfs_node *node = node_of(fs, ino);
    if (node == &fs->root)
        return;
    node->lookups -= nlookup < node->lookups ? nlookup : node->lookups;
    node_release_if_unused(fs, node);
}

static void x_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    struct nullfs *fs = nullfs_of(req);
    pthread_mutex_lock(&fs->lock);
    forget_one(fs, ino, nlookup);
    pthread_mutex_unlock(&fs->lock);
    fuse_reply_none(req);
}

static void x_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    struct nullfs *fs = nullfs_of(req);
    pthread_mutex_lock(&fs->lock);
    for (size_t i = 0; i < count; i++)
        forget_one(fs, forgets[i].ino, forgets[i].nlookup);
    pthread_mutex_unlock(&fs->lock);
    fuse_reply_none(req);
}

static void x_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct nullfs *fs = nullfs_of(req);
    struct stat st;
    (void)fi;
    pthread_mutex_lock(&fs->lock);
    node_to_stat(node_of(fs, ino), &st);
    pthread_mutex_unlock(&fs->lock);
    fuse_reply_attr(req, &st, fs->timeout);
}

static void x_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                      struct fuse_file_info *fi)
{
    struct nullfs *fs = nullfs_of(req);
    struct timespec stamp = now();
    struct stat st;
    (void)fi;
    pthread_mutex_lock(&fs->lock);
    struct nullfs_node *node = node_of(fs, ino);
    if (to_set & FUSE_SET_ATTR_MODE)
        node->mode = (node->mode & S_IFMT) | (attr->st_mode & 07777);
    if (to_set & FUSE_SET_ATTR_UID)
        node->uid = attr->st_uid;
    if (to_set & FUSE_SET_ATTR_GID)
        node->gid = attr->st_gid;
    if (to_set & FUSE_SET_ATTR_SIZE) {
        node->size = attr->st_size;
        node->mtime = stamp;
    }
    if (to_set & FUSE_SET_ATTR_ATIME)
        node->atime = (to_set & FUSE_SET_ATTR_ATIME_NOW) ? stamp : attr->st_atim;
    if (to_set & FUSE_SET_ATTR_MTIME)
        node->mtime = (to_set & FUSE_SET_ATTR_MTIME_NOW) ? stamp : attr->st_mtim;
    node->ctime = stamp;
    node_to_stat(node, &st);
    pthread_mutex_unlock(&fs->lock);
    fuse_reply_attr(req, &st, fs->timeout);
}

/*
 * Creates PARENT/NAME with MODE (a regular file, a directory, or with a
 * TARGET a symlink, which tar and rsync make: their runs on the ceiling
 * need them) and fills ENTRY. Returns 0 or a negative errno (EEXIST,
 * ENAMETOOLONG, ENOMEM).
 */
static int node_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                       const char *target, struct fuse_entry_param *entry)
{
    struct nullfs *fs = nullfs_of(req);
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    if (strlen(name) > NULLFS_MAX_NAME)
        return -ENAMETOOLONG;
    struct nullfs_node *node = calloc(1, sizeof(*node));
    char *copy = strdup(name);
    char *target_copy = target ? strdup(target) : NULL;
    if (!node || !copy || (target && !target_copy)) {
        free(node);
        free(copy);
        free(target_copy);
        return -ENOMEM;
    }
    node->name = copy;
    node->target = target_copy;
    node->size = target ? (off_t)strlen(target) : 0;
    node->mode = target ? S_IFLNK | 0777 : (mode & ~ctx->umask & 07777) | (mode & S_IFMT);
    node->uid = ctx->uid;
    node->gid = ctx->gid;
    node->nlink = S_ISDIR(mode) ? 2 : 1;
    node->atime = node->mtime = node->ctime = now();

    pthread_mutex_lock(&fs->lock);
    struct nullfs_node *dir = node_of(fs, parent);
    if (names_find(fs, dir, name)) {
        pthread_mutex_unlock(&fs->lock);
        free(copy);
        free(target_copy);
        free(node);
        return -EEXIST;
    }
    node->serial = fs->next_serial++;
    node->parent = dir;
    names_insert(fs, node);
    dir->mtime = dir->ctime = node->ctime;
    node_to_entry(fs, node, entry);
    pthread_mutex_unlock(&fs->lock);
    return 0;
}

/* Answers a mkdir, mknod or symlink: node_create()'s error, or the entry. */
static void reply_made(fuse_req_t req, int result, const struct fuse_entry_param *entry)
{
    if (result != 0)
        fuse_reply_err(req, -result);
    else
        fuse_reply_entry(req, entry);
}

static void x_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    struct fuse_entry_param entry;
    int result = node_create(req, parent, name, S_IFDIR | (mode & 07777), NULL, &entry);
    reply_made(req, result, &entry);
}

static void x_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    struct fuse_entry_param entry;
    (void)rdev;
    if (!S_ISREG(mode)) {
        fuse_reply_err(req, EPERM); /* no devices, fifos or sockets here */
        return;
    }
    int result = node_create(req, parent, name, mode, NULL, &entry);
    reply_made(req, result, &entry);
}

static void x_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     struct fuse_file_info *fi)
{
    struct fuse_entry_param entry;
    int result = node_create(req, parent, name, S_IFREG | (mode & 07777), NULL, &entry);
    if (result != 0) {
        fuse_reply_err(req, -result);
        return;
    }
    fi->fh = 0;
    fuse_reply_create(req, &entry, fi);
}

static void x_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param entry;
    int result = node_create(req, parent, name, S_IFLNK | 0777, link, &entry);
    reply_made(req, result, &entry);
}

static void x_readlink(fuse_req_t req, fuse_ino_t ino)
{
    struct nullfs *fs = nullfs_of(req);
    pthread_mutex_lock(&fs->lock);
    const struct nullfs_node *node = node_of(fs, ino);
    char *target = node->target ? strdup(node->target) : NULL;
    bool is_link = node->target != NULL;
    pthread_mutex_unlock(&fs->lock);
    if (!is_link)
        fuse_reply_err(req, EINVAL);
    else if (!target)
        fuse_reply_err(req, ENOMEM);
    else
        fuse_reply_readlink(req, target);
    free(target);
}

/* Removes PARENT/NAME if it is a directory (WANT_DIR) or not. */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, bool want_dir)
{
    struct nullfs *fs = nullfs_of(req);
    int error = 0;
    pthread_mutex_lock(&fs->lock);
    struct nullfs_node *dir = node_of(fs, parent);
    struct nullfs_node *node = names_find(fs, dir, name);
    if (!node)
        error = ENOENT;
    else if (want_dir && !S_ISDIR(node->mode))
        error = ENOTDIR;
    else if (!want_dir && S_ISDIR(node->mode))
        error = EISDIR;
    else if (node->first_child)
        error = ENOTEMPTY;
    if (error == 0) {
        node_unlink(fs, node);
        dir->mtime = dir->ctime = now();
    }
    pthread_mutex_unlock(&fs->lock);
    fuse_reply_err(req, error);
}

static void x_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_name(req, parent, name, false);
}

static void x_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_name(req, parent, name, true);
}

/* Caller holds fs->lock. True if NODE is ANCESTOR or below it. */
static bool node_is_within(const struct nullfs_node *node, const struct nullfs_node *ancestor)
{
    for (; node; node = node->parent) {
        if (node == ancestor)
            return true;
    }
    return false;
}

/* Caller holds fs->lock. Returns 0 or the errno of moving SOURCE over TARGET. */
static int rename_check(struct nullfs_node *source, struct nullfs_node *target,
                        struct nullfs_node *new_dir, unsigned int flags)
{
    if (!source)
        return ENOENT;
    if (flags & ~(unsigned)RENAME_NOREPLACE)
        return EINVAL; /* RENAME_EXCHANGE and whiteouts: not needed by a benchmark */
    if (S_ISDIR(source->mode) && node_is_within(new_dir, source))
        return EINVAL;
    if (!target || target == source)
        return 0;
    if (flags & RENAME_NOREPLACE)
        return EEXIST;
    if (S_ISDIR(source->mode) && !S_ISDIR(target->mode))
        return ENOTDIR;
    if (!S_ISDIR(source->mode) && S_ISDIR(target->mode))
        return EISDIR;
    return target->first_child ? ENOTEMPTY : 0;
}

static void x_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                     const char *newname, unsigned int flags)
{
    struct nullfs *fs = nullfs_of(req);
    char *copy = strlen(newname) > NULLFS_MAX_NAME ? NULL : strdup(newname);
    if (!copy) {
        fuse_reply_err(req, strlen(newname) > NULLFS_MAX_NAME ? ENAMETOOLONG : ENOMEM);
        return;
    }
    pthread_mutex_lock(&fs->lock);
    struct nullfs_node *old_dir = node_of(fs, parent);
    struct nullfs_node *new_dir = node_of(fs, newparent);
    struct nullfs_node *source = names_find(fs, old_dir, name);
    struct nullfs_node *target = names_find(fs, new_dir, newname);
    int error = rename_check(source, target, new_dir, flags);
    if (error == 0 && target != source) {
        struct timespec stamp = now();
        if (target)
            node_unlink(fs, target);
        names_remove(fs, source);
        free(source->name);
        source->name = copy;
        copy = NULL;
        source->parent = new_dir;
        names_insert(fs, source);
        source->ctime = stamp;
        old_dir->mtime = old_dir->ctime = new_dir->mtime = new_dir->ctime = stamp;
    }
    pthread_mutex_unlock(&fs->lock);
    free(copy);
    fuse_reply_err(req, error);
}

static void x_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct nullfs *fs = nullfs_of(req);
    /* libfuse asks for atomic O_TRUNC: the truncation arrives here. */
    if (fi->flags & O_TRUNC) {
        pthread_mutex_lock(&fs->lock);
        struct nullfs_node *node = node_of(fs, ino);
        node->size = 0;
        node->mtime = node->ctime = now();
        pthread_mutex_unlock(&fs->lock);
    }
    fi->fh = 0;
    fuse_reply_open(req, fi);
}

/* Reads return zeros up to the end of the file. */
static void x_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    struct nullfs *fs = nullfs_of(req);
    (void)fi;
    pthread_mutex_lock(&fs->lock);
    off_t file_size = node_of(fs, ino)->size;
    pthread_mutex_unlock(&fs->lock);
    size_t count = off >= file_size ? 0 : (size_t)(file_size - off);
    if (count > size)
        count = size;
    if (count > sizeof(nullfs_zeros))
        count = sizeof(nullfs_zeros);
    fuse_reply_buf(req, nullfs_zeros, count);
}

/* Writes are acknowledged and dropped; only the size is remembered. */
static void x_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    struct nullfs *fs = nullfs_of(req);
    (void)buf;
    (void)fi;
    pthread_mutex_lock(&fs->lock);
    struct nullfs_node *node = node_of(fs, ino);
    if (off + (off_t)size > node->size)
        node->size = off + (off_t)size;
    node->mtime = node->ctime = now();
    pthread_mutex_unlock(&fs->lock);
    fuse_reply_write(req, size);
}

/* flush, fsync, release and fsyncdir: nothing is buffered, nothing to do. */
static void x_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

static void x_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino;
    (void)datasync;
    (void)fi;
    fuse_reply_err(req, 0);
}

static void x_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct nullfs *fs = nullfs_of(req);
    pthread_mutex_lock(&fs->lock);
    struct nullfs_node *dir = node_of(fs, ino);
    struct nullfs_node *up = dir->parent ? dir->parent : dir;
    size_t count = 2;
    for (struct nullfs_node *child = dir->first_child; child; child = child->next_sibling)
        count++;
    struct nullfs_listing *listing =
        calloc(1, sizeof(*listing) + count * sizeof(listing->entries[0]));
    bool ok = listing != NULL;
    if (ok) {
        listing->entries[0] = (struct nullfs_listing_entry){dir->serial, dir->mode, strdup(".")};
        listing->entries[1] = (struct nullfs_listing_entry){up->serial, up->mode, strdup("..")};
        listing->count = 2;
        for (struct nullfs_node *child = dir->first_child; child; child = child->next_sibling) {
            listing->entries[listing->count++] =
                (struct nullfs_listing_entry){child->serial, child->mode, strdup(child->name)};
        }
        for (size_t i = 0; i < listing->count; i++)
            ok = ok && listing->entries[i].name != NULL;
    }
    pthread_mutex_unlock(&fs->lock);
    if (!ok) {
        for (size_t i = 0; listing && i < listing->count; i++)
            free(listing->entries[i].name);
        free(listing);
        fuse_reply_err(req, ENOMEM);
        return;
    }
    fi->fh = (uint64_t)(uintptr_t)listing;
    fuse_reply_open(req, fi);
}

static void x_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
    struct nullfs_listing *listing = (struct nullfs_listing *)(uintptr_t)fi->fh;
    char *buf = malloc(size);
    size_t used = 0;
    (void)ino;
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    for (size_t i = off < 0 ? 0 : (size_t)off; i < listing->count; i++) {
        const struct nullfs_listing_entry *entry = &listing->entries[i];
        struct stat st = {.st_ino = entry->serial, .st_mode = entry->mode};
        size_t need =
            fuse_add_direntry(req, buf + used, size - used, entry->name, &st, (off_t)(i + 1));
        if (need > size - used)
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void x_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct nullfs_listing *listing = (struct nullfs_listing *)(uintptr_t)fi->fh;
    (void)ino;
    for (size_t i = 0; i < listing->count; i++)
        free(listing->entries[i].name);
    free(listing);
    fuse_reply_err(req, 0);
}

static void x_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct statvfs sv = {
        .f_bsize = NULLFS_IO_BYTES,
        .f_frsize = 4096,
        .f_blocks = NULLFS_CAPACITY_BYTES / 4096,
        .f_bfree = NULLFS_CAPACITY_BYTES / 4096,
        .f_bavail = NULLFS_CAPACITY_BYTES / 4096,
        .f_files = 1u << 30,
        .f_ffree = 1u << 30,
        .f_favail = 1u << 30,
        .f_namemax = NULLFS_MAX_NAME,
    };
    (void)ino;
    fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops nullfs_ops = {
    .init = x_init,
    .lookup = x_lookup,
    .forget = x_forget,
    .forget_multi = x_forget_multi,
    .getattr = x_getattr,
    .setattr = x_setattr,
    .mknod = x_mknod,
    .symlink = x_symlink,
    .readlink = x_readlink,
    .mkdir = x_mkdir,
    .unlink = x_unlink,
    .rmdir = x_rmdir,
    .rename = x_rename,
    .open = x_open,
    .read = x_read,
    .write = x_write,
    .flush = x_flush,
    .release = x_flush,
    .fsync = x_fsync,
    .opendir = x_opendir,
    .readdir = x_readdir,
    .releasedir = x_releasedir,
    .fsyncdir = x_fsync,
    .statfs = x_statfs,
    .create = x_create,
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "Usage: nullfs [OPTIONS] MOUNTPOINT\n"
        "A do-nothing FUSE filesystem, the ceiling baseline of bench/run.sh: names, modes,\n"
        "sizes and symlinks are kept in memory, written bytes are discarded, reads return\n"
        "zeros.\n"
        "Mounted like tessera-mount (low-level API, multithreaded, 1 MiB max_write and\n"
        "max_read). Runs in the foreground until unmounted (fusermount3 -u MOUNTPOINT)\n"
        "or sent SIGTERM/SIGINT.\n\n"
        "Options:\n"
        "  --threads N          most worker threads (default 16, as tessera-mount)\n"
        "  --timeout SEC        entry and attribute timeout (default 1.0, as tessera-mount)\n"
        "  --writeback-cache    let the kernel cache writes (off by default)\n"
        "  -o OPTIONS           more FUSE mount options\n"
        "  -s                   single-threaded\n"
        "  -d                   FUSE debug output\n"
        "  -h, --help           this text\n\n"
        "The kernel reads ahead 128 KiB at most unless the mount's bdi read_ahead_kb is\n"
        "raised: bench/run.sh does that (/sys/class/bdi/$(mountpoint -d DIR)/read_ahead_kb).\n");
}

struct nullfs_options {
    const char *mountpoint;
    long threads;
    double timeout;
    bool writeback_cache;
    bool single_thread;
    bool debug;
    char fuse_options[1024];
};

/* Appends one comma-separated option. Returns 0 or -1 if it does not fit. */
static int add_fuse_option(struct nullfs_options *options, const char *option)
{
    size_t used = strlen(options->fuse_options);
    int written = snprintf(options->fuse_options + used, sizeof(options->fuse_options) - used,
                           "%s%s", used ? "," : "", option);
    return written < 0 || (size_t)written >= sizeof(options->fuse_options) - used ? -1 : 0;
}

/* Returns 0, 1 for --help, or 2 for a usage error (message printed). */
static int parse_arguments(int argc, char **argv, struct nullfs_options *options)
{
    options->threads = 16;
    options->timeout = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return 1;
        if (strcmp(arg, "-s") == 0) {
            options->single_thread = true;
        } else if (strcmp(arg, "-d") == 0) {
            options->debug = true;
        } else if (strcmp(arg, "-f") == 0) {
            /* always in the foreground; accepted for symmetry with tessera-mount */
        } else if (strcmp(arg, "--writeback-cache") == 0) {
            options->writeback_cache = true;
        } else if (!value && (strcmp(arg, "--threads") == 0 || strcmp(arg, "--timeout") == 0 ||
                              strcmp(arg, "-o") == 0)) {
            fprintf(stderr, "nullfs: %s needs a value (see --help)\n", arg);
            return 2;
        } else if (strcmp(arg, "--threads") == 0) {
            options->threads = strtol(value, &end, 10);
            if (*end != '\0' || options->threads < 1 || options->threads > 1024) {
                fprintf(stderr, "nullfs: --threads wants a number in 1..1024\n");
                return 2;
            }
            i++;
        } else if (strcmp(arg, "--timeout") == 0) {
            options->timeout = strtod(value, &end);
            if (*end != '\0' || !(options->timeout >= 0 && options->timeout <= 3600)) {
                fprintf(stderr, "nullfs: --timeout wants seconds in 0..3600\n");
                return 2;
            }
            i++;
        } else if (strcmp(arg, "-o") == 0) {
            if (add_fuse_option(options, value) != 0) {
                fprintf(stderr, "nullfs: -o options too long\n");
                return 2;
            }
            i++;
        } else if (arg[0] == '-') {
            fprintf(stderr, "nullfs: unknown option %s (see --help)\n", arg);
            return 2;
        } else if (!options->mountpoint) {
            options->mountpoint = arg;
        } else {
            fprintf(stderr, "nullfs: more than one mountpoint given: %s\n", arg);
            return 2;
        }
    }
    if (!options->mountpoint) {
        fprintf(stderr, "nullfs: no MOUNTPOINT given (see --help)\n");
        return 2;
    }
    return 0;
}

/* Frees every node still in the tree below DIR (at exit). */
static void free_tree(struct nullfs_node *dir)
{
    struct nullfs_node *child = dir->first_child;
    while (child) {
        struct nullfs_node *next = child->next_sibling;
        free_tree(child);
        free(child->name);
        free(child);
        child = next;
    }
}

int main(int argc, char **argv)
{
    struct nullfs_options options = {0};
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    struct fuse_session *session = NULL;
    struct fuse_loop_config *loop_config = NULL;
    struct nullfs fs = {0};
    int exit_code = 1;

    int parsed = parse_arguments(argc, argv, &options);
    if (parsed == 1) {
        usage(stdout);
        return 0;
    }
    if (parsed != 0)
        return 2;
    /* max_read must also be a mount option: the kernel caps reads with it. */
    if (add_fuse_option(&options, "fsname=nullfs,subtype=nullfs,max_read=1048576") != 0 ||
        add_fuse_option(&options, "default_permissions") != 0 ||
        (geteuid() == 0 && add_fuse_option(&options, "allow_other") != 0)) {
        fprintf(stderr, "nullfs: -o options too long\n");
        return 2;
    }

    pthread_mutex_init(&fs.lock, NULL);
    fs.timeout = options.timeout;
    fs.writeback_cache = options.writeback_cache;
    fs.next_serial = FUSE_ROOT_ID + 1;
    fs.root.name = "";
    fs.root.serial = FUSE_ROOT_ID;
    fs.root.mode = S_IFDIR | 0755;
    fs.root.nlink = 2;
    fs.root.atime = fs.root.mtime = fs.root.ctime = now();
    fs.bucket_count = NULLFS_INITIAL_BUCKETS;
    fs.buckets = calloc(fs.bucket_count, sizeof(*fs.buckets));
    if (!fs.buckets || fuse_opt_add_arg(&args, argv[0]) != 0 ||
        fuse_opt_add_arg(&args, "-o") != 0 || fuse_opt_add_arg(&args, options.fuse_options) != 0 ||
        (options.debug && fuse_opt_add_arg(&args, "-d") != 0)) {
        fprintf(stderr, "nullfs: out of memory\n");
        goto out;
    }

    session = fuse_session_new(&args, &nullfs_ops, sizeof(nullfs_ops), &fs);
    if (!session)
        goto out;
    if (fuse_set_signal_handlers(session) != 0)
        goto out_session;
    if (fuse_session_mount(session, options.mountpoint) != 0) {
        fprintf(stderr,
                "nullfs: cannot mount on %s (does it exist? already mounted? try "
                "fusermount3 -u %s)\n",
                options.mountpoint, options.mountpoint);
        goto out_signals;
    }
    int result;
    if (options.single_thread) {
        result = fuse_session_loop(session);
    } else {
        loop_config = fuse_loop_cfg_create();
        if (!loop_config)
            goto out_unmount;
        fuse_loop_cfg_set_max_threads(loop_config, (unsigned int)options.threads);
        result = fuse_session_loop_mt(session, loop_config);
        fuse_loop_cfg_destroy(loop_config);
    }
    /* The loops return the number of the signal that ended them: a clean stop. */
    exit_code = result == 0 || result == SIGTERM || result == SIGINT || result == SIGHUP ? 0 : 1;
out_unmount:
    fuse_session_unmount(session);
out_signals:
    fuse_remove_signal_handlers(session);
out_session:
    fuse_session_destroy(session);
out:
    free_tree(&fs.root);
    free(fs.buckets);
    fuse_opt_free_args(&args);
    pthread_mutex_destroy(&fs.lock);
    return exit_code;
}
