/*
 * @file topology.h
 * A cluster's network topology for Load Balance Traversing
 * (loadtraverse.h): subclusters, the machines in each, and the up-down
 * routing tree joining them with each link's speed. Parsed from the text
 * of a `--topology FILE` (the caller reads the file: librarian/ does no
 * I/O). The format, one statement per line:
 *
 *   # a comment; blank lines are ignored
 *   subcluster NAME [parent NAME] [link RATE]
 *   machine NAME SUBCLUSTER
 *
 * - Exactly one subcluster has no parent: the root of the routing tree.
 *   A parent must be declared on an earlier line, so the file is a tree.
 * - RATE is the speed of the link to the parent in bytes per second: a
 *   whole number with an optional k, M or G suffix (10^3, 10^6, 10^9);
 *   without one, TOPOLOGY_DEFAULT_LINK_BYTES_PER_SEC. The root has no
 *   link.
 * - A machine is the name datanodes and mounts report (`--machine`), and
 *   belongs to one subcluster, declared on an earlier line.
 * - Names are at most TOPOLOGY_MAX_NAME bytes without white space; a name
 *   is declared once.
 *
 * Example: two racks joined through a core with a 1 Gbit/s link each.
 *   subcluster core
 *   subcluster rack-a parent core link 125M
 *   subcluster rack-b parent core link 125M
 *   machine node1 rack-a
 *   machine node2 rack-b
 */
#ifndef TESSERA_TOPOLOGY_H
#define TESSERA_TOPOLOGY_H

#include <stddef.h>

#define TOPOLOGY_MAX_NAME 255
/* A link without a `link` rate: 1 Gbit/s. */
#define TOPOLOGY_DEFAULT_LINK_BYTES_PER_SEC 125000000.0

/* Index of the root's parent in topology.parent. */
#define TOPOLOGY_ROOT ((size_t)-1)

struct topology {
    size_t subcluster_count;
    char **subcluster_names;
    size_t *parent;             /* per subcluster, TOPOLOGY_ROOT for the root */
    double *link_bytes_per_sec; /* per subcluster, its link to its parent (root: default) */
    size_t machine_count;
    char **machine_names;
    size_t *subcluster_of_machine;
};

/*
 * Parses `text` (NUL-terminated). On success returns 0 with *out to
 * topology_release(). On a bad file returns -EINVAL with a message
 * "line N: ..." (or "no subcluster" for an empty file) in error[0..size)
 * and *out empty; -ENOMEM likewise.
 */
int topology_parse(const char *text, struct topology *out, char *error, size_t error_size);

/* Frees what topology_parse() allocated and empties it; accepts NULL. */
void topology_release(struct topology *topology);

/* The subcluster of `machine`: 0 with *out, or -ENOENT when it is not listed. */
int topology_subcluster_of(const struct topology *topology, const char *machine, size_t *out);

/* The index of subcluster `name`: 0 with *out, or -ENOENT. */
int topology_subcluster_index(const struct topology *topology, const char *name, size_t *out);

#endif
