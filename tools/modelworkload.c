/*
 * @file modelworkload.c
 * See modelworkload.h.  The array form "array:SHAPE:TYPE[:mesh=AxB]" is
 * the short spelling of an arrayspec (arrayspec.h): every dimension BLOCK
 * over the mesh when one is given, "*" (one chunk) when not.
 */
#include "modelworkload.h"

#include "arrayhome.h"
#include "arraylayout.h"
#include "fmt.h"
#include "util.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void modelworkload_init(struct modelworkload *work)
{
    *work = (struct modelworkload){ .op = PERFMODEL_READ, .bytes = 1ull << 30,
                                    .tile_bytes = 1u << 20, .clients = 1, .mounts = 1,
                                    .copies = 1 };
}

/* "host1,host2,...": the machines the mounts are on. */
static int modelworkload_machines(struct modelworkload *work, const char *value, char *err,
                                  size_t cap)
{
    size_t count = 0;
    for (const char *at = value;; at++) {
        const char *end = strchr(at, ',');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        if (len == 0 || len >= MODELWORKLOAD_MACHINE_MAX || count == MODELWORKLOAD_MAX_MACHINES) {
            snprintf(err, cap,
                     "machines=%s: expected 1 to %d machine names (each under %d bytes) "
                     "separated by commas",
                     value, MODELWORKLOAD_MAX_MACHINES, MODELWORKLOAD_MACHINE_MAX);
            return -1;
        }
        memcpy(work->machines[count], at, len);
        work->machines[count++][len] = '\0';
        if (!end)
            break;
        at = end;
    }
    work->n_machines = count;
    return 0;
}

/* "array:16384x4096:f32:mesh=2x2" into an arrayspec. */
static int modelworkload_array(struct modelworkload *work, const char *value, char *err,
                               size_t cap)
{
    char copy[ARRAYSPEC_TEXT_MAX];
    char text[ARRAYSPEC_TEXT_MAX + 64];
    char message[ARRAYSPEC_MESSAGE_MAX];
    if (strlen(value) >= sizeof(copy)) {
        snprintf(err, cap, "layout too long");
        return -1;
    }
    strcpy(copy, value);
    char *save = NULL;
    char *shape = strtok_r(copy + strlen("array:"), ":", &save);
    char *type = strtok_r(NULL, ":", &save);
    char *mesh = strtok_r(NULL, ":", &save);
    if (!shape || !type || strtok_r(NULL, ":", &save) ||
        (mesh && strncmp(mesh, "mesh=", 5) != 0)) {
        snprintf(err, cap, "layout=%s: expected array:SHAPE:TYPE[:mesh=AxB], e.g. "
                 "array:16384x4096:f32:mesh=2x2", value);
        return -1;
    }
    size_t dims = 1;
    for (const char *p = shape; *p; p++)
        dims += *p == 'x';
    char dist[ARRAYSPEC_MAX_DIMS * 6 + 1] = "";
    for (size_t d = 0; d < dims && d < ARRAYSPEC_MAX_DIMS + 1; d++)
        strcat(dist, d == 0 ? (mesh ? "BLOCK" : "*") : (mesh ? ",BLOCK" : ",*"));
    snprintf(text, sizeof(text), "%s %s %s%s%s", type, shape, dist, mesh ? " " : "",
             mesh ? mesh : "");
    if (arrayspec_parse(text, strlen(text), &work->array, message, sizeof(message)) != 0) {
        snprintf(err, cap, "layout=%s: %s", value, message);
        return -1;
    }
    uint64_t bytes = work->array.element_bytes;
    for (uint32_t d = 0; d < work->array.ndims; d++)
        bytes *= work->array.extent[d];
    work->bytes = bytes;
    work->is_array = 1;
    return 0;
}

static int modelworkload_count(const char *key, const char *value, long max, long *out,
                               char *err, size_t cap)
{
    if (util_parse_long(value, 1, max, out) != 0) {
        snprintf(err, cap, "%s=%s: expected a whole number from 1 to %ld", key, value, max);
        return -1;
    }
    return 0;
}

