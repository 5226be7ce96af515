/*
 * @file status.h
 * Project status codes: what travels in a reply header's status field.
 * They are turned into errno only at the edges (FUSE replies, tool
 * messages), through status_to_errno(), next to the table of their texts.
 */
#ifndef TESSERA_STATUS_H
#define TESSERA_STATUS_H

#define TS_STATUS_LIST(X)                                                                          \
    X(TS_OK, 0, 0, "success")                                                                      \
    X(TS_ERR_NOENT, 1, ENOENT, "no such file or directory")                                        \
    X(TS_ERR_EXIST, 2, EEXIST, "file exists")                                                      \
    X(TS_ERR_NOTDIR, 3, ENOTDIR, "not a directory")                                                \
    X(TS_ERR_ISDIR, 4, EISDIR, "is a directory")                                                   \
    X(TS_ERR_NOTEMPTY, 5, ENOTEMPTY, "directory not empty")                                        \
    X(TS_ERR_INVAL, 6, EINVAL, "invalid argument")                                                 \
    X(TS_ERR_NAMETOOLONG, 7, ENAMETOOLONG, "file name too long")                                   \
    X(TS_ERR_NOSPC, 8, ENOSPC, "no space left on the datanodes")                                   \
    X(TS_ERR_IO, 9, EIO, "input/output error")                                                     \
    X(TS_ERR_PERM, 10, EPERM, "operation not permitted")                                           \
    X(TS_ERR_ACCES, 11, EACCES, "permission denied")                                               \
    X(TS_ERR_NODATA, 12, ENODATA, "no such attribute")                                             \
    X(TS_ERR_RANGE, 13, ERANGE, "result too large")                                                \
    X(TS_ERR_XDEV, 14, EXDEV, "cross-device link")                                                 \
    X(TS_ERR_MLINK, 15, EMLINK, "too many links")                                                  \
    X(TS_ERR_BADMSG, 16, EIO, "malformed message")                                                 \
    X(TS_ERR_PROTO, 17, EIO, "unknown message type or protocol version")                           \
    X(TS_ERR_TOOBIG, 18, EIO, "message larger than the protocol allows")                           \
    X(TS_ERR_NOTSUP, 19, EOPNOTSUPP, "operation not supported")                                    \
    X(TS_ERR_TIMEDOUT, 20, EIO, "no reply before the deadline (daemon down?)")                     \
    X(TS_ERR_STALE, 21, ESTALE, "stale file handle")                                               \
    X(TS_ERR_BUSY, 22, EBUSY, "resource busy")                                                     \
    X(TS_ERR_FBIG, 23, EFBIG, "file too large")                                                    \
    X(TS_ERR_NONODES, 24, ENOSPC, "no datanode is up to take new tiles")                           \
    X(TS_ERR_NOMEM, 25, ENOMEM, "out of memory")                                                   \
    X(TS_ERR_INTERNAL, 26, EIO, "internal error (see the daemon's log)")                           \
    X(TS_ERR_LEASED, 27, EBUSY, "directory leased to another mount (retried until it returns it)") \
    X(TS_ERR_CORRUPT, 28, EIO, "tile bytes do not match their checksum (not served, not stored)")  \
    X(TS_ERR_ROFS, 29, EROFS, "read-only export (meta's exports)")

enum ts_status {
#define TS_STATUS_ENUM(name, value, errno_value, text) name = value,
    TS_STATUS_LIST(TS_STATUS_ENUM)
#undef TS_STATUS_ENUM
};

/* Text for a status, "unknown status" for values not in the table. */
const char *status_text(int status);
/* The errno a local filesystem would give for this status (EIO if unknown). */
int status_to_errno(int status);
/*
 * The status for an errno value (positive or negative); TS_ERR_IO for
 * errno values without their own status. EBADMSG, what the datanode's tile
 * store answers for bytes that fail their checksum, is TS_ERR_CORRUPT
 * (which a mount turns into EIO, as a disk's unreadable sector is).
 */
int status_from_errno(int errno_value);

#endif
