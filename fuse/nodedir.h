/*
 * @file nodedir.h
 * The client's directory of datanodes: node id -> connection pool, and
 * whether the node runs on this mount's machine. It is filled from meta's
 * NODE_LIST on first use and refreshed when a tile names a node it does not
 * know, or after a call to a node timed out (the node may have come back at
 * another address). Thread-safe.
 */
#ifndef TESSERA_NODEDIR_H
#define TESSERA_NODEDIR_H

#include "metaclient.h"
#include "rpc.h"

#include <netinet/in.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nodedir;

struct nodedir *nodedir_new(struct metaclient *meta, int io_timeout_ms);
void nodedir_destroy(struct nodedir **dirp);

/*
 * The datanodes that take new tiles (up, with room, not timed out here), as
 * of meta's list of at most a second ago: up to cap ids into ids.
 */
size_t nodedir_candidates(struct nodedir *dir, uint32_t *ids, size_t cap);

/*
 * True if datanode `node` runs on this mount's machine (its machine name,
 * as it registered with meta, is the one given to metaclient_new). Looked
 * up as a call to it would be: a node not in the list loaded yet has it
 * loaded again first (a fresh mount's first reads must not take its
 * datanodes for remote ones); one meta does not know is not local.
 */
bool nodedir_is_local(struct nodedir *dir, uint32_t node);

/*
 * The IPv4 address of datanode `node`'s endpoint (util_endpoint_ipv4).
 * 0; -ENOENT if meta does not know the node; -EINVAL if its endpoint has
 * no such address (ipc://, a host name, a wildcard).
 */
int nodedir_address(struct nodedir *dir, uint32_t node, struct in_addr *address);
/*
 * The endpoint the mount reaches node at, into out (cap bytes, NUL
 * included; cut if longer): for log lines that name a datanode. "?" when
 * meta does not know node.
 */
void nodedir_endpoint(struct nodedir *dir, uint32_t node, char *out, size_t cap);
/*
 * Loads the node list from meta again before the next call: a datanode
 * answered as if it were not the node the mount took it for (a lost tile).
 */
void nodedir_suspect(struct nodedir *dir);

/*
 * Sends op to datanode `node` and waits up to the I/O timeout, and on past
 * it while the node answers a PING from the same process (busy, not down),
 * up to 12 timeouts in all. Returns as
 * rpc_pool_call(); TS_ERR_IO if the node is unknown to meta, or down in
 * meta's list while another node is up at its address (a new data
 * directory registered as a new node there: logged once). A request
 * without an answer is sent once more if the node answers a PING from a
 * process younger than the request (a restarted node: the request was
 * lost with its old process); otherwise the node counts as down for one
 * I/O timeout, and calls to it fail at once with TS_ERR_TIMEDOUT, but for
 * one at a time, which PINGs it first and goes on if it answers. The
 * caller releases `reply` in every case.
 */
int nodedir_call(struct nodedir *dir, uint32_t node, uint16_t op, const void *payload,
                 size_t payload_len, const void *data, size_t data_len, struct rpc_reply *reply);
/*
 * As nodedir_call(), giving the data to ZeroMQ without a copy (rpc.h). It
 * is sent again (as nodedir_call's) only if the owner has a hold_fn.
 */
int nodedir_call_owned(struct nodedir *dir, uint32_t node, uint16_t op, const void *payload,
                       size_t payload_len, const void *data, size_t data_len,
                       const struct rpc_data_owner *owner, struct rpc_reply *reply);

#endif
