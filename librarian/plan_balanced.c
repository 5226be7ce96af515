/*
 * @file plan_balanced.c
 * The `balanced` policy (plan_balanced.h): the paper's coarse-grained
 * greedy over the cost matrix, its fine-grained split, a comparison with
 * the `frequent` placement and the current map, and a tile-by-tile
 * polish of the winner.
 *
 * State kept while balancing: column[j], the paper's running column sum
 * (the seconds already given to node j, tiles that cannot move included);
 * per tile, the nodes its units were given and how many units each has;
 * room[j], free bytes less the tiles this plan sends to j. A unit's cost
 * is recomputed from the work rather than stored, so a unit can move
 * between columns without drift beyond float rounding.
 */
#include "plan_balanced.h"

#include "plan_cost.h"
#include "plan_frequent.h"
#include "plan_work.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NO_NODE UINT32_MAX
/* Relative tolerance under which two column sums count as equal. */
#define BALANCE_EPSILON 1e-9

/* A piece of work placed as a whole: a tile, or one reader's reads of it. */
struct unit {
    size_t tile; /* work tile index */
    const struct plan_work_access *accesses;
    size_t access_count;
    double bytes; /* bytes its accesses move: the paper's S */
    uint64_t first_access_ns;
    size_t rank; /* among its tile's units */
    uint32_t node;
};

/* Where a tile's units went: planned.node[k] has units_on[k] of them. */
struct tile_share {
    struct plan_placement planned;
    uint32_t units_on[PLAN_MAX_COPIES];
};

struct balance {
    const struct plan_work *work;
    struct unit *units;
    size_t unit_count;
    struct tile_share *shares;
    double *column;
    uint64_t *room;
};

double plan_balanced_split_bytes(double share_i, double bandwidth_i, double share_j,
                                 double bandwidth_j, double nb)
{
    return (bandwidth_i * share_j - bandwidth_j * share_i) /
           (bandwidth_i + bandwidth_j + bandwidth_i * bandwidth_j / nb);
}

static double larger(double a, double b)
{
    return a > b ? a : b;
}

static bool less_than(double a, double b)
{
    return a < b - BALANCE_EPSILON * larger(a > 0 ? a : -a, b > 0 ? b : -b);
}

static bool about_equal(double a, double b)
{
    return !less_than(a, b) && !less_than(b, a);
}

static bool is_local(const struct plan_work *work, uint32_t node, size_t machine)
{
    return work->nodes[node].machine != PLAN_WORK_NO_MACHINE &&
           work->nodes[node].machine == machine;
}

/* Disk seconds of unit u on node n: the paper's S/B_j, summed. */
static double unit_disk(const struct plan_work *work, const struct unit *u, uint32_t n)
{
    double seconds = 0;
    for (size_t a = 0; a < u->access_count; a++) {
        seconds += (double)u->accesses[a].bytes_read / work->nodes[n].read_bytes_per_sec;
        seconds += (double)u->accesses[a].bytes_written / work->nodes[n].write_bytes_per_sec;
    }
    return seconds;
}

/* T[u][n]: disk seconds plus S/NB for each access not local to n. */
static double unit_cost(const struct plan_work *work, const struct unit *u, uint32_t n)
{
    double seconds = unit_disk(work, u, n);
    for (size_t a = 0; a < u->access_count; a++) {
        const struct plan_work_access *access = &u->accesses[a];
        if (!is_local(work, n, access->machine))
            seconds +=
                (double)(access->bytes_read + access->bytes_written) / work->network_bytes_per_sec;
    }
    return seconds;
}

static int share_find(const struct tile_share *share, uint32_t node)
{
    for (uint32_t k = 0; k < share->planned.count; k++) {
        if (share->planned.node[k] == node)
            return (int)k;
    }
    return -1;
}

/*
 * May unit u go to node n? n must be up; a node already given the tile
 * always may; otherwise the tile must stay within max_copies holders and
 * n must hold the tile now or have room for it.
 */
static bool unit_allowed(const struct balance *b, const struct unit *u, uint32_t n)
{
    const struct plan_work *work = b->work;
    const struct plan_work_tile *tile = &work->tiles[u->tile];
    const struct tile_share *share = &b->shares[u->tile];
    uint32_t distinct = share->planned.count;

    if (!work->nodes[n].up)
        return false;
    if (share_find(share, n) >= 0)
        return true;
    if (u->node != NO_NODE && share->units_on[share_find(share, u->node)] == 1)
        distinct--; /* u is the last unit on its node: that copy would go */
    if (distinct >= work->max_copies)
        return false;
    return plan_placement_has(&tile->current, n) || b->room[n] >= tile->tile->tile_bytes;
}

