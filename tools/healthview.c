/*
 * @file healthview.c
 * See healthview.h.
 */
#include "healthview.h"

#include "cliargs.h"
#include "fmt.h"
#include "jsonname.h"
#include "viewargs.h"
#include "status.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HEALTHVIEW_WHO "tessera health"
#define HEALTHVIEW_DEFAULT_TIMEOUT_MS 2000

int healthview_fetch(struct rpc_client *client, int timeout_ms, struct healthview *health,
                     char *error_text, size_t error_cap)
{
    struct rpc_reply reply;
    int status = rpc_client_call(client, TS_OP_HEALTH, NULL, 0, NULL, 0, timeout_ms, &reply);

    memset(health, 0, sizeof(*health));
    if (error_text && error_cap > 0)
        error_text[0] = '\0';
    if (status != TS_OK) {
        if (error_text)
            rpc_reply_error_text(&reply, error_text, error_cap);
        rpc_reply_release(&reply);
        return status;
    }
    struct ts_health_rep *figures = &health->figures;
    if (ts_health_rep_decode(figures, reply.payload, reply.payload_len) != 0 ||
        figures->file_count > TS_MAX_HEALTH_FILES) {
        rpc_reply_release(&reply);
        return TS_ERR_BADMSG;
    }
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, figures->files.ptr, figures->files.len);
    for (uint32_t i = 0; i < figures->file_count; i++) {
        struct ts_health_file_rec record;
        if (ts_health_file_rec_read(&cursor, &record) != 0) {
            rpc_reply_release(&reply);
            return TS_ERR_BADMSG;
        }
        struct healthview_file *file = &health->files[i];
        file->ino = record.ino;
        file->tiles = record.tiles;
        ts_str_copy(record.path, file->path, sizeof(file->path));
    }
    health->file_count = figures->file_count;
    figures->files.ptr = NULL;
    figures->files.len = 0;
    rpc_reply_release(&reply);
    return TS_OK;
}

const char *healthview_state_name(uint32_t state)
{
    switch (state) {
    case TS_HEALTHY: return "HEALTHY";
    case TS_DEGRADED: return "DEGRADED";
    default: return "UNAVAILABLE";
    }
}

int healthview_exit_code(const struct healthview *health)
{
    switch (health->figures.state) {
    case TS_HEALTHY: return 0;
    case TS_DEGRADED: return HEALTHVIEW_EXIT_DEGRADED;
    default: return HEALTHVIEW_EXIT_UNAVAILABLE;
    }
}

/* "3m20s", "45s": an estimate of the time left. */
static void healthview_eta(uint64_t seconds, char *out, size_t cap)
{
    if (seconds >= 3600)
        snprintf(out, cap, "%" PRIu64 "h%02" PRIu64 "m", seconds / 3600, seconds / 60 % 60);
    else if (seconds >= 60)
        snprintf(out, cap, "%" PRIu64 "m%02" PRIu64 "s", seconds / 60, seconds % 60);
    else
        snprintf(out, cap, "%" PRIu64 "s", seconds);
}

void healthview_print(FILE *out, const struct healthview *health)
{
    const struct ts_health_rep *f = &health->figures;
    char bytes[16], done[16], rate[16], eta[48];

    if (f->pass_age_ms == UINT64_MAX) {
        fprintf(out, "health: not known yet (meta has not finished its first pass over the "
                     "tile map; try again in a few seconds)\n");
        return;
    }
    fmt_size(f->degraded_bytes, bytes, sizeof(bytes));
    fprintf(out, "health: %s: %" PRIu64 " tiles", healthview_state_name(f->state), f->tiles);
    if (f->degraded_tiles > 0)
        fprintf(out, ", %" PRIu64 " below their copies (%s)", f->degraded_tiles, bytes);
    if (f->unavailable_tiles > 0)
        fprintf(out, ", %" PRIu64 " with no replica up", f->unavailable_tiles);
    fprintf(out, " (checked %.1fs ago)\n", (double)f->pass_age_ms / 1000.0);
    fmt_size(f->repair_bytes_done, done, sizeof(done));
    fmt_size(f->repair_bytes_per_sec, rate, sizeof(rate));
    if (f->repair_steps_waiting > 0 || (f->degraded_tiles > 0 && f->repair_bytes_per_sec > 0)) {
        uint64_t left = f->repair_bytes_waiting > 0 ? f->repair_bytes_waiting : f->degraded_bytes;
        if (f->repair_bytes_per_sec > 0)
            healthview_eta(left / f->repair_bytes_per_sec, eta, sizeof(eta));
        else
            snprintf(eta, sizeof(eta), "?");
        fprintf(out, "repair: running, %s/s, %" PRIu64 " steps queued, ETA %s; %" PRIu64
                     " steps (%s) done",
                rate, f->repair_steps_waiting, eta, f->repair_steps_done, done);
    } else {
        fprintf(out, "repair: idle; %" PRIu64 " steps (%s) done", f->repair_steps_done, done);
    }
    if (f->repair_steps_failed > 0)
        fprintf(out, ", %" PRIu64 " failed (retried on the next pass)", f->repair_steps_failed);
    fprintf(out, " since meta started\n");
    for (uint32_t i = 0; i < health->file_count; i++)
        fprintf(out, "unavailable: %s (inode %" PRIu64 ", %" PRIu64 " tiles)\n",
                health->files[i].path[0] ? health->files[i].path : "(no name)",
                health->files[i].ino, health->files[i].tiles);
    if (f->unavailable_tiles > 0 && health->file_count == TS_MAX_HEALTH_FILES)
        fprintf(out, "unavailable: ... (the first %d files are named)\n", TS_MAX_HEALTH_FILES);
}

