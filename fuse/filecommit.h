/*
 * @file filecommit.h
 * Committing what an open file's writes changed (size, mtime) to meta, and
 * flush and fsync (datapath.h), which write out and commit. Private to the
 * data path.
 */
#ifndef TESSERA_FILECOMMIT_H
#define TESSERA_FILECOMMIT_H

#include "datapath_i.h"

/* Tells the guard and the owner that meta now has attr, this mount's change. */
void filecommit_note(struct datapath *datapath, const struct ts_attr *attr);

/*
 * Commits size and mtime if this mount changed them (and with sync, has
 * meta make them durable). Called with file->lock held, which it lets go
 * while meta answers (one COMMIT of a file at a time: `committing`); a
 * write made meanwhile stays to commit.
 */
int filecommit_size(struct datapath *datapath, struct open_file *file, int sync);

/*
 * Waits until no COMMIT of the file is on its way (a truncation or punch
 * must reach meta after it), writing out what was written while it waited.
 * Called with file->lock held, after writebehind_drain(). Returns 0 or the
 * writes' error.
 */
int filecommit_wait(struct datapath *datapath, struct open_file *file);
/*
 * Puts this mount's commit of the file into change, a SETATTR about to be
 * sent with file->lock held until its answer (proto.h): true if there was
 * one to fold. After meta's answer attr, filecommit_folded() settles it.
 */
bool filecommit_fold(const struct open_file *file, struct ts_setattr_req *change);
void filecommit_folded(struct datapath *datapath, struct open_file *file, const struct ts_attr *attr);

#endif