static void unit_assign(struct balance *b, struct unit *u, uint32_t n)
{
    const struct plan_work_tile *tile = &b->work->tiles[u->tile];
    struct tile_share *share = &b->shares[u->tile];
    int k = share_find(share, n);

    if (k < 0) {
        k = (int)share->planned.count++;
        share->planned.node[k] = n;
        share->units_on[k] = 0;
        if (!plan_placement_has(&tile->current, n))
            b->room[n] -= tile->tile->tile_bytes;
    }
    share->units_on[k]++;
    b->column[n] += unit_cost(b->work, u, n);
    u->node = n;
}

static void unit_unassign(struct balance *b, struct unit *u)
{
    const struct plan_work_tile *tile = &b->work->tiles[u->tile];
    struct tile_share *share = &b->shares[u->tile];
    uint32_t n = u->node;
    int k = share_find(share, n);

    b->column[n] -= unit_cost(b->work, u, n);
    if (--share->units_on[k] == 0) {
        for (uint32_t m = (uint32_t)k; m + 1 < share->planned.count; m++) {
            share->planned.node[m] = share->planned.node[m + 1];
            share->units_on[m] = share->units_on[m + 1];
        }
        share->planned.count--;
        if (!plan_placement_has(&tile->current, n))
            b->room[n] += tile->tile->tile_bytes;
    }
    u->node = NO_NODE;
}

static int compare_units(const void *a, const void *b)
{
    const struct unit *x = a;
    const struct unit *y = b;
    if (x->first_access_ns != y->first_access_ns)
        return x->first_access_ns < y->first_access_ns ? -1 : 1;
    if (x->tile != y->tile)
        return x->tile < y->tile ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return 0;
}

/* Reader rank inside a read-shared tile: most bytes first, then by name. */
static bool reads_before(const struct plan_work_access *a, const struct plan_work_access *b)
{
    if (a->bytes_read != b->bytes_read)
        return a->bytes_read > b->bytes_read;
    return a->machine < b->machine;
}

static bool read_shared(const struct plan_work *work, const struct plan_work_tile *tile)
{
    if (work->max_copies < 2 || tile->access_count < 2)
        return false;
    for (size_t a = 0; a < tile->access_count; a++) {
        if (tile->accesses[a].writes || tile->accesses[a].bytes_written)
            return false;
    }
    return true;
}

/*
 * Cuts the movable tiles into units, in greedy order, and charges the
 * tiles that cannot move to their current holders' columns.
 */
static int build_units(struct balance *b)
{
    const struct plan_work *work = b->work;

    b->units = calloc(work->access_count ? work->access_count : 1, sizeof(*b->units));
    if (!b->units)
        return -ENOMEM;
    for (size_t t = 0; t < work->tile_count; t++) {
        const struct plan_work_tile *tile = &work->tiles[t];
        size_t first = b->unit_count;

        if (!tile->movable) {
            plan_cost_tile(work, t, &tile->current, b->column, NULL);
            continue;
        }
        if (!read_shared(work, tile)) {
            struct unit *u = &b->units[b->unit_count++];
            u->tile = t;
            u->accesses = tile->accesses;
            u->access_count = tile->access_count;
            u->bytes = (double)tile->bytes_accessed;
            u->first_access_ns = tile->first_access_ns;
            u->node = NO_NODE;
            continue;
        }
        for (size_t a = 0; a < tile->access_count; a++) {
            struct unit *u = &b->units[b->unit_count++];
            u->tile = t;
            u->accesses = &tile->accesses[a];
            u->access_count = 1;
            u->bytes = (double)tile->accesses[a].bytes_read;
            u->first_access_ns = tile->accesses[a].first_access_ns;
            u->node = NO_NODE;
        }
        for (size_t i = first; i < b->unit_count; i++) {
            for (size_t k = first; k < b->unit_count; k++) {
                if (k != i && reads_before(b->units[k].accesses, b->units[i].accesses))
                    b->units[i].rank++;
            }
        }
    }
    qsort(b->units, b->unit_count, sizeof(*b->units), compare_units);
    return 0;
}

