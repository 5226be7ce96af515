/*
 * @file test_profileview.c
 * `tessera profile show` output (tools/profileview.c) for a fixed profile:
 * totals, the text tables, the JSON document and the SVG heat map.
 */
#include "profileview.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MIB (1u << 20)

/* Two machines read file a; one wrote file b; file c has no counts. */
static const struct toolmeta_access a_records[] = {
    {.tile = 0,
     .machine = "beta",
     .reads = 4,
     .bytes_read = 4 * MIB,
     .local_bytes = 0,
     .first_access_ns = 7},
    {.tile = 0, .machine = "alpha", .reads = 1, .bytes_read = MIB, .local_bytes = MIB},
    {.tile = 1, .machine = "alpha", .reads = 2, .bytes_read = 2 * MIB, .local_bytes = MIB},
};
static const struct toolmeta_access b_records[] = {
    {.tile = 3,
     .machine = "gamma <&>",
     .writes = 1,
     .bytes_written = 512 * 1024,
     .local_bytes = 512 * 1024},
};

static void fixed_files(struct profileview_file files[3])
{
    files[0] = (struct profileview_file){"/mnt/a", 10, true, a_records, 3};
    files[1] = (struct profileview_file){"/mnt/b \"q\"", 11, false, b_records, 1};
    files[2] = (struct profileview_file){"/mnt/c", 12, true, NULL, 0};
}

/* A printer of profileview.h, as capture() runs it. */
typedef int (*printer_fn)(FILE *, const char *, const struct profileview_file *, size_t);

/*
 * Runs a printer into memory; the caller frees the text. Not inlined: GCC
 * 12 at -O3 takes the buffer open_memstream() hands back through `text`
 * for a pointer to the local variable itself (dangling).
 */
__attribute__((noinline)) static char *capture(printer_fn print,
                                               const struct profileview_file *files, size_t count)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(print(out, "/mnt", files, count), 0);
    fclose(out);
    return text;
}

static int text_printer(FILE *out, const char *root, const struct profileview_file *files,
                        size_t count)
{
    (void)root;
    return profileview_text(out, files, count);
}

static size_t count_of(const char *text, const char *needle)
{
    size_t count = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle))
        count++;
    return count;
}

static void test_totals(void **state)
{
    struct profileview_file files[3];
    struct profileview_totals totals;
    (void)state;
    fixed_files(files);
    assert_int_equal(profileview_totals(files, 3, &totals), 0);
    assert_int_equal(totals.files, 2);
    assert_int_equal(totals.tiles, 3);
    assert_int_equal(totals.machines, 3);
    assert_int_equal(totals.reads, 7);
    assert_int_equal(totals.writes, 1);
    assert_int_equal(totals.bytes_read, 7 * MIB);
    assert_int_equal(totals.bytes_written, 512 * 1024);
    assert_int_equal(totals.local_bytes, 2 * MIB + 512 * 1024);
    assert_int_equal(totals.remote_bytes, 5 * MIB);
    assert_int_equal(profileview_totals(&files[0], 1, &totals), 0);
    assert_int_equal(totals.tiles, 2);
    assert_int_equal(totals.machines, 2);
}

static void test_text(void **state)
{
    struct profileview_file files[3];
    (void)state;
    fixed_files(files);
    char *text = capture(text_printer, files, 3);
    assert_non_null(strstr(text, "/mnt/a (inode 10): profiling on\n"));
    assert_non_null(strstr(text, "  2 tiles with counts, 2 machines; reads 7, writes 0; read "
                                 "7.0M, written 0B; local 2.0M (29%), remote 5.0M\n"));
    /* Machines in name order, whatever order the records came in. */
    char *alpha = strstr(text, "all      alpha");
    char *beta = strstr(text, "all      beta");
    assert_non_null(alpha);
    assert_non_null(beta);
    assert_true(alpha < beta);
    assert_non_null(strstr(text, "  0        beta                      4          0      4.0M"));
    assert_non_null(strstr(text, "/mnt/c (inode 12): profiling on\n  no counts\n"));
    assert_non_null(strstr(text, "total: 2 files with counts of 3, 3 tiles, 3 machines; "));
    free(text);
}