void healthview_print_json(FILE *out, const struct healthview *health)
{
    const struct ts_health_rep *f = &health->figures;
    json_t *files = json_array();
    json_t *root;

    for (uint32_t i = 0; files && i < health->file_count; i++) {
        json_t *file = json_pack("{s:I, s:I}", "ino", (json_int_t)health->files[i].ino, "tiles",
                                 (json_int_t)health->files[i].tiles);
        if (!file || jsonname_set(file, "path", health->files[i].path) != 0 ||
            json_array_append_new(files, file) != 0) {
            json_decref(files);
            files = NULL;
        }
    }
    root = json_pack(
        "{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:o}", "state",
        healthview_state_name(f->state), "known", f->pass_age_ms != UINT64_MAX, "tiles",
        (json_int_t)f->tiles, "degraded_tiles", (json_int_t)f->degraded_tiles, "degraded_bytes",
        (json_int_t)f->degraded_bytes, "unavailable_tiles", (json_int_t)f->unavailable_tiles,
        "checked_ms_ago", (json_int_t)(f->pass_age_ms == UINT64_MAX ? 0 : f->pass_age_ms),
        "repair", "steps_done", (json_int_t)f->repair_steps_done, "bytes_done",
        (json_int_t)f->repair_bytes_done, "bytes_per_sec", (json_int_t)f->repair_bytes_per_sec,
        "steps_queued", (json_int_t)f->repair_steps_waiting, "bytes_queued",
        (json_int_t)f->repair_bytes_waiting, "steps_failed", (json_int_t)f->repair_steps_failed,
        "unavailable_files", files);
    if (jsonname_print(out, root) != 0)
        fprintf(stderr, "tessera health: cannot write the JSON (out of memory?)\n");
}

static void healthview_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera health [--json] [--state DIR | --meta ENDPOINT] [--timeout-ms MS]\n"
            "\n"
            "Whether every tile has its copies: HEALTHY; DEGRADED (tiles below their copies,\n"
            "with the repair's rate and ETA); UNAVAILABLE (tiles with no replica on an up\n"
            "datanode, naming their files). As of meta's last pass over the tile map (every\n"
            "few seconds).\n"
            "\n"
            "  --json            one JSON object\n"
            "  --state DIR       the local cluster in DIR (default: $TESSERA_STATE, else\n"
            "                    $XDG_STATE_HOME/tessera, else ~/.local/state/tessera)\n"
            "  --meta ENDPOINT   ask this tessera-meta instead, e.g. tcp://10.0.0.1:7400\n"
            "  --timeout-ms MS   how long to wait for meta (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status: 0 HEALTHY, 3 DEGRADED, 4 UNAVAILABLE, 1 meta unreachable or\n"
            "failing (or health not known yet), 2 usage error.\n",
            HEALTHVIEW_DEFAULT_TIMEOUT_MS);
}

int healthview_main(int argc, char **argv)
{
    struct viewargs options;
    struct healthview health;
    char error_text[256];
    int exit_code = viewargs_parse(HEALTHVIEW_WHO, healthview_usage, HEALTHVIEW_DEFAULT_TIMEOUT_MS,
                                   argc, argv, &options);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    struct rpc_client *client = rpc_client_new(options.target.endpoint);
    if (!client) {
        fprintf(stderr, "tessera health: cannot use endpoint %s (expected tcp://HOST:PORT)\n",
                options.target.endpoint);
        return 1;
    }
    int status = healthview_fetch(client, (int)options.target.timeout_ms, &health, error_text,
                                  sizeof(error_text));
    rpc_client_destroy(&client);
    if (status != TS_OK) {
        if (status == TS_ERR_TIMEDOUT)
            fprintf(stderr,
                    "tessera health: cannot reach tessera-meta at %s: no reply within %ld ms "
                    "(is the cluster up? try: tessera up)\n",
                    options.target.endpoint, options.target.timeout_ms);
        else
            fprintf(stderr, "tessera health: tessera-meta at %s answered: %s%s%s\n",
                    options.target.endpoint, status_text(status), error_text[0] ? ": " : "",
                    error_text);
        return 1;
    }
    if (options.json)
        healthview_print_json(stdout, &health);
    else
        healthview_print(stdout, &health);
    if (health.figures.pass_age_ms == UINT64_MAX)
        return 1;
    return healthview_exit_code(&health);
}