/* True when n holds the tile now or was given it: a tie goes there. */
static bool sticky(const struct balance *b, const struct unit *u, uint32_t n)
{
    return share_find(&b->shares[u->tile], n) >= 0 ||
           plan_placement_has(&b->work->tiles[u->tile].current, n);
}

/*
 * Section 4.3.1: "Our algorithm will start from one data chunk C_i and
 * assign it to the disk with the lowest cost, and then update the matrix
 * T by adding the lowest cost to other unassigned data chunks in the same
 * column".
 */
static void coarse_grained(struct balance *b)
{
    const struct plan_work *work = b->work;

    for (size_t i = 0; i < b->unit_count; i++) {
        struct unit *u = &b->units[i];
        uint32_t best = NO_NODE;
        double best_cost = 0;

        for (uint32_t n = 0; n < work->node_count; n++) {
            double cost;
            if (!unit_allowed(b, u, n))
                continue;
            cost = b->column[n] + unit_cost(work, u, n);
            if (best == NO_NODE || less_than(cost, best_cost) ||
                (about_equal(cost, best_cost) && sticky(b, u, n) && !sticky(b, u, best))) {
                best = n;
                best_cost = cost;
            }
        }
        /* A movable tile has an up holder, which is always allowed. */
        if (best != NO_NODE)
            unit_assign(b, u, best);
    }
}

struct candidate {
    size_t unit;
    double delta; /* column seconds the move adds overall: T[u][i] - T[u][j] */
};

static int compare_candidates(const void *a, const void *b)
{
    const struct candidate *x = a;
    const struct candidate *y = b;
    if (x->delta != y->delta)
        return x->delta < y->delta ? -1 : 1;
    if (x->unit != y->unit)
        return x->unit < y->unit ? -1 : 1;
    return 0;
}

/*
 * Section 4.3.2: moves part of busy node j's share to node i. The
 * paper's S and B for a share that mixes reads and writes: S_j is the
 * bytes j's column stands for at the bandwidth j delivers on this share,
 * and B_i what i would deliver on the same mix. Returns true when some
 * unit moved.
 */
static bool split_share(struct balance *b, uint32_t j, uint32_t i, struct candidate *candidates)
{
    const struct plan_work *work = b->work;
    double share_bytes = 0;
    double disk_j = 0;
    double disk_i = 0;
    double bandwidth_j;
    double bandwidth_i;
    double s;
    double moved_bytes = 0;
    size_t count = 0;
    bool moved = false;

    for (size_t k = 0; k < b->unit_count; k++) {
        const struct unit *u = &b->units[k];
        if (u->node != j)
            continue;
        share_bytes += u->bytes;
        disk_j += unit_disk(work, u, j);
        disk_i += unit_disk(work, u, i);
        candidates[count].unit = k;
        candidates[count].delta = unit_cost(work, u, i) - unit_cost(work, u, j);
        count++;
    }
    if (share_bytes <= 0 || disk_j <= 0 || disk_i <= 0)
        return false;
    bandwidth_j = share_bytes / disk_j;
    bandwidth_i = share_bytes / disk_i;
    s = plan_balanced_split_bytes(b->column[i] * bandwidth_i, bandwidth_i,
                                  b->column[j] * bandwidth_j, bandwidth_j,
                                  work->network_bytes_per_sec);
    if (s <= 0)
        return false;

    qsort(candidates, count, sizeof(*candidates), compare_candidates);
    for (size_t c = 0; c < count; c++) {
        struct unit *u = &b->units[candidates[c].unit];
        double after_i;
        double after_j;
        if (moved_bytes + u->bytes / 2 > s || !unit_allowed(b, u, i))
            continue;
        after_i = b->column[i] + unit_cost(work, u, i);
        after_j = b->column[j] - unit_cost(work, u, j);
        if (!less_than(larger(after_i, after_j), b->column[j]))
            continue;
        unit_unassign(b, u);
        unit_assign(b, u, i);
        moved_bytes += u->bytes;
        moved = true;
    }
    return moved;
}

