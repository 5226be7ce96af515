/*
 * @file hopcroftkarp.h
 * Maximum-cardinality matching in a bipartite graph by Hopcroft and Karp
 * (O(E sqrt(V))): the matcher Load Balance Matching (loadmatch.h) runs at
 * every step of its binary search. Pure: no I/O, no globals.
 */
#ifndef TESSERA_HOPCROFTKARP_H
#define TESSERA_HOPCROFTKARP_H

#include <stddef.h>

/* The marker of an unmatched vertex in a matching array. */
#define HOPCROFTKARP_UNMATCHED SIZE_MAX

/*
 * A bipartite graph in compressed rows: the edges of left vertex u go to
 * right vertices edge_right[edge_start[u] .. edge_start[u + 1] - 1].
 * edge_start has left_count + 1 entries; every edge_right[] is below
 * right_count. Borrowed by hopcroftkarp_match(), never changed.
 */
struct hopcroftkarp_graph {
    size_t left_count;
    size_t right_count;
    const size_t *edge_start;
    const size_t *edge_right;
};

/*
 * Finds a maximum-cardinality matching: match_of_left[u] is the right
 * vertex matched to left vertex u, or HOPCROFTKARP_UNMATCHED; *matched is
 * the number of matched pairs. match_of_left has left_count entries.
 * Deterministic: the same graph gives the same matching. Returns 0,
 * -EINVAL for a NULL argument or an edge to a right vertex out of range,
 * -ENOMEM.
 */
int hopcroftkarp_match(const struct hopcroftkarp_graph *graph, size_t *match_of_left,
                       size_t *matched);

#endif
