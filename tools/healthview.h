/*
 * @file healthview.h
 * `tessera health` and the health block of `tessera status`: meta's HEALTH
 * answer (proto.h) as text or JSON, and as an exit code scripts can test:
 * 0 HEALTHY, 3 DEGRADED, 4 UNAVAILABLE (1 and 2 keep their meaning: meta
 * unreachable or failing, usage error).
 */
#ifndef TESSERA_TOOLS_HEALTHVIEW_H
#define TESSERA_TOOLS_HEALTHVIEW_H

#include "proto.h"
#include "rpc.h"

#include <stdio.h>

#define HEALTHVIEW_EXIT_DEGRADED 3
#define HEALTHVIEW_EXIT_UNAVAILABLE 4
#define HEALTHVIEW_PATH_MAX 1024

struct healthview_file {
    uint64_t ino;
    uint64_t tiles;
    char path[HEALTHVIEW_PATH_MAX];
};

struct healthview {
    struct ts_health_rep figures; /* files/files blob not valid: see files[] */
    struct healthview_file files[TS_MAX_HEALTH_FILES];
    uint32_t file_count;
};

/* HEALTH on client; TS_OK and *health, or a status (error_text holds meta's text). */
int healthview_fetch(struct rpc_client *client, int timeout_ms, struct healthview *health,
                     char *error_text, size_t error_cap);
/* "HEALTHY", "DEGRADED", "UNAVAILABLE". */
const char *healthview_state_name(uint32_t state);
void healthview_print(FILE *out, const struct healthview *health);
void healthview_print_json(FILE *out, const struct healthview *health);
int healthview_exit_code(const struct healthview *health);

/* `tessera health [--json] [--state DIR | --meta ENDPOINT] [--timeout-ms MS]`. */
int healthview_main(int argc, char **argv);

#endif
