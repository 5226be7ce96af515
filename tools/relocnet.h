/*
 * @file relocnet.h
 * The relocation executor's transport (librarian/relocate.h) over rpc
 * clients: MOVE_* to tessera-meta, TILE_PULL and TILE_FENCE to the
 * datanodes at the addresses NODE_LIST gave. Each worker handle owns its
 * own meta client and opens a client per datanode the first time it needs
 * one (ZeroMQ sockets are not shared between threads).
 */
#ifndef TESSERA_TOOLS_RELOCNET_H
#define TESSERA_TOOLS_RELOCNET_H

#include "toolmeta.h"
#include "relocate.h"

#include <stddef.h>

struct relocnet;

/*
 * A transport to meta at meta_endpoint and the datanodes in nodes[count]
 * (copied), every call with timeout_ms. NULL when out of memory.
 */
struct relocnet *relocnet_new(const char *meta_endpoint, const struct toolmeta_node *nodes,
                              size_t count, int timeout_ms);
/* Frees; the handles its transport opened must be closed first. Accepts NULL. */
void relocnet_destroy(struct relocnet **netp);
/* Fills *transport with functions over net (borrowed until relocnet_destroy()). */
void relocnet_transport(struct relocnet *net, struct relocate_transport *transport);

#endif
