/*
 * @file profileview.c
 * See profileview.h. Machine names are gathered once into a sorted,
 * de-duplicated list (struct profileview_names) that orders the per-machine
 * lines and the heat map's columns, so every output lists machines in the
 * same order whatever order meta sent the records in.
 */
#include "profileview.h"

#include "fmt.h"
#include "jsonname.h"
#include "xmltext.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Heat map geometry, in SVG user units (pixels). */
#define SVG_MARGIN 16
#define SVG_LABEL_WIDTH 150
#define SVG_CELL_WIDTH 96
#define SVG_CELL_HEIGHT 16
#define SVG_TITLE_HEIGHT 28
#define SVG_HEADER_HEIGHT 22
#define SVG_GAP 18
#define SVG_LEGEND_SWATCH 18
#define SVG_LEGEND_STEPS 6
#define SVG_EMPTY_COLOUR "#f2f2f2"

struct profileview_names {
    const char **names; /* borrowed from the records; sorted, unique */
    size_t count;
};

static int profileview_compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int profileview_names_build(const struct profileview_file *files, size_t count,
                                   struct profileview_names *out)
{
    size_t total = 0, unique = 0;

    memset(out, 0, sizeof(*out));
    for (size_t f = 0; f < count; f++)
        total += files[f].count;
    if (total == 0)
        return 0;
    out->names = malloc(total * sizeof(*out->names));
    if (!out->names)
        return -ENOMEM;
    for (size_t f = 0; f < count; f++) {
        for (size_t r = 0; r < files[f].count; r++)
            out->names[unique++] = files[f].records[r].machine;
    }
    qsort(out->names, total, sizeof(*out->names), profileview_compare_names);
    unique = 0;
    for (size_t i = 0; i < total; i++) {
        if (unique == 0 || strcmp(out->names[unique - 1], out->names[i]) != 0)
            out->names[unique++] = out->names[i];
    }
    out->count = unique;
    return 0;
}

/* The index of name in the list (it is there by construction). */
static size_t profileview_names_find(const struct profileview_names *names, const char *name)
{
    const char **found = bsearch(&name, names->names, names->count, sizeof(*names->names),
                                 profileview_compare_names);
    return found ? (size_t)(found - names->names) : 0;
}

static void profileview_free_names(struct profileview_names *names)
{
    free(names->names);
    memset(names, 0, sizeof(*names));
}

static uint64_t profileview_remote(const struct toolmeta_access *record)
{
    uint64_t moved = record->bytes_read + record->bytes_written;
    return moved > record->local_bytes ? moved - record->local_bytes : 0;
}

static void profileview_add(struct profileview_totals *totals,
                            const struct toolmeta_access *record)
{
    totals->reads += record->reads;
    totals->writes += record->writes;
    totals->bytes_read += record->bytes_read;
    totals->bytes_written += record->bytes_written;
    totals->local_bytes += record->local_bytes;
    totals->remote_bytes += profileview_remote(record);
}

