/*
 * @file test_identity.c
 * Unit tests of a data directory's identity (datanode/identity.h): the
 * parser, and the file made once and read back, in a fresh temporary
 * directory per case.
 */
#include "identity.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

struct fixture {
    char dir[PATH_MAX];
    char path[PATH_MAX + 16];
};

static int setup(void **state)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    const char *tmp = getenv("TMPDIR");
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_identity.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fixture->dir)) {
        free(fixture);
        return -1;
    }
    snprintf(fixture->path, sizeof(fixture->path), "%s/identity", fixture->dir);
    *state = fixture;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    char tmp_path[PATH_MAX + 16];
    snprintf(tmp_path, sizeof(tmp_path), "%s/identity.tmp", fixture->dir);
    unlink(fixture->path);
    unlink(tmp_path);
    rmdir(fixture->dir);
    free(fixture);
    return 0;
}

static void write_text(const char *path, const char *text)
{
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    assert_int_equal(fputs(text, file) >= 0, 1);
    assert_int_equal(fclose(file), 0);
}

static void test_parse(void **state)
{
    (void)state;
    uint64_t value = 0;
    assert_int_equal(identity_parse("0123456789abcdef\n", 17, &value), 0);
    assert_true(value == 0x0123456789abcdefull);
    assert_int_equal(identity_parse("ffffffffffffffff", 16, &value), 0);
    assert_true(value == UINT64_MAX);
    /* Too short, too long, not hex, upper case, two newlines, all zero. */
    assert_int_equal(identity_parse("0123456789abcde\n", 16, &value), -EINVAL);
    assert_int_equal(identity_parse("0123456789abcdef0", 17, &value), -EINVAL);
    assert_int_equal(identity_parse("0123456789abcdeg", 16, &value), -EINVAL);
    assert_int_equal(identity_parse("0123456789ABCDEF", 16, &value), -EINVAL);
    assert_int_equal(identity_parse("0123456789abcdef\n\n", 18, &value), -EINVAL);
    assert_int_equal(identity_parse("0000000000000000\n", 17, &value), -EINVAL);
    assert_int_equal(identity_parse("", 0, &value), -EINVAL);
}

/* Made once, kept: a second load reads the same identity back. */
static void test_made_once(void **state)
{
    struct fixture *fixture = *state;
    uint64_t first = 0, second = 0;
    bool created = false;
    struct stat st;

    assert_int_equal(identity_load(fixture->dir, &first, &created), 0);
    assert_true(created);
    assert_true(first != 0);
    assert_int_equal(stat(fixture->path, &st), 0);
    assert_int_equal(st.st_size, IDENTITY_TEXT_BYTES);
    assert_int_equal(identity_load(fixture->dir, &second, &created), 0);
    assert_false(created);
    assert_true(second == first);

    /* A wiped directory gets a new one (random: equal only by a 2^-64 chance). */
    assert_int_equal(unlink(fixture->path), 0);
    assert_int_equal(identity_load(fixture->dir, &second, &created), 0);
    assert_true(created);
    assert_true(second != first);
}

/* A file that does not parse is refused and left as it is, never replaced. */
static void test_corrupt_is_refused(void **state)
{
    struct fixture *fixture = *state;
    uint64_t value = 0;
    bool created = true;
    char text[64] = {0};

    write_text(fixture->path, "not an identity\n");
    assert_int_equal(identity_load(fixture->dir, &value, &created), -EINVAL);
    assert_false(created);
    FILE *file = fopen(fixture->path, "r");
    assert_non_null(file);
    assert_non_null(fgets(text, sizeof(text), file));
    fclose(file);
    assert_string_equal(text, "not an identity\n");

    write_text(fixture->path, "00000000000000aa\n");
    assert_int_equal(identity_load(fixture->dir, &value, &created), 0);
    assert_true(value == 0xaa);
}

/* A directory with a node.id or identity but no tiles lost them all: refused. */
static void test_tiles_missing(void **state)
{
    struct fixture *fixture = *state;
    char path[PATH_MAX + 16];
    uint64_t value = 0;
    bool created = false;

    assert_int_equal(identity_check_tiles(fixture->dir), 0); /* new */
    snprintf(path, sizeof(path), "%s/node.id", fixture->dir);
    write_text(path, "3\n");
    assert_int_equal(identity_check_tiles(fixture->dir), -ESTALE);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(identity_load(fixture->dir, &value, &created), 0);
    assert_int_equal(identity_check_tiles(fixture->dir), -ESTALE);
    snprintf(path, sizeof(path), "%s/tiles", fixture->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(identity_check_tiles(fixture->dir), 0);
    assert_int_equal(rmdir(path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test_setup_teardown(test_made_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tiles_missing, setup, teardown),
    };
    return cmocka_run_group_tests_name("identity", tests, NULL, NULL);
}