int modelworkload_set(struct modelworkload *work, const char *key, const char *value, char *err,
                      size_t cap)
{
    long n;
    uint64_t size;
    if (strcmp(key, "op") == 0) {
        if (strcmp(value, "read") != 0 && strcmp(value, "write") != 0) {
            snprintf(err, cap, "op=%s: expected read or write", value);
            return -1;
        }
        work->op = value[0] == 'r' ? PERFMODEL_READ : PERFMODEL_WRITE;
    } else if (strcmp(key, "size") == 0 || strcmp(key, "tile") == 0) {
        if (util_parse_size(value, &size) != 0 || size == 0 ||
            (key[0] == 't' && size > ARRAYSPEC_THRESHOLD_MAX)) {
            snprintf(err, cap, "%s=%s: expected a size such as 4096, 256K, 1M or 1G%s", key, value,
                     key[0] == 't' ? " (at most 1G)" : "");
            return -1;
        }
        if (key[0] == 't')
            work->tile_bytes = size;
        else if (!work->is_array)
            work->bytes = size;
        else {
            snprintf(err, cap, "size=%s: an array's size is its shape's", value);
            return -1;
        }
    } else if (strcmp(key, "clients") == 0) {
        if (modelworkload_count(key, value, PERFMODEL_MAX_CLIENTS, &n, err, cap) != 0)
            return -1;
        work->clients = (size_t)n;
    } else if (strcmp(key, "mounts") == 0) {
        if (modelworkload_count(key, value, PERFMODEL_MAX_CLIENTS, &n, err, cap) != 0)
            return -1;
        work->mounts = (size_t)n;
    } else if (strcmp(key, "machines") == 0) {
        return modelworkload_machines(work, value, err, cap);
    } else if (strcmp(key, "nodes") == 0) {
        if (modelworkload_count(key, value, PERFMODEL_MAX_NODES, &n, err, cap) != 0)
            return -1;
        work->nodes = (size_t)n;
    } else if (strcmp(key, "copies") == 0) {
        if (modelworkload_count(key, value, 8, &n, err, cap) != 0)
            return -1;
        work->copies = (unsigned)n;
    } else if (strcmp(key, "layout") == 0) {
        if (strcmp(value, "linear") == 0)
            work->is_array = 0;
        else if (strncmp(value, "array:", 6) == 0)
            return modelworkload_array(work, value, err, cap);
        else {
            snprintf(err, cap, "layout=%s: expected linear or array:SHAPE:TYPE[:mesh=AxB]",
                     value);
            return -1;
        }
    } else {
        snprintf(err, cap,
                 "unknown key %s (op, size, tile, clients, mounts, machines, nodes, copies, "
                 "layout)",
                 key);
        return -1;
    }
    return 0;
}

int modelworkload_parse_words(struct modelworkload *work, int count, char *const *words,
                              char *err, size_t cap)
{
    for (int i = 0; i < count; i++) {
        const char *eq = strchr(words[i], '=');
        char key[32];
        if (!eq || eq == words[i] || (size_t)(eq - words[i]) >= sizeof(key)) {
            snprintf(err, cap, "%s: expected KEY=VALUE", words[i]);
            return -1;
        }
        memcpy(key, words[i], (size_t)(eq - words[i]));
        key[eq - words[i]] = '\0';
        if (modelworkload_set(work, key, eq + 1, err, cap) != 0)
            return -1;
    }
    return 0;
}

struct modelworkload_ini {
    struct modelworkload *work;
    char *err;
    size_t cap;
    int failed;
};

static int modelworkload_ini_key(void *user, const char *section, const char *name,
                                 const char *value)
{
    struct modelworkload_ini *ini = user;
    if (ini->failed)
        return 1;
    if (strcmp(section, "workload") != 0) {
        snprintf(ini->err, ini->cap, "section [%s]: expected [workload]", section);
        ini->failed = 1;
        return 0;
    }
    if (modelworkload_set(ini->work, name, value, ini->err, ini->cap) != 0) {
        ini->failed = 1;
        return 0;
    }
    return 1;
}

int modelworkload_read_file(struct modelworkload *work, const char *path, char *err, size_t cap)
{
    char reason[256] = "";
    struct modelworkload_ini ini = { work, reason, sizeof(reason), 0 };
    int line = ini_parse(path, modelworkload_ini_key, &ini);
    if (line == 0)
        return 0;
    if (line < 0)
        snprintf(err, cap, "%s: cannot read it%s", path, line == -1 ? "" : " (out of memory)");
    else
        snprintf(err, cap, "%s:%d: %s", path, line, reason[0] ? reason : "not KEY = VALUE");
    return -1;
}