static int profileview_compare_tiles(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Distinct tile indices among a file's records. */
static int profileview_distinct_tiles(const struct profileview_file *file, size_t *out)
{
    uint64_t *tiles;
    size_t distinct = 0;

    *out = 0;
    if (file->count == 0)
        return 0;
    tiles = malloc(file->count * sizeof(*tiles));
    if (!tiles)
        return -ENOMEM;
    for (size_t i = 0; i < file->count; i++)
        tiles[i] = file->records[i].tile;
    qsort(tiles, file->count, sizeof(*tiles), profileview_compare_tiles);
    for (size_t i = 0; i < file->count; i++) {
        if (i == 0 || tiles[i] != tiles[i - 1])
            distinct++;
    }
    free(tiles);
    *out = distinct;
    return 0;
}

int profileview_totals(const struct profileview_file *files, size_t count,
                       struct profileview_totals *out)
{
    struct profileview_names names;
    int rc;

    memset(out, 0, sizeof(*out));
    for (size_t f = 0; f < count; f++) {
        size_t tiles;
        rc = profileview_distinct_tiles(&files[f], &tiles);
        if (rc != 0)
            return rc;
        out->tiles += tiles;
        out->files += files[f].count > 0;
        for (size_t r = 0; r < files[f].count; r++)
            profileview_add(out, &files[f].records[r]);
    }
    rc = profileview_names_build(files, count, &names);
    if (rc != 0)
        return rc;
    out->machines = names.count;
    profileview_free_names(&names);
    return 0;
}

/* "read 4.0M, written 0B; local 2.0M (50%), remote 2.0M" */
static void profileview_summary(FILE *out, const struct profileview_totals *totals)
{
    char read[16], written[16], local[16], remote[16];
    uint64_t moved = totals->local_bytes + totals->remote_bytes;

    fmt_size(totals->bytes_read, read, sizeof(read));
    fmt_size(totals->bytes_written, written, sizeof(written));
    fmt_size(totals->local_bytes, local, sizeof(local));
    fmt_size(totals->remote_bytes, remote, sizeof(remote));
    fprintf(out,
            "reads %" PRIu64 ", writes %" PRIu64 "; read %s, written %s; local %s (%.0f%%), "
            "remote %s\n",
            totals->reads, totals->writes, read, written, local,
            moved ? 100.0 * (double)totals->local_bytes / (double)moved : 0.0, remote);
}

/* One table line: label columns then the counts. */
static void profileview_row(FILE *out, const char *tile, const char *machine,
                            const struct profileview_totals *counts)
{
    char read[16], written[16], local[16], remote[16];

    fmt_size(counts->bytes_read, read, sizeof(read));
    fmt_size(counts->bytes_written, written, sizeof(written));
    fmt_size(counts->local_bytes, local, sizeof(local));
    fmt_size(counts->remote_bytes, remote, sizeof(remote));
    fprintf(out, "  %-8s %-16s %10" PRIu64 " %10" PRIu64 " %9s %9s %9s %9s\n", tile, machine,
            counts->reads, counts->writes, read, written, local, remote);
}

static void profileview_heading(FILE *out, const char *first)
{
    fprintf(out, "  %-8s %-16s %10s %10s %9s %9s %9s %9s\n", first, "machine", "reads", "writes",
            "read", "written", "local", "remote");
}

static int profileview_text_file(FILE *out, const struct profileview_file *file)
{
    struct profileview_totals totals;
    struct profileview_names names;
    struct profileview_totals *per_machine;
    int rc = profileview_totals(file, 1, &totals);

    if (rc != 0)
        return rc;
    fprintf(out, "%s (inode %" PRIu64 "): profiling %s\n", file->path, file->ino,
            file->profiling ? "on" : "off");
    if (file->count == 0) {
        fprintf(out, "  no counts\n");
        return 0;
    }
    fprintf(out, "  %zu tile%s with counts, %zu machine%s; ", totals.tiles,
            totals.tiles == 1 ? "" : "s", totals.machines, totals.machines == 1 ? "" : "s");
    profileview_summary(out, &totals);
    rc = profileview_names_build(file, 1, &names);
    if (rc != 0)
        return rc;
    per_machine = calloc(names.count, sizeof(*per_machine));
    if (!per_machine) {
        profileview_free_names(&names);
        return -ENOMEM;
    }
    for (size_t r = 0; r < file->count; r++)
        profileview_add(&per_machine[profileview_names_find(&names, file->records[r].machine)],
                        &file->records[r]);
    profileview_heading(out, "");
    for (size_t m = 0; m < names.count; m++)
        profileview_row(out, "all", names.names[m], &per_machine[m]);
    profileview_heading(out, "tile");
    for (size_t r = 0; r < file->count; r++) {
        struct profileview_totals one = {0};
        char tile[24];
        profileview_add(&one, &file->records[r]);
        snprintf(tile, sizeof(tile), "%" PRIu64, file->records[r].tile);
        profileview_row(out, tile, file->records[r].machine, &one);
    }
    free(per_machine);
    profileview_free_names(&names);
    return 0;
}

int profileview_text(FILE *out, const struct profileview_file *files, size_t count)
{
    struct profileview_totals totals;
    int rc;

    for (size_t f = 0; f < count; f++) {
        rc = profileview_text_file(out, &files[f]);
        if (rc != 0)
            return rc;
    }
    if (count <= 1)
        return 0;
    rc = profileview_totals(files, count, &totals);
    if (rc != 0)
        return rc;
    fprintf(out, "total: %zu file%s with counts of %zu, %zu tiles, %zu machines; ", totals.files,
            totals.files == 1 ? "" : "s", count, totals.tiles, totals.machines);
    profileview_summary(out, &totals);
    return 0;
}

static json_t *profileview_json_totals(const struct profileview_totals *totals)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "files",
                     (json_int_t)totals->files, "tiles", (json_int_t)totals->tiles, "machines",
                     (json_int_t)totals->machines, "reads", (json_int_t)totals->reads, "writes",
                     (json_int_t)totals->writes, "bytes_read", (json_int_t)totals->bytes_read,
                     "bytes_written", (json_int_t)totals->bytes_written, "local_bytes",
                     (json_int_t)totals->local_bytes, "remote_bytes",
                     (json_int_t)totals->remote_bytes);
}

