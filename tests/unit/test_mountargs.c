/*
 * @file test_mountargs.c
 * Unit tests of fuse/mountargs: tessera-mount's own flags (both "--name
 * VALUE" and "--name=VALUE"), the form mount(8) uses (SOURCE MOUNTPOINT
 * -o name=value,...) with its fstab-only options dropped and the rest
 * left for FUSE, --meta beside --meta-timeout-ms, and refusals.
 */
#include "mountargs.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static int parse(struct mount_options *options, char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    options->memory_min_bytes = 57u << 20;
    return mountargs_parse(argc, argv, options);
}

static void test_own_flags(void **state)
{
    (void)state;
    struct mount_options o;
    char *argv[] = {"tessera-mount", "--meta", "tcp://a:1", "--meta-timeout-ms", "2500",
                    "--io-timeout-ms=3000", "--memory", "128M", "--machine", "m1", "-f",
                    "--attr-timeout", "0.5", "-o", "allow_other,default_permissions", "/mnt",
                    NULL};
    assert_int_equal(parse(&o, argv), 0);
    assert_string_equal(o.meta, "tcp://a:1");
    assert_int_equal(o.meta_timeout_ms, 2500);
    assert_int_equal(o.io_timeout_ms, 3000);
    assert_int_equal(o.memory_bytes, 128u << 20);
    assert_string_equal(o.machine, "m1");
    assert_int_equal(o.foreground, 1);
    assert_true(o.attr_timeout > 0.49 && o.attr_timeout < 0.51);
    assert_string_equal(o.fuse_options, "allow_other,default_permissions");
    assert_string_equal(o.mountpoint, "/mnt");
    assert_int_equal(o.readahead_tiles, 6); /* defaults stay */
    mountargs_free(&o);
}

static void test_mount8_form(void **state)
{
    (void)state;
    struct mount_options o;
    char *argv[] = {"/sbin/mount.fuse.tessera", "tessera:tcp://h:7400", "/mnt/t", "-o",
                    "rw,_netdev,nofail,x-systemd.automount,comment=x,allow_other,"
                    "io_timeout_ms=4000,async-creates=0,log_level=debug",
                    "-t", "fuse.tessera", "-n", NULL};
    assert_int_equal(parse(&o, argv), 0);
    assert_string_equal(o.meta, "tcp://h:7400");
    assert_string_equal(o.mountpoint, "/mnt/t");
    assert_int_equal(o.io_timeout_ms, 4000);
    assert_int_equal(o.async_creates, 0);
    assert_int_equal(o.log_level, LOG_LEVEL_DEBUG);
    assert_string_equal(o.fuse_options, "rw,allow_other");
    assert_int_equal(o.foreground, 0);
    mountargs_free(&o);

    char *plain[] = {"mount.tessera", "tessera", "/mnt/t", "-o", "meta=tcp://m:9", NULL};
    assert_int_equal(parse(&o, plain), 0);
    assert_string_equal(o.meta, "tcp://m:9");
    mountargs_free(&o);
    char *source[] = {"mount.tessera", "tcp://s:1", "/mnt/t", NULL};
    assert_int_equal(parse(&o, source), 0);
    assert_string_equal(o.meta, "tcp://s:1");
    mountargs_free(&o);
}

static void test_refusals(void **state)
{
    (void)state;
    struct mount_options o;
    char *none[] = {"tessera-mount", "-f", NULL};
    char *three[] = {"tessera-mount", "a", "b", "c", NULL};
    char *not_endpoint[] = {"mount.tessera", "server", "/mnt", NULL};
    char *two_metas[] = {"mount.tessera", "tcp://a:1", "/mnt", "-o", "meta=tcp://b:2", NULL};
    char *bad_number[] = {"tessera-mount", "-o", "io_timeout_ms=soon", "/mnt", NULL};
    char *too_small[] = {"tessera-mount", "--memory", "8M", "/mnt", NULL};
    char *unknown[] = {"tessera-mount", "--io-timeout", "5", "/mnt", NULL};
    char **cases[] = {none, three, not_endpoint, two_metas, bad_number, too_small, unknown};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(parse(&o, cases[i]), 2);
        mountargs_free(&o);
    }
    char *help[] = {"tessera-mount", "--help", NULL};
    assert_int_equal(parse(&o, help), MOUNTARGS_HELP);
    mountargs_free(&o);
    char *version[] = {"tessera-mount", "-V", NULL};
    assert_int_equal(parse(&o, version), MOUNTARGS_VERSION);
    mountargs_free(&o);
}