static void test_json(void **state)
{
    struct profileview_file files[3];
    (void)state;
    fixed_files(files);
    char *text = capture(profileview_json, files, 3);
    assert_true(strncmp(text, "{\"path\": \"/mnt\", \"files\": [", 27) == 0);
    assert_non_null(strstr(text, "{\"path\": \"/mnt/b \\\"q\\\"\", \"ino\": 11, \"profiling\": "
                                 "false"));
    assert_non_null(strstr(text, "{\"tile\": 0, \"machine\": \"beta\", \"reads\": 4, \"writes\": "
                                 "0, \"bytes_read\": 4194304, \"bytes_written\": 0, "
                                 "\"local_bytes\": 0, \"remote_bytes\": 4194304, "
                                 "\"first_access_ns\": 7}"));
    assert_non_null(strstr(text, "\"records\": []}"));
    assert_non_null(strstr(text, "], \"totals\": {\"files\": 2, \"tiles\": 3, \"machines\": 3, "
                                 "\"reads\": 7, \"writes\": 1"));
    assert_int_equal(count_of(text, "{\"tile\":"), 4);
    assert_int_equal(count_of(text, "{"), count_of(text, "}"));
    assert_int_equal(count_of(text, "["), count_of(text, "]"));
    assert_string_equal(text + strlen(text) - 2, "}\n");
    free(text);
}

static void test_svg(void **state)
{
    struct profileview_file files[3];
    (void)state;
    fixed_files(files);
    char *text = capture(profileview_svg, files, 3);
    assert_true(strncmp(text, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 44) == 0);
    assert_string_equal(text + strlen(text) - 7, "</svg>\n");
    /* Names are escaped, never raw markup. */
    assert_null(strstr(text, "gamma <&>"));
    assert_non_null(strstr(text, "gamma &lt;&amp;&gt;"));
    assert_non_null(strstr(text, "/mnt/b &quot;q&quot;"));
    /* File a: tiles 0-1 (2 rows), file b: tile 3 (1 row); 3 machine columns each. */
    assert_int_equal(count_of(text, "<rect x="), 3 * 3 + 1 + 6);
    assert_int_equal(count_of(text, "<title>"), 3 * 3);
    assert_non_null(strstr(text, "beta: 4.0M (4194304 bytes), 4 reads, 0 writes, 0B local"));
    /* The busiest cell is the darkest colour; an empty one is grey. */
    assert_non_null(strstr(text, "fill=\"#800026\" stroke=\"#ffffff\"><title>tile 0, beta"));
    assert_non_null(strstr(text, "fill=\"#f2f2f2\" stroke=\"#ffffff\"><title>tile 1, beta"));
    assert_non_null(strstr(text, "no access"));
    assert_non_null(strstr(text, "(log scale)"));
    assert_non_null(strstr(text, ">4.0M</text>"));
    assert_int_equal(count_of(text, "<text"), count_of(text, "</text>"));
    assert_int_equal(count_of(text, "<title>"), count_of(text, "</title>"));
    free(text);
}

static void test_svg_many_tiles_share_rows(void **state)
{
    (void)state;
    struct toolmeta_access *records = calloc(1000, sizeof(*records));
    assert_non_null(records);
    for (size_t i = 0; i < 1000; i++) {
        records[i].tile = i;
        snprintf(records[i].machine, sizeof(records[i].machine), "m%zu", i % 2);
        records[i].reads = 1;
        records[i].bytes_read = 4096;
    }
    struct profileview_file file = {"/mnt/big", 5, true, records, 1000};
    char *text = capture(profileview_svg, &file, 1);
    /* 1000 tiles in rows of 16: 63 rows, the last one short. */
    assert_int_equal(count_of(text, "<rect x="), 63 * 2 + 1 + 6);
    assert_non_null(strstr(text, ">0-15</text>"));
    assert_non_null(strstr(text, ">992-999</text>"));
    free(text);
    free(records);
}

static void test_svg_without_counts(void **state)
{
    (void)state;
    struct profileview_file file = {"/mnt/c", 12, true, NULL, 0};
    char *text = capture(profileview_svg, &file, 1);
    assert_non_null(strstr(text, "no counts"));
    assert_string_equal(text + strlen(text) - 7, "</svg>\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_totals),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_svg_many_tiles_share_rows),
        cmocka_unit_test(test_svg_without_counts),
    };
    return cmocka_run_group_tests_name("profileview", tests, NULL, NULL);
}