static int fine_grained(struct balance *b)
{
    const struct plan_work *work = b->work;
    struct candidate *candidates;
    uint32_t *receivers;
    size_t limit = 4 * b->unit_count + 64;

    candidates = calloc(b->unit_count ? b->unit_count : 1, sizeof(*candidates));
    receivers = calloc(work->node_count ? work->node_count : 1, sizeof(*receivers));
    if (!candidates || !receivers) {
        free(candidates);
        free(receivers);
        return -ENOMEM;
    }
    for (size_t round = 0; round < limit && work->node_count > 1; round++) {
        uint32_t j = 0;
        size_t receiver_count = 0;
        bool moved = false;

        for (uint32_t n = 1; n < work->node_count; n++) {
            if (b->column[n] > b->column[j])
                j = n;
        }
        /* Receivers, least busy first (insertion sort: few nodes). */
        for (uint32_t n = 0; n < work->node_count; n++) {
            size_t at = receiver_count;
            if (n == j || !work->nodes[n].up)
                continue;
            while (at > 0 && b->column[n] < b->column[receivers[at - 1]]) {
                receivers[at] = receivers[at - 1];
                at--;
            }
            receivers[at] = n;
            receiver_count++;
        }
        for (size_t r = 0; r < receiver_count && !moved; r++) {
            if (!less_than(b->column[receivers[r]], b->column[j]))
                break;
            moved = split_share(b, j, receivers[r], candidates);
        }
        if (!moved)
            break;
    }
    free(candidates);
    free(receivers);
    return 0;
}

/* The holders balancing gave each tile, primary first. */
static void balanced_targets(const struct balance *b, struct plan_placement *targets)
{
    const struct plan_work *work = b->work;

    for (size_t t = 0; t < work->tile_count; t++) {
        const struct plan_work_tile *tile = &work->tiles[t];
        const struct tile_share *share = &b->shares[t];
        uint32_t primary = 0;

        if (!tile->movable || share->planned.count == 0) {
            targets[t] = tile->current;
            continue;
        }
        /* Keep the primary if it stays; else the node with the most units. */
        for (uint32_t k = 1; k < share->planned.count; k++) {
            if (share->units_on[k] > share->units_on[primary])
                primary = k;
        }
        if (share_find(share, tile->current.node[0]) >= 0)
            primary = (uint32_t)share_find(share, tile->current.node[0]);
        targets[t].count = 0;
        targets[t].node[targets[t].count++] = share->planned.node[primary];
        for (uint32_t k = 0; k < share->planned.count; k++) {
            if (k != primary)
                targets[t].node[targets[t].count++] = share->planned.node[k];
        }
    }
}

/* The busy time of every node if the targets were carried out. */
static void predict(const struct plan_work *work, const struct plan_placement *targets,
                    struct plan_placement *finals, double *node_seconds)
{
    for (size_t t = 0; t < work->tile_count; t++) {
        if (work->tiles[t].movable)
            plan_work_finalize(work, t, &targets[t], &finals[t]);
        else
            finals[t] = work->tiles[t].current;
    }
    plan_cost_work(work, finals, node_seconds, NULL);
}

/* Vectors and counters the polishing pass works in. */
struct polish {
    const struct plan_work *work;
    const double *reference; /* the chosen candidate's busy times: never exceeded */
    double *seconds;         /* busy times of the targets as they stand */
    double *per_tile;        /* one tile's share of them */
    double *trial;           /* the busy times with one tile changed */
    double *scratch;         /* 2 * node_count, for plan_cost_compare() */
    uint64_t *claimed;       /* bytes the targets send to each node */
};

static bool same_holders(const struct plan_placement *a, const struct plan_placement *b)
{
    return a->count == b->count && memcmp(a->node, b->node, a->count * sizeof(*a->node)) == 0;
}

/* Fills p->trial with the busy times if tile t went from `from` to `to`. */
static void polish_trial(struct polish *p, size_t t, const struct plan_placement *from,
                         const struct plan_placement *to)
{
    size_t nodes = p->work->node_count;

    memset(p->per_tile, 0, nodes * sizeof(*p->per_tile));
    plan_cost_tile(p->work, t, from, p->per_tile, NULL);
    for (size_t n = 0; n < nodes; n++)
        p->trial[n] = p->seconds[n] - p->per_tile[n];
    plan_cost_tile(p->work, t, to, p->trial, NULL);
}