/* One record: tile, machine (a name), then the counts, in this order. */
static json_t *profileview_json_record(const struct toolmeta_access *record)
{
    json_t *object = json_pack("{s:I}", "tile", (json_int_t)record->tile);
    json_t *counts = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "reads", (json_int_t)record->reads, "writes",
        (json_int_t)record->writes, "bytes_read", (json_int_t)record->bytes_read,
        "bytes_written", (json_int_t)record->bytes_written, "local_bytes",
        (json_int_t)record->local_bytes, "remote_bytes", (json_int_t)profileview_remote(record),
        "first_access_ns", (json_int_t)record->first_access_ns);
    if (!object || !counts || jsonname_set(object, "machine", record->machine) != 0 ||
        json_object_update(object, counts) != 0) {
        json_decref(object);
        object = NULL;
    }
    json_decref(counts);
    return object;
}

/* One file: path (a name), ino, profiling, its totals and records. */
static json_t *profileview_json_file(const struct profileview_file *file, int *rc)
{
    struct profileview_totals totals;
    json_t *object = json_object();
    json_t *records = json_array();

    *rc = profileview_totals(file, 1, &totals);
    if (*rc != 0 || !object || !records || jsonname_set(object, "path", file->path) != 0)
        goto fail;
    for (size_t r = 0; r < file->count; r++)
        if (json_array_append_new(records, profileview_json_record(&file->records[r])) != 0)
            goto fail;
    if (json_object_set_new(object, "ino", json_integer((json_int_t)file->ino)) != 0 ||
        json_object_set_new(object, "profiling", json_boolean(file->profiling)) != 0 ||
        json_object_set_new(object, "totals", profileview_json_totals(&totals)) != 0 ||
        json_object_set_new(object, "records", records) != 0) {
        records = NULL; /* set_new took it, even on failure */
        goto fail;
    }
    return object;
fail:
    json_decref(records);
    json_decref(object);
    if (*rc == 0)
        *rc = -ENOMEM;
    return NULL;
}

int profileview_json(FILE *out, const char *root, const struct profileview_file *files,
                     size_t count)
{
    struct profileview_totals totals;
    json_t *object = json_object();
    json_t *array = json_array();
    int rc = 0;

    if (!object || !array || jsonname_set(object, "path", root) != 0)
        rc = -ENOMEM;
    for (size_t f = 0; rc == 0 && f < count; f++) {
        json_t *file = profileview_json_file(&files[f], &rc);
        if (rc == 0 && json_array_append_new(array, file) != 0)
            rc = -ENOMEM;
    }
    if (rc == 0)
        rc = profileview_totals(files, count, &totals);
    if (rc == 0) {
        if (json_object_set_new(object, "files", array) != 0)
            rc = -ENOMEM;
        array = NULL; /* set_new took it, even on failure */
    }
    if (rc == 0 && json_object_set_new(object, "totals", profileview_json_totals(&totals)) != 0)
        rc = -ENOMEM;
    if (rc != 0) {
        json_decref(array);
        json_decref(object);
        return rc;
    }
    return jsonname_print(out, object) == 0 ? 0 : -EIO;
}

