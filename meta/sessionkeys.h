/*
 * @file sessionkeys.h
 * Which key owns which mount session id. A mount names its session in its
 * ZeroMQ routing id (leases_mount_of()), which the mount chooses: without
 * a binding, one mount key could send requests under another mount's
 * session and act on its open files (REPLICA_DROP's gate, releases), its
 * directory leases and its session's lease. Meta binds a session id to the
 * key (ZAP user id) of the first request that names it, and refuses the id
 * to every other key from then on.
 *
 * A binding lasts while its id is in use and SESSIONKEYS_IDLE_MS after its
 * last request, far longer than a session's or a directory lease's life,
 * so a binding is never forgotten while meta holds state under its id.
 * The table has room for SESSIONKEYS_MAX ids; when it is full of ids in
 * use, a new id is refused (the mount retries) rather than an owner
 * forgotten. Single-threaded, as meta's request loop.
 */
#ifndef TESSERA_META_SESSIONKEYS_H
#define TESSERA_META_SESSIONKEYS_H

#include <stddef.h>
#include <stdint.h>

#define SESSIONKEYS_MAX 16384
#define SESSIONKEYS_IDLE_MS (30 * 60 * 1000)

struct sessionkeys;

/* An empty table; NULL when out of memory. */
struct sessionkeys *sessionkeys_new(void);
/* Accepts NULL, clears *keysp. */
void sessionkeys_destroy(struct sessionkeys **keysp);

/*
 * A request from key_user ("ROLE:NAME", not "") naming session id mount
 * (!= 0) at now_ms: 0 when the id is key_user's (bound to it now if it was
 * free); -EPERM when another key owns it, whose name goes to owner
 * (owner_cap bytes); -ENOSPC when the table is full of ids in use.
 */
int sessionkeys_claim(struct sessionkeys *keys, uint64_t mount, const char *key_user,
                      int64_t now_ms, char *owner, size_t owner_cap);

/* How many ids are bound now. */
size_t sessionkeys_count(const struct sessionkeys *keys);

#endif
