/*
 * @file proto.h
 * The Tessera wire protocol: the one place the format is written down.
 *
 * Every message is a ZeroMQ multipart message of one or two frames:
 *   frame 0: a 32-byte header (below), then the message's fields;
 *   frame 1: optional bulk data (tile bytes), its length in the header.
 * All integers are little-endian; fields follow each other without padding.
 * A string is a u16 length then that many bytes (no NUL on the wire); a blob
 * is a u32 length then bytes. Decoders read through a bounds-checked cursor
 * (struct ts_cursor) and never trust a length they have not checked against
 * the frame it came in.
 *
 * Each message's fields are listed once, in a field-list macro
 * (TS_MSG_<NAME>), from which proto.c generates the struct, the encoder and
 * the decoder, so client and server cannot disagree about the order.
 *
 * Requests and their replies share the opcode; a reply carries the request's
 * id and a status (enum ts_status, status.h). A reply with a non-zero status
 * has no fields except an optional text (TS_MSG_ERROR).
 */
#ifndef TESSERA_PROTO_H
#define TESSERA_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TS_PROTO_MAGIC 0x41525354u /* "TSRA" */
/* 2: ts_attr carries the change counter; 3: OPEN truncates and answers an
 * array file's text, TILE_MAP answers the file's size; 4: TILE_MAP and
 * NODE_LIST records carry a record version (TS_RECORDS); 5: replica sets:
 * TILE_MAP records list every holder, REPLICA_DROP replaces TILE_UNCOPY;
 * TILE_WRITE and the tile stream's requests carry the CRC-32C of a
 * write's bytes; 7: TILE_MAP's holder records carry a write token, which
 * TILE_WRITE and TILE_TRUNCATE present (common/tiletoken.h), and any
 * SETATTR of a regular file may carry the sender's COMMIT; 8: TILE_FENCE
 * names a new_version (TS_FENCE_RELINK): copies of open files; 9: TILE_READ
 * and the tile stream's requests carry the holder's tile token (a mount's
 * reads need the read right); HEARTBEAT and SESSION_RENEW name the
 * sender's metrics endpoint, METRICS_LIST lists them. */
#define TS_PROTO_VERSION 9
#define TS_HEADER_BYTES 32
#define TS_MAX_FRAME_BYTES (4u << 20) /* frame 0 cap, either direction */
#define TS_MAX_DATA_BYTES (16u << 20) /* frame 1 cap: one tile at most */
#define TS_MAX_NAME 255               /* bytes in one path component */
#define TS_MAX_SYMLINK 4095           /* bytes in a symlink target */
#define TS_MAX_XATTR_NAME 255
#define TS_MAX_XATTR_VALUE 65536
#define TS_MAX_STRING 65535 /* u16 length on the wire */
#define TS_ROOT_INO 1

/* Header flags. */
#define TS_FLAG_REPLY 0x1u

struct ts_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint64_t request_id;
    uint32_t flags;
    int32_t status; /* replies: enum ts_status; requests: 0 */
    uint32_t payload_bytes; /* frame 0 bytes after the header */
    uint32_t data_bytes;    /* frame 1 bytes (0 = no frame 1) */
};

/* Opcodes, named source_destination_action. Client = FUSE mount or tool. */
enum ts_op {
    TS_OP_PING = 1, /* anyone -> meta or datanode: liveness */

    /* client -> meta: namespace */
    TS_OP_LOOKUP = 10,
    TS_OP_GETATTR,
    TS_OP_SETATTR,
    TS_OP_MKNOD,
    TS_OP_MKDIR,
    TS_OP_UNLINK,
    TS_OP_RMDIR,
    TS_OP_RENAME,
    TS_OP_LINK,
    TS_OP_SYMLINK,
    TS_OP_READLINK,
    TS_OP_READDIR,
    TS_OP_OPEN,
    TS_OP_RELEASE,
    TS_OP_STATFS,
    TS_OP_SETXATTR,
    TS_OP_GETXATTR,
    TS_OP_LISTXATTR,
    TS_OP_REMOVEXATTR,
    TS_OP_READDIRPLUS,  /* READDIR with each entry's attributes (statahead) */
    TS_OP_RELEASE_MANY, /* RELEASE of many inodes in one request */
    TS_OP_UNLINK_MANY,  /* UNLINK of many names in one request and transaction */
    TS_OP_DIR_LEASE,    /* a mount's lease on a directory, for creates answered early */
    TS_OP_CREATE_MANY,  /* the creates a mount answered under its leases */
    /* a mount's lease on the opens it holds (mount sessions, below) */
    TS_OP_SESSION_RENEW = 34,
    TS_OP_SESSION_HOLDS = 35,

    /* client -> meta: data placement */
    TS_OP_TILE_MAP = 40,
    TS_OP_COMMIT,
    TS_OP_NODE_LIST,
    TS_OP_REPLICA_DROP, /* a holder failed a write: it leaves the tile's replica set */
    TS_OP_PUNCH,       /* fallocate(PUNCH_HOLE, ZERO_RANGE): whole tiles dropped */

    /* client or tool -> meta: access profiles */
    TS_OP_PROFILE_SET = 45,
    TS_OP_PROFILE_RECORD,
    TS_OP_PROFILE_GET,

    /* tool -> meta: relocation journal (tessera rebalance) */
    TS_OP_MOVE_BEGIN = 50,
    TS_OP_MOVE_COMMIT,
    TS_OP_MOVE_ABORT,
    TS_OP_MOVE_LIST,
    TS_OP_APPLY_LOCK, /* one rebalance apply (or abort) at a time per cluster */

    /* datanode -> meta */
    TS_OP_HEARTBEAT = 60,
    TS_OP_TILE_RECONCILE = 62, /* which of the tile files it holds meta still maps to it */

    /* tool -> meta */
    TS_OP_TILE_HOLDERS = 63, /* every holder of tiles: the primary and the replicas */
    TS_OP_NODE_ADMIN = 64,   /* drain, remove or reactivate a datanode */
    TS_OP_HEALTH = 65,       /* HEALTHY / DEGRADED / UNAVAILABLE, repair progress */

    /* meta's repairer -> meta */
    TS_OP_REPAIR_SCAN = 66, /* the next repair steps, from a cursor over the tile map */

    /* tool -> meta */
    TS_OP_METRICS_LIST = 67, /* every daemon's Prometheus endpoint (tessera stats) */

    /* client -> datanode */
    TS_OP_TILE_WRITE = 80,
    TS_OP_TILE_READ,
    TS_OP_TILE_SYNC,
    TS_OP_TILE_TRUNCATE,
    TS_OP_TILE_STREAM, /* where the datanode's tile stream listens (below) */

    /* tool -> datanode: relocation (the target pulls from the source) */
    TS_OP_TILE_PULL = 85,
    TS_OP_TILE_FENCE,

    /* tool -> datanode: administration */
    TS_OP_NODE_THROTTLE = 90,
    TS_OP_NODE_STATS,
    TS_OP_NODE_SCRUB = 93, /* tool -> datanode: start a scrub pass, or how it stands */
    TS_OP_TILE_CHECK = 94, /* tool -> datanode: are these tile files there, and intact */

    /* anyone -> meta: which cluster this is */
    TS_OP_CLUSTER_ID = 92,

    TS_OP_MAX = 100 /* opcode table size; every opcode is below it */
};

/* Inode attributes as they travel. Times are seconds + nanoseconds. */
struct ts_attr {
    uint64_t ino;
    uint32_t mode;
    uint32_t nlink;
    uint32_t uid;
    uint32_t gid;
    uint64_t rdev;
    uint64_t size;
    uint64_t blocks; /* 512-byte units actually stored */
    int64_t atime_sec;
    uint32_t atime_nsec;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    int64_t ctime_sec;
    uint32_t ctime_nsec;
    uint64_t generation;
    uint32_t tile_bytes; /* the file's layout: subchunk size */
    uint32_t placement;  /* enum ts_placement in effect for new tiles */
    uint32_t copies;     /* datanodes holding each new tile (replicas), 1..TS_MAX_COPIES */
    uint32_t flags;      /* TS_ATTR_* */
    /* Meta's change counter of the inode (NFSv4's change attribute): it
     * grows with every change meta makes to the inode, so of two sets of
     * attributes of one inode the one with the larger counter is newer,
     * however the replies were ordered on the way. 0: not known. */
    uint64_t change;
};
#define TS_ATTR_WIRE_BYTES 116

/* Attribute flags. */
#define TS_ATTR_ARRAY 0x1u    /* laid out as an array: see xattr user.tessera.array */
#define TS_ATTR_PROFILED 0x2u /* accesses are being profiled (tessera profile start) */

/* Placement policies (DESIGN.md "Placement by live throughput"). */
enum ts_placement {
    TS_PLACEMENT_DEFAULT = 0, /* the cluster's default; meta resolves it */
    TS_PLACEMENT_ROUNDROBIN = 1,
    TS_PLACEMENT_STATIC = 2,
    TS_PLACEMENT_DYNAMIC = 3,
};

/* A string or blob decoded in place: points into the received frame. */
struct ts_str {
    const char *ptr;
    uint32_t len;
};

/* SETATTR valid mask. */
#define TS_SET_MODE 0x01u
#define TS_SET_UID 0x02u
#define TS_SET_GID 0x04u
#define TS_SET_SIZE 0x08u
#define TS_SET_ATIME 0x10u
#define TS_SET_MTIME 0x20u
#define TS_SET_ATIME_NOW 0x40u
#define TS_SET_MTIME_NOW 0x80u
#define TS_SET_CTIME 0x100u
/* A write or truncation by a caller without CAP_FSETID: a regular file
 * loses set-user-ID, and set-group-ID where group execute is set (what
 * Linux's should_remove_suid() does), in the same transaction. */
#define TS_SET_KILL_PRIV 0x200u

/* RENAME flags (the values of renameat2). */
#define TS_RENAME_NOREPLACE 0x1u
#define TS_RENAME_EXCHANGE 0x2u

/* SETXATTR flags (the values of setxattr). */
#define TS_XATTR_CREATE 0x1u
#define TS_XATTR_REPLACE 0x2u

/* Datanode states in NODE_LIST. */
enum ts_node_state { TS_NODE_DOWN = 0, TS_NODE_UP = 1 };

/*
 * Field lists. X(kind, name) with kind one of U32, U64, I64, STR, BLOB, ATTR.
 * Arrays travel as a count field and a BLOB of records back to back; each
 * kind of record has a field list TS_REC_<NAME> of its own beside its
 * message, listed in TS_RECORDS below, which generates its struct, its
 * size, a writer and a reader (see "records" below).
 */

/* ERROR: any reply with a non-zero status. */
#define TS_MSG_ERROR(X) X(STR, text)