/* ---- SVG heat map --------------------------------------------------------- */

/* One heat map cell: all of one machine's accesses to a row's tiles. */
struct profileview_cell {
    uint64_t bytes; /* read + written */
    uint64_t reads;
    uint64_t writes;
    uint64_t local_bytes;
};

/* One file's map: rows x machines cells, row r holding tiles [first + r*per_row, ...). */
struct profileview_map {
    uint64_t first_tile;
    uint64_t last_tile;
    uint64_t tiles_per_row;
    size_t rows;
    struct profileview_cell *cells;
};

static int profileview_map_build(const struct profileview_file *file,
                                 const struct profileview_names *names, struct profileview_map *map)
{
    memset(map, 0, sizeof(*map));
    map->first_tile = UINT64_MAX;
    for (size_t r = 0; r < file->count; r++) {
        uint64_t tile = file->records[r].tile;
        map->first_tile = tile < map->first_tile ? tile : map->first_tile;
        map->last_tile = tile > map->last_tile ? tile : map->last_tile;
    }
    uint64_t span = map->last_tile - map->first_tile + 1;
    map->tiles_per_row = (span + PROFILEVIEW_SVG_MAX_ROWS - 1) / PROFILEVIEW_SVG_MAX_ROWS;
    map->rows = (size_t)((span + map->tiles_per_row - 1) / map->tiles_per_row);
    map->cells = calloc(map->rows * names->count, sizeof(*map->cells));
    if (!map->cells)
        return -ENOMEM;
    for (size_t r = 0; r < file->count; r++) {
        const struct toolmeta_access *record = &file->records[r];
        size_t row = (size_t)((record->tile - map->first_tile) / map->tiles_per_row);
        struct profileview_cell *cell =
            &map->cells[row * names->count + profileview_names_find(names, record->machine)];
        cell->bytes += record->bytes_read + record->bytes_written;
        cell->reads += record->reads;
        cell->writes += record->writes;
        cell->local_bytes += record->local_bytes;
    }
    return 0;
}

/* YlOrRd: pale yellow for the fewest bytes, dark red for the most. */
static void profileview_colour(double t, char *out, size_t cap)
{
    static const unsigned char stops[][3] = {
        {0xff, 0xff, 0xcc}, {0xfe, 0xd9, 0x76}, {0xfd, 0x8d, 0x3c},
        {0xe3, 0x1a, 0x1c}, {0x80, 0x00, 0x26},
    };
    const size_t last = sizeof(stops) / sizeof(stops[0]) - 1;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double position = t * (double)last;
    size_t low = (size_t)position;
    if (low >= last)
        low = last - 1;
    double frac = position - (double)low;
    unsigned channel[3];
    for (int c = 0; c < 3; c++)
        channel[c] = (unsigned)lround(stops[low][c] + (stops[low + 1][c] - stops[low][c]) * frac);
    snprintf(out, cap, "#%02x%02x%02x", channel[0], channel[1], channel[2]);
}

/* The range the colours span: the smallest and largest non-empty cell. */
struct profileview_range {
    uint64_t min;
    uint64_t max;
};

/* Where bytes falls on the scale [0, 1]: logarithmic from range->min to range->max. */
static double profileview_scale(uint64_t bytes, const struct profileview_range *range)
{
    if (bytes <= range->min || range->max <= range->min)
        return range->max <= range->min && bytes > 0 ? 1.0 : 0.0;
    return log((double)bytes / (double)range->min) / log((double)range->max / (double)range->min);
}

