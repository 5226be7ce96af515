/*
 * @file metatarget.c
 * See metatarget.h.
 */
#include "metatarget.h"

#include "clusterconf.h"
#include "fmt.h"
#include "util.h"

#define METATARGET_MAX_TIMEOUT_MS 600000

int metatarget_option(struct metatarget *target, int option, const char *arg, const char **why)
{
    switch (option) {
    case METATARGET_OPT_STATE:
        if (fmt_into(target->state_dir, sizeof(target->state_dir), "%s", arg) != 0) {
            *why = "state directory name too long:";
            return -1;
        }
        return 1;
    case METATARGET_OPT_META:
        if (fmt_into(target->endpoint, sizeof(target->endpoint), "%s", arg) != 0) {
            *why = "endpoint too long:";
            return -1;
        }
        return 1;
    case METATARGET_OPT_TIMEOUT:
        if (util_parse_long(arg, 1, METATARGET_MAX_TIMEOUT_MS, &target->timeout_ms) != 0) {
            *why = "--timeout-ms wants 1..600000, got";
            return -1;
        }
        return 1;
    default: return 0;
    }
}

const char *metatarget_check(const struct metatarget *target)
{
    if (target->state_dir[0] && target->endpoint[0])
        return "give --state or --meta, not both";
    return NULL;
}

int metatarget_resolve(struct metatarget *target, const char *who)
{
    if (target->endpoint[0])
        return 0;
    return clusterconf_find_meta(target->state_dir, target->endpoint, sizeof(target->endpoint),
                                 who);
}