/* Does `to` fit, given what the other tiles' targets claim already? */
static bool polish_fits(const struct polish *p, size_t t, const struct plan_placement *from,
                        const struct plan_placement *to)
{
    const struct plan_work_tile *tile = &p->work->tiles[t];
    for (uint32_t k = 0; k < to->count; k++) {
        uint32_t n = to->node[k];
        if (plan_placement_has(&tile->current, n) || plan_placement_has(from, n))
            continue;
        if (p->claimed[n] + tile->tile->tile_bytes > p->work->nodes[n].free_bytes)
            return false;
    }
    return true;
}

static void polish_switch(struct polish *p, size_t t, struct plan_placement *chosen,
                          const struct plan_placement *to)
{
    const struct plan_work_tile *tile = &p->work->tiles[t];
    for (uint32_t k = 0; k < chosen->count; k++) {
        if (!plan_placement_has(&tile->current, chosen->node[k]))
            p->claimed[chosen->node[k]] -= tile->tile->tile_bytes;
    }
    for (uint32_t k = 0; k < to->count; k++) {
        if (!plan_placement_has(&tile->current, to->node[k]))
            p->claimed[to->node[k]] += tile->tile->tile_bytes;
    }
    *chosen = *to;
    memcpy(p->seconds, p->trial, p->work->node_count * sizeof(*p->seconds));
}

/*
 * Tile by tile, after the best candidate is chosen (chosen[] holds its
 * finalized holders and is updated in place):
 * - a change that buys nothing is undone: when the tile's current holders
 *   make the busy-time vector no worse (makespan first, then the next
 *   busiest node...), it keeps them. The greedy places every tile afresh
 *   and would otherwise pay a transfer for a tie;
 * - otherwise the tile takes the other candidates' holders for it when
 *   that makes the vector strictly better and fits in the space left: the
 *   greedy and `frequent` each get some tiles right, and neither alone is
 *   best everywhere.
 * The result is never worse than the chosen candidate (p->reference).
 */
static void polish_targets(struct polish *p, struct plan_placement *chosen,
                           struct plan_placement *const alternatives[2])
{
    const struct plan_work *work = p->work;
    size_t nodes = work->node_count;

    for (size_t t = 0; t < work->tile_count; t++) {
        const struct plan_work_tile *tile = &work->tiles[t];
        if (!tile->movable)
            continue;
        if (!same_holders(&chosen[t], &tile->current)) {
            polish_trial(p, t, &chosen[t], &tile->current);
            if (plan_cost_compare(p->trial, p->seconds, nodes, p->scratch) <= 0 &&
                plan_cost_compare(p->trial, p->reference, nodes, p->scratch) <= 0) {
                polish_switch(p, t, &chosen[t], &tile->current);
                continue;
            }
        }
        for (int a = 0; a < 2; a++) {
            const struct plan_placement *to = &alternatives[a][t];
            if (same_holders(to, &chosen[t]) || !polish_fits(p, t, &chosen[t], to))
                continue;
            polish_trial(p, t, &chosen[t], to);
            if (plan_cost_compare(p->trial, p->seconds, nodes, p->scratch) < 0)
                polish_switch(p, t, &chosen[t], to);
        }
    }
}

static void balance_release(struct balance *b)
{
    free(b->units);
    free(b->shares);
    free(b->column);
    free(b->room);
}

/*
 * True when predicted seconds a beat b by more than PLAN_MODEL_MARGIN:
 * moving tiles for a gain within the model's own error is not worth their
 * transfer.
 */
static bool model_faster(double a, double b)
{
    return a < b * (1.0 - PLAN_MODEL_MARGIN);
}

/*
 * Balanced, frequent and current targets; the best of them (by the
 * predictor when there is one, else by plan_cost's busy times), polished,
 * emitted.
 */