/*
 * PING: empty request; reply carries the server's role ("meta"/"datanode")
 * and how long its process has run (a client whose request went
 * unanswered tells a restarted server from a slow one by it).
 */
#define TS_MSG_PING_REQ(X)
#define TS_MSG_PING_REP(X) X(STR, role) X(U64, uptime_ms)

/*
 * CLUSTER_ID: empty request; the reply names the cluster this meta serves:
 * 32 hex digits drawn at random when the store was created and kept in it,
 * so a restarted meta keeps its id and two clusters never share one. Tools
 * compare it with a mount's tessera.cluster attribute to refuse acting on a
 * file of one cluster with the meta of another.
 */
#define TS_CLUSTER_ID_HEX 32
#define TS_MSG_CLUSTER_ID_REP(X) X(STR, cluster_id)
/*
 * The extended attribute every inode of a mount shows, answered by the
 * mount itself (never stored): "CLUSTER_ID META_ENDPOINT", the id from
 * CLUSTER_ID and the endpoint the mount talks to.
 */
#define TS_CLUSTER_XATTR "tessera.cluster"
/*
 * Beside it, answered the same way by a mount given --key: the absolute
 * path of its key directory, where a tool given a path looks for the
 * cluster's admin.key (tools/metatarget.c). Absent without keys.
 */
#define TS_KEYS_XATTR "tessera.keys"

/* Caller identity for creating operations (from the FUSE request context). */
#define TS_MSG_LOOKUP_REQ(X) X(U64, parent) X(STR, name)
#define TS_MSG_ATTR_REP(X) X(ATTR, attr)
#define TS_MSG_GETATTR_REQ(X) X(U64, ino)
/*
 * SETATTR. It may carry the sender's COMMIT of a regular file too, applied
 * first exactly as COMMIT would: min_size (0 = none) the size its writes
 * not committed yet reach, commit_mtime (sec 0 = none) their mtime. A
 * writer changing its own file's attributes then needs one round trip:
 * bytes it wrote past a new end are cut as if they had been committed, and
 * times the request sets (`touch`, `tar` after writing) win over the
 * writes'. (Before TS_PROTO_VERSION 7 only a size change carried it.)
 */
#define TS_MSG_SETATTR_REQ(X)                                                                     \
    X(U64, ino)                                                                                    \
    X(U32, valid)                                                                                  \
    X(U32, mode)                                                                                   \
    X(U32, uid)                                                                                    \
    X(U32, gid)                                                                                    \
    X(U64, size)                                                                                   \
    X(I64, atime_sec)                                                                              \
    X(U32, atime_nsec)                                                                             \
    X(I64, mtime_sec)                                                                              \
    X(U32, mtime_nsec)                                                                             \
    X(U64, min_size)                                                                               \
    X(I64, commit_mtime_sec)                                                                       \
    X(U32, commit_mtime_nsec)
/*
 * SETATTR reply: the new attributes; when the size shrank to inside a tile,
 * that tile's location so the client can cut it on its datanode
 * (cut_node 0 = no tile to cut). Tiles wholly past the end are dropped by meta.
 */
#define TS_MSG_SETATTR_REP(X)                                                                     \
    X(ATTR, attr)                                                                                  \
    X(U32, cut_node)                                                                               \
    X(U64, cut_tile)                                                                               \
    X(U64, cut_version)                                                                            \
    X(U32, cut_bytes)
/* MKNOD with open = 1 also opens the new file, as OPEN does: create(2) in
 * one round trip. */
#define TS_MSG_MKNOD_REQ(X)                                                                       \
    X(U64, parent)                                                                                 \
    X(STR, name)                                                                                   \
    X(U32, mode)                                                                                   \
    X(U64, rdev)                                                                                   \
    X(U32, uid)                                                                                    \
    X(U32, gid)                                                                                    \
    X(U32, open)
#define TS_MSG_MKDIR_REQ(X)                                                                       \
    X(U64, parent)                                                                                 \
    X(STR, name)                                                                                   \
    X(U32, mode)                                                                                   \
    X(U32, uid)                                                                                    \
    X(U32, gid)
/* UNLINK and RMDIR. */
#define TS_MSG_NAME_REQ(X) X(U64, parent) X(STR, name)
#define TS_MSG_RENAME_REQ(X)                                                                      \
    X(U64, parent)                                                                                 \
    X(STR, name)                                                                                   \
    X(U64, new_parent)                                                                             \
    X(STR, new_name)                                                                               \
    X(U32, flags)
#define TS_MSG_LINK_REQ(X) X(U64, ino) X(U64, new_parent) X(STR, new_name)
#define TS_MSG_SYMLINK_REQ(X)                                                                     \
    X(U64, parent)                                                                                 \
    X(STR, name)                                                                                   \
    X(STR, target)                                                                                 \
    X(U32, uid)                                                                                    \
    X(U32, gid)
#define TS_MSG_READLINK_REQ(X) X(U64, ino)
#define TS_MSG_READLINK_REP(X) X(STR, target)
/*
 * READDIR: entries of directory `ino` whose names sort after `after`
 * ("" = from the start), at most max_entries, as TS_REC_READDIR records.
 * `done` = 1 when the listing is complete.
 */
#define TS_REC_READDIR(X) X(U64, ino) X(U32, mode) X(STR, name)
#define TS_MSG_READDIR_REQ(X) X(U64, ino) X(STR, after) X(U32, max_entries)
#define TS_MSG_READDIR_REP(X) X(U32, count) X(U32, done) X(BLOB, entries)
/*
 * READDIRPLUS: READDIR with the attributes of each entry, for a client
 * that answers the lookups of a directory walk from one reply (statahead)
 * or serves readdirplus. Entries of directory `ino` whose names sort after
 * `after`, or at or after it when inclusive = 1, at most max_entries, as
 * TS_REC_READDIRPLUS records. done = 1 when no entry sorts after the last
 * one returned, so the reply also proves that no name between `after` and
 * the last entry (or, with done, after `after` at all) exists at the time
 * of the reply.
 */
#define TS_REC_READDIRPLUS(X) X(ATTR, attr) X(STR, name)
#define TS_MSG_READDIRPLUS_REQ(X) X(U64, ino) X(STR, after) X(U32, inclusive) X(U32, max_entries)
#define TS_MSG_READDIRPLUS_REP(X) X(U32, count) X(U32, done) X(BLOB, entries)
/*
 * OPEN holds the inode alive while open (unlinked files stay readable).
 * truncate != 0 is open(O_TRUNC) in the same round trip: first a SETATTR
 * of size 0 with these TS_SET_* bits (TS_SET_SIZE, TS_SET_MTIME_NOW and
 * TS_SET_KILL_PRIV only; anything else is TS_ERR_INVAL), in the same
 * transaction; truncating to 0 drops every tile, so nothing is left to cut.
 * The reply carries the attributes after it and, for an array file
 * (TS_ATTR_ARRAY), the canonical text of its layout (user.tessera.array),
 * so that an open needs no GETXATTR; "" for other files.
 */
#define TS_OPEN_TRUNCATE_BITS (TS_SET_SIZE | TS_SET_MTIME_NOW | TS_SET_KILL_PRIV)
#define TS_MSG_OPEN_REQ(X) X(U64, ino) X(U32, flags) X(U32, truncate)
#define TS_MSG_OPEN_REP(X) X(ATTR, attr) X(STR, array_spec)
#define TS_MSG_RELEASE_REQ(X) X(U64, ino)
/*
 * RELEASE_MANY: one RELEASE per TS_REC_RELEASE record (an inode opened n
 * times appears n times), at most TS_MAX_RELEASES. A client sends its releases
 * in the background, batched, since nothing waits for them. Reply:
 * TS_MSG_EMPTY.
 */
#define TS_MAX_RELEASES 4096
#define TS_REC_RELEASE(X) X(U64, ino)
#define TS_MSG_RELEASE_MANY_REQ(X) X(U32, count) X(BLOB, inos)
/*
 * UNLINK_MANY: the UNLINKs a client queued (answered before meta had them),
 * in one request and one metadata transaction, as TS_REC_UNLINK records; at
 * most TS_MAX_UNLINKS. The names go in order, each as UNLINK would; one that
 * cannot be removed (no such name, a directory, a bad name) does not stop
 * the others. Reply: count, then one TS_REC_STATUS per record, in order. A
 * failure of the whole request (its status) changed nothing.
 */
#define TS_MAX_UNLINKS 256
#define TS_REC_UNLINK(X) X(U64, parent) X(STR, name)
/* The request of UNLINK_MANY and CREATE_MANY: count records. */
#define TS_MSG_BATCH_REQ(X) X(U32, count) X(BLOB, records)
/* The reply of UNLINK_MANY and CREATE_MANY: one status per record. */
#define TS_REC_STATUS(X) X(U32, status)
#define TS_MSG_STATUSES_REP(X) X(U32, count) X(BLOB, statuses)
/*
 * DIR_LEASE: a mount's lease on directory `dir`, under which it answers
 * creates of regular files there itself and sends them later (CREATE_MANY):
 * while a mount holds it, meta refuses every other process's request that
 * reads the directory's entries or attributes or changes them, but for
 * removals of names, with TS_ERR_LEASED (the sender retries), and asks the
 * holder to give it back
 * (the next RENEW fails with TS_ERR_BUSY). Meta knows the holder by the
 * routing id of its sockets: 'M' + its 8-byte mount id + a serial
 * (rpc_pool_set_name). A lease not renewed within lease_ms lapses.
 *   GET: grants the lease (TS_ERR_BUSY: another holds it, or a directory
 *   whose new files meta lays out by more than the template, such as under
 *   a setgid bit or an array hint), with `template`: the attributes meta
 *   would give a new regular file there (layout, placement, flags; uid,
 *   gid, mode and times are the creator's).
 *   RENEW: TS_OK, or TS_ERR_BUSY when meta wants it back or no longer has
 *   it (the holder stops answering creates, sends those it has, returns).
 *   RETURN: the holder has sent every create it answered there.
 *   INODES: no lease; grants want_inodes (<= TS_MAX_CREATES) inode numbers
 *   first_ino.. with generations first_generation.. for the mount's creates.
 */
enum ts_lease_action { TS_LEASE_GET = 1, TS_LEASE_RENEW, TS_LEASE_RETURN, TS_LEASE_INODES };
#define TS_MSG_DIR_LEASE_REQ(X) X(U64, dir) X(U32, action) X(U32, want_inodes)
#define TS_MSG_DIR_LEASE_REP(X)                                                                   \
    X(U32, lease_ms)                                                                               \
    X(U64, first_ino)                                                                              \
    X(U64, first_generation)                                                                       \
    X(U32, inode_count)                                                                            \
    X(ATTR, template)