int modelwhatif_parse(const char *text, struct modelwhatif *whatif, char *err, size_t cap)
{
    char copy[256];
    if (strlen(text) >= sizeof(copy)) {
        snprintf(err, cap, "--what-if too long");
        return -1;
    }
    strcpy(copy, text);
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        long n;
        if (strcmp(item, "disk=inf") == 0)
            whatif->inf.disk_inf = 1;
        else if (strcmp(item, "net=inf") == 0)
            whatif->inf.net_inf = 1;
        else if (strcmp(item, "cpu=inf") == 0)
            whatif->inf.cpu_inf = 1;
        else if (strncmp(item, "nodes=", 6) == 0 &&
                 util_parse_long(item + 6, 1, PERFMODEL_MAX_NODES, &n) == 0)
            whatif->nodes = (size_t)n;
        else if (strncmp(item, "tile=", 5) == 0 &&
                 util_parse_size(item + 5, &whatif->tile_bytes) == 0 &&
                 whatif->tile_bytes > 0 && whatif->tile_bytes <= ARRAYSPEC_THRESHOLD_MAX)
            ;
        else {
            snprintf(err, cap, "--what-if %s: expected disk=inf, net=inf, cpu=inf, nodes=N or "
                     "tile=SIZE, separated by commas", item);
            return -1;
        }
    }
    return 0;
}

void modelwhatif_apply(const struct modelwhatif *whatif, struct modelworkload *work)
{
    if (whatif->nodes)
        work->nodes = whatif->nodes;
    if (whatif->tile_bytes)
        work->tile_bytes = whatif->tile_bytes;
}

void modelworkload_describe(const struct modelworkload *work, char *out, size_t cap)
{
    char size[16], tile[16], layout[ARRAYSPEC_TEXT_MAX] = "linear";
    fmt_size(work->bytes, size, sizeof(size));
    fmt_size(work->tile_bytes, tile, sizeof(tile));
    if (work->is_array) {
        struct arrayspec spec = work->array;
        spec.threshold = (uint32_t)work->tile_bytes;
        snprintf(layout, sizeof(layout), "array ");
        arrayspec_format(&spec, layout + 6, sizeof(layout) - 6);
    }
    size_t mounts = modelworkload_mounts(work);
    snprintf(out, cap, "%s %s, %s tiles, %zu client%s on %zu mount%s%s, %u cop%s, %s",
             work->op == PERFMODEL_READ ? "read" : "write", size, tile, work->clients,
             work->clients == 1 ? "" : "s", mounts, mounts == 1 ? "" : "s",
             work->n_machines > 1 ? " on several machines" : "", work->copies,
             work->copies == 1 ? "y" : "ies", layout);
}

size_t modelworkload_mounts(const struct modelworkload *work)
{
    size_t mounts = work->mounts > work->n_machines ? work->mounts : work->n_machines;
    return mounts < work->clients ? mounts : work->clients;
}

int modelworkload_place(const struct modelworkload *work, const int *machine, size_t n_nodes,
                        struct modelplacement *out, char *err, size_t cap)
{
    *out = (struct modelplacement){ 0 };
    if (!work->is_array)
        return 0;
    struct arraylayout *layout = malloc(sizeof(*layout));
    struct placement_node *nodes = calloc(n_nodes ? n_nodes : 1, sizeof(*nodes));
    char message[ARRAYSPEC_MESSAGE_MAX];
    struct arrayspec spec = work->array;
    spec.threshold = (uint32_t)work->tile_bytes;
    int rc = -1;
    if (!layout || !nodes) {
        snprintf(err, cap, "out of memory");
        goto out;
    }
    if (arraylayout_init(layout, &spec, message, sizeof(message)) != 0) {
        snprintf(err, cap, "the array with %s tiles: %s", "these", message);
        goto out;
    }
    uint64_t count = arraylayout_tile_count(layout);
    if (count > (64u << 20)) {
        snprintf(err, cap, "%llu tiles: too many to model (use larger tiles)",
                 (unsigned long long)count);
        goto out;
    }
    out->n_tiles = (size_t)count;
    out->tile_nodes = malloc(count * sizeof(uint32_t));
    out->tile_lens = malloc(count * sizeof(uint32_t));
    if (!out->tile_nodes || !out->tile_lens) {
        snprintf(err, cap, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n_nodes; i++)
        nodes[i] = (struct placement_node){ .id = (uint32_t)i, .up = 1,
                                            .machine = (uint32_t)machine[i] };
    for (uint64_t t = 0; t < count; t++) {
        uint64_t chunk = 0;
        uint32_t home = 0;
        if (arrayhome_chunk_of(layout, t, &chunk) != 0 ||
            arrayhome_pick(nodes, n_nodes, 0, chunk, &home) != 0) {
            snprintf(err, cap, "cannot place tile %llu", (unsigned long long)t);
            goto out;
        }
        out->tile_nodes[t] = home;
        out->tile_lens[t] = arraylayout_tile_bytes(layout, t);
    }
    rc = 0;
out:
    if (rc != 0)
        modelplacement_free(out);
    free(layout);
    free(nodes);
    return rc;
}

void modelplacement_free(struct modelplacement *placement)
{
    free(placement->tile_nodes);
    free(placement->tile_lens);
    *placement = (struct modelplacement){ 0 };
}
