/*
 * @file loadtraverse.h
 * Load Balance Traversing (seed 003, Wu et al., section 3.3): server
 * placement in a cluster of same-cost subclusters joined by links along
 * an up-down routing tree. LBT first dispatches each server to a
 * subcluster so that the most loaded subtree link is least loaded, then
 * places the servers of each subcluster on its machines by Load Balance
 * Matching (loadmatch.h).
 *
 * The paper's definitions, over subclusters v and servers k (its "I/O
 * nodes"): r_r(v,k), r_w(v,k) the bytes the machines of v read from and
 * write to k; R_r(v,k), R_w(v,k) the same summed over the subtree T(v);
 * R'_r(v,k) = R_r(root,k) - R_r(v,k) and R'_w likewise (what the rest of
 * the cluster moves). For the link from v to its child c with I_c the
 * servers dispatched into T(c) (equations 1-3):
 *   L_d = sum_{k in I_c} R'_w(c,k) + sum_{k not in I_c} R_r(c,k)
 *   L_u = sum_{k in I_c} R'_r(c,k) + sum_{k not in I_c} R_w(c,k)
 *   L_L = max(L_d, L_u).
 * The paper's text has two typos this code does not copy: R_w is printed
 * as a sum of r_r, R'_w as R_r(r,k) - R_r(v,k); and Figure 9's step 2 says
 * "maximized" where its prose and worked example minimise M_L.
 *
 * Dispatch at subcluster v (Figure 9): the servers for T(v), hottest
 * first (largest R(root,k) = R_r + R_w; ties: lower index), each to the
 * option i in {v itself, its 1st child's subtree, ...} with the smallest
 * M_L, the largest link load of v's children if the server goes there
 * (equations 4, 5). Ties, which the paper leaves open, go to the option
 * whose child links carry the least in total, then to v itself, then to
 * the children in order: servers not dispatched yet count as outside
 * every subtree, so a server whose readers all sit in one subtree ties
 * "here" on M_L with that subtree (the other links' loads dominate), and
 * only the total tells them apart. Then LBM
 * over the machines of v for the servers kept at v, with W = read +
 * write bytes per machine, and the same recursively in each child.
 *
 * Two things the paper leaves open, settled here:
 * - Capacity: a server needs a machine of its own (LBM's m <= n), so an
 *   option is taken only when its subcluster (for v itself) or subtree
 *   still has a machine without a server. Dispatch never gets stuck: the
 *   caller gives no more servers than machines. Machines that cannot
 *   serve (can_serve, e.g. clients without a datanode) still make
 *   requests: they load the links and count in LBM's row sums, but are
 *   never chosen.
 * - Link speeds: the paper assumes equal links. Each link may carry a
 *   speed, and M_L compares loads as seconds (bytes / speed), which with
 *   equal speeds is the paper's comparison.
 */
#ifndef TESSERA_LOADTRAVERSE_H
#define TESSERA_LOADTRAVERSE_H

#include <stddef.h>
#include <stdint.h>

/* The parent of the routing tree's root. */
#define LOADTRAVERSE_ROOT SIZE_MAX

/*
 * A cluster and its servers' traffic. Children of a subcluster are taken
 * in index order (ch(v,1) is its lowest-index child). Everything is
 * borrowed.
 */
struct loadtraverse_input {
    size_t subcluster_count;
    /* Per subcluster: its parent, LOADTRAVERSE_ROOT for exactly one. */
    const size_t *parent;
    /* Per subcluster: the speed of its link to its parent (> 0); NULL: all equal. */
    const double *link_bytes_per_sec;
    size_t machine_count;
    const size_t *subcluster_of_machine; /* per machine */
    /* Per machine: nonzero if it may host a server; NULL: every machine may. */
    const unsigned char *can_serve;
    size_t server_count; /* <= the machines that can serve */
    /* server_count x machine_count, row-major: bytes each machine reads from each server. */
    const uint64_t *read_bytes;
    const uint64_t *write_bytes; /* the same shape: bytes written */
};

/* Called once per dispatch decision when a trace is given (tests, `tessera place`). */
struct loadtraverse_trace {
    void (*dispatched)(void *context, size_t at_subcluster, size_t server, size_t to_subcluster,
                       double max_link_seconds);
    void *context;
};

/*
 * Places every server: machine_of_server[k] and subcluster_of_server[k]
 * (server_count entries each; the machines are distinct). trace may be
 * NULL. Returns 0; -EINVAL for a NULL array, a tree that is not one tree
 * (no root, two roots, a cycle, a parent out of range), a machine in no
 * subcluster, a link speed <= 0, or more servers than machines that can serve;
 * -EOVERFLOW when byte sums overflow; -ENOMEM.
 */
int loadtraverse_assign(const struct loadtraverse_input *input,
                        const struct loadtraverse_trace *trace, size_t *machine_of_server,
                        size_t *subcluster_of_server);

/*
 * The downward and upward loads in bytes (equations 1, 2) of the link
 * from `child` to its parent when the servers with in_subtree[k] nonzero
 * are in T(child) and the others outside it. Returns 0, -EINVAL for the
 * root, an index out of range or any input loadtraverse_assign() refuses,
 * -EOVERFLOW, -ENOMEM.
 */
int loadtraverse_link_load(const struct loadtraverse_input *input, size_t child,
                           const unsigned char *in_subtree, uint64_t *down_bytes,
                           uint64_t *up_bytes);

#endif
