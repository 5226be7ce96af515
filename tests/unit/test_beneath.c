/*
 * @file test_beneath.c
 * Unit tests of fuse/beneath.c's option parser: the -o list tessera-mount
 * builds is passed to the kernel whole, with libfuse's defaults (nosuid,
 * nodev); an option the kernel API is not given here is refused (the mount
 * then takes libfuse's way), and so is a value that does not fit.
 */
#include "beneath.h"

#include <errno.h>
#include <linux/mount.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_mount_options_of_tessera_up(void **state)
{
    struct beneath_options parsed;
    (void)state;
    assert_int_equal(beneath_parse_options("default_permissions,allow_other,fsname=tessera:tcp://"
                                           "127.0.0.1:7400,subtype=tessera,max_read=1048576",
                                           &parsed),
                     0);
    assert_true(parsed.default_permissions);
    assert_true(parsed.allow_other);
    assert_string_equal(parsed.source, "tessera:tcp://127.0.0.1:7400");
    assert_string_equal(parsed.subtype, "tessera");
    assert_string_equal(parsed.max_read, "1048576");
    assert_int_equal(parsed.mount_attributes, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

static void test_later_options_win(void **state)
{
    struct beneath_options parsed;
    (void)state;
    assert_int_equal(beneath_parse_options("fsname=a,ro,dev,fsname=b,noatime,,rw", &parsed), 0);
    assert_string_equal(parsed.source, "b");
    assert_false(parsed.default_permissions);
    assert_false(parsed.allow_other);
    assert_int_equal(parsed.mount_attributes, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOATIME);
    assert_int_equal(beneath_parse_options("", &parsed), 0);
    assert_int_equal(parsed.source[0], '\0');
}

static void test_unknown_or_bad_options_refused(void **state)
{
    struct beneath_options parsed;
    (void)state;
    assert_int_equal(beneath_parse_options("default_permissions,auto_unmount", &parsed), -ENOTSUP);
    assert_int_equal(beneath_parse_options("allow_other=1", &parsed), -ENOTSUP);
    assert_int_equal(beneath_parse_options("fsname=a\\,b", &parsed), -ENOTSUP);
    assert_int_equal(beneath_parse_options("max_read=12k", &parsed), -EINVAL);
    assert_int_equal(beneath_parse_options("fsname=", &parsed), -EINVAL);
    char long_name[400] = "fsname=";
    memset(long_name + 7, 'x', sizeof(long_name) - 8);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_int_equal(beneath_parse_options(long_name, &parsed), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mount_options_of_tessera_up),
        cmocka_unit_test(test_later_options_win),
        cmocka_unit_test(test_unknown_or_bad_options_refused),
    };
    return cmocka_run_group_tests_name("beneath", tests, NULL, NULL);
}