static void profileview_svg_text(FILE *out, int x, int y, const char *anchor, const char *extra,
                                 const char *text)
{
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\"%s>", x, y, anchor, extra);
    xmltext_escape(out, text);
    fprintf(out, "</text>\n");
}

/* One file's title, machine header and rows, from y; returns the next y. */
static int profileview_svg_file(FILE *out, const struct profileview_file *file,
                                const struct profileview_names *names,
                                const struct profileview_map *map,
                                const struct profileview_range *range, int y)
{
    char label[64], colour[16], moved[16], local[16];

    snprintf(label, sizeof(label), " (inode %" PRIu64 ", tiles %" PRIu64 "-%" PRIu64 ")", file->ino,
             map->first_tile, map->last_tile);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">", SVG_MARGIN, y + 18);
    xmltext_escape(out, file->path);
    xmltext_escape(out, label);
    fprintf(out, "</text>\n");
    y += SVG_TITLE_HEIGHT;
    profileview_svg_text(out, SVG_MARGIN + SVG_LABEL_WIDTH - 6, y + 15, "end", "",
                         map->tiles_per_row > 1 ? "tiles \\ machine" : "tile \\ machine");
    for (size_t m = 0; m < names->count; m++) {
        int x = SVG_MARGIN + SVG_LABEL_WIDTH + (int)m * SVG_CELL_WIDTH + SVG_CELL_WIDTH / 2;
        char name[16];
        /* Long names are cut in the header; the tooltips carry them whole. */
        snprintf(name, sizeof(name), "%.12s%s", names->names[m],
                 strlen(names->names[m]) > 12 ? "~" : "");
        profileview_svg_text(out, x, y + 15, "middle", "", name);
    }
    y += SVG_HEADER_HEIGHT;
    for (size_t row = 0; row < map->rows; row++) {
        uint64_t first = map->first_tile + row * map->tiles_per_row;
        uint64_t last = first + map->tiles_per_row - 1;
        if (last > map->last_tile)
            last = map->last_tile;
        if (first == last)
            snprintf(label, sizeof(label), "%" PRIu64, first);
        else
            snprintf(label, sizeof(label), "%" PRIu64 "-%" PRIu64, first, last);
        profileview_svg_text(out, SVG_MARGIN + SVG_LABEL_WIDTH - 6, y + SVG_CELL_HEIGHT - 4, "end",
                             "", label);
        for (size_t m = 0; m < names->count; m++) {
            const struct profileview_cell *cell = &map->cells[row * names->count + m];
            int x = SVG_MARGIN + SVG_LABEL_WIDTH + (int)m * SVG_CELL_WIDTH;
            if (cell->bytes == 0 && cell->reads == 0 && cell->writes == 0)
                snprintf(colour, sizeof(colour), "%s", SVG_EMPTY_COLOUR);
            else
                profileview_colour(profileview_scale(cell->bytes, range), colour, sizeof(colour));
            fmt_size(cell->bytes, moved, sizeof(moved));
            fmt_size(cell->local_bytes, local, sizeof(local));
            fprintf(out,
                    "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                    "stroke=\"#ffffff\"><title>tile%s %s, ",
                    x, y, SVG_CELL_WIDTH, SVG_CELL_HEIGHT, colour, first == last ? "" : "s", label);
            xmltext_escape(out, names->names[m]);
            fprintf(out,
                    ": %s (%" PRIu64 " bytes), %" PRIu64 " reads, %" PRIu64
                    " writes, %s local</title></rect>\n",
                    moved, cell->bytes, cell->reads, cell->writes, local);
        }
        y += SVG_CELL_HEIGHT;
    }
    return y + SVG_GAP;
}