/*
 * CREATE_MANY: creates a mount answered under its leases, in order, in one
 * transaction, as TS_REC_CREATE records: ino granted to this mount by
 * DIR_LEASE INODES, mode a regular file's, time_sec and time_nsec the
 * creation time the mount answered with, open = 1: the file is open, as
 * MKNOD's open; at most TS_MAX_CREATES. One that cannot be made (EXIST, an
 * inode not granted to the sender or already used, a bad name) does not
 * stop the others. Reply: count, then one TS_REC_STATUS per record, in
 * order.
 */
#define TS_MAX_CREATES 256
#define TS_REC_CREATE(X)                                                                           \
    X(U64, parent)                                                                                 \
    X(U64, ino)                                                                                    \
    X(U32, mode)                                                                                   \
    X(U32, uid)                                                                                    \
    X(U32, gid)                                                                                    \
    X(I64, time_sec)                                                                               \
    X(U32, time_nsec)                                                                              \
    X(U32, open)                                                                                   \
    X(STR, name)
/*
 * Mount sessions (meta/sessions.h): meta counts every open (OPEN, MKNOD and
 * CREATE_MANY with open = 1) under the session of the mount that made it,
 * named by its mount id (its routing id, as for DIR_LEASE), and a RELEASE
 * counts down only what that session holds. The session is a lease: the
 * mount renews it with SESSION_RENEW every lease_ms / 4. One not renewed
 * for lease_ms expires: meta drops its opens and deletes the unlinked
 * inodes nobody else holds open. Sessions live in meta's memory only: after
 * a start meta deletes no unlinked inode for lease_ms, the time each live
 * mount needs to renew, learn that its session is unknown and announce its
 * opens again (SESSION_HOLDS). The mount is the one that knows what it has
 * open, and telling meta again costs one request per restart, where
 * keeping opens in the store would cost a write transaction per open and
 * close. A sender that is not a named mount (a tool) holds its opens
 * without a lease, until it releases them or meta restarts.
 *   SESSION_RENEW: holds = the opens the mount counts (the sum over its
 *   inodes); fingerprint = the sum of count * ts_hold_mix(ino) over them,
 *   mod 2^64; ending = 1: the mount is unmounting and holds nothing, the
 *   session ends now. Reply: lease_ms, and state TS_SESSION_OK, or
 *   TS_SESSION_ANNOUNCE when meta does not know the session (it restarted,
 *   or the lease expired) or counts other opens under it (a request lost
 *   on its way): the mount then sends SESSION_HOLDS.
 *   SESSION_HOLDS: TS_REC_HOLD records (an inode and its opens), at most
 *   TS_MAX_HOLDS; first = 1 replaces what meta counts under the session, 0
 *   adds to it (the next requests of a longer list). Renews the lease.
 *   Reply: the records of inodes that no longer exist (deleted while the
 *   session was expired): those opens are lost, and the mount fails their
 *   I/O instead of reading or writing tiles that are gone.
 */
enum ts_session_state { TS_SESSION_OK = 0, TS_SESSION_ANNOUNCE = 1 };
/* machine and metrics (METRICS_LIST below): the mount's machine name and its
 * Prometheus endpoint ("" without --metrics). */
#define TS_MSG_SESSION_RENEW_REQ(X)                                                                \
    X(U64, holds) X(U64, fingerprint) X(U32, ending) X(STR, machine) X(STR, metrics)
#define TS_MSG_SESSION_RENEW_REP(X) X(U32, lease_ms) X(U32, state)
#define TS_MAX_HOLDS 65536
#define TS_REC_HOLD(X) X(U64, ino) X(U32, count)
#define TS_MSG_SESSION_HOLDS_REQ(X) X(U32, first) X(U32, count) X(BLOB, records)
#define TS_MSG_SESSION_HOLDS_REP(X) X(U32, count) X(BLOB, records)
#define TS_MSG_EMPTY(X)
#define TS_MSG_STATFS_REP(X)                                                                      \
    X(U64, total_bytes)                                                                            \
    X(U64, free_bytes)                                                                             \
    X(U64, files)                                                                                  \
    X(U64, nodes_up)
#define TS_MSG_SETXATTR_REQ(X) X(U64, ino) X(STR, name) X(BLOB, value) X(U32, flags)
#define TS_MSG_GETXATTR_REQ(X) X(U64, ino) X(STR, name)
#define TS_MSG_GETXATTR_REP(X) X(BLOB, value)
#define TS_MSG_LISTXATTR_REQ(X) X(U64, ino)
#define TS_MSG_LISTXATTR_REP(X) X(BLOB, names) /* NUL-terminated names back to back */
#define TS_MSG_REMOVEXATTR_REQ(X) X(U64, ino) X(STR, name)

/*
 * TILE_MAP: where tiles [first, first+count) of ino live. With allocate = 1,
 * missing tiles are placed now and committed: for a file whose placement is
 * dynamic, on datanode `node` when it is non-zero (the writer chose it),
 * else by the file's placement policy (`node` is ignored for static and
 * roundrobin files). A named node that is down or has no room for a tile
 * does not fail the request: those tiles are placed as if no node had been
 * named (earliest finish time), so the records, not the request, say where
 * each tile went; a node id meta never registered is TS_ERR_INVAL.
 * machine: the asking client's machine name ("" = none); it picks read_node.
 * A tile is a replica set (DESIGN.md "Replicas and integrity"): the
 * primary (the first holder placement chose) and further holders, each a
 * datanode with a tile file of its own version. A new tile gets the file's
 * `copies` holders, each on a machine none of the others is on, failing
 * that on a datanode none of the others is, among the nodes up with room;
 * with fewer such nodes it gets as many as there are (under-replicated,
 * never refused for it).
 * Reply: per tile one TS_REC_TILE_MAP record, then `holders` TS_REC_REPLICA
 * records:
 *   node, version: the primary; 0 = hole, no tile (and no holders);
 *   holders: how many TS_REC_REPLICA records follow (1..TS_MAX_HOLDERS
 *   for a tile, 0 for a hole): every holder, the primary included, the
 *   best to read from for `machine` first (a datanode of that machine,
 *   then the fastest by measured read throughput), holders on datanodes
 *   meta counts as down last (state TS_REPLICA_DOWN). A write goes to
 *   every holder (to a down one only when no other is up);
 *   read_node, read_version: the first holder, where this machine reads
 *   the tile first;
 *   flags: TS_TILE_*.
 * TS_TILE_STORED: a holder of the tile reported its file (HEARTBEAT
 * `created`), so the tile has bytes somewhere: a holder without its file
 * has lost it, and a read of it is an error, never a hole. Without the
 * flag a missing file is a tile allocated but not written yet (a hole).
 */
#define TS_TILE_STORED 0x1u
#define TS_MAX_TILES_PER_MAP 4096
#define TS_MSG_TILE_MAP_REQ(X)                                                                    \
    X(U64, ino) X(U64, first) X(U32, count) X(U32, allocate) X(U32, node) X(STR, machine)
#define TS_REC_TILE_MAP(X)                                                                         \
    X(U32, node) X(U64, version) X(U32, holders) X(U32, read_node) X(U64, read_version) X(U32, flags)
/* Versioned (TS_RECORDS): holder states may append to it. */
#define TS_TILE_MAP_REC_VERSION 2
/* Replicas a file may ask for (user.tessera.layout copies=N). */
#define TS_MAX_COPIES 4
/* Holders one tile may have: its copies, plus the replicas `tessera
 * rebalance` adds above them (TS_MOVE_COPY), which meta refuses past this. */
#define TS_MAX_HOLDERS 8
enum ts_replica_state { TS_REPLICA_UP = 0, TS_REPLICA_DOWN = 1 };
/*
 * token, token_expiry: with tile tokens on (common/tiletoken.h), meta's MAC
 * over (ino, tile, this holder's version and node, rights, expiry) that a
 * mount's TILE_READ, TILE_WRITE or TILE_TRUNCATE of this holder's file must
 * present: the read right for every mount key that may reach the file (its
 * export's subtree), the write right too when its export may write. "" and
 * 0 when tokens are off.
 */
#define TS_REC_REPLICA(X)                                                                          \
    X(U32, node) X(U64, version) X(U32, state) X(U64, token_expiry) X(STR, token)
/* size: the file's size as of the reply, so a reader past the end it knew
 * learns the new end and where its tiles are in one round trip. */
#define TS_MSG_TILE_MAP_REP(X) X(U32, count) X(U64, size) X(BLOB, tiles)
/*
 * REPLICA_DROP: a client's write, sync or truncation of tile `tile` of ino
 * failed on holder (node, version) while another holder took it: meta
 * removes exactly that holder from the replica set if it still holds that
 * version (a holder already replaced or dropped is left alone: the answer
 * is the set as it is), queues its file for deletion, and when it was the
 * primary makes the lowest-node replica the primary, all in one
 * transaction. The last holder of a tile is never dropped (TS_ERR_BUSY):
 * the client's write fails instead. Reply: TS_MSG_TILE_MAP_REP of the one
 * tile as it is now, read source for `machine`.
 */
#define TS_MSG_REPLICA_DROP_REQ(X)                                                                \
    X(U64, ino) X(U64, tile) X(U32, node) X(U64, version) X(STR, machine)

/*
 * PROFILE_SET: action TS_PROFILE_STOP/START/RESET on one inode (the tool
 * walks a subtree itself). START on a directory also makes the files and
 * directories created in it later profiled (inherited like
 * user.tessera.array). RESET deletes the inode's counts and leaves the
 * profiling state as it was. Reply: profiling = 1 when on after the call.
 * Profiled inodes carry TS_ATTR_PROFILED in their attributes.
 */
enum ts_profile_action { TS_PROFILE_STOP = 0, TS_PROFILE_START = 1, TS_PROFILE_RESET = 2 };
#define TS_MSG_PROFILE_SET_REQ(X) X(U64, ino) X(U32, action)
#define TS_MSG_PROFILE_SET_REP(X) X(U32, profiling)
/*
 * PROFILE_RECORD: a client's counts since its last flush (it flushes every
 * second), added to meta's. machine: the client's machine. Records of
 * inodes not profiled (any more) are dropped; `kept` counts the others.
 * Records: TS_REC_PROFILE_COUNT, a tile's TS_PROFILE_COUNTS; local_bytes:
 * the bytes of those reads and writes served by a datanode on the client's
 * machine; first_access_ns: wall clock, CLOCK_REALTIME (meta keeps the
 * smallest).
 */
#define TS_PROFILE_COUNTS(X)                                                                       \
    X(U64, reads)                                                                                  \
    X(U64, writes)                                                                                 \
    X(U64, bytes_read)                                                                             \
    X(U64, bytes_written)                                                                          \
    X(U64, local_bytes)                                                                            \
    X(U64, first_access_ns)
