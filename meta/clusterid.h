/*
 * @file clusterid.h
 * The identity table: which cluster this store belongs to. One record,
 * "cluster_id" -> 16 random bytes, written in the transaction that first
 * asks for it (at start-up) and never changed, so every restart of meta
 * on the same store reports the same id, and two stores never share one.
 */
#ifndef TESSERA_META_CLUSTERID_H
#define TESSERA_META_CLUSTERID_H

#include "proto.h"
#include "store.h"

/*
 * The cluster id as TS_CLUSTER_ID_HEX lower-case hex digits and a NUL,
 * drawn from getrandom(2) and stored if the store has none yet (txn must
 * then be a write transaction). Returns 0 or a negative errno.
 */
int clusterid_get(struct store_txn *txn, char out[TS_CLUSTER_ID_HEX + 1]);

#endif
