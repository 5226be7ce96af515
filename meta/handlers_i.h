/*
 * @file handlers_i.h
 * What meta's handler files share, private to meta/handlers*.c (as
 * libfuse's lib/fuse_i.h): loading an inode, a directory or an entry's
 * inode with the status a reply needs, the lease check of every request
 * that reads or changes a leased directory, the mount that sent a request,
 * and the refusal text of the handlers that explain themselves. Defined in
 * handlers.c; handlers.c's @file paragraph gives the shape every handler
 * has.
 *
 * Every function returns a project status (status.h), never an errno, and
 * runs on the server's one thread: inside a transaction body (those taking
 * a txn) or in a handler.
 */
#ifndef TESSERA_META_HANDLERS_I_H
#define TESSERA_META_HANDLERS_I_H

#include "dirents.h"
#include "inodes.h"
#include "rpc.h"
#include "service.h"
#include "store.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define HANDLERS_WALK_MAX (1u << 20) /* parent-pointer steps before assuming a cycle */
#define HANDLERS_NSEC_PER_SEC 1000000000u
/* The size of an op's `why`: fits the reply's error text. */
#define HANDLERS_WHY_MAX 200

void handlers_time_set(int64_t *sec, uint32_t *nsec, struct timespec when);

/* The mount that sent request, 0 if none (leases.h). */
uint64_t handlers_sender_mount(const struct rpc_request *request);

/*
 * TS_ERR_LEASED when a mount other than the sender holds a lease on dir
 * (which asks that mount to give it back); the sender tries again.
 */
int handlers_lease_check(struct service *service, uint64_t sender, uint64_t dir);

/* Loads inode ino: TS_OK, TS_ERR_NOENT, or a failure status. */
int handlers_load_inode(struct store_txn *txn, uint64_t ino, struct inodes_record *record);

/* As handlers_load_inode(), and TS_ERR_NOTDIR if it is not a directory. */
int handlers_load_dir(struct store_txn *txn, uint64_t ino, struct inodes_record *record);

/*
 * As handlers_load_dir(), for a directory about to get a new entry: one
 * that was removed while open (nlink 0) takes none, as on Linux.
 */
int handlers_load_live_dir(struct store_txn *txn, uint64_t ino, struct inodes_record *record);

/* Loads the inode an entry names; a missing one means the store is damaged. */
int handlers_load_child(struct store_txn *txn, const struct dirents_entry *entry,
                        struct inodes_record *record);

/* Whether a request that takes no fields came without any. */
bool handlers_payload_empty(const struct rpc_request *request);

/* The op of handlers_getattr_body(): an inode number in, its record out. */
struct handlers_inode_op {
    uint64_t ino;
    struct inodes_record found;
};

/* A transaction body (arg: struct handlers_inode_op) that loads op->ino. */
int handlers_getattr_body(struct store_txn *txn, void *arg);

/* Passes a refusal's reason on as the reply's text; returns status. */
int handlers_refused(int status, const char *why, struct rpc_response *response);

/*
 * Loads inode ino: TS_OK, or TS_ERR_NOENT with why (HANDLERS_WHY_MAX
 * bytes), or a failure status.
 */
int handlers_load_inode_why(struct store_txn *txn, uint64_t ino, struct inodes_record *record,
                            char *why);

/* As handlers_load_inode_why(), and TS_ERR_INVAL with why unless it is a regular file. */
int handlers_load_file_why(struct store_txn *txn, uint64_t ino, struct inodes_record *record,
                           char *why);

#endif