#define TS_REC_PROFILE_COUNT(X) X(U64, ino) X(U64, tile) TS_PROFILE_COUNTS(X)
#define TS_MAX_PROFILE_RECORDS 16384
#define TS_MSG_PROFILE_RECORD_REQ(X) X(STR, machine) X(U32, count) X(BLOB, records)
#define TS_MSG_PROFILE_RECORD_REP(X) X(U32, kept)
/*
 * PROFILE_GET: the counts of ino's tiles from first_tile on, whole tiles
 * only, at most about max_records records. Reply: profiling (the inode's
 * state), done = 1 when no tile >= next_tile has counts. Records:
 * TS_REC_PROFILE_GET, one per tile and machine, the counts as
 * PROFILE_RECORD's.
 */
#define TS_REC_PROFILE_GET(X) X(U64, tile) X(STR, machine) TS_PROFILE_COUNTS(X)
#define TS_MSG_PROFILE_GET_REQ(X) X(U64, ino) X(U64, first_tile) X(U32, max_records)
#define TS_MSG_PROFILE_GET_REP(X)                                                                 \
    X(U32, profiling) X(U32, count) X(U32, done) X(U64, next_tile) X(BLOB, records)

/*
 * Relocation journal (DESIGN.md "Profiles and the librarian"). One entry
 * per tile at most. A step of a plan runs as:
 *   MOVE_BEGIN  -> meta journals it (state BEGUN) and names the target's
 *                  new file version (new_version; 0 for a drop);
 *   TILE_PULL   -> the target datanode copies the tile from the source;
 *   TILE_FENCE  -> the source freezes the tile (writes get TS_ERR_STALE)
 *                  and gives its checksum; the pull must match it;
 *   TILE_FENCE relink (copy only) -> the source's file also becomes its
 *                  version new_version, durable (before the commit, so
 *                  the map never names a file that is not there);
 *   MOVE_COMMIT -> meta switches the tile map in one transaction if the
 *                  tile is still (from_node, version); a copy names both
 *                  holders at new_version and queues the source's old
 *                  name for deletion, a move the old file, a drop the
 *                  dropped copy; the entry stays, in state COMMITTED;
 *   TILE_FENCE retire -> the source refuses the old file for good (for a
 *                  copy: its old name; a client that cached it is told
 *                  STALE and asks meta for the new replica set);
 *   MOVE_COMMIT again ("finish") -> the COMMITTED entry is removed.
 * A COMMITTED entry remembers that the old holder's file is not retired
 * yet: until it is, a client with a stale cached location could still
 * write there once the freeze's lease ends, and that write would be lost
 * with the file. Whoever finds a COMMITTED entry (MOVE_LIST after a
 * crash) retires and then finishes it; it cannot be aborted.
 * MOVE_ABORT removes a BEGUN entry and queues the target's new file (if
 * any) for deletion; of a COMMITTED entry it is TS_ERR_INVAL. kind:
 * TS_MOVE_COPY (from keeps the tile), TS_MOVE_MOVE (from loses it: the
 * primary moves if from_node is the primary), TS_MOVE_DROP (from_node
 * loses its copy; to_node 0).
 * MOVE_BEGIN of a tile that already has the same BEGUN entry returns it
 * (resume); a different or COMMITTED entry is TS_ERR_BUSY; a tile no
 * longer (from_node, version) is TS_ERR_STALE. MOVE_COMMIT of a tile that
 * changed since MOVE_BEGIN is TS_ERR_STALE (the entry is then aborted as
 * by MOVE_ABORT).
 * Copies of open files are safe because of the relink: a client that
 * cached the tile's replica set before the copy committed writes the old
 * version, which is frozen until the commit and retired after it, so its
 * write is refused (STALE), it asks meta again and writes every holder of
 * the new set. MOVE_ABORT of a BEGUN copy also queues the source's
 * new_version name for deletion (a relink may have made it).
 * MOVE_LIST answers journal entries as TS_REC_MOVE records: started_sec
 * is wall clock, state an enum ts_move_state.
 */
enum ts_move_kind { TS_MOVE_COPY = 1, TS_MOVE_MOVE = 2, TS_MOVE_DROP = 3 };
enum ts_move_state { TS_MOVE_BEGUN = 0, TS_MOVE_COMMITTED = 1 };
#define TS_REC_MOVE(X)                                                                             \
    X(U64, ino)                                                                                    \
    X(U64, tile)                                                                                   \
    X(U32, kind)                                                                                   \
    X(U32, from_node)                                                                              \
    X(U32, to_node)                                                                                \
    X(U64, version)                                                                                \
    X(U64, new_version)                                                                            \
    X(I64, started_sec)                                                                            \
    X(U32, state)
#define TS_MSG_MOVE_BEGIN_REQ(X)                                                                  \
    X(U64, ino) X(U64, tile) X(U64, version) X(U32, kind) X(U32, from_node) X(U32, to_node)
#define TS_MSG_MOVE_BEGIN_REP(X) X(U64, new_version)
#define TS_MSG_MOVE_TILE_REQ(X) X(U64, ino) X(U64, tile) /* MOVE_COMMIT, MOVE_ABORT */
#define TS_MSG_MOVE_LIST_REQ(X) X(U64, after_ino) X(U64, after_tile) X(U32, max_records)
#define TS_MSG_MOVE_LIST_REP(X) X(U32, count) X(U32, done) X(BLOB, records)

/*
 * APPLY_LOCK: the cluster's lease for `tessera rebalance apply` and
 * `abort` (meta/applylock.h), so two runs from two machines never work
 * the journal at once. action TS_APPLY_LOCK_TAKE takes the lease for
 * token (the sender's random secret, != 0) or renews it when token
 * holds it, with the holder's description (user@host pid N) and its
 * progress; TS_APPLY_LOCK_RELEASE frees it when token holds it;
 * TS_APPLY_LOCK_QUERY changes nothing (tessera rebalance status). A lease
 * lapses lease_ms (clamped to 1 s..10 min) after its last renewal.
 * Reply: granted = 1 when token holds the lease after the request
 * (TAKE) or held it (RELEASE); then, or when another holds it, held = 1
 * and the holder's description, since_sec (meta's wall clock at the
 * take), its progress and left_ms of the lease. A free lock: held = 0.
 */
enum ts_apply_lock_action {
    TS_APPLY_LOCK_QUERY = 0,
    TS_APPLY_LOCK_TAKE = 1,
    TS_APPLY_LOCK_RELEASE = 2,
};
#define TS_MSG_APPLY_LOCK_REQ(X)                                                                   \
    X(U32, action)                                                                                 \
    X(U64, token)                                                                                  \
    X(U32, lease_ms)                                                                               \
    X(U64, steps_total)                                                                            \
    X(U64, steps_done)                                                                             \
    X(STR, holder)
#define TS_MSG_APPLY_LOCK_REP(X)                                                                   \
    X(U32, granted)                                                                                \
    X(U32, held)                                                                                   \
    X(STR, holder)                                                                                 \
    X(I64, since_sec)                                                                              \
    X(U64, steps_total)                                                                            \
    X(U64, steps_done)                                                                             \
    X(U32, left_ms)

/*
 * COMMIT: data was written: size = max(size, min_size); mtime/ctime set to
 * the given time if mtime_sec != 0. Also makes meta's store durable when
 * sync = 1 (fsync).
 */
#define TS_MSG_COMMIT_REQ(X)                                                                      \
    X(U64, ino)                                                                                    \
    X(U64, min_size)                                                                               \
    X(I64, mtime_sec)                                                                              \
    X(U32, mtime_nsec)                                                                             \
    X(U32, sync)
/*
 * PUNCH: drops tiles first_tile..last_tile (inclusive) of a linear file:
 * the range reads as a hole, each tile file goes to the garbage of its
 * datanode, mtime and ctime become now. Size is left alone. An array file
 * is TS_ERR_NOTSUP (its tiles are not byte ranges). Reply: ATTR_REP.
 */
#define TS_MSG_PUNCH_REQ(X) X(U64, ino) X(U64, first_tile) X(U64, last_tile)
/*
 * NODE_LIST: every registered datanode, one TS_REC_NODE_LIST record each;
 * state: enum ts_node_state; heartbeat_age_ms: UINT64_MAX for a node never
 * heard from. The four measurement fields (read and write bytes per
 * second, queue depth, throttle) are what the node last reported
 * (HEARTBEAT).
 */
/*
 * A datanode's integrity as its heartbeat reports it and NODE_LIST shows
 * it: corrupt_files: tile files whose bytes failed their checksums that it
 * reported since meta started (HEARTBEAT `corrupt`); the scrub's current
 * or last pass (datanode/scrub.h): scrub_running 1 while one runs,
 * scrub_files/scrub_bytes checked in it, scrub_corrupt corrupt files found
 * in it, scrub_rate its bytes per second, scrub_passes passes completed.
 */
#define TS_INTEGRITY_FIELDS(X)                                                                     \
    X(U64, corrupt_files)                                                                          \
    X(U32, scrub_running)                                                                          \
    X(U64, scrub_files)                                                                            \
    X(U64, scrub_bytes)                                                                            \
    X(U64, scrub_corrupt)                                                                          \
    X(U64, scrub_rate)                                                                             \
    X(U64, scrub_passes)
/*
 * The filesystem a datanode's data directory is on, as the datanode sees
 * it (statvfs): disk_id its filesystem id (0: unknown), disk_bytes its
 * size and disk_free what it has free. Datanodes of one machine with the
 * same disk_id share that disk, so its space is counted once (STATFS,
 * `tessera df`), not once per datanode.
 */
#define TS_DISK_FIELDS(X) X(U64, disk_id) X(U64, disk_bytes) X(U64, disk_free)
#define TS_REC_NODE_LIST(X)                                                                        \
    X(U32, id)                                                                                     \
    X(U32, state)                                                                                  \
    X(U64, capacity)                                                                               \
    X(U64, free_bytes)                                                                             \
    X(U64, used_bytes)                                                                             \
    X(U64, tiles)                                                                                  \
    X(U64, heartbeat_age_ms)                                                                       \
    X(U64, read_bytes_per_sec)                                                                     \
    X(U64, write_bytes_per_sec)                                                                    \
    X(U32, queue_depth)                                                                            \
    X(U64, throttle_bytes_per_sec)                                                                 \
    X(STR, machine)                                                                                \
    X(STR, address)                                                                                \
    X(U32, admin)                                                                                  \
    TS_INTEGRITY_FIELDS(X)                                                                         \
    TS_DISK_FIELDS(X)
/* Versioned (TS_RECORDS): what a node reports keeps growing. 2: admin, integrity; 3: disk. */
#define TS_NODE_LIST_REC_VERSION 3
#define TS_MSG_NODE_LIST_REP(X) X(U32, count) X(BLOB, nodes)

