/*
 * @file test_exports.c
 * Unit tests of meta's export table (exports.h) and its gate
 * (handlers_exports.h) on a real store (metafixture.h): the parser and its
 * line-numbered refusals, which rule a key gets, and requests through the
 * gate as meta's server sends them: a read-only export refuses every
 * change with TS_ERR_ROFS and changes nothing, root_squash makes owner 0
 * nobody, an unlisted mount key gets TS_ERR_PERM, other keys and links
 * without keys pass untouched; the file is read again when it changes.
 */
#include "exports.h"
#include "handlers_exports.h"
#include "metafixture.h"
#include "proto.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int setup(void **state)
{
    return metafixture_setup(state, "test_exports", 0, 0);
}

static int teardown(void **state)
{
    return metafixture_teardown(state);
}

static int parse(struct exports *exports, const char *text, char *why, size_t cap)
{
    why[0] = '\0';
    return exports_parse(exports, text, strlen(text), why, cap);
}

static void test_parse_and_find(void **state)
{
    (void)state;
    struct exports exports = {0};
    char why[256];

    /* No table: everyone mounts / read-write, root not squashed. */
    const struct exports_rule *rule = exports_find(&exports, "mount:laptop");
    assert_non_null(rule);
    assert_false(rule->read_only);
    assert_false(rule->root_squash);

    assert_int_equal(parse(&exports,
                           "# who  what  how\n"
                           "laptop /  ro\n"
                           "\n"
                           "# everyone else\n"
                           "*      /  rw,root_squash\n",
                           why, sizeof(why)),
                     0);
    assert_int_equal(exports.count, 2);
    rule = exports_find(&exports, "mount:laptop");
    assert_true(rule->read_only && !rule->root_squash);
    rule = exports_find(&exports, "mount:desk");
    assert_true(!rule->read_only && rule->root_squash);

    assert_int_equal(parse(&exports, "laptop / ro\n", why, sizeof(why)), 0);
    assert_null(exports_find(&exports, "mount:desk")); /* a table without * */

    /* Subtree paths are kept normalised; / alone is no subtree. */
    assert_int_equal(parse(&exports, "a //projects///a/ rw\nb / ro\n", why, sizeof(why)), 0);
    rule = exports_find(&exports, "mount:a");
    assert_string_equal(rule->path, "/projects/a");
    assert_true(exports_rule_subtree(rule));
    assert_false(exports_rule_subtree(exports_find(&exports, "mount:b")));

    static const struct {
        const char *text;
        const char *why;
    } bad[] = {
        {"laptop data ro\n", "line 1: 'data' is not an absolute path"},
        {"laptop /data/../etc ro\n", "line 1: '/data/../etc' is not an absolute path"},
        {"ok /\nlaptop / ro,fast\n", "line 2: unknown option 'fast'"},
        {"laptop\n", "line 1: want NAME PATH"},
        {"a / ro\nb / ro\na / rw\n", "line 3: a has a rule already"},
        {"la/ptop / ro\n", "line 1: 'la/ptop' is not a key name"},
        {"a / ro x y\n", "line 1: want NAME PATH"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(&exports, bad[i].text, why, sizeof(why)), -EINVAL);
        if (!strstr(why, bad[i].why))
            fail_msg("'%s': got '%s', want '%s'", bad[i].text, why, bad[i].why);
    }
    exports_clear(&exports);
}

static int mkdir_as(struct metafixture *f, const char *name, uint32_t uid, struct ts_attr *attr)
{
    struct ts_mkdir_req m = {
        .parent = TS_ROOT_INO, .name = ts_str_of(name), .mode = 0755, .uid = uid, .gid = uid};
    return metafixture_attr_call(f, CALL(f, TS_OP_MKDIR, mkdir_req, &m), attr);
}

static int lookup(struct metafixture *f, const char *name, struct ts_attr *attr)
{
    struct ts_lookup_req m = {.parent = TS_ROOT_INO, .name = ts_str_of(name)};
    return metafixture_attr_call(f, CALL(f, TS_OP_LOOKUP, lookup_req, &m), attr);
}

