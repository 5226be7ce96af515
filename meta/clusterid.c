/*
 * @file clusterid.c
 * See identity.h. The id is random rather than derived from a host name or
 * a path: a cluster keeps it when its state directory is moved or its
 * ports change, and a copy of a store is the same cluster on purpose.
 */
#include "clusterid.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#define IDENTITY_CLUSTER_KEY "cluster_id"
#define IDENTITY_CLUSTER_BYTES (TS_CLUSTER_ID_HEX / 2)

int clusterid_get(struct store_txn *txn, char out[TS_CLUSTER_ID_HEX + 1])
{
    uint8_t id[IDENTITY_CLUSTER_BYTES];
    MDB_val value;
    int err =
        store_get(txn, STORE_IDENTITY, IDENTITY_CLUSTER_KEY, strlen(IDENTITY_CLUSTER_KEY), &value);

    if (err == 0 && value.mv_size != sizeof(id))
        return -EIO;
    if (err == 0)
        memcpy(id, value.mv_data, sizeof(id));
    if (err == -ENOENT) {
        if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id))
            return -EIO;
        err = store_put(txn, STORE_IDENTITY, IDENTITY_CLUSTER_KEY, strlen(IDENTITY_CLUSTER_KEY), id,
                        sizeof(id));
    }
    if (err != 0)
        return err;
    for (size_t i = 0; i < sizeof(id); i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
    return 0;
}