/*
 * HEARTBEAT: datanode -> meta every second. node_id 0 asks for a new id.
 * read/write_bytes_per_sec: the node's measured disk throughput (bytes per
 * second of busy disk time, sync included; 0 = not measured yet);
 * queue_depth: tile requests in service or waiting when the heartbeat left;
 * throttle_bytes_per_sec: its --throttle-mbps cap (0 = none).
 * deleted: the tile files removed as asked, as TS_REC_TILE_FILE records
 * (one tile file: a tile of an inode at a version).
 * created: tile files the node made since meta last acknowledged (a write
 * that created the file, a pull), and after a start every file it holds,
 * at most TS_MAX_CREATED a heartbeat (TS_REC_TILE_FILE): meta marks the
 * tiles they are TS_TILE_STORED (TILE_MAP).
 * incarnation: the random identity of the node's data directory, made
 * when the directory was first used (0: a datanode that has none). A
 * heartbeat naming a registered node whose recorded incarnation differs
 * is refused with TS_ERR_STALE: another or a wiped directory is not the
 * node that held its tiles. A heartbeat without an id whose incarnation a
 * registered node has gets that node's id back (its node.id was lost).
 * corrupt: tile files whose bytes failed their checksums (on a read, a
 * write or the scrub) since the last acknowledged heartbeat, at most
 * TS_MAX_CREATED (TS_REC_TILE_FILE); meta logs each and counts them per
 * node (TS_INTEGRITY_FIELDS; corrupt_files there is meta's count, the
 * heartbeat's is unused). The scrub fields are the datanode's.
 * TS_DISK_FIELDS: the disk its data directory is on.
 * metrics: its Prometheus endpoint HOST:PORT ("" without --metrics), for
 * METRICS_LIST.
 * The reply gives the id and up to TS_MAX_GARBAGE tile files to delete
 * (TS_REC_TILE_FILE), which the datanode confirms in its next heartbeat.
 */
#define TS_REC_TILE_FILE(X) X(U64, ino) X(U64, tile) X(U64, version)
#define TS_MAX_GARBAGE 4096
#define TS_MAX_CREATED 4096
#define TS_MSG_HEARTBEAT_REQ(X)                                                                    \
    X(U32, node_id)                                                                                \
    X(STR, machine)                                                                                \
    X(STR, address)                                                                                \
    X(U64, capacity)                                                                               \
    X(U64, free_bytes)                                                                             \
    X(U64, used_bytes)                                                                             \
    X(U64, tiles)                                                                                  \
    X(U64, read_bytes_per_sec)                                                                     \
    X(U64, write_bytes_per_sec)                                                                    \
    X(U32, queue_depth)                                                                            \
    X(U64, throttle_bytes_per_sec)                                                                 \
    X(U32, deleted_count)                                                                          \
    X(BLOB, deleted)                                                                               \
    X(U64, incarnation)                                                                            \
    X(U32, created_count)                                                                          \
    X(BLOB, created)                                                                               \
    X(U32, corrupt_count)                                                                          \
    X(BLOB, corrupt)                                                                               \
    TS_INTEGRITY_FIELDS(X)                                                                         \
    TS_DISK_FIELDS(X)                                                                              \
    X(STR, metrics)
#define TS_MSG_HEARTBEAT_REP(X) X(U32, node_id) X(U32, garbage_count) X(BLOB, garbage)

/*
 * METRICS_LIST: where `tessera stats` scrapes each daemon. meta: meta's own
 * Prometheus endpoint HOST:PORT ("" without --metrics; a HOST of 0.0.0.0
 * means "the host you reached meta at"); one TS_REC_METRICS_ENDPOINT per
 * datanode that named one in a heartbeat of the last
 * TS_METRICS_ENDPOINT_FRESH_MS and per mount session that named one and is
 * live; kind: enum ts_metrics_kind; id: the node id or the mount id.
 * Kept in meta's memory only: after a restart the list fills again within
 * a heartbeat and a mount renewal.
 */
enum ts_metrics_kind { TS_METRICS_DATANODE = 1, TS_METRICS_MOUNT = 2 };
#define TS_METRICS_ENDPOINT_FRESH_MS 30000
#define TS_MAX_METRICS_ENDPOINTS 4096
#define TS_REC_METRICS_ENDPOINT(X) X(U32, kind) X(U64, id) X(STR, machine) X(STR, address)
#define TS_MSG_METRICS_LIST_REP(X) X(STR, meta) X(U32, count) X(BLOB, endpoints)

/*
 * TILE_RECONCILE: the datanode `node_id` names tile files it holds (each
 * older than its grace period, see datanode/reclaim.h), at most
 * TS_MAX_RECONCILE_FILES, as TS_REC_TILE_FILE records; meta answers one
 * TS_REC_RECONCILE_VERDICT per file, in order: what the map says of
 * exactly that file on that node (enum ts_reconcile_state), and
 * mapped_version, the version meta maps to that node for the tile (the
 * primary's or another replica's; 0 = none). Only UNMAPPED allows the file's
 * deletion; a datanode keeps every file whose state it does not know.
 * A node_id meta has not registered is TS_ERR_NOENT (its heartbeat will).
 * Read-only on meta's side: the answer holds for the moment it was given,
 * which is why the datanode asks only about files older than any write or
 * pull still in flight could be.
 */
enum ts_reconcile_state {
    TS_RECONCILE_UNMAPPED = 1,  /* no one maps this file: garbage */
    TS_RECONCILE_MAPPED = 2,    /* the primary or another replica on this node */
    TS_RECONCILE_MOVING = 3,    /* a relocation (journal entry) names this file */
    TS_RECONCILE_QUEUED = 4,    /* in the garbage queue: heartbeats delete it */
    TS_RECONCILE_ELSEWHERE = 5, /* mapped to another node: a node that lost its id? */
    TS_RECONCILE_UNISSUED = 6,  /* an inode or version this meta never issued */
};
#define TS_MAX_RECONCILE_FILES 1024
#define TS_REC_RECONCILE_VERDICT(X) X(U32, state) X(U64, mapped_version)
#define TS_MSG_TILE_RECONCILE_REQ(X) X(U32, node_id) X(U32, count) X(BLOB, files)
#define TS_MSG_TILE_RECONCILE_REP(X) X(U32, count) X(BLOB, verdicts)

/*
 * TILE_HOLDERS: every datanode holding tiles [first, first+count) of ino
 * (count 1..TS_MAX_TILES_PER_MAP): per tile with a primary, the primary's
 * TS_REC_TILE_HOLDER record, then one per further replica in node order. Holes
 * have no records. A tile's records are consecutive, tiles in order.
 * kind: enum ts_holder_kind.
 */
enum ts_holder_kind { TS_HOLDER_PRIMARY = 1, TS_HOLDER_COPY = 2 };
#define TS_REC_TILE_HOLDER(X) X(U64, tile) X(U32, node) X(U64, version) X(U32, kind)
#define TS_MSG_TILE_HOLDERS_REQ(X) X(U64, ino) X(U64, first) X(U32, count)
#define TS_MSG_TILE_HOLDERS_REP(X) X(U32, count) X(BLOB, holders)

/*
 * NODE_ADMIN: an operator's decision about datanode node_id, kept in meta's
 * nodes table (so it outlives restarts) and shown as NODE_LIST `admin`:
 *   ACTIVE   - the default: takes new tiles, its replicas count;
 *   DRAINING - online decommission: no new tiles; its replicas no longer
 *              count toward a tile's copies, so the repairer copies each
 *              tile elsewhere (from it while it is up) and then drops its
 *              replica; once it holds nothing it is drained;
 *   REMOVED  - as DRAINING, for a node that is gone for good: its
 *              replicas are replaced at once, without --replace-after.
 * A node never registered is TS_ERR_NOENT. Reply: TS_MSG_EMPTY.
 */
enum ts_node_admin { TS_NODE_ACTIVE = 0, TS_NODE_DRAINING = 1, TS_NODE_REMOVED = 2 };
#define TS_MSG_NODE_ADMIN_REQ(X) X(U32, node_id) X(U32, admin)

/*
 * REPAIR_SCAN: meta's repairer asks for the next repair steps, visiting
 * the tile map from (after_ino, after_tile) exclusive ((0, 0) starts a
 * pass; meta starts the pass's health counts then). A tile needs repair
 * when fewer of its replicas are good (on an up, ACTIVE node) than its
 * file's copies. Replicas on nodes down for less than replace_after_ms
 * are waited for (they count for health as missing, for repair as
 * present); replicas on nodes down longer, DRAINING or REMOVED are
 * replaced: TS_REC_REPAIR_STEP COPY steps from an up replica to new
 * targets (distinct machines first), then DROP steps of the replaced
 * ones. A tile with a relocation journal entry is left alone. At most
 * max_steps steps (1..TS_MAX_REPAIR_STEPS); steps of one tile are never
 * split across replies. done = 1 when the pass reached the end of the
 * map (next_* then 0): the pass's counts become what HEALTH reports.
 */
#define TS_MAX_REPAIR_STEPS 1024
#define TS_REC_REPAIR_STEP(X)                                                                      \
    X(U32, kind) /* TS_MOVE_COPY or TS_MOVE_DROP */                                                \
    X(U64, ino)                                                                                    \
    X(U64, tile)                                                                                   \
    X(U64, version) /* from_node's file of the tile */                                             \
    X(U32, from_node)                                                                              \
    X(U32, to_node)                                                                                \
    X(U64, tile_bytes)
#define TS_MSG_REPAIR_SCAN_REQ(X)                                                                 \
    X(U64, after_ino) X(U64, after_tile) X(U32, max_steps) X(U64, replace_after_ms)
#define TS_MSG_REPAIR_SCAN_REP(X)                                                                 \
    X(U32, count) X(U32, done) X(U64, next_ino) X(U64, next_tile) X(BLOB, steps)

/*
 * HEALTH: the cluster's data health as of meta's last complete pass over
 * the tile map (REPAIR_SCAN), plus the repairer's progress now.
 * state: enum ts_health. tiles: mapped tiles; degraded_*: tiles (and their
 * bytes) with fewer good replicas than their copies but one up at least;
 * unavailable_tiles: tiles with no replica on an up node. The first
 * unavailable files (at most TS_MAX_HEALTH_FILES) are named as
 * TS_REC_HEALTH_FILE records (path "" when meta found no name).
 * pass_age_ms: since that pass ended (UINT64_MAX: no pass yet).
 * repair_*: the repairer's steps and bytes done since meta started, its
 * rate now (bytes per second, over the last few seconds), the steps
 * waiting (found by the running pass, not run yet) and its failures.
 */
