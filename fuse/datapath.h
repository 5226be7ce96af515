/*
 * @file datapath.h
 * The data path of the FUSE client: the table of open files and their
 * reads, writes, flushes and truncations, striped over the datanodes.
 *
 * One open_file per inode that is open in this mount, shared by all its
 * handles. Writes collect in a one-tile buffer that goes to the tile's
 * datanode in the background (write-behind) when it is full, when a write
 * moves to another tile, before a read that overlaps it, and on
 * flush/fsync, which wait for it. Sequential readers get whole tiles read
 * ahead of them. The file's size as this mount sees it is committed to meta
 * on flush (close) and fsync; fsync also has the datanodes sync every tile
 * written since the last fsync. The first write error is kept and returned
 * by every later write and by the next flush/fsync, so no error is ever
 * lost.
 *
 * Tiles are read from the source meta names for this machine (a replica on
 * a datanode here first: buddy access), failing over to the tile's other
 * holders, and written to every holder of the tile (replica sets,
 * writebehind.c), so no reader is served a replica older than the others;
 * a holder that fails leaves the set (REPLICA_DROP). A datanode that answers
 * TS_ERR_STALE no longer holds the tile (it moved) or holds it frozen while
 * it moves: the tile's location is asked of meta again and the request
 * retried, with a backoff while meta still names the same place, for up to
 * the I/O timeout in all. Writes of one tile stay in order throughout.
 *
 * Files meta profiles (TS_ATTR_PROFILED at open) have the application's
 * reads and writes counted per tile in the mount's profile table.
 *
 * Small random reads that keep landing in a tile read it whole (data
 * sieving, sieve.h); for a buffered handle the caller then puts the tile
 * into the kernel's page cache: datapath_store_begin/end say when that is
 * safe.
 *
 * All functions return 0 (or a byte count) or a negative errno.
 */
#ifndef TESSERA_DATAPATH_H
#define TESSERA_DATAPATH_H

#include "attrguard.h"
#include "budget.h"
#include "filetiles.h"
#include "metaclient.h"
#include "nodedir.h"
#include "profiler.h"
#include "reqmem.h"
#include "tilestream.h"
#include "workers.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct datapath;
struct open_file;

struct datapath_config {
    uint64_t memory_bytes;    /* cap on tile buffers: half for writes, half for reads */
    uint32_t readahead_tiles; /* tiles loaded ahead of a sequential reader */
    int io_timeout_ms;        /* how long a tile that moves may keep a request waiting */
    struct profiler *profile;  /* where profiled files are counted; NULL = nowhere */
    struct tilestream *streams; /* the datanodes' tile streams; NULL: ZeroMQ only */
    /* Called when meta has taken a size or times this mount changed (a
     * commit or truncation), before the data path stops holding them
     * itself, with the file's lock held: caches of attributes drop the
     * inode's there. NULL: no one to tell. */
    void (*committed)(void *context, uint64_t ino);
    void *committed_context;
    /* This mount's record of the attributes it handed out (attrguard.h),
     * told of every commit; must outlive the data path. */
    struct attrguard *guard;
};

/* Jobs run on `workers`, which must outlive the data path, as must the profile.
 * NULL when out of memory or config->guard is NULL. */
struct datapath *datapath_new(struct metaclient *meta, struct nodedir *nodes,
                              struct workers *workers, const struct datapath_config *config);
/* Frees every open file left (the kernel has released them all by then). */
void datapath_destroy(struct datapath **datapathp);

/*
 * Registers one more handle on inode attr->ino (attr as OPEN returned it)
 * and returns its shared state in *file. array_spec: the text of the
 * file's user.tessera.array, or NULL for a linear file (used only by the
 * first handle). A spec that does not parse gives -EIO (and a log line).
 * writing: the handle may write (O_WRONLY or O_RDWR); release says the
 * same. Waits for stores into the kernel's page cache in progress.
 */
int datapath_open(struct datapath *datapath, const struct ts_attr *attr, const char *array_spec,
                  bool writing, struct open_file **file);
/* Drops a handle: the last one writes out, frees the state and tells meta. */
void datapath_release(struct datapath *datapath, struct open_file *file, bool writing);

