/*
 * @file handlers_metrics.c
 * See handlers_metrics.h. The reply lists the entries in the order the
 * daemons first announced themselves; one that no longer fits in a reply
 * frame is left out (a cluster of thousands of daemons fills well under
 * one frame: an entry is some 60 bytes).
 */
#include "handlers_metrics.h"

#include "metricsdir.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "util.h"

int handlers_metrics_list(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_metrics_list_rep reply = {.meta = ts_str_of(service->metrics_address)};
    struct ts_writer records;
    size_t count = 0;

    if (request->payload_len != 0)
        return reply_bad_message(response, request->header.type);
    const struct metricsdir_entry *entries = metricsdir_fresh(
        service->metrics_dir, util_monotonic_ms(), TS_METRICS_ENDPOINT_FRESH_MS, &count);
    /* Half the frame for the records leaves room for the rest of the reply. */
    ts_writer_init(&records, service->scratch, TS_MAX_FRAME_BYTES / 2);
    for (size_t i = 0; i < count; i++) {
        struct ts_metrics_endpoint_rec record = {.kind = entries[i].kind,
                                                 .id = entries[i].id,
                                                 .machine = ts_str_of(entries[i].machine),
                                                 .address = ts_str_of(entries[i].address)};
        size_t before = records.len;
        ts_metrics_endpoint_rec_write(&records, &record);
        if (records.failed) {
            records.len = before;
            break;
        }
        reply.count++;
    }
    reply.endpoints.ptr = (const char *)service->scratch;
    reply.endpoints.len = (uint32_t)records.len;
    return REPLY_ENCODE(metrics_list_rep, &reply, response);
}
