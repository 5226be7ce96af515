/*
 * @file roles.h
 * Which kind of cluster member may send which request: the one table
 * (roles.c) that meta's and every datanode's rpc server (rpc.c) consult
 * for each request before its handler runs.
 *
 * A member's kind is the ROLE of its key in known_keys ("ROLE:NAME", the
 * ZAP user id curve.c gives each connection): meta, datanode, mount or
 * admin. A request whose op the table does not allow to that role gets
 * TS_ERR_PERM and changes nothing. A link without CURVE has no user id
 * (""): every request is allowed, as before keys (--insecure, loopback).
 */
#ifndef TESSERA_ROLES_H
#define TESSERA_ROLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Role bits; a table entry is their union. */
#define ROLES_META 0x1u
#define ROLES_DATANODE 0x2u
#define ROLES_MOUNT 0x4u
#define ROLES_ADMIN 0x8u
#define ROLES_ANY (ROLES_META | ROLES_DATANODE | ROLES_MOUNT | ROLES_ADMIN)

/* The roles that may send op (0 for an op no one may send, or out of range). */
unsigned roles_allowed(uint16_t op);

/* The role bit of a ZAP user id "ROLE:NAME"; 0 when "" or not a known role. */
unsigned roles_of_user(const char *key_user);

/*
 * Whether a request of op from the peer with ZAP user id key_user may run:
 * true without a user id (no CURVE), else when the table allows its role.
 */
bool roles_permit(uint16_t op, const char *key_user);

/* The names of the roles in `roles`, ", "-separated ("none" for 0), into out. */
void roles_describe(unsigned roles, char *out, size_t cap);

#endif
