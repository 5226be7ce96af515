/*
 * @file attrwriteback.c
 * See attrwriteback.h. Held changes are kept as one SETATTR request, later
 * changes overwriting earlier ones field by field; "now" times are taken
 * from this machine's clock when held, so that meta records what the
 * kernel was told.
 */
#include "attrwriteback.h"

#include "util.h"

#include <sys/stat.h>

/* What meta applies exactly as asked, whoever the sender (no size, no privilege kill). */
#define ATTRWRITEBACK_BITS                                                                         \
    (TS_SET_MODE | TS_SET_UID | TS_SET_GID | TS_SET_ATIME | TS_SET_MTIME | TS_SET_ATIME_NOW |    \
     TS_SET_MTIME_NOW | TS_SET_CTIME)

/* How long meta's answer serves as the base of held changes' answers (the
 * mount's default attribute timeout). */
#define ATTRWRITEBACK_FRESH_MS 1000

void attrwriteback_created(struct datapath *datapath, struct open_file *file,
                           const struct ts_attr *attr, uint32_t uid, bool early)
{
    /* Meta squashes only root's owner (exports.h): a create by root that
     * came back owned by another tells this mount is squashed. One answered
     * early (under a directory lease) was not seen by meta yet: the
     * synchronous creates before the lease tell. */
    bool known;
    if (early) {
        known = uid != 0 ||
                (atomic_load(&datapath->root_owner_kept) && !atomic_load(&datapath->root_squashed));
    } else {
        known = attr->uid == uid;
        if (uid == 0)
            atomic_store(known ? &datapath->root_owner_kept : &datapath->root_squashed, true);
    }
    file->attrs_known = known;
    file->attrs = *attr;
    file->attrs_learned_ms = util_monotonic_ms();
}

void attrwriteback_learn(struct open_file *file, const struct ts_attr *attr)
{
    if (file->attrs_known && attr->ino == file->ino) {
        file->attrs = *attr;
        file->attrs_learned_ms = util_monotonic_ms();
    }
}

bool attrwriteback_hold(struct open_file *file, const struct ts_setattr_req *request,
                        struct ts_attr *attr)
{
    /* The answer is meta's last one under what is held: no older than a
     * kernel's attribute cache would keep it (another mount may have
     * written since). */
    if (!file->attrs_known || (request->valid & ~ATTRWRITEBACK_BITS) != 0 ||
        atomic_load(&file->lost) ||
        util_monotonic_ms() - file->attrs_learned_ms > ATTRWRITEBACK_FRESH_MS)
        return false;
    struct ts_setattr_req *held = &file->attrs_pending;
    struct timespec now = util_now();
    uint32_t valid = request->valid;
    held->ino = file->ino;
    if (valid & TS_SET_MODE) {
        held->mode = request->mode & 07777;
        held->valid |= TS_SET_MODE;
        /* A write checks the mode for set-id bits to kill (datapath.h). */
        atomic_store(&file->mode, (file->attrs.mode & S_IFMT) | held->mode);
    }
    if (valid & TS_SET_UID) {
        held->uid = request->uid;
        held->valid |= TS_SET_UID;
    }
    if (valid & TS_SET_GID) {
        held->gid = request->gid;
        held->valid |= TS_SET_GID;
    }
    if (valid & (TS_SET_ATIME | TS_SET_ATIME_NOW)) {
        bool at_now = (valid & TS_SET_ATIME_NOW) != 0;
        held->atime_sec = at_now ? now.tv_sec : request->atime_sec;
        held->atime_nsec = at_now ? (uint32_t)now.tv_nsec : request->atime_nsec;
        held->valid |= TS_SET_ATIME;
    }
    if (valid & (TS_SET_MTIME | TS_SET_MTIME_NOW)) {
        bool at_now = (valid & TS_SET_MTIME_NOW) != 0;
        held->mtime_sec = at_now ? now.tv_sec : request->mtime_sec;
        held->mtime_nsec = at_now ? (uint32_t)now.tv_nsec : request->mtime_nsec;
        held->valid |= TS_SET_MTIME;
    }
    held->valid |= TS_SET_CTIME; /* meta stamps the change time when it gets it */
    file->attrs_pending_ctime = now;
    *attr = file->attrs;
    return true;
}

bool attrwriteback_pending(const struct open_file *file)
{
    return file->attrs_pending.valid != 0;
}

void attrwriteback_into(struct open_file *file, struct ts_setattr_req *change)
{
    const struct ts_setattr_req *held = &file->attrs_pending;
    uint32_t own = change->valid;
    if ((held->valid & TS_SET_MODE) && !(own & TS_SET_MODE))
        change->mode = held->mode;
    if ((held->valid & TS_SET_UID) && !(own & TS_SET_UID))
        change->uid = held->uid;
    if ((held->valid & TS_SET_GID) && !(own & TS_SET_GID))
        change->gid = held->gid;
    if ((held->valid & TS_SET_ATIME) && !(own & (TS_SET_ATIME | TS_SET_ATIME_NOW))) {
        change->atime_sec = held->atime_sec;
        change->atime_nsec = held->atime_nsec;
    }
    if ((held->valid & TS_SET_MTIME) && !(own & (TS_SET_MTIME | TS_SET_MTIME_NOW))) {
        change->mtime_sec = held->mtime_sec;
        change->mtime_nsec = held->mtime_nsec;
    }
    /* A field of its own keeps its own bit (a NOW one stays NOW). */
    uint32_t taken = held->valid;
    if (own & TS_SET_ATIME_NOW)
        taken &= ~TS_SET_ATIME;
    if (own & TS_SET_MTIME_NOW)
        taken &= ~TS_SET_MTIME;
    change->valid |= taken;
    file->attrs_pending = (struct ts_setattr_req){0};
}

void attrwriteback_overlay(const struct open_file *file, struct ts_attr *attr)
{
    const struct ts_setattr_req *held = &file->attrs_pending;
    if (held->valid == 0)
        return;
    if (held->valid & TS_SET_MODE)
        attr->mode = (attr->mode & S_IFMT) | held->mode;
    if (held->valid & TS_SET_UID)
        attr->uid = held->uid;
    if (held->valid & TS_SET_GID)
        attr->gid = held->gid;
    if (held->valid & TS_SET_ATIME) {
        attr->atime_sec = held->atime_sec;
        attr->atime_nsec = held->atime_nsec;
    }
    if (held->valid & TS_SET_MTIME) {
        attr->mtime_sec = held->mtime_sec;
        attr->mtime_nsec = held->mtime_nsec;
    }
    const struct timespec *changed = &file->attrs_pending_ctime;
    if (changed->tv_sec > attr->ctime_sec ||
        (changed->tv_sec == attr->ctime_sec && (uint32_t)changed->tv_nsec > attr->ctime_nsec)) {
        attr->ctime_sec = changed->tv_sec;
        attr->ctime_nsec = (uint32_t)changed->tv_nsec;
    }
}

void attrwriteback_written(struct open_file *file)
{
    file->attrs_pending.valid &= ~(uint32_t)TS_SET_MTIME;
}
