/*
 * @file hopcroftkarp.c
 * Hopcroft-Karp (hopcroftkarp.h). Each phase runs one breadth-first
 * search from every free left vertex, layering the graph by alternating
 * path length, then augments along a maximal set of vertex-disjoint
 * shortest paths found by depth-first search in that layering; at most
 * O(sqrt(V)) phases are needed. The depth-first search is iterative (an
 * explicit stack and a per-vertex edge cursor), so a long augmenting path
 * never costs C stack.
 */
#include "hopcroftkarp.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Layer of a left vertex not reached by this phase's search. */
#define LAYER_UNREACHED SIZE_MAX

struct matcher {
    const struct hopcroftkarp_graph *graph;
    size_t *match_of_left;
    size_t *match_of_right;
    size_t *layer;     /* per left vertex, this phase's BFS distance */
    size_t *queue;     /* BFS queue of left vertices */
    size_t *cursor;    /* per left vertex, next edge the DFS tries */
    size_t *stack;     /* DFS path of left vertices */
    size_t free_layer; /* layer of the shortest augmenting paths' last left vertex */
};

/*
 * Layers the left vertices by alternating distance from the free ones.
 * Returns true when some free right vertex is reachable, i.e. an
 * augmenting path exists.
 */
static bool layer_graph(struct matcher *m)
{
    const struct hopcroftkarp_graph *graph = m->graph;
    size_t head = 0, tail = 0;

    m->free_layer = LAYER_UNREACHED;

    for (size_t u = 0; u < graph->left_count; u++) {
        if (m->match_of_left[u] == HOPCROFTKARP_UNMATCHED) {
            m->layer[u] = 0;
            m->queue[tail++] = u;
        } else {
            m->layer[u] = LAYER_UNREACHED;
        }
    }
    while (head < tail) {
        size_t u = m->queue[head++];
        if (m->layer[u] > m->free_layer)
            break; /* only the shortest augmenting paths are wanted */
        for (size_t e = graph->edge_start[u]; e < graph->edge_start[u + 1]; e++) {
            size_t partner = m->match_of_right[graph->edge_right[e]];
            if (partner == HOPCROFTKARP_UNMATCHED) {
                if (m->free_layer == LAYER_UNREACHED)
                    m->free_layer = m->layer[u];
            } else if (m->layer[partner] == LAYER_UNREACHED) {
                m->layer[partner] = m->layer[u] + 1;
                m->queue[tail++] = partner;
            }
        }
    }
    return m->free_layer != LAYER_UNREACHED;
}

/*
 * Looks for a shortest augmenting path from free left vertex `start`
 * along the layering and flips it. Vertices that lead nowhere are taken
 * out of the layering so later searches this phase skip them. Returns
 * true when it augmented.
 */
static bool augment_from(struct matcher *m, size_t start)
{
    const struct hopcroftkarp_graph *graph = m->graph;
    size_t depth = 0;

    m->stack[depth++] = start;
    while (depth > 0) {
        size_t u = m->stack[depth - 1];
        bool descended = false;

        while (m->cursor[u] < graph->edge_start[u + 1]) {
            size_t v = graph->edge_right[m->cursor[u]];
            size_t partner = m->match_of_right[v];
            if (partner == HOPCROFTKARP_UNMATCHED && m->layer[u] == m->free_layer) {
                /* Flip the path: each stacked vertex takes its cursor's vertex. */
                for (size_t k = depth; k-- > 0;) {
                    size_t left = m->stack[k];
                    size_t right = graph->edge_right[m->cursor[left]];
                    m->match_of_left[left] = right;
                    m->match_of_right[right] = left;
                }
                return true;
            }
            if (partner != HOPCROFTKARP_UNMATCHED && m->layer[u] < m->free_layer &&
                m->layer[partner] == m->layer[u] + 1) {
                m->stack[depth++] = partner;
                descended = true;
                break;
            }
            m->cursor[u]++;
        }
        if (descended)
            continue;
        /* Dead end: drop u from the layering and try the parent's next edge. */
        m->layer[u] = LAYER_UNREACHED;
        depth--;
        if (depth > 0)
            m->cursor[m->stack[depth - 1]]++;
    }
    return false;
}

int hopcroftkarp_match(const struct hopcroftkarp_graph *graph, size_t *match_of_left,
                       size_t *matched)
{
    struct matcher m = {.graph = graph, .match_of_left = match_of_left};
    size_t left_slots, right_slots;
    size_t count = 0;
    int rc = -ENOMEM;

    if (!graph || !match_of_left || !matched || (graph->left_count && !graph->edge_start))
        return -EINVAL;
    for (size_t u = 0; u < graph->left_count; u++) {
        for (size_t e = graph->edge_start[u]; e < graph->edge_start[u + 1]; e++) {
            if (graph->edge_right[e] >= graph->right_count)
                return -EINVAL;
        }
    }
    left_slots = graph->left_count ? graph->left_count : 1;
    right_slots = graph->right_count ? graph->right_count : 1;
    m.match_of_right = malloc(right_slots * sizeof(*m.match_of_right));
    m.layer = malloc(left_slots * sizeof(*m.layer));
    m.queue = malloc(left_slots * sizeof(*m.queue));
    m.cursor = malloc(left_slots * sizeof(*m.cursor));
    m.stack = malloc(left_slots * sizeof(*m.stack));
    if (!m.match_of_right || !m.layer || !m.queue || !m.cursor || !m.stack)
        goto out;

    for (size_t u = 0; u < graph->left_count; u++)
        match_of_left[u] = HOPCROFTKARP_UNMATCHED;
    for (size_t v = 0; v < graph->right_count; v++)
        m.match_of_right[v] = HOPCROFTKARP_UNMATCHED;
    while (layer_graph(&m)) {
        for (size_t u = 0; u < graph->left_count; u++)
            m.cursor[u] = graph->edge_start[u];
        for (size_t u = 0; u < graph->left_count; u++) {
            if (match_of_left[u] == HOPCROFTKARP_UNMATCHED && augment_from(&m, u))
                count++;
        }
    }
    *matched = count;
    rc = 0;
out:
    free(m.match_of_right);
    free(m.layer);
    free(m.queue);
    free(m.cursor);
    free(m.stack);
    return rc;
}
