/*
 * @file pagestore.h
 * Stores of sieved tiles into the kernel's page cache
 * (datapath_store_begin/end in datapath.h), and the wait that keeps opens
 * and truncations from overlapping them. Private to the data path.
 */
#ifndef TESSERA_PAGESTORE_H
#define TESSERA_PAGESTORE_H

#include "datapath_i.h"

/*
 * Waits for the stores into the kernel's page cache in progress, so that
 * none overlaps the open or truncation the caller does; called with
 * file->lock held, after bumping file->generation so that no new one
 * starts. A store waits only for pages the kernel holds locked for reads
 * and writes in flight, which other threads serve within the I/O timeout;
 * the wait is bounded by it all the same, so that no cycle of waits can
 * hang the mount (datapath_store_end then has the kernel drop what that
 * store put there).
 */
void pagestore_wait(struct datapath *datapath, struct open_file *file);

#endif
