/*
 * @file writebehind.h
 * Write-behind: an open file's tile write buffers, the write jobs that send
 * them to the datanodes, and the waits for them. Private to the data path;
 * called with the file's lock held.
 */
#ifndef TESSERA_WRITEBEHIND_H
#define TESSERA_WRITEBEHIND_H

#include "datapath_i.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * Hands a write buffer to a write job. Called with file->lock held; may
 * wait (releasing it) for a free job slot. Errors are kept in file->error.
 */
void writebehind_write_out(struct datapath *datapath, struct open_file *file,
                           struct write_buffer *buffer);

/*
 * Makes the bytes this mount wrote to `tile` visible to a datanode read:
 * sends its buffer and waits for its write job.
 */
void writebehind_settle(struct datapath *datapath, struct open_file *file, uint64_t tile);

/* Writes out everything and waits for it; returns the pending error,
 * reporting it once. */
int writebehind_drain(struct datapath *datapath, struct open_file *file);

/* True if the file has bytes written here that no datanode has yet. */
bool writebehind_pending(const struct open_file *file);

/* True if this mount has bytes of `tile` that no datanode has yet (in a
 * buffer, or in a write job in flight). */
bool writebehind_tile_unsent(struct open_file *file, uint64_t tile);

/* Gives back the memory of every buffer of a file being freed (no jobs in flight). */
void writebehind_free(struct datapath *datapath, struct open_file *file);

#endif
