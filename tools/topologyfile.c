/*
 * @file topologyfile.c
 * See topologyfile.h. The file is read whole (bounded) and handed to the
 * pure parser in librarian/topology.c.
 */
#include "topologyfile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the whole file into a NUL-terminated buffer; 0 or a negative errno (-EFBIG when too big).
 */
static int topologyfile_read(const char *path, char **out)
{
    FILE *file = fopen(path, "r");
    char *text = NULL;
    size_t used = 0;
    int rc = 0;

    *out = NULL;
    if (!file)
        return -errno;
    text = malloc(TOPOLOGYFILE_MAX_BYTES + 1);
    if (!text) {
        fclose(file);
        return -ENOMEM;
    }
    used = fread(text, 1, TOPOLOGYFILE_MAX_BYTES + 1, file);
    if (ferror(file))
        rc = -EIO;
    else if (used > TOPOLOGYFILE_MAX_BYTES)
        rc = -EFBIG;
    else if (memchr(text, '\0', used))
        rc = -EINVAL; /* a binary file: the parser would stop at the NUL */
    fclose(file);
    if (rc < 0) {
        free(text);
        return rc;
    }
    text[used] = '\0';
    *out = text;
    return 0;
}

int topologyfile_load(const char *who, const char *path, struct topology *out)
{
    char error[256] = "";
    char *text;
    int rc = topologyfile_read(path, &text);

    memset(out, 0, sizeof(*out));
    if (rc < 0) {
        fprintf(stderr, "%s: --topology %s: %s\n", who, path,
                rc == -EFBIG    ? "larger than 4 MiB: not a topology file"
                : rc == -EINVAL ? "holds a NUL byte: not a text file"
                                : strerror(-rc));
        return 1;
    }
    rc = topology_parse(text, out, error, sizeof(error));
    free(text);
    if (rc < 0) {
        fprintf(stderr, "%s: --topology %s: %s\n", who, path,
                rc == -ENOMEM ? "out of memory" : error);
        return 1;
    }
    return 0;
}

static bool topologyfile_missing(const struct topology *topology, const char *machine)
{
    size_t subcluster;
    return machine && topology_subcluster_of(topology, machine, &subcluster) < 0;
}

int topologyfile_check(const char *who, const char *path, const struct topology *topology,
                       const struct plan_cluster *cluster, const struct plan_profile *profile)
{
    int exit_code = 0;

    for (size_t n = 0; n < cluster->node_count; n++) {
        const char *machine = cluster->nodes[n].machine;
        if (topologyfile_missing(topology, machine)) {
            fprintf(stderr, "%s: --topology %s: machine '%s' (datanode %u) is in no subcluster\n",
                    who, path, machine, (unsigned)cluster->nodes[n].id);
            exit_code = 1;
        }
    }
    for (size_t k = 0; k < profile->count; k++) {
        const char *machine = profile->accesses[k].machine;
        bool reported = false;
        if (!topologyfile_missing(topology, machine))
            continue;
        /* Name each machine once, not once per profile record. */
        for (size_t j = 0; j < k && !reported; j++)
            reported =
                profile->accesses[j].machine && strcmp(profile->accesses[j].machine, machine) == 0;
        for (size_t n = 0; n < cluster->node_count && !reported; n++)
            reported = cluster->nodes[n].machine && strcmp(cluster->nodes[n].machine, machine) == 0;
        if (!reported) {
            fprintf(stderr,
                    "%s: --topology %s: machine '%s' (in the profile) is in no subcluster\n", who,
                    path, machine);
            exit_code = 1;
        }
    }
    return exit_code;
}
