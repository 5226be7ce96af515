/*
 * @file replymem.h
 * The datanode's memory cap (--memory): the bytes of TILE_READ replies it
 * has read from disk and handed to ZeroMQ, which sends them as fast as each
 * reader takes them. Many mounts reading at once, or one reading slowly,
 * would otherwise leave ever more of them queued. Over the cap the loop
 * takes no more requests (ZeroMQ then stops reading its peers once their
 * queues of 8 are full) until ZeroMQ has sent enough to come back under
 * it: the callback that frees a sent reply wakes the loop through an
 * eventfd. Safe from any thread.
 */
#ifndef TESSERA_DATANODE_REPLYMEM_H
#define TESSERA_DATANODE_REPLYMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct replymem;

/* A cap of cap bytes of replies in flight; -errno on failure. */
int replymem_new(uint64_t cap, struct replymem **memp);
void replymem_destroy(struct replymem **memp);

/* A reply buffer of `bytes`, counted until replymem_free(); NULL without memory. */
void *replymem_alloc(struct replymem *mem, size_t bytes);
/* Frees a buffer from replymem_alloc (the rpc_response data_free callback). */
void replymem_free(void *data, void *hint);

/*
 * Whether the loop may take another request: the replies in flight are
 * under the cap. When they are not, the eventfd becomes readable once they
 * are again.
 */
bool replymem_room(struct replymem *mem);
/* Becomes readable when the replies come back under the cap (for zmq_poll). */
int replymem_event_fd(const struct replymem *mem);
/* Empties the eventfd after it was readable. */
void replymem_collect(struct replymem *mem);
/* The bytes of replies in flight now, and the most there ever were. */
uint64_t replymem_used(const struct replymem *mem);
uint64_t replymem_peak(const struct replymem *mem);
/* How many times replymem_room() answered false. */
uint64_t replymem_full_count(const struct replymem *mem);

#endif