static int plan_best(const struct plan_work *work, struct plan *out)
{
    enum { CURRENT, BALANCED, FREQUENT, CANDIDATES };
    static const enum plan_basis basis[CANDIDATES] = {PLAN_BASIS_CURRENT, PLAN_BASIS_BALANCED,
                                                      PLAN_BASIS_FREQUENT};
    size_t tiles = work->tile_count ? work->tile_count : 1;
    size_t nodes = work->node_count ? work->node_count : 1;
    struct balance b = {.work = work};
    struct plan_placement *targets[CANDIDATES] = {0};
    struct plan_placement *finals[CANDIDATES] = {0};
    double *seconds[CANDIDATES] = {0};
    double model_seconds[CANDIDATES] = {0};
    double *vectors = NULL;
    uint64_t *claimed = NULL;
    int best = CURRENT;
    int rc = -ENOMEM;

    b.shares = calloc(tiles, sizeof(*b.shares));
    b.column = calloc(nodes, sizeof(*b.column));
    b.room = calloc(nodes, sizeof(*b.room));
    /* Comparison scratch (2 n), then polishing's reference, per-tile and trial. */
    vectors = calloc(5 * nodes, sizeof(*vectors));
    claimed = calloc(nodes, sizeof(*claimed));
    if (!b.shares || !b.column || !b.room || !vectors || !claimed)
        goto out;
    for (int c = 0; c < CANDIDATES; c++) {
        targets[c] = calloc(tiles, sizeof(*targets[c]));
        finals[c] = calloc(tiles, sizeof(*finals[c]));
        seconds[c] = calloc(nodes, sizeof(*seconds[c]));
        if (!targets[c] || !finals[c] || !seconds[c])
            goto out;
    }
    for (uint32_t n = 0; n < work->node_count; n++)
        b.room[n] = work->nodes[n].free_bytes;

    rc = build_units(&b);
    if (rc < 0)
        goto out;
    coarse_grained(&b);
    if (!work->coarse_only) {
        rc = fine_grained(&b);
        if (rc < 0)
            goto out;
    }
    balanced_targets(&b, targets[BALANCED]);
    rc = plan_frequent_targets(work, targets[FREQUENT]);
    if (rc < 0)
        goto out;
    for (size_t t = 0; t < work->tile_count; t++)
        targets[CURRENT][t] = work->tiles[t].current;

    /* The model decides when it has a prediction for every candidate. */
    bool use_model = work->predictor != NULL;
    for (int c = 0; c < CANDIDATES; c++) {
        predict(work, targets[c], finals[c], seconds[c]);
        model_seconds[c] = plan_work_model_seconds(work, finals[c]);
        use_model = use_model && model_seconds[c] > 0;
    }
    /* Ties keep the earlier candidate: the current map, then the greedy. */
    for (int c = BALANCED; c < CANDIDATES && !work->greedy_only; c++) {
        if (use_model ? model_faster(model_seconds[c], model_seconds[best])
                      : plan_cost_compare(seconds[c], seconds[best], work->node_count, vectors) < 0)
            best = c;
    }
    if (work->greedy_only)
        best = BALANCED;
    else if (best != CURRENT) {
        struct plan_placement *alternatives[2] = {finals[BALANCED], finals[FREQUENT]};
        struct polish p = {.work = work,
                           .reference = vectors + 2 * nodes,
                           .seconds = seconds[best],
                           .per_tile = vectors + 3 * nodes,
                           .trial = vectors + 4 * nodes,
                           .scratch = vectors,
                           .claimed = claimed};
        memcpy(vectors + 2 * nodes, seconds[best], work->node_count * sizeof(*vectors));
        for (size_t t = 0; t < work->tile_count; t++) {
            const struct plan_placement *final = &finals[best][t];
            for (uint32_t k = 0; k < final->count; k++) {
                if (!plan_placement_has(&work->tiles[t].current, final->node[k]))
                    claimed[final->node[k]] += work->tiles[t].tile->tile_bytes;
            }
        }
        /* targets[best] is free now: it keeps the unpolished placement, in
         * case the model finds the polish (done by plan_cost's busy times)
         * slower. */
        memcpy(targets[best], finals[best], work->tile_count * sizeof(*finals[best]));
        polish_targets(&p, finals[best], alternatives);
        if (use_model &&
            model_faster(model_seconds[best], plan_work_model_seconds(work, finals[best])))
            memcpy(finals[best], targets[best], work->tile_count * sizeof(*finals[best]));
    }
    rc = plan_work_emit(work, finals[best], basis[best], out);
out:
    for (int c = 0; c < CANDIDATES; c++) {
        free(targets[c]);
        free(finals[c]);
        free(seconds[c]);
    }
    free(vectors);
    free(claimed);
    balance_release(&b);
    return rc;
}

int plan_balanced(const struct plan_cluster *cluster, const struct plan_profile *profile,
                  const struct plan_tilemap *map, const struct plan_options *options,
                  struct plan *out)
{
    struct plan_work work;
    int rc;

    if (!out)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    rc = plan_work_build(cluster, profile, map, options, &work);
    if (rc < 0)
        return rc;
    rc = plan_best(&work, out);
    plan_work_release(&work);
    return rc;
}
