/*
 * @file reqloop.h
 * The mount's multithreaded FUSE request loop. Its threads each read
 * requests from /dev/fuse into memory of their own (reqmem) placed so
 * that a WRITE's data starts exactly at the memory's payload. A write of a
 * whole tile can then exchange that memory for one of its buffers instead
 * of copying a MiB (reqloop_write_memory, datapath_write): libfuse 3.14's
 * own loop reads into memory it keeps, which leaves the copy.
 */
#ifndef TESSERA_REQLOOP_H
#define TESSERA_REQLOOP_H

#include "reqmem.h"

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stddef.h>

/* Serves session on up to max_threads threads (started as requests come in
 * faster than the running ones take them) until it is unmounted or a signal
 * ends it (fuse_set_signal_handlers). Each thread reads requests of up to
 * payload_bytes of data (the session's max_write). 0 when the session ended
 * normally, -1 if no thread could start or reading the device failed. */
int reqloop_run(struct fuse_session *session, int max_threads, size_t payload_bytes);

/* Called by a write handler on a request thread of reqloop_run: the memory
 * the request was read into if buf is its payload (the request's data was
 * not copied elsewhere), else false. */
bool reqloop_write_memory(const char *buf, struct reqmem_slot *memory);

#endif
