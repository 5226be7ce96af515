/*
 * @file leases.h
 * Directory leases, in memory only: which mount may answer creates in a
 * directory itself (DIR_LEASE, CREATE_MANY in proto.h). While a mount holds
 * a directory's lease, every other process's request that reads the
 * directory's entries or attributes or changes them, but for removals of
 * names (handlers.c says why), is refused (TS_ERR_LEASED, which
 * the sender retries) and the lease is marked recalled: the holder's next
 * renewal fails, it sends the creates it answered and returns the lease,
 * and the retried request goes through. A holder that stops renewing (its
 * mount was killed) loses the lease after LEASES_TTL_MS. Lost on restart:
 * a holder's renewal then fails, and it sends what it has.
 */
#ifndef TESSERA_META_LEASES_H
#define TESSERA_META_LEASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEASES_MAX 256       /* directories leased at a time, over all mounts */
#define LEASES_TTL_MS 3000   /* a lease not renewed for this long lapses */

struct leases;

/* NULL when out of memory. */
struct leases *leases_new(void);
void leases_destroy(struct leases **leasesp);

/*
 * The mount id in a sender's routing id ('M' + 8 bytes + serial), or 0 for
 * a sender that is not a mount that names itself (tools, datanodes).
 */
uint64_t leases_mount_of(const uint8_t *peer, size_t peer_len);

/*
 * Grants dir's lease to mount (!= 0) at now_ms: 0, or -EBUSY when another
 * mount holds it or the table is full. A holder asking again renews.
 */
int leases_get(struct leases *leases, uint64_t dir, uint64_t mount, int64_t now_ms);
/* Renews mount's lease on dir: 0, or -EBUSY when it is recalled or not held. */
int leases_renew(struct leases *leases, uint64_t dir, uint64_t mount, int64_t now_ms);
/* Ends mount's lease on dir, if it holds it. */
void leases_return(struct leases *leases, uint64_t dir, uint64_t mount);
/*
 * Whether a request of `mount` (0: not a mount) touching dir must be
 * refused: another mount holds dir's lease. The lease is then recalled.
 */
bool leases_refuse(struct leases *leases, uint64_t dir, uint64_t mount, int64_t now_ms);

#endif
