/*
 * @file handlers_applylock.c
 * See handlers_applylock.h. Meta's repairer never takes this lease: it
 * restores lost copies and must not wait behind a long or stuck apply;
 * the journal already keeps the two apart tile by tile (a MOVE_BEGIN of a
 * tile with another entry is TS_ERR_BUSY), so the lease only has to keep
 * two tools from working the whole journal at once (one's abort undoing
 * the other's steps, both planning from the same snapshot).
 */
#include "handlers_applylock.h"

#include "applylock.h"
#include "handlers_i.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "util.h"

#include <stdio.h>
#include <time.h>

int handlers_applylock(void *ctx, const struct rpc_request *request,
                       struct rpc_response *response)
{
    struct service *service = ctx;
    struct applylock *lock = &service->apply_lock;
    struct ts_apply_lock_req message;
    struct ts_apply_lock_rep reply = {0};
    char holder[APPLYLOCK_HOLDER_MAX];
    int64_t now_ms = util_monotonic_ms();
    bool granted = false;

    if (ts_apply_lock_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.action > TS_APPLY_LOCK_RELEASE)
        return handlers_refused(TS_ERR_INVAL, "APPLY_LOCK: unknown action", response);
    if (message.action != TS_APPLY_LOCK_QUERY && message.token == 0)
        return handlers_refused(TS_ERR_INVAL, "APPLY_LOCK: token 0", response);
    if (ts_str_copy(message.holder, holder, sizeof(holder)) != 0)
        return handlers_refused(TS_ERR_INVAL, "APPLY_LOCK: holder description too long",
                                response);
    /* Another operator's terminal prints it: no control bytes. */
    for (char *c = holder; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    applylock_expire(lock, now_ms);
    if (message.action == TS_APPLY_LOCK_TAKE)
        granted = applylock_take(lock, message.token, holder, message.lease_ms,
                                 message.steps_total, message.steps_done, now_ms,
                                 (int64_t)time(NULL));
    else if (message.action == TS_APPLY_LOCK_RELEASE)
        granted = applylock_release(lock, message.token, now_ms);
    reply.granted = granted ? 1 : 0;
    reply.held = lock->held ? 1 : 0;
    reply.holder = ts_str_of(lock->holder);
    reply.since_sec = lock->since_sec;
    reply.steps_total = lock->steps_total;
    reply.steps_done = lock->steps_done;
    reply.left_ms = applylock_left_ms(lock, now_ms);
    return REPLY_ENCODE(apply_lock_rep, &reply, response);
}