/* The legend: "no access", then swatches from the smallest cell to the largest. */
static int profileview_svg_legend(FILE *out, const struct profileview_range *range, int y)
{
    char colour[16], label[24];
    int x = SVG_MARGIN;

    profileview_svg_text(out, x, y + 13, "start", " font-weight=\"bold\"",
                         "bytes read + written per tile and machine (log scale)");
    y += 20;
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#999999\"/>\n",
            x, y, SVG_LEGEND_SWATCH, SVG_LEGEND_SWATCH, SVG_EMPTY_COLOUR);
    profileview_svg_text(out, x + SVG_LEGEND_SWATCH + 4, y + 13, "start", "", "no access");
    x += 110;
    for (int step = 0; step < SVG_LEGEND_STEPS; step++) {
        double t = (double)step / (SVG_LEGEND_STEPS - 1);
        uint64_t bytes =
            range->max > range->min
                ? (uint64_t)llround((double)range->min *
                                    exp(t * log((double)range->max / (double)range->min)))
                : range->max;
        profileview_colour(t, colour, sizeof(colour));
        fmt_size(bytes, label, sizeof(label));
        fprintf(out,
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                "stroke=\"#999999\"/>\n",
                x, y, SVG_LEGEND_SWATCH, SVG_LEGEND_SWATCH, colour);
        profileview_svg_text(out, x + SVG_LEGEND_SWATCH + 4, y + 13, "start", "", label);
        x += 80;
    }
    return y + SVG_LEGEND_SWATCH + SVG_MARGIN;
}

int profileview_svg(FILE *out, const char *root, const struct profileview_file *files, size_t count)
{
    struct profileview_names names;
    struct profileview_map *maps = NULL;
    struct profileview_range range = {.min = UINT64_MAX, .max = 0};
    size_t shown = 0;
    int rc, width, height, y;

    rc = profileview_names_build(files, count, &names);
    if (rc != 0)
        return rc;
    maps = calloc(count ? count : 1, sizeof(*maps));
    if (!maps) {
        rc = -ENOMEM;
        goto out;
    }
    height = SVG_MARGIN + SVG_TITLE_HEIGHT;
    for (size_t f = 0; f < count; f++) {
        if (files[f].count == 0)
            continue;
        rc = profileview_map_build(&files[f], &names, &maps[f]);
        if (rc != 0)
            goto out;
        for (size_t c = 0; c < maps[f].rows * names.count; c++) {
            uint64_t bytes = maps[f].cells[c].bytes;
            range.max = bytes > range.max ? bytes : range.max;
            if (bytes > 0 && bytes < range.min)
                range.min = bytes;
        }
        height +=
            SVG_TITLE_HEIGHT + SVG_HEADER_HEIGHT + (int)maps[f].rows * SVG_CELL_HEIGHT + SVG_GAP;
        shown++;
    }
    if (shown == 0)
        height += SVG_HEADER_HEIGHT;
    if (range.min > range.max)
        range.min = range.max;
    height += 20 + SVG_LEGEND_SWATCH + SVG_MARGIN;
    width = 2 * SVG_MARGIN + SVG_LABEL_WIDTH + (int)names.count * SVG_CELL_WIDTH;
    int legend_width = 2 * SVG_MARGIN + 110 + SVG_LEGEND_STEPS * 80;
    width = width > legend_width ? width : legend_width;

    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
            width, height, width, height);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"15\" font-weight=\"bold\">", SVG_MARGIN,
            SVG_MARGIN + 10);
    fputs("Tessera access profile: ", out);
    xmltext_escape(out, root);
    fprintf(out, "</text>\n");
    y = SVG_MARGIN + SVG_TITLE_HEIGHT;
    if (shown == 0) {
        profileview_svg_text(out, SVG_MARGIN, y + 14, "start", "",
                             "no counts (start profiling and use the files first)");
        y += SVG_HEADER_HEIGHT;
    }
    for (size_t f = 0; f < count; f++) {
        if (files[f].count > 0)
            y = profileview_svg_file(out, &files[f], &names, &maps[f], &range, y);
    }
    (void)profileview_svg_legend(out, &range, y);
    fprintf(out, "</svg>\n");
out:
    if (maps) {
        for (size_t f = 0; f < count; f++)
            free(maps[f].cells);
    }
    free(maps);
    profileview_free_names(&names);
    return rc;
}
