/*
 * @file fallocplan.c
 * See fallocplan.h.
 */
#include "fallocplan.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdint.h>
#include <string.h>

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}
static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static void zero_add(struct fallocplan *plan, uint64_t low, uint64_t high)
{
    if (high > low)
        plan->zero[plan->zero_count++] = (struct fallocplan_range){low, high - low};
}

int fallocplan_make(int mode, uint64_t offset, uint64_t length, uint64_t size, uint32_t tile_bytes,
                    bool array, struct fallocplan *plan)
{
    const int known = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
    memset(plan, 0, sizeof(*plan));
    if (mode & ~known)
        return -EOPNOTSUPP;
    if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))
        return -EINVAL;
    if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
        return -EOPNOTSUPP; /* as fallocate(2) says */
    if (length == 0 || tile_bytes == 0)
        return -EINVAL;
    if (offset > INT64_MAX || length > INT64_MAX - offset)
        return -EFBIG;
    uint64_t end = offset + length;
    bool keep_size = (mode & FALLOC_FL_KEEP_SIZE) != 0;
    plan->new_size = keep_size ? size : max_u64(size, end);
    if (!(mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))) {
        plan->space_bytes = length;
        return 0;
    }
    /* Nothing past the end of the file (as it will be) needs zeros. */
    uint64_t low = offset;
    uint64_t high = min_u64(end, plan->new_size);
    if (low >= high)
        return 0;
    if (array) {
        zero_add(plan, low, high);
        return 0;
    }
    uint64_t first = (low + tile_bytes - 1) / tile_bytes;
    /* A range that reaches the end takes the end's tile whole: its bytes
     * past the end are no one's. */
    uint64_t after =
        high >= plan->new_size ? (high + tile_bytes - 1) / tile_bytes : high / tile_bytes;
    if (first >= after) {
        zero_add(plan, low, high);
        return 0;
    }
    plan->drop = true;
    plan->first_tile = first;
    plan->last_tile = after - 1;
    zero_add(plan, low, min_u64(high, first * (uint64_t)tile_bytes));
    zero_add(plan, max_u64(low, after * (uint64_t)tile_bytes), high);
    return 0;
}