/* Pins on cached tiles one read may hold (a read spans few tiles). */
#define DATAPATH_READ_MAX_PINS 16

/* The bytes of one tile that one read of an array file fetched at once. */
struct datapath_span {
    uint64_t tile;
    uint32_t start; /* offset in the tile */
    uint32_t length;
    char *bytes; /* in the read's scratch buffer */
};

/*
 * The bytes of one read, as pieces to hand to fuse_reply_iov(): pieces of
 * cached tiles (pinned until datapath_read_done), of a private buffer, and
 * of a static page of zeros. Or, when `piped`, all of them in the pipe
 * datapath_read was given: bytes that came over a tile stream, and
 * the pieces before and after them (vmsplice()d: they too stay valid until
 * datapath_read_done).
 */
struct datapath_read {
    struct iovec *iov;
    size_t count;
    size_t cap;
    size_t bytes;
    struct iovec inline_iov[8];
    struct open_file *file;
    struct read_slot *pinned[DATAPATH_READ_MAX_PINS];
    int pinned_count;
    char *scratch; /* directly read bytes */
    size_t scratch_used;
    struct datapath_span *spans; /* array files: tiles fetched directly */
    size_t span_count;
    size_t span_cap;
    struct read_slot *store_slot; /* a sieved tile for the page cache, or NULL */
    int pipe_fd;    /* the thread's tile stream pipe (write end), -1: none */
    bool piped;     /* the bytes are in the pipe, not in iov */
    size_t flushed; /* iov pieces already in the pipe */
    bool buffered;  /* the reply goes into the kernel's page cache */
    /* The kernel's cached size may be older than the bytes handed over:
     * the read found the file longer than this mount knew (another mount
     * wrote past the end), or a direct read, which the kernel does not cut
     * at its size, reached the file's last page. The caller has the kernel
     * ask for attributes again before it replies. */
    bool size_refresh;
    bool guarded; /* registered with the attribute guard until replied */
};

/*
 * Reads [offset, offset + size) (less at the end of the file) into result.
 * buffered: the handle goes through the kernel's page cache (no O_DIRECT),
 * so a tile read whole for sieving may be stored there. pipe_fd: the write
 * end of the thread's tile stream pipe (tilestream_pipe), or -1: tiles it
 * would load for a sequential reader then come over the tile streams
 * instead, straight into the pipe (result->piped). Returns the byte count
 * or -errno (-EPIPE: a stream broke, the pipe holds part of a reply: reset
 * it and read again without it); in every case the caller replies, may
 * store (below), and then calls datapath_read_done(result).
 */
ssize_t datapath_read(struct datapath *datapath, struct open_file *file, size_t size,
                      uint64_t offset, bool buffered, int pipe_fd, struct datapath_read *result);
void datapath_read_done(struct datapath *datapath, struct datapath_read *result);
/*
 * The read's reply has reached the kernel: attributes that grow the file
 * need no longer wait for it (attrguard.h). datapath_read_done does it too.
 */
void datapath_read_replied(struct datapath *datapath, struct datapath_read *result);

/* Bytes [offset, offset + length) of the file, for the kernel's page cache. */
struct datapath_store {
    uint64_t offset;
    const void *data; /* valid until datapath_read_done */
    size_t length;
    uint64_t waits_given_up; /* the file's count when the store began */
};

/*
 * After the reply to a buffered read (the kernel keeps the pages of a read
 * locked until it has the reply): whether the tile the read loaded for
 * sieving may go into the kernel's page cache now. If true, *store says
 * what to put there with fuse_lowlevel_notify_store(), and the caller must
 * call datapath_store_end(), done or not, before datapath_read_done().
 * Opens and truncations of the file wait for the store meanwhile.
 */
bool datapath_store_begin(struct datapath *datapath, struct datapath_read *result,
                          struct datapath_store *store);
/*
 * Ends a store. Returns true if an open or truncation of the file gave up
 * waiting for it (after the I/O timeout), so that the file may have changed
 * under it: the caller then has the kernel drop the stored range again
 * (fuse_lowlevel_notify_inval_inode()).
 */
bool datapath_store_end(struct datapath *datapath, struct datapath_read *result,
                        const struct datapath_store *store);
