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

/* Commits size and mtime if this mount changed them (and with sync, has
 * meta make them durable). Called with file->lock held. */
int filecommit_size(struct datapath *datapath, struct open_file *file, int sync);

#endif