enum ts_health { TS_HEALTHY = 0, TS_DEGRADED = 1, TS_UNAVAILABLE = 2 };
#define TS_MAX_HEALTH_FILES 16
#define TS_REC_HEALTH_FILE(X) X(U64, ino) X(U64, tiles) X(STR, path)
#define TS_MSG_HEALTH_REP(X)                                                                      \
    X(U32, state)                                                                                  \
    X(U64, tiles)                                                                                  \
    X(U64, degraded_tiles)                                                                         \
    X(U64, degraded_bytes)                                                                         \
    X(U64, unavailable_tiles)                                                                      \
    X(U64, pass_age_ms)                                                                            \
    X(U64, repair_steps_done)                                                                      \
    X(U64, repair_bytes_done)                                                                      \
    X(U64, repair_bytes_per_sec)                                                                   \
    X(U64, repair_steps_waiting)                                                                   \
    X(U64, repair_bytes_waiting)                                                                   \
    X(U64, repair_steps_failed)                                                                    \
    X(U32, file_count)                                                                             \
    X(BLOB, files)

/*
 * Tile I/O. The tile's bytes travel in frame 1 (write request, read reply).
 * TILE_WRITE's crc: the CRC-32C (common/crc32c.h) of frame 1's bytes (0
 * for none), computed by the writer where the bytes entered; the datanode
 * answers TS_ERR_CORRUPT and writes nothing when they do not match. A
 * datanode checks the block CRCs it keeps of every byte it serves and
 * answers TS_ERR_CORRUPT rather than bytes that fail them.
 */
/* token, token_expiry: the holder's from TILE_MAP (TS_REC_REPLICA); a
 * datanode with tile tokens on refuses a write without a valid one:
 * TS_ERR_PERM (forged, another file's or node's, no write right) or
 * TS_ERR_STALE (expired: ask meta again), storing nothing. */
#define TS_MSG_TILE_WRITE_REQ(X)                                                                  \
    X(U64, ino) X(U64, tile) X(U64, version) X(U32, offset) X(U32, crc) X(U64, token_expiry)       \
    X(STR, token)
/* Read reply's frame 1 may be shorter than asked: the rest is a hole (zeros).
 * The reply's crc: the CRC-32C of frame 1's bytes as the datanode checked
 * them (0 without frame 1), so a receiver can tell bytes changed on the way
 * (a pull refuses to store them). */
#define TS_MSG_TILE_READ_REP(X) X(U32, crc)
/* token, token_expiry: the holder's from TILE_MAP, as TILE_WRITE's; a
 * datanode with tile tokens on refuses a mount key's read without one with
 * the read right (TS_ERR_PERM, or TS_ERR_STALE when expired: ask meta
 * again); datanodes' keys (pulls, repairs) read by their role. A file the
 * datanode does not have is TS_ERR_NOENT, token or not (a lost tile's
 * holder: nothing to protect). */
#define TS_MSG_TILE_READ_REQ(X)                                                                   \
    X(U64, ino)                                                                                    \
    X(U64, tile)                                                                                   \
    X(U64, version)                                                                                \
    X(U32, offset)                                                                                 \
    X(U32, length)                                                                                 \
    X(U64, token_expiry)                                                                           \
    X(STR, token)
/* TILE_SYNC: fsync these tile files (TS_REC_TILE_FILE records). */
#define TS_MSG_TILE_SYNC_REQ(X) X(U32, count) X(BLOB, tiles)
/* TILE_TRUNCATE: token as TILE_WRITE's. */
#define TS_MSG_TILE_TRUNCATE_REQ(X)                                                               \
    X(U64, ino) X(U64, tile) X(U64, version) X(U32, length) X(U64, token_expiry) X(STR, token)

/*
 * The tile stream: a plain TCP connection to a datanode beside its
 * ZeroMQ socket, for TILE_READs and TILE_WRITEs whose bytes should cross
 * few user-space buffers (the datanode's one, where they are checked
 * against their CRCs; the mount splice()s them to and from the kernel). TILE_STREAM (empty request) answers the stream's TCP port on
 * the datanode's address, 0 when it has none or its disk is throttled
 * (a throttle times requests over ZeroMQ only), and `local`: the name of
 * an abstract Unix socket (without the leading NUL) serving the same
 * stream to mounts on its machine, "" when none (the mount then uses TCP).
 *
 * On the stream the client sends fixed-size requests, one at a time:
 *   u32 TS_STREAM_MAGIC, then TILE_READ_REQ's ino, tile, version, offset
 *   and length (32 bytes), then u32 crc (0 but in a write), then its
 *   u64 token_expiry and the token's TILETOKEN_MAC_BYTES (zeros: none);
 *   or u32 TS_STREAM_KEPT_MAGIC and the same: a read whose bytes the
 *   reader keeps in its page cache (a buffered read through the mount, on
 *   the datanode's machine as every stream is). The datanode then drops
 *   them from its own page cache once sent: one machine, one copy;
 * and the datanode answers each with
 *   u32 TS_STREAM_MAGIC, i32 status, u32 data_bytes, then data_bytes bytes
 * (fewer than asked: the rest of the range is a hole). A write is
 *   u32 TS_STREAM_WRITE_MAGIC, the same fields (length: the bytes that
 *   follow; crc: their CRC-32C, as TILE_WRITE's), then those bytes,
 * answered as a read with no bytes (TILE_WRITE's semantics). A non-zero
 * status carries no bytes and no text: the client asks again over ZeroMQ,
 * where the answer says what went wrong. A request that does not decode
 * closes the connection, as does a write that fails once its bytes are
 * being taken (the client then writes over ZeroMQ).
 *
 * With keys the stream serves only the local socket, and only to
 * processes of the datanode's own uid or root (SO_PEERCRED,
 * datanode/stream.c); every request there still needs its tile token
 * (common/tiletoken.h), as over ZeroMQ: such a process may run where the
 * data directory is out of its sight (another mount namespace, a
 * container sharing the network namespace), and a MAC per request (about
 * 2 us) costs the local path little (README, "Tile tokens").
 */
#define TS_MSG_TILE_STREAM_REP(X) X(U32, port) X(STR, local)
/* A local name's room, NUL included (an abstract Unix address has 107 bytes). */
#define TS_STREAM_LOCAL_MAX 64
#define TS_STREAM_MAGIC 0x53525354u       /* "TSRS" */
#define TS_STREAM_KEPT_MAGIC 0x4b525354u  /* "TSRK" */
#define TS_STREAM_WRITE_MAGIC 0x57525354u /* "TSRW" */
#define TS_STREAM_REQ_BYTES 80
#define TS_STREAM_REP_BYTES 12

/*
 * TILE_PULL: the target datanode (the one asked) copies tile (ino, tile,
 * version) from the source datanode at `source` (its address) into its own
 * file (ino, tile, new_version), synced, without the tool or meta in the
 * data path. It runs in the background: the reply says where the pull
 * stands, and asking again with the same fields is how the caller waits
 * (and how a restarted tool finds a pull it started). state:
 * TS_PULL_RUNNING, or TS_PULL_DONE with the bytes stored and their
 * checksum (CRC-32C, common/crc32c.h). A failed pull is answered with its
 * status and text once, and forgotten (asking again starts it again).
 */
enum ts_pull_state { TS_PULL_RUNNING = 0, TS_PULL_DONE = 1 };
#define TS_MSG_TILE_PULL_REQ(X)                                                                   \
    X(U64, ino) X(U64, tile) X(U64, version) X(U64, new_version) X(STR, source)
#define TS_MSG_TILE_PULL_REP(X) X(U32, state) X(U64, bytes) X(U32, checksum)
/*
 * TILE_FENCE on the source of a move, for tile file (ino, tile, version):
 * TS_FENCE_FREEZE: writes and truncates get TS_ERR_STALE for lease_ms
 *   (renewed by asking again; lifted early by TS_FENCE_LIFT); reads go on;
 * TS_FENCE_RETIRE: for good, kept across restarts: writes, truncates and
 *   reads of that file get TS_ERR_STALE (a client then asks meta again);
 * TS_FENCE_LIFT: ends a freeze (not a retirement);
 * TS_FENCE_RELINK: the file's bytes, made durable, also become the tile
 *   file (ino, tile, new_version) on this datanode (a hard link with a
 *   sidecar of its own); the source of a copy takes the copy's new version
 *   this way, so that every client that cached the old version is told
 *   STALE once it is retired and learns the new replica set from meta.
 *   Linking again is a no-op; a file already named new_version is
 *   TS_ERR_EXIST. new_version is 0 for every other action.
 * Reply: the tile's bytes and CRC-32C now (0/0 when it has no file).
 */
enum ts_fence_action {
    TS_FENCE_LIFT = 0,
    TS_FENCE_FREEZE = 1,
    TS_FENCE_RETIRE = 2,
    TS_FENCE_RELINK = 3,
};
#define TS_MSG_TILE_FENCE_REQ(X)                                                                  \
    X(U64, ino) X(U64, tile) X(U64, version) X(U32, action) X(U32, lease_ms) X(U64, new_version)
#define TS_MSG_TILE_FENCE_REP(X) X(U64, bytes) X(U32, checksum)

/*
 * NODE_THROTTLE: caps the datanode's disk I/O at bytes_per_sec (a token
 * bucket; 0 = no cap), as --throttle-mbps does at start. Request and reply
 * carry the same field: the reply gives the cap now in effect.
 */
#define TS_MSG_NODE_THROTTLE(X) X(U64, bytes_per_sec)

/*
 * NODE_STATS: what the datanode served since it started or since the last
 * reset; reset = 1 zeroes every counter once the reply is filled (a test
 * resets, does its I/O, and then reads what exactly that I/O did).
 * requests, failures: handled requests, and those answered with a non-zero
 * status (every opcode, NODE_STATS itself included);
 * bytes_read/bytes_written: tile bytes sent by TILE_READ, stored by
 * TILE_WRITE.
 * ops: one TS_REC_STATS_OP per opcode served at least once.
 * tiles: the distinct tiles TILE_READ touched, in first-read order, at most
 * TS_MAX_STATS_TILES, as TS_REC_STATS_TILE records;
 * tiles_dropped counts the reads of tiles past that bound (not listed).
 * tiles_reclaimed, bytes_reclaimed: tile files that meta maps nowhere
 * deleted by the datanode's reclaimer (datanode/reclaim.h), their bytes;
 * reclaim_passes: its passes over the tile directory completed.
 */
#define TS_REC_STATS_OP(X) X(U32, opcode) X(U64, count)
#define TS_REC_STATS_TILE(X) X(U64, ino) X(U64, tile) X(U64, reads) X(U64, bytes)
#define TS_MAX_STATS_TILES 16384
#define TS_MSG_NODE_STATS_REQ(X) X(U32, reset)
#define TS_MSG_NODE_STATS_REP(X)                                                                  \
    X(U64, requests)                                                                               \
    X(U64, failures)                                                                               \
    X(U64, bytes_read)                                                                             \
    X(U64, bytes_written)                                                                          \
    X(U32, op_count)                                                                               \
    X(BLOB, ops)                                                                                   \
    X(U32, tile_count)                                                                             \
    X(U64, tiles_dropped)                                                                          \
    X(BLOB, tiles)                                                                                 \
    X(U64, tiles_reclaimed)                                                                        \
    X(U64, bytes_reclaimed)                                                                        \
    X(U64, reclaim_passes)

