/*
 * @file profileview.h
 * What `tessera profile show` prints about the access profiles of a set
 * of files: a table per file, JSON with every record, or an SVG heat map
 * of tiles x machines coloured by the bytes each machine moved. Pure
 * formatting over decoded records (toolmeta.h): no I/O but the stream
 * it writes to.
 *
 * Local bytes are the bytes a datanode on the accessing machine served;
 * remote bytes are the rest of that machine's bytes read and written.
 */
#ifndef TESSERA_TOOLS_PROFILEVIEW_H
#define TESSERA_TOOLS_PROFILEVIEW_H

#include "toolmeta.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Rows of one file's heat map: more tiles than this share rows. */
#define PROFILEVIEW_SVG_MAX_ROWS 64

/* One file's profile (borrowed). */
struct profileview_file {
    const char *path;
    uint64_t ino;
    bool profiling;
    const struct toolmeta_access *records;
    size_t count;
};

struct profileview_totals {
    size_t files;    /* with at least one record */
    size_t tiles;    /* distinct (file, tile) with counts */
    size_t machines; /* distinct machine names */
    uint64_t reads;
    uint64_t writes;
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t local_bytes;
    uint64_t remote_bytes; /* bytes read + written - local, never below 0 */
};

/* Sums files[count]. Returns 0 or -ENOMEM. */
int profileview_totals(const struct profileview_file *files, size_t count,
                       struct profileview_totals *out);

/*
 * The tables: per file a summary line, a line per machine and a line per
 * (tile, machine) record; then the totals when there is more than one
 * file. Returns 0 or -ENOMEM.
 */
int profileview_text(FILE *out, const struct profileview_file *files, size_t count);

/*
 * One JSON object: {"path": root, "files": [{path, ino, profiling, totals,
 * records: [...]}], "totals": {...}}. Returns 0 or -ENOMEM.
 */
int profileview_json(FILE *out, const char *root, const struct profileview_file *files,
                     size_t count);

/*
 * A standalone SVG document: a heat map per file with records, one column
 * per machine (all files share them), one row per tile or range of tiles,
 * each cell coloured by bytes read + written on a logarithmic scale, with
 * its numbers in a tooltip; titles, labels and a legend. Returns 0 or
 * -ENOMEM.
 */
int profileview_svg(FILE *out, const char *root, const struct profileview_file *files,
                    size_t count);

#endif