/* -o options neither tessera nor FUSE knows are refused while parsing, by
 * libfuse's own parser: before the mount forks or asks meta anything. The
 * FUSE and kernel options (and the ones fstab lines carry) still pass. */
static void test_unknown_fuse_options(void **state)
{
    (void)state;
    struct mount_options o;
    bool stdin_open = fcntl(0, F_GETFD) != -1;
    char *known[] = {"mount.fuse.tessera", "tcp://h:1", "/mnt/t", "-o",
                     "rw,_netdev,noauto,defaults,allow_other,default_permissions,noatime,nosuid,"
                     "nodev,max_read=65536,fsname=x,subtype=tessera",
                     NULL};
    assert_int_equal(parse(&o, known), 0);
    mountargs_free(&o);
    char *no_options[] = {"tessera-mount", "/mnt/t", NULL};
    assert_int_equal(parse(&o, no_options), 0);
    mountargs_free(&o);
    char *typo[] = {"mount.fuse.tessera", "tcp://h:1", "/mnt/t", "-o", "allow_other,io_timeout=3",
                    NULL};
    assert_int_equal(parse(&o, typo), 2);
    mountargs_free(&o);
    char *bogus[] = {"tessera-mount", "-o", "bogus", "/mnt/t", NULL};
    assert_int_equal(parse(&o, bogus), 2);
    mountargs_free(&o);
    char *in_file[] = {"tessera-mount", "--fuse-options=default_permissions,nonsense=1",
                       "/mnt/t", NULL};
    assert_int_equal(parse(&o, in_file), 2);
    mountargs_free(&o);
    /* The probe session was never mounted: destroying it closed no descriptor of ours. */
    assert_int_equal(fcntl(0, F_GETFD) != -1, stdin_open);
}

/* What a configuration file gives (conffile.h): --name=value forms, the
 * mountpoint and FUSE options as options; a positional MOUNTPOINT wins. */
static void test_config_file_forms(void **state)
{
    (void)state;
    struct mount_options o;
    char *file_only[] = {"tessera-mount", "--meta=tcp://f:1", "--mountpoint=/mnt/f",
                         "--fuse-options=allow_other,default_permissions", "--replace-dead",
                         "--config", "/etc/tessera/mount.conf", "--check-config", NULL};
    assert_int_equal(parse(&o, file_only), 0);
    assert_string_equal(o.meta, "tcp://f:1");
    assert_string_equal(o.mountpoint, "/mnt/f");
    assert_string_equal(o.fuse_options, "allow_other,default_permissions");
    assert_int_equal(o.replace_dead, 1);
    mountargs_free(&o);
    char *positional_wins[] = {"tessera-mount", "--mountpoint=/mnt/f", "/mnt/flag", NULL};
    assert_int_equal(parse(&o, positional_wins), 0);
    assert_string_equal(o.mountpoint, "/mnt/flag");
    mountargs_free(&o);
    char *bad[] = {"tessera-mount", "--statahead=lots", "/mnt", NULL};
    assert_int_equal(parse(&o, bad), 2);
    assert_string_equal(o.bad_option, "statahead");
    mountargs_free(&o);

    /* The table a file's keys are checked against: every option, with its kind. */
    const struct option *table = mountargs_long_options();
    bool seen_value = false, seen_switch = false;
    for (; table->name; table++) {
        if (strcmp(table->name, "io-timeout-ms") == 0)
            seen_value = table->has_arg == required_argument;
        if (strcmp(table->name, "replace-dead") == 0)
            seen_switch = table->has_arg == no_argument;
    }
    assert_true(seen_value);
    assert_true(seen_switch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_flags),
        cmocka_unit_test(test_mount8_form),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_unknown_fuse_options),
        cmocka_unit_test(test_config_file_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