/*
 * NODE_SCRUB: the datanode's scrub (datanode/scrub.h). action
 * TS_SCRUB_START starts a full pass over every stored tile now at
 * bytes_per_sec (0: as fast as the disk goes), ending any pass running;
 * TS_SCRUB_REPORT only asks. Reply: the current or last pass's progress
 * (TS_INTEGRITY_FIELDS; corrupt_files: every checksum failure the node
 * found since it started), total_bytes: what the pass has to check,
 * pass: the number of the pass running or last started, finished_pass:
 * the number of the last pass that went through every tile, and its
 * corrupt files (at most TS_MAX_SCRUB_CORRUPT, TS_REC_TILE_FILE records).
 */
enum ts_scrub_action { TS_SCRUB_REPORT = 0, TS_SCRUB_START = 1 };
#define TS_MAX_SCRUB_CORRUPT 1024
#define TS_MSG_NODE_SCRUB_REQ(X) X(U32, action) X(U64, bytes_per_sec)
#define TS_MSG_NODE_SCRUB_REP(X)                                                                  \
    TS_INTEGRITY_FIELDS(X)                                                                         \
    X(U64, total_bytes)                                                                            \
    X(U64, pass)                                                                                   \
    X(U64, finished_pass)                                                                          \
    X(U32, corrupt_count)                                                                          \
    X(BLOB, corrupt)

/*
 * TILE_CHECK (tessera fsck): the datanode says of each tile file (ino,
 * tile, version) asked (TS_REC_TILE_FILE records, count <=
 * TS_MAX_CHECK_FILES) whether it has it: one TS_REC_TILE_CHECK per file,
 * in order: state (enum ts_check_state), bytes (its size; 0 when
 * missing). deep = 1 also reads every byte and checks its block
 * checksums (CORRUPT on a mismatch); deep = 0 only looks the file up.
 */
enum ts_check_state { TS_CHECK_OK = 0, TS_CHECK_MISSING = 1, TS_CHECK_CORRUPT = 2 };
#define TS_MAX_CHECK_FILES 4096
#define TS_REC_TILE_CHECK(X) X(U32, state) X(U64, bytes)
#define TS_MSG_TILE_CHECK_REQ(X) X(U32, deep) X(U32, count) X(BLOB, files)
#define TS_MSG_TILE_CHECK_REP(X) X(U32, count) X(BLOB, verdicts)

/* ---- generated structs ---------------------------------------------- */

#define TS_FIELD_TYPE_U32 uint32_t
#define TS_FIELD_TYPE_U64 uint64_t
#define TS_FIELD_TYPE_I64 int64_t
#define TS_FIELD_TYPE_STR struct ts_str
#define TS_FIELD_TYPE_BLOB struct ts_str
#define TS_FIELD_TYPE_ATTR struct ts_attr
#define TS_STRUCT_FIELD(kind, name) TS_FIELD_TYPE_##kind name;

#define TS_MESSAGES(M)                                                                             \
    M(error, TS_MSG_ERROR)                                                                         \
    M(ping_rep, TS_MSG_PING_REP)                                                                   \
    M(cluster_id_rep, TS_MSG_CLUSTER_ID_REP)                                                       \
    M(lookup_req, TS_MSG_LOOKUP_REQ)                                                               \
    M(attr_rep, TS_MSG_ATTR_REP)                                                                   \
    M(getattr_req, TS_MSG_GETATTR_REQ)                                                             \
    M(setattr_req, TS_MSG_SETATTR_REQ)                                                             \
    M(setattr_rep, TS_MSG_SETATTR_REP)                                                             \
    M(mknod_req, TS_MSG_MKNOD_REQ)                                                                 \
    M(mkdir_req, TS_MSG_MKDIR_REQ)                                                                 \
    M(name_req, TS_MSG_NAME_REQ)                                                                   \
    M(rename_req, TS_MSG_RENAME_REQ)                                                               \
    M(link_req, TS_MSG_LINK_REQ)                                                                   \
    M(symlink_req, TS_MSG_SYMLINK_REQ)                                                             \
    M(readlink_req, TS_MSG_READLINK_REQ)                                                           \
    M(readlink_rep, TS_MSG_READLINK_REP)                                                           \
    M(readdir_req, TS_MSG_READDIR_REQ)                                                             \
    M(readdir_rep, TS_MSG_READDIR_REP)                                                             \
    M(open_req, TS_MSG_OPEN_REQ)                                                                   \
    M(open_rep, TS_MSG_OPEN_REP)                                                                   \
    M(release_req, TS_MSG_RELEASE_REQ)                                                             \
    M(release_many_req, TS_MSG_RELEASE_MANY_REQ)                                                   \
    M(batch_req, TS_MSG_BATCH_REQ)                                                                 \
    M(statuses_rep, TS_MSG_STATUSES_REP)                                                           \
    M(dir_lease_req, TS_MSG_DIR_LEASE_REQ)                                                         \
    M(dir_lease_rep, TS_MSG_DIR_LEASE_REP)                                                         \
    M(session_renew_req, TS_MSG_SESSION_RENEW_REQ)                                                 \
    M(session_renew_rep, TS_MSG_SESSION_RENEW_REP)                                                 \
    M(session_holds_req, TS_MSG_SESSION_HOLDS_REQ)                                                 \
    M(session_holds_rep, TS_MSG_SESSION_HOLDS_REP)                                                 \
    M(readdirplus_req, TS_MSG_READDIRPLUS_REQ)                                                     \
    M(readdirplus_rep, TS_MSG_READDIRPLUS_REP)                                                     \
    M(statfs_rep, TS_MSG_STATFS_REP)                                                               \
    M(setxattr_req, TS_MSG_SETXATTR_REQ)                                                           \
    M(getxattr_req, TS_MSG_GETXATTR_REQ)                                                           \
    M(getxattr_rep, TS_MSG_GETXATTR_REP)                                                           \
    M(listxattr_req, TS_MSG_LISTXATTR_REQ)                                                         \
    M(listxattr_rep, TS_MSG_LISTXATTR_REP)                                                         \
    M(removexattr_req, TS_MSG_REMOVEXATTR_REQ)                                                     \
    M(tile_map_req, TS_MSG_TILE_MAP_REQ)                                                           \
    M(tile_map_rep, TS_MSG_TILE_MAP_REP)                                                           \
    M(replica_drop_req, TS_MSG_REPLICA_DROP_REQ)                                                   \
    M(profile_set_req, TS_MSG_PROFILE_SET_REQ)                                                     \
    M(profile_set_rep, TS_MSG_PROFILE_SET_REP)                                                     \
    M(profile_record_req, TS_MSG_PROFILE_RECORD_REQ)                                               \
    M(profile_record_rep, TS_MSG_PROFILE_RECORD_REP)                                               \
    M(profile_get_req, TS_MSG_PROFILE_GET_REQ)                                                     \
    M(profile_get_rep, TS_MSG_PROFILE_GET_REP)                                                     \
    M(move_begin_req, TS_MSG_MOVE_BEGIN_REQ)                                                       \
    M(move_begin_rep, TS_MSG_MOVE_BEGIN_REP)                                                       \
    M(move_tile_req, TS_MSG_MOVE_TILE_REQ)                                                         \
    M(move_list_req, TS_MSG_MOVE_LIST_REQ)                                                         \
    M(move_list_rep, TS_MSG_MOVE_LIST_REP)                                                         \
    M(apply_lock_req, TS_MSG_APPLY_LOCK_REQ)                                                       \
    M(apply_lock_rep, TS_MSG_APPLY_LOCK_REP)                                                       \
    M(commit_req, TS_MSG_COMMIT_REQ)                                                               \
    M(punch_req, TS_MSG_PUNCH_REQ)                                                                 \
    M(node_list_rep, TS_MSG_NODE_LIST_REP)                                                         \
    M(heartbeat_req, TS_MSG_HEARTBEAT_REQ)                                                         \
    M(heartbeat_rep, TS_MSG_HEARTBEAT_REP)                                                         \
    M(tile_reconcile_req, TS_MSG_TILE_RECONCILE_REQ)                                               \
    M(tile_reconcile_rep, TS_MSG_TILE_RECONCILE_REP)                                               \
    M(tile_holders_req, TS_MSG_TILE_HOLDERS_REQ)                                                   \
    M(tile_holders_rep, TS_MSG_TILE_HOLDERS_REP)                                                   \
    M(node_admin_req, TS_MSG_NODE_ADMIN_REQ)                                                       \
    M(repair_scan_req, TS_MSG_REPAIR_SCAN_REQ)                                                     \
    M(repair_scan_rep, TS_MSG_REPAIR_SCAN_REP)                                                     \
    M(health_rep, TS_MSG_HEALTH_REP)                                                               \
    M(metrics_list_rep, TS_MSG_METRICS_LIST_REP)                                                   \
    M(tile_write_req, TS_MSG_TILE_WRITE_REQ)                                                       \
    M(tile_read_req, TS_MSG_TILE_READ_REQ)                                                         \
    M(tile_read_rep, TS_MSG_TILE_READ_REP)                                                         \
    M(tile_sync_req, TS_MSG_TILE_SYNC_REQ)                                                         \
    M(tile_truncate_req, TS_MSG_TILE_TRUNCATE_REQ)                                                 \
    M(tile_stream_rep, TS_MSG_TILE_STREAM_REP)                                                     \
    M(tile_pull_req, TS_MSG_TILE_PULL_REQ)                                                         \
    M(tile_pull_rep, TS_MSG_TILE_PULL_REP)                                                         \
    M(tile_fence_req, TS_MSG_TILE_FENCE_REQ)                                                       \
    M(tile_fence_rep, TS_MSG_TILE_FENCE_REP)                                                       \
    M(node_throttle, TS_MSG_NODE_THROTTLE)                                                         \
    M(node_stats_req, TS_MSG_NODE_STATS_REQ)                                                       \
    M(node_stats_rep, TS_MSG_NODE_STATS_REP)                                                       \
    M(node_scrub_req, TS_MSG_NODE_SCRUB_REQ)                                                       \
    M(node_scrub_rep, TS_MSG_NODE_SCRUB_REP)                                                       \
    M(tile_check_req, TS_MSG_TILE_CHECK_REQ)                                                       \
    M(tile_check_rep, TS_MSG_TILE_CHECK_REP)

