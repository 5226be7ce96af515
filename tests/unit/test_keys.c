/*
 * @file test_keys.c
 * Unit tests of the key files (common/keys.h) and of the key directory
 * `tessera keys` manages (tools/keysdir.h), in a fresh temporary directory
 * per case: the known-keys parser and its refusals, key pair files and
 * the refusal of a secret file others may read.
 */
#include "keys.h"
#include "keysdir.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

struct fixture {
    char dir[PATH_MAX];
};

static int setup(void **state)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    const char *tmp = getenv("TMPDIR");
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_keys.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fixture->dir)) {
        free(fixture);
        return -1;
    }
    *state = fixture;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    char command[PATH_MAX + 16];
    snprintf(command, sizeof(command), "rm -rf '%s'", fixture->dir);
    int rc = system(command);
    free(fixture);
    return rc == 0 ? 0 : -1;
}

/* Two valid public keys, made once. */
static struct keys_pair first_pair, second_pair;

static int group_setup(void **state)
{
    (void)state;
    return keys_pair_generate(&first_pair) == 0 && keys_pair_generate(&second_pair) == 0 ? 0 : -1;
}

static void test_known_parse_roles_comments_revoked(void **state)
{
    (void)state;
    char text[512];
    char why[256] = "";
    struct keys_known known = {0};
    snprintf(text, sizeof(text),
             "# a comment\n\n  meta   m1 %s\r\ndatanode\tnode-1.a %s revoked\n   # indented\n",
             first_pair.public_z85, second_pair.public_z85);
    assert_int_equal(keys_known_parse(&known, text, strlen(text), why, sizeof(why)), 0);
    assert_int_equal(known.count, 2);
    assert_string_equal(known.entries[0].role, "meta");
    assert_string_equal(known.entries[0].name, "m1");
    assert_false(known.entries[0].revoked);
    assert_string_equal(known.entries[1].role, "datanode");
    assert_string_equal(known.entries[1].name, "node-1.a");
    assert_true(known.entries[1].revoked);
    assert_ptr_equal(keys_known_find_key(&known, second_pair.public_z85), &known.entries[1]);
    assert_null(keys_known_find_key(&known, second_pair.secret_z85));
    assert_ptr_equal(keys_known_find_name(&known, "m1"), &known.entries[0]);
    assert_null(keys_known_find_name(&known, "m2"));
    keys_known_clear(&known);
    /* An empty file is an empty set, not an error. */
    assert_int_equal(keys_known_parse(&known, "", 0, why, sizeof(why)), 0);
    assert_int_equal(known.count, 0);
    keys_known_clear(&known);
}

/* Parses `line` after one good line; expects -EINVAL naming line 2 and `reason`. */
static void expect_refused(const char *line, const char *reason)
{
    char text[512];
    char why[256] = "";
    struct keys_known known = {0};
    snprintf(text, sizeof(text), "admin a %s\n%s\n", first_pair.public_z85, line);
    assert_int_equal(keys_known_parse(&known, text, strlen(text), why, sizeof(why)), -EINVAL);
    assert_int_equal(known.count, 0); /* all or nothing */
    assert_non_null(strstr(why, "line 2"));
    if (!strstr(why, reason))
        fail_msg("for \"%s\": \"%s\" does not say \"%s\"", line, why, reason);
}

static void test_known_parse_refusals(void **state)
{
    (void)state;
    char line[256];
    snprintf(line, sizeof(line), "root x %s", second_pair.public_z85);
    expect_refused(line, "role");
    snprintf(line, sizeof(line), "mount .hidden %s", second_pair.public_z85);
    expect_refused(line, "name");
    snprintf(line, sizeof(line), "mount a/b %s", second_pair.public_z85);
    expect_refused(line, "name");
    expect_refused("mount m 0123456789", "key");
    snprintf(line, sizeof(line), "mount m %.39s~", second_pair.public_z85);
    expect_refused(line, "key");
    snprintf(line, sizeof(line), "mount a %s", second_pair.public_z85);
    expect_refused(line, "twice"); /* the name of line 1 */
    snprintf(line, sizeof(line), "mount b %s", first_pair.public_z85);
    expect_refused(line, "twice"); /* the key of line 1 */
    snprintf(line, sizeof(line), "mount b %s gone", second_pair.public_z85);
    expect_refused(line, "ROLE NAME KEY");
    snprintf(line, sizeof(line), "mount b %s revoked extra", second_pair.public_z85);
    expect_refused(line, "ROLE NAME KEY");
    expect_refused("mount b", "ROLE NAME KEY");
}

