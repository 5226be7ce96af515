/*
 * @file fuzz_meta.c
 * libFuzzer target: tessera-meta's request handlers on arbitrary payloads.
 *
 * One store is created in a temporary directory at start and lives for the
 * whole run, so inputs build on each other's state (a MKNOD then a RENAME of
 * what it made). Each input is a u16 little-endian opcode and the payload;
 * the handler is called through handlers_table, the very table the daemon
 * serves from. The handler must return a known status, never crash, never
 * read outside the payload (ASan), and leave a reply that fits its buffer.
 */
#include "handlers.h"
#include "log.h"
#include "proto.h"
#include "service.h"
#include "status.h"

#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FUZZ_REPLY_CAP (TS_MAX_FRAME_BYTES - TS_HEADER_BYTES)

static struct service *fuzz_service;
static char fuzz_dir[PATH_MAX];
static uint8_t *fuzz_reply;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_remove(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static void fuzz_cleanup(void)
{
    service_close(&fuzz_service);
    nftw(fuzz_dir, fuzz_remove, 16, FTW_DEPTH | FTW_PHYS);
    free(fuzz_reply);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    (void)argc;
    (void)argv;
    /* Errors only: a store error during fuzzing is worth seeing, chatter is not. */
    log_init("fuzz_meta", LOG_LEVEL_ERROR);
    snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/fuzz_meta.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    fuzz_reply = malloc(FUZZ_REPLY_CAP);
    if (!fuzz_reply || !mkdtemp(fuzz_dir) ||
        service_open(fuzz_dir, SERVICE_DEFAULT_NODE_TIMEOUT_MS, &fuzz_service) != 0) {
        fprintf(stderr, "fuzz_meta: cannot create a store in %s\n", fuzz_dir);
        abort();
    }
    atexit(fuzz_cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rpc_request request;
    struct rpc_response response;
    uint16_t op;
    int status;

    if (size < 2 || size - 2 > TS_MAX_FRAME_BYTES - TS_HEADER_BYTES)
        return 0;
    op = (uint16_t)(data[0] | data[1] << 8);
    if (op >= TS_OP_MAX || !handlers_table[op])
        return -1; /* the server answers these itself; not worth keeping in the corpus */

    memset(&request, 0, sizeof(request));
    request.header.magic = TS_PROTO_MAGIC;
    request.header.version = TS_PROTO_VERSION;
    request.header.type = op;
    request.header.payload_bytes = (uint32_t)(size - 2);
    request.payload = data + 2;
    request.payload_len = size - 2;
    memset(&response, 0, sizeof(response));
    response.payload = fuzz_reply;
    response.payload_cap = FUZZ_REPLY_CAP;

    status = handlers_table[op](fuzz_service, &request, &response);

    if (strcmp(status_text(status), "unknown status") == 0 ||
        memchr(response.error_text, '\0', sizeof(response.error_text)) == NULL ||
        (status == TS_OK && response.payload_len > response.payload_cap) ||
        (status == TS_OK && response.data != NULL)) {
        fprintf(stderr, "fuzz_meta: %s returned status %d, reply %zu bytes\n", ts_op_name(op),
                status, response.payload_len);
        abort();
    }
    return 0;
}
