/*
 * @file attrwriteback.h
 * Attribute write-back: the mode, owner and time changes of a file this
 * mount created and still has open are held here and sent with the file's
 * next commit (flush, fsync, close, or another setattr), as its written
 * bytes and size already are. `tar x`, `cp -p` and `rsync` set times,
 * owner and mode of each file they have just written: three SETATTR round
 * trips per file become none until close, where they ride on the one
 * SETATTR that commits the file (the COMMIT folded in, proto.h).
 *
 * What keeps it invisible: every attribute reply of this mount goes
 * through datapath_settle_attr(), which puts the held changes over meta's
 * answer (as it puts unwritten sizes); other mounts see them at close, as
 * they see the bytes (close-to-open). Only what meta would do exactly as
 * asked is held: mode, owner and times (SIZE and KILL_PRIV are sent at
 * once, with what is held before them), and only for a file created here
 * while this mount is not root-squashed (a squashed chown is meta's to
 * decide; a create by root answered with another owner tells). A write after a held mtime drops it: the
 * write's time is the later one. A held change that meta then refuses is
 * reported by the flush, fsync or close that sends it.
 * Private to the data path; every function is called with file->lock held.
 */
#ifndef TESSERA_ATTRWRITEBACK_H
#define TESSERA_ATTRWRITEBACK_H

#include "datapath_i.h"

#include <stdbool.h>

/*
 * The file was just created by this mount with attr, by a caller with uid;
 * early: answered under a directory lease (dirlease.h), attr made here.
 */
void attrwriteback_created(struct datapath *datapath, struct open_file *file,
                           const struct ts_attr *attr, uint32_t uid, bool early);
/* Meta answered attr for the file (a setattr or commit of this mount). */
void attrwriteback_learn(struct open_file *file, const struct ts_attr *attr);
/*
 * Holds request if it can be: true with *attr (meta's latest attributes,
 * which datapath_settle_attr() completes with what is held); false, and
 * nothing held, when it must go to meta now.
 */
bool attrwriteback_hold(struct open_file *file, const struct ts_setattr_req *request,
                        struct ts_attr *attr);
/* Whether changes are held. */
bool attrwriteback_pending(const struct open_file *file);
/*
 * Moves what is held into change, a SETATTR about to be sent: the fields
 * change sets itself win (they came later).
 */
void attrwriteback_into(struct open_file *file, struct ts_setattr_req *change);
/* Puts what is held over attr, an answer about to reach the kernel. */
void attrwriteback_overlay(const struct open_file *file, struct ts_attr *attr);
/* A write was made: a held mtime is older than it. */
void attrwriteback_written(struct open_file *file);

#endif
