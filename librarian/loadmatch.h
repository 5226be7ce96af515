/*
 * @file loadmatch.h
 * Load Balance Matching (seed 003, Wu et al., section 2): choose which
 * machine serves each I/O role so that the most loaded server's remote
 * transfer is smallest.
 *
 * The I/O matrix W has one row per role (a disk chunk of an array file,
 * a tile group of a linear file) and one column per machine; w[i][j] is
 * the bytes machine j moves to or from role i. A role served on machine
 * k moves its row's bytes over the network except w[i][k], which stays
 * on k's local disk: the workload matrix Y has y[i][k] = sum_j w[i][j] -
 * w[i][k]. LBM picks one distinct machine per role minimising
 * max_i y[i][k_i]: it sorts the distinct entries of Y and binary-searches
 * them for the smallest bound B such that the bipartite graph of edges
 * with y <= B has a matching that covers every role (the paper's Figure
 * 4, with Hopcroft-Karp from hopcroftkarp.h as the maximum-cardinality
 * matcher), O(m n^1.5 log(mn)).
 */
#ifndef TESSERA_LOADMATCH_H
#define TESSERA_LOADMATCH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Assigns roles to machines. io_matrix is role_count x machine_count,
 * row-major, in bytes. On success machine_of_role[i] is role i's machine
 * (all distinct) and *bottleneck the largest y[i][machine_of_role[i]],
 * the predicted remote transfer of the most loaded server. Returns 0;
 * -EINVAL for a NULL argument or more roles than machines (a role needs a
 * machine of its own, as in the paper's m <= n); -EOVERFLOW when a row's
 * sum does not fit in 64 bits; -ENOMEM. No roles is a success with
 * *bottleneck 0.
 */
int loadmatch_assign(const uint64_t *io_matrix, size_t role_count, size_t machine_count,
                     size_t *machine_of_role, uint64_t *bottleneck);

/*
 * The same search on a workload matrix the caller built (role_count x
 * machine_count, row-major): for callers whose rows also count bytes of
 * machines that may not serve (accessors without a datanode), so that Y is
 * not W's row sum minus one entry. Same results and errors.
 */
int loadmatch_assign_workload(const uint64_t *workload, size_t role_count, size_t machine_count,
                              size_t *machine_of_role, uint64_t *bottleneck);

/*
 * The workload matrix Y of io_matrix (same shape) into workload. Returns
 * 0, -EINVAL for NULL, -EOVERFLOW when a row's sum overflows.
 */
int loadmatch_workload(const uint64_t *io_matrix, size_t role_count, size_t machine_count,
                       uint64_t *workload);

#endif
