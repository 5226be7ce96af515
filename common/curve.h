/*
 * @file curve.h
 * CURVE on every ZeroMQ socket of this process, and the ZAP handler that
 * decides which peers a server lets in (RFC 27, inproc://zeromq.zap.01).
 *
 * The keys (keys.h) live in one directory; a process is given its own pair
 * file (`--key DIR/NAME.key`) and finds the rest beside it:
 *   - every client socket (rpc.c) authenticates with that pair and checks
 *     the server against DIR/server.pub;
 *   - a server (meta, datanode: curve_serve()) presents DIR/server.key and
 *     lets in only peers whose public key is in DIR/known_keys and not
 *     revoked. The file is reread when it changes (checked twice a second),
 *     so `tessera keys revoke` takes effect without a restart.
 * Revocation is checked at the handshake and, through
 * curve_user_is_current(), on every request (rpc.c): a revoked key's live
 * connections get TS_ERR_PERM from then on, and its new ones are refused.
 *
 * Without a key the process speaks plain ZeroMQ; a server then refuses to
 * listen beyond loopback unless curve_allow_insecure(true) was called.
 *
 * Call curve_use_key() and curve_serve() from main() before any socket is
 * made; curve_stop() before zmq_ctx_term().
 */
#ifndef TESSERA_CURVE_H
#define TESSERA_CURVE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Loads this process's pair from key_path and DIR/server.pub from its
 * directory. 0, or -errno with why saying what to fix (keys_pair_read()).
 */
int curve_use_key(const char *key_path, char *why, size_t why_cap);
/* Whether curve_use_key() succeeded: client sockets use CURVE. */
bool curve_enabled(void);
/* The key file in use ("" when none). */
const char *curve_key_path(void);
/* The absolute path of its directory ("" when none). */
const char *curve_key_dir(void);

/*
 * For a server, after curve_use_key(): loads DIR/server.key and
 * DIR/known_keys and starts the ZAP handler thread. 0 or -errno with why.
 */
int curve_serve(char *why, size_t why_cap);
/* Stops the ZAP handler (joins its thread); harmless without one. */
void curve_stop(void);

/*
 * What a daemon's main() calls with its --key FILE (NULL or "": none) and
 * --insecure, serve for meta and datanodes: curve_allow_insecure(),
 * curve_use_key(), curve_serve(). 0, or -1 after logging why.
 */
int curve_setup(const char *key_path, bool insecure, bool serve);

/* Lets a server without keys listen beyond loopback (--insecure). */
void curve_allow_insecure(bool allow);

/* Sets the client options of a new socket (CURVE when enabled). 0 or -1. */
int curve_apply_client(void *socket);
/*
 * Sets the server options of a new socket about to bind endpoint: CURVE
 * when serving; else refuses (-EPERM, logged with the fix) a non-loopback
 * endpoint unless insecure mode was allowed, and warns when it was.
 */
int curve_apply_server(void *socket, const char *endpoint);

/* tcp://127.x.y.z:P, tcp://localhost:P, ipc:// and inproc:// endpoints. */
bool curve_endpoint_is_loopback(const char *endpoint);

/*
 * Whether a request's ZAP user id ("ROLE:NAME", the one this process's
 * handler gave at the handshake) is still a known, unrevoked key. True
 * when not serving with CURVE (no user ids at all).
 */
bool curve_user_is_current(const char *user_id);

#endif