static void use_table(struct metafixture *f, const char *text)
{
    char why[256];
    assert_int_equal(exports_parse(&f->service->exports, text, strlen(text), why, sizeof(why)), 0);
}

static void test_gate(void **state)
{
    struct metafixture *f = *state;
    struct ts_attr attr;
    f->through_exports = true;
    use_table(f, "reader / ro\nsquashed / root_squash\n");

    /* Read-only: changes refused, reads served, nothing made. */
    f->key_user = "mount:reader";
    assert_int_equal(mkdir_as(f, "d", 0, &attr), TS_ERR_ROFS);
    assert_int_equal(lookup(f, "d", &attr), TS_ERR_NOENT);
    struct ts_open_req open = {.ino = TS_ROOT_INO, .flags = O_WRONLY};
    assert_int_equal(CALL(f, TS_OP_OPEN, open_req, &open), TS_ERR_ROFS);
    struct ts_setattr_req chmod = {.ino = TS_ROOT_INO, .valid = TS_SET_MODE, .mode = 0777};
    assert_int_equal(CALL(f, TS_OP_SETATTR, setattr_req, &chmod), TS_ERR_ROFS);

    /* Root squashed: the owner 0 it sends becomes nobody; others stay. */
    f->key_user = "mount:squashed";
    assert_int_equal(mkdir_as(f, "by-root", 0, &attr), TS_OK);
    assert_int_equal(attr.uid, EXPORTS_NOBODY);
    assert_int_equal(attr.gid, EXPORTS_NOBODY);
    assert_int_equal(mkdir_as(f, "by-user", 1000, &attr), TS_OK);
    assert_int_equal(attr.uid, 1000);

    /* Not listed: nothing at all. */
    f->key_user = "mount:stranger";
    assert_int_equal(lookup(f, "by-root", &attr), TS_ERR_PERM);
    assert_non_null(strstr(f->error_text, "not in meta's exports"));

    /* Other roles, and links without keys, are not subject to exports. */
    f->key_user = "admin:admin";
    assert_int_equal(lookup(f, "by-root", &attr), TS_OK);
    f->key_user = NULL;
    assert_int_equal(mkdir_as(f, "no-keys", 0, &attr), TS_OK);
    assert_int_equal(attr.uid, 0);
}

/* The file is read at start and again when it changes; a bad edit keeps the last good table. */
static void test_refresh(void **state)
{
    struct metafixture *f = *state;
    struct ts_attr attr;
    char why[256];
    int written = snprintf(f->service->exports_path, sizeof(f->service->exports_path),
                           "%.4000s/exports-test", f->dir);
    assert_true(written > 0 && (size_t)written < sizeof(f->service->exports_path));
    assert_int_equal(handlers_exports_refresh(f->service, 0, true, why, sizeof(why)), 0);
    assert_false(f->service->exports.present); /* no file: the default */

    FILE *file = fopen(f->service->exports_path, "w");
    assert_non_null(file);
    fputs("* / ro\n", file);
    fclose(file);
    assert_int_equal(handlers_exports_refresh(f->service, 5000, false, why, sizeof(why)), 0);
    f->through_exports = true;
    f->key_user = "mount:any";
    assert_int_equal(mkdir_as(f, "d", 1000, &attr), TS_ERR_ROFS);

    file = fopen(f->service->exports_path, "w");
    assert_non_null(file);
    fputs("* elsewhere ro\nbroken\n", file);
    fclose(file);
    assert_int_equal(handlers_exports_refresh(f->service, 0, true, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "line 1"));
    assert_true(f->service->exports.present); /* still the last good one */
    assert_int_equal(mkdir_as(f, "d", 1000, &attr), TS_ERR_ROFS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_find),
        cmocka_unit_test_setup_teardown(test_gate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refresh, setup, teardown),
    };
    return cmocka_run_group_tests_name("exports", tests, NULL, NULL);
}