static void test_pair_file_round_trip_and_mode(void **state)
{
    struct fixture *fixture = *state;
    char path[PATH_MAX + 16];
    char why[512] = "";
    char public_z85[KEYS_Z85_LEN + 1];
    struct keys_pair read_back;
    struct stat st;

    snprintf(path, sizeof(path), "%s/m.key", fixture->dir);
    assert_int_equal(keys_pair_write(path, &first_pair), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(keys_pair_read(path, &read_back, why, sizeof(why)), 0);
    assert_string_equal(read_back.public_z85, first_pair.public_z85);
    assert_string_equal(read_back.secret_z85, first_pair.secret_z85);
    /* Never over an existing key. */
    assert_int_equal(keys_pair_write(path, &second_pair), -EEXIST);
    /* Its public half alone, from the same file. */
    assert_int_equal(keys_public_read(path, public_z85, why, sizeof(why)), 0);
    assert_string_equal(public_z85, first_pair.public_z85);

    /* Readable by others: refused, naming the file and the fix. */
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(keys_pair_read(path, &read_back, why, sizeof(why)), -EPERM);
    assert_non_null(strstr(why, path));
    assert_non_null(strstr(why, "chmod 600"));
    assert_int_equal(chmod(path, 0620), 0); /* writable by the group is as bad */
    assert_int_equal(keys_pair_read(path, &read_back, why, sizeof(why)), -EPERM);
    /* A public file may be read by anyone. */
    assert_int_equal(keys_public_read(path, public_z85, why, sizeof(why)), 0);

    /* A file without its secret line is not a pair. */
    snprintf(path, sizeof(path), "%s/p.pub", fixture->dir);
    assert_int_equal(keys_public_write(path, second_pair.public_z85), 0);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(keys_pair_read(path, &read_back, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "secret"));
    snprintf(path, sizeof(path), "%s/missing.key", fixture->dir);
    assert_int_equal(keys_pair_read(path, &read_back, why, sizeof(why)), -ENOENT);
    assert_non_null(strstr(why, path));
}

static void test_keysdir_init_add_revoke(void **state)
{
    struct fixture *fixture = *state;
    char dir[PATH_MAX + 16];
    char path[PATH_MAX + 64];
    char why[512] = "";
    struct keys_known known = {0};
    struct keys_pair pair;
    struct stat st;

    snprintf(dir, sizeof(dir), "%s/keys", fixture->dir);
    assert_false(keysdir_exists(dir));
    assert_int_equal(keysdir_add(dir, "mount", "m", "test"), -ENOENT); /* no init yet */
    assert_int_equal(keysdir_init(dir, "test"), 0);
    assert_true(keysdir_exists(dir));
    assert_int_equal(keysdir_init(dir, "test"), -EEXIST);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    snprintf(path, sizeof(path), "%s/server.key", dir);
    assert_int_equal(keys_pair_read(path, &pair, why, sizeof(why)), 0);

    assert_int_equal(keysdir_add(dir, "datanode", "node1", "test"), 0);
    assert_int_equal(keysdir_add(dir, "mount", "node1", "test"), -EEXIST);
    assert_int_equal(keysdir_add(dir, "root", "x", "test"), -EINVAL);
    assert_int_equal(keysdir_add(dir, "mount", "server", "test"), -EINVAL);
    assert_int_equal(keysdir_add(dir, "mount", "../x", "test"), -EINVAL);
    assert_int_equal(keysdir_revoke(dir, "nobody", "test"), -ENOENT);
    assert_int_equal(keysdir_revoke(dir, "node1", "test"), 0);
    /* A revoked name stays taken: a new key cannot slip in under it. */
    assert_int_equal(keysdir_add(dir, "datanode", "node1", "test"), -EEXIST);

    snprintf(path, sizeof(path), "%s/known_keys", dir);
    assert_int_equal(keys_known_read(path, &known, why, sizeof(why)), 0);
    assert_int_equal(known.count, 3);
    assert_string_equal(known.entries[0].name, "meta");
    assert_string_equal(known.entries[1].role, "admin");
    assert_string_equal(known.entries[2].role, "datanode");
    assert_true(known.entries[2].revoked);
    assert_false(known.entries[0].revoked);
    /* The registered key is the one in the member's file. */
    snprintf(path, sizeof(path), "%s/node1.key", dir);
    assert_int_equal(keys_pair_read(path, &pair, why, sizeof(why)), 0);
    assert_string_equal(known.entries[2].public_z85, pair.public_z85);
    /* The server key is no member's. */
    snprintf(path, sizeof(path), "%s/server.pub", dir);
    char server_public[KEYS_Z85_LEN + 1];
    assert_int_equal(keys_public_read(path, server_public, why, sizeof(why)), 0);
    assert_null(keys_known_find_key(&known, server_public));
    keys_known_clear(&known);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_parse_roles_comments_revoked),
        cmocka_unit_test(test_known_parse_refusals),
        cmocka_unit_test_setup_teardown(test_pair_file_round_trip_and_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keysdir_init_add_revoke, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