/*
 * For each message NAME: struct ts_NAME, and
 *   int ts_NAME_encode(const struct ts_NAME *m, uint8_t *buf, size_t cap)
 *     writes the fields; returns the bytes written (0 for an empty message),
 *     or -1 if cap is too small or a string is longer than its length field
 *     allows.
 *   int ts_NAME_decode(struct ts_NAME *m, const uint8_t *buf, size_t len)
 *     fills m (strings point into buf); returns 0, or -1 if the fields do not
 *     fit exactly in len bytes.
 */
#define TS_DECLARE_MESSAGE(name, fields)                                                           \
    struct ts_##name {                                                                             \
        char unused_; /* keeps empty field lists legal C */                                        \
        fields(TS_STRUCT_FIELD)                                                                    \
    };                                                                                             \
    int ts_##name##_encode(const struct ts_##name *m, uint8_t *buf, size_t cap);                  \
    int ts_##name##_decode(struct ts_##name *m, const uint8_t *buf, size_t len);
TS_MESSAGES(TS_DECLARE_MESSAGE)

/* ---- cursor: bounds-checked reading ----------------------------------- */

/*
 * A cursor over received bytes. Every read checks the remaining length; the
 * first failure sets `failed` and makes every later read return zeros, so a
 * decoder can read all its fields and check `failed` once at the end.
 */
struct ts_cursor {
    const uint8_t *pos;
    size_t left;
    bool failed;
};

void ts_cursor_init(struct ts_cursor *cursor, const void *buf, size_t len);
uint16_t ts_cursor_u16(struct ts_cursor *cursor);
uint32_t ts_cursor_u32(struct ts_cursor *cursor);
uint64_t ts_cursor_u64(struct ts_cursor *cursor);
int64_t ts_cursor_i64(struct ts_cursor *cursor);
/* A u16-length string; returns {NULL,0} on failure. */
struct ts_str ts_cursor_str(struct ts_cursor *cursor);
/* A u32-length blob. */
struct ts_str ts_cursor_blob(struct ts_cursor *cursor);
/* `len` raw bytes. */
const uint8_t *ts_cursor_bytes(struct ts_cursor *cursor, size_t len);
void ts_cursor_attr(struct ts_cursor *cursor, struct ts_attr *attr);

/* ---- writer: bounds-checked appending --------------------------------- */

/* Appends into a fixed buffer; the first overflow sets `failed`. */
struct ts_writer {
    uint8_t *buf;
    size_t cap;
    size_t len;
    bool failed;
};

void ts_writer_init(struct ts_writer *writer, void *buf, size_t cap);
void ts_writer_u16(struct ts_writer *writer, uint16_t value);
void ts_writer_u32(struct ts_writer *writer, uint32_t value);
void ts_writer_u64(struct ts_writer *writer, uint64_t value);
void ts_writer_i64(struct ts_writer *writer, int64_t value);
void ts_writer_str(struct ts_writer *writer, struct ts_str str);
void ts_writer_blob(struct ts_writer *writer, struct ts_str blob);
void ts_writer_bytes(struct ts_writer *writer, const void *bytes, size_t len);
void ts_writer_attr(struct ts_writer *writer, const struct ts_attr *attr);

/* A ts_str over a C string. */
struct ts_str ts_str_of(const char *s);
/* Copies str into out (cap bytes incl. NUL); returns -1 if it does not fit. */
int ts_str_copy(struct ts_str str, char *out, size_t cap);

/* ---- records: the repeated entries of a message's BLOB ---------------- */

/*
 * Every kind of record that travels back to back in a BLOB, with its field
 * list and its record version: R(name, fields, version).
 *
 * Version 0: the fields follow each other with nothing around them, as a
 * message's do; the layout can only change with TS_PROTO_VERSION.
 *
 * Version v > 0, for a record likely to grow: the fields are preceded by
 *   u16 version (the writer's), u32 body_bytes (the fields' bytes),
 * and a record's layout only ever grows by appending fields, each append
 * raising the version. A reader takes the fields it knows from the front of
 * the body and skips the rest of a newer record, so a reader of version v
 * reads every record of version >= v; a record older than the reader (its
 * body lacks fields the reader needs), or whose body is shorter than the
 * reader's fields, is refused. A change that is not an append changes
 * TS_PROTO_VERSION instead.
 */
#define TS_RECORDS(R)                                                                              \
    R(readdir, TS_REC_READDIR, 0)                                                                  \
    R(readdirplus, TS_REC_READDIRPLUS, 0)                                                          \
    R(release, TS_REC_RELEASE, 0)                                                                  \
    R(unlink, TS_REC_UNLINK, 0)                                                                    \
    R(create, TS_REC_CREATE, 0)                                                                    \
    R(status, TS_REC_STATUS, 0)                                                                    \
    R(tile_map, TS_REC_TILE_MAP, TS_TILE_MAP_REC_VERSION)                                          \
    R(replica, TS_REC_REPLICA, 0)                                                                  \
    R(profile_count, TS_REC_PROFILE_COUNT, 0)                                                      \
    R(profile_get, TS_REC_PROFILE_GET, 0)                                                          \
    R(move, TS_REC_MOVE, 0)                                                                        \
    R(node_list, TS_REC_NODE_LIST, TS_NODE_LIST_REC_VERSION)                                       \
    R(hold, TS_REC_HOLD, 0)                                                                        \
    R(tile_file, TS_REC_TILE_FILE, 0)                                                              \
    R(reconcile_verdict, TS_REC_RECONCILE_VERDICT, 0)                                              \
    R(tile_holder, TS_REC_TILE_HOLDER, 0)                                                          \
    R(repair_step, TS_REC_REPAIR_STEP, 0)                                                          \
    R(health_file, TS_REC_HEALTH_FILE, 0)                                                          \
    R(tile_check, TS_REC_TILE_CHECK, 0)                                                            \
    R(stats_op, TS_REC_STATS_OP, 0)                                                                \
    R(stats_tile, TS_REC_STATS_TILE, 0)                                                            \
    R(metrics_endpoint, TS_REC_METRICS_ENDPOINT, 0)

/* The version prefix of a record of version > 0: u16 version, u32 body_bytes. */
#define TS_REC_PREFIX_BYTES 6

#define TS_FIELD_WIRE_BYTES_U32 4
#define TS_FIELD_WIRE_BYTES_U64 8
#define TS_FIELD_WIRE_BYTES_I64 8
#define TS_FIELD_WIRE_BYTES_STR 2  /* an empty string */
#define TS_FIELD_WIRE_BYTES_BLOB 4 /* an empty blob */
#define TS_FIELD_WIRE_BYTES_ATTR TS_ATTR_WIRE_BYTES
#define TS_FIELD_WIRE_BYTES(kind, name) +TS_FIELD_WIRE_BYTES_##kind

/*
 * For each record NAME: struct ts_NAME_rec (strings point into the bytes
 * read), and
 *   ts_NAME_rec_bytes: its encoded size in bytes, exact for a record of
 *     fixed-size fields, the smallest one (every string empty) for a record
 *     with strings; a blob of n records holds at least n times this.
 *   void ts_NAME_rec_write(struct ts_writer *writer, const struct ts_NAME_rec *r)
 *     appends one record; an overflow or a string longer than its length
 *     field allows sets writer->failed.
 *   int ts_NAME_rec_read(struct ts_cursor *cursor, struct ts_NAME_rec *r)
 *     reads one record (zeros first); returns 0, or -1 with cursor->failed
 *     set when the bytes end inside it or its version is refused (above).
 */
#define TS_DECLARE_RECORD(name, fields, version)                                                   \
    struct ts_##name##_rec {                                                                       \
        fields(TS_STRUCT_FIELD)                                                                    \
    };                                                                                             \
    enum {                                                                                         \
        ts_##name##_rec_bytes =                                                                    \
            ((version) > 0 ? TS_REC_PREFIX_BYTES : 0) fields(TS_FIELD_WIRE_BYTES)                  \
    };                                                                                             \
    void ts_##name##_rec_write(struct ts_writer *writer, const struct ts_##name##_rec *r);         \
    int ts_##name##_rec_read(struct ts_cursor *cursor, struct ts_##name##_rec *r);
TS_RECORDS(TS_DECLARE_RECORD)

/*
 * Whether a blob of len bytes can hold count records of at least
 * min_record_bytes each: what a decoder checks before it allocates room
 * for count of them, so a bogus count fails before any allocation.
 */
bool ts_records_fit(uint32_t count, size_t len, size_t min_record_bytes);

/* ---- header ----------------------------------------------------------- */

void ts_header_encode(const struct ts_header *header, uint8_t out[TS_HEADER_BYTES]);
/*
 * Decodes and checks a header at the start of a frame of frame_len bytes:
 * magic, version, payload_bytes == frame_len - TS_HEADER_BYTES, and the size
 * caps. Returns 0 or a TS_ERR_* status (BADMSG, PROTO, TOOBIG).
 */
int ts_header_decode(struct ts_header *header, const uint8_t *frame, size_t frame_len);

/* ---- the tile stream (TILE_STREAM above) --------------------------- */

/* What a tile stream request asks for, told by its magic. */
enum ts_stream_kind {
    TS_STREAM_READ,      /* TS_STREAM_MAGIC */
    TS_STREAM_READ_KEPT, /* TS_STREAM_KEPT_MAGIC: the reader caches the bytes */
    TS_STREAM_WRITE,     /* TS_STREAM_WRITE_MAGIC */
};
/* crc: a write's bytes' CRC-32C, 0 for a read. request's token travels
 * when it has TILETOKEN_MAC_BYTES (32) bytes, else none does. */
void ts_stream_req_encode(const struct ts_tile_read_req *request, enum ts_stream_kind kind,
                          uint32_t crc, uint8_t out[TS_STREAM_REQ_BYTES]);
/* TS_OK, or TS_ERR_BADMSG (wrong magic, or a length over TS_MAX_DATA_BYTES).
 * request->token points into `in` (none when its expiry is 0). */
int ts_stream_req_decode(struct ts_tile_read_req *request, enum ts_stream_kind *kind,
                         uint32_t *crc, const uint8_t in[TS_STREAM_REQ_BYTES]);
void ts_stream_rep_encode(int32_t status, uint32_t data_bytes, uint8_t out[TS_STREAM_REP_BYTES]);
/* TS_OK, or TS_ERR_BADMSG (wrong magic, a length over TS_MAX_DATA_BYTES, or
 * bytes promised with a failure status). */
int ts_stream_rep_decode(int32_t *status, uint32_t *data_bytes,
                         const uint8_t in[TS_STREAM_REP_BYTES]);

/*
 * An inode's share of a SESSION_RENEW fingerprint (the splitmix64
 * finalizer): sums of these over different sets of opens differ but by
 * chance.
 */
uint64_t ts_hold_mix(uint64_t ino);

/* Text name of an opcode, for logs ("?" if unknown). */
const char *ts_op_name(uint16_t type);

#endif
