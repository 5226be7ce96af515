/*
 * @file openfiles.h
 * The data path's table of open files: one open_file per inode open in
 * this mount, shared by its handles and found by inode, with a reference
 * count; open and release (datapath.h) add and drop handles. Private to
 * the data path.
 */
#ifndef TESSERA_OPENFILES_H
#define TESSERA_OPENFILES_H

#include "datapath_i.h"

#include <stddef.h>
#include <stdint.h>

/* Finds the open file of ino; called with datapath->lock held. */
struct open_file *openfiles_find(struct datapath *datapath, uint64_t ino);

/* The open file of ino with one more reference, or NULL. */
struct open_file *openfiles_get(struct datapath *datapath, uint64_t ino);

/* One more reference on a file the caller holds one on already. */
void openfiles_hold(struct datapath *datapath, struct open_file *file);

/*
 * Every open file with one more reference each, in a malloc'd array
 * (*count of them) the caller frees after an openfiles_put of each. NULL
 * (with *count 0) when out of memory; a list cut short by memory is not.
 */
struct open_file **openfiles_hold_all(struct datapath *datapath, size_t *count);

/* Drops one reference; the last one writes out, frees and tells meta. */
void openfiles_put(struct datapath *datapath, struct open_file *file);

/* Frees every open file left, at the end (no references, no jobs). */
void openfiles_free_all(struct datapath *datapath);

#endif