/*
 * Writes size bytes at offset into the file's buffers; full tiles go out at
 * once. Returns size, or a negative errno (the first write-out error not yet
 * reported). request: NULL, or the memory buf was read into (buf is its
 * payload), which a whole-tile write takes instead of copying: *payload is
 * then replaced by memory of the same shape and size.
 */
ssize_t datapath_write(struct datapath *datapath, struct open_file *file, const char *buf,
                       size_t size, uint64_t offset, const struct reqmem_slot *request);
/* Whether anything but the caller's handle holds the file open (another
 * handle, a read in flight): what a write that bypassed the kernel's page
 * cache must then drop from it. */
bool datapath_file_shared(struct datapath *datapath, struct open_file *file);
/*
 * fallocate(PUNCH_HOLE, ZERO_RANGE) of a linear file: writes out and
 * commits what is pending, then has meta drop tiles first_tile..last_tile
 * (they read as a hole; their files are deleted on the datanodes) and
 * forgets what this mount cached of them. *attr: meta's attributes after.
 * 0 or a negative errno.
 */
int datapath_punch(struct datapath *datapath, struct open_file *file, uint64_t first_tile,
                   uint64_t last_tile, struct ts_attr *attr);
/* The size as this mount sees it (written data included). */
uint64_t datapath_file_size(struct datapath *datapath, struct open_file *file);
/* The file's layout, fixed when it was opened: array or linear, tile size. */
bool datapath_file_is_array(struct open_file *file);
uint32_t datapath_file_tile_bytes(struct open_file *file);
/*
 * Whether a write by a caller without CAP_FSETID must first clear the
 * file's set-user-ID or set-group-ID bit (as of the last open or setattr
 * here); the caller then sends a setattr with TS_SET_KILL_PRIV.
 */
bool datapath_write_kills_privileges(struct datapath *datapath, struct open_file *file);
/* Writes out the buffer and commits size and mtime to meta (close). */
int datapath_flush(struct datapath *datapath, struct open_file *file);
/* As flush, then makes the written tiles and the metadata durable. */
int datapath_fsync(struct datapath *datapath, struct open_file *file);

/*
 * SETATTR through the data path: pending writes of the inode, if open here,
 * are written out and committed first (so a later commit cannot undo an
 * explicit mtime or size): in the same request for a size change
 * (SETATTR's min_size and commit_mtime), by a COMMIT before it otherwise;
 * a size change then cuts the tile the new end falls in on its datanode.
 */
int datapath_setattr(struct datapath *datapath, const struct ts_setattr_req *request,
                     struct ts_attr *attr);
/*
 * open(O_TRUNC) of ino in one meta round trip: metaclient_open() with
 * truncate bits (TS_OPEN_TRUNCATE_BITS), after this mount's pending writes
 * of ino, if open here, are written out (not committed: truncating to 0
 * replaces their size and mtime). Returns 0 with *attr and *array_spec as
 * metaclient_open() gives them (one RELEASE owed), or a negative errno.
 */
int datapath_open_truncating(struct datapath *datapath, uint64_t ino, uint32_t flags,
                             uint32_t truncate, struct ts_attr *attr, char **array_spec);

/*
 * Settles attributes (from meta or a cache) for a reply to the kernel:
 * puts over them what this mount knows better (size and mtime of data not
 * yet committed), and returns false if they are older than attributes of
 * the file this mount handed out or committed before (attrguard.h): the
 * caller then fetches them again or leaves them out.
 */
bool datapath_settle_attr(struct datapath *datapath, struct ts_attr *attr);
/*
 * The file open as `file` was just created by this mount with attr, for a
 * caller with uid (early: under a directory lease, before meta has it):
 * its mode, owner and time changes may wait for its commit
 * (attrwriteback.h).
 */
void datapath_file_created(struct datapath *datapath, struct open_file *file,
                           const struct ts_attr *attr, uint32_t uid, bool early);
/* As datapath_settle_attr for attributes meta has just answered, which are
 * never older than any handed out before: nothing to refuse. */
void datapath_settle_fresh(struct datapath *datapath, struct ts_attr *attr);

#endif
