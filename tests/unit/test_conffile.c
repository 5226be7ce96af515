/*
 * @file test_conffile.c
 * Unit tests of common/conffile: a configuration file's keys become the
 * daemon's long options ahead of the command line's (which so win), with
 * their lines; every error of a file is told with its line (unknown key
 * with "did you mean", a switch's bad value, a key outside the section, a
 * wrong section, a key set twice, a reserved key, a broken or overlong
 * line); the default file is read only when it exists and --config is not
 * given; conffile_parse() blames the file's line for a bad value and, when
 * checking, goes on to the next; written keys read back the same.
 */
#include "conffile.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static const struct option test_options[] = {
    {"key", required_argument, NULL, 'k'},         {"listen", required_argument, NULL, 'l'},
    {"data", required_argument, NULL, 'd'},        {"copies", required_argument, NULL, 'c'},
    {"log-level", required_argument, NULL, 'v'},   {"insecure", no_argument, NULL, 'I'},
    {"no-repair", no_argument, NULL, 'N'},         {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},           {CONFFILE_FLAG, required_argument, NULL, 'C'},
    {CONFFILE_CHECK_FLAG, no_argument, NULL, 'K'}, {NULL, 0, NULL, 0},
};

struct fixture {
    char dir[64];
    char path[128];
    char err_path[128];
    int saved_stderr;
    struct conffile config;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/test_conffile.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/meta.conf", f->dir);
    snprintf(f->err_path, sizeof(f->err_path), "%s/stderr", f->dir);
    f->saved_stderr = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f->saved_stderr >= 0) {
        fflush(stderr);
        dup2(f->saved_stderr, STDERR_FILENO);
        close(f->saved_stderr);
    }
    conffile_free(&f->config);
    unlink(f->path);
    unlink(f->err_path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fputs(text, out);
    assert_int_equal(fclose(out), 0);
}

/* Sends stderr to a file until read_stderr() gives it back. */
static void capture_stderr(struct fixture *f)
{
    fflush(stderr);
    f->saved_stderr = dup(STDERR_FILENO);
    FILE *err = fopen(f->err_path, "w");
    assert_non_null(err);
    dup2(fileno(err), STDERR_FILENO);
    fclose(err);
}

/* What was written to stderr since capture_stderr(); stderr is restored. The caller frees. */
static char *read_stderr(struct fixture *f)
{
    static char text[8192];
    fflush(stderr);
    dup2(f->saved_stderr, STDERR_FILENO);
    close(f->saved_stderr);
    f->saved_stderr = -1;
    FILE *in = fopen(f->err_path, "r");
    assert_non_null(in);
    size_t len = fread(text, 1, sizeof(text) - 1, in);
    text[len] = '\0';
    fclose(in);
    return text;
}

static int load(struct fixture *f, const char *default_path, char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    return conffile_load(argc, argv, "tessera-test", "meta", test_options, default_path,
                         &f->config);
}

static void test_keys_become_options_before_flags(void **state)
{
    struct fixture *f = *state;
    write_file(f->path, "# a comment\n"
                        "[meta]\n"
                        "listen = tcp://127.0.0.1:7400 ; inline comment\n"
                        "data=/srv/meta\n"
                        "\n"
                        "log_level = debug\n"
                        "insecure = yes\n"
                        "no-repair = false\n");
    char *argv[] = {"tessera-meta", "--config", f->path, "--copies", "2", NULL};
    assert_int_equal(load(f, NULL, argv), 0);
    assert_int_equal(f->config.argc, 9);
    assert_string_equal(f->config.argv[0], "tessera-meta");
    assert_string_equal(f->config.argv[1], "--listen=tcp://127.0.0.1:7400");
    assert_int_equal(f->config.lines[1], 3);
    assert_string_equal(f->config.argv[2], "--data=/srv/meta");
    assert_int_equal(f->config.lines[2], 4);
    assert_string_equal(f->config.argv[3], "--log-level=debug"); /* underscores are dashes */
    assert_int_equal(f->config.lines[3], 6);
    assert_string_equal(f->config.argv[4], "--insecure"); /* no-repair = false: nothing */
    assert_int_equal(f->config.lines[4], 7);
    assert_string_equal(f->config.argv[5], "--config");
    assert_int_equal(f->config.lines[5], 0);
    assert_string_equal(f->config.argv[8], "2");
    assert_null(f->config.argv[9]);
    assert_string_equal(f->config.path, f->path);
    assert_false(f->config.checking);
    assert_int_equal(conffile_find(&f->config, "data"), 2);
    assert_int_equal(conffile_find(&f->config, "copies"), 7);
    assert_int_equal(conffile_find(&f->config, "key"), -1);
}

static void test_every_error_with_its_line(void **state)
{
    struct fixture *f = *state;
    write_file(f->path, "lonely = 1\n"        /* 1: before any section */
                        "[meta]\n"            /* 2 */
                        "lisen = tcp://x:1\n" /* 3: did you mean listen */
                        "insecure = maybe\n"  /* 4: a switch */
                        "data =\n"            /* 5: needs a value */
                        "help = true\n"       /* 6: reserved */
                        "copies = 2\n"        /* 7 */
                        "copies = 3\n"        /* 8: set again */
                        "zzzzzzzzzzzz = 1\n"  /* 9: unknown, no guess */
                        "[datanode]\n"        /* 10 */
                        "meta = tcp://x:1\n"  /* 11: wrong section, told once */
                        "data = /x\n");       /* 12 */
    char *argv[] = {"tessera-meta", "--config=", NULL};
    char config_arg[160];
    snprintf(config_arg, sizeof(config_arg), "--config=%s", f->path);
    argv[1] = config_arg;
    capture_stderr(f);
    assert_int_equal(load(f, NULL, argv), 2);
    char *text = read_stderr(f);
    char expect[256];
    const char *lines[] = {
        ":1: 'lonely' comes before any section: begin the file with [meta]",
        ":3: unknown key 'lisen' (did you mean 'listen'?)",
        ":4: 'insecure' is a switch: true or false, not 'maybe'",
        ":5: 'data' needs a value",
        ":6: 'help' cannot be set in a file",
        ":8: 'copies' is set again (first on line 7)",
        ":9: unknown key 'zzzzzzzzzzzz'\n",
        ":11: section [datanode] is not for tessera-test: its section is [meta]",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        snprintf(expect, sizeof(expect), "tessera-test: %s%s", f->path, lines[i]);
        if (!strstr(text, expect))
            fail_msg("missing \"%s\" in:\n%s", expect, text);
    }
    assert_null(strstr(text, ":12:"));
    assert_null(f->config.argv);
}

static void test_broken_and_overlong_lines(void **state)
{
    struct fixture *f = *state;
    char text[PATH_MAX + 600];
    char value[PATH_MAX + 400]; /* longer than a line may be: PATH_MAX and a key */
    memset(value, 'a', sizeof(value) - 1);
    value[sizeof(value) - 1] = '\0';
    snprintf(text, sizeof(text), "[meta]\ndata = %s\nthis line has no equals sign\ncopies = 2\n",
             value);
    write_file(f->path, text);
    char *argv[] = {"tessera-meta", "--config", f->path, NULL};
    capture_stderr(f);
    assert_int_equal(load(f, NULL, argv), 2);
    char *err = read_stderr(f);
    char expect[256];
    snprintf(expect, sizeof(expect), "%s:2: line longer than", f->path);
    assert_non_null(strstr(err, expect));
    snprintf(expect, sizeof(expect), "%s:3: not a 'key = value' line", f->path);
    assert_non_null(strstr(err, expect));
}

static void test_default_file_only_when_present(void **state)
{
    struct fixture *f = *state;
    char *plain[] = {"tessera-meta", "--data", "/d", NULL};
    /* No file at the default path: the command line alone. */
    assert_int_equal(load(f, f->path, plain), 0);
    assert_null(f->config.path);
    assert_int_equal(f->config.argc, 3);
    conffile_free(&f->config);

    write_file(f->path, "[meta]\ncopies = 3\n");
    assert_int_equal(load(f, f->path, plain), 0);
    assert_string_equal(f->config.path, f->path);
    assert_string_equal(f->config.argv[1], "--copies=3");
    conffile_free(&f->config);

    /* --config names another file: the default is not read. */
    char other[160];
    snprintf(other, sizeof(other), "%s/other.conf", f->dir);
    write_file(other, "[meta]\ncopies = 1\n");
    char *named[] = {"tessera-meta", "--config", other, "--check-config", NULL};
    assert_int_equal(load(f, f->path, named), 0);
    assert_string_equal(f->config.argv[1], "--copies=1");
    assert_int_equal(f->config.argc, 5);
    assert_true(f->config.checking);
    conffile_free(&f->config);
    unlink(other);

    /* A named file that is missing is an error, not silence. */
    capture_stderr(f);
    assert_int_equal(load(f, f->path, named), 2);
    assert_non_null(strstr(read_stderr(f), "cannot read the configuration file"));
}

/* A getopt parser as the daemons have: copies from 1 to 4, a log level, --data required. */
struct parsed {
    long copies;
    const char *data;
    const char *level;
    int calls;
};

static int parse_like_a_daemon(int argc, char **argv, void *context, int *failed_arg)
{
    struct parsed *parsed = context;
    int option;
    parsed->calls++;
    parsed->copies = 1;
    parsed->data = NULL;
    parsed->level = "info";
    opterr = 0;
    while ((option = getopt_long(argc, argv, ":", test_options, NULL)) != -1) {
        *failed_arg = optind - 1;
        char *end;
        switch (option) {
        case 'c':
            parsed->copies = strtol(optarg, &end, 10);
            if (*end || parsed->copies < 1 || parsed->copies > 4) {
                fprintf(stderr, "tessera-test: bad --copies\n");
                return 2;
            }
            break;
        case 'v':
            if (strcmp(optarg, "info") != 0 && strcmp(optarg, "debug") != 0) {
                fprintf(stderr, "tessera-test: bad --log-level\n");
                return 2;
            }
            parsed->level = optarg;
            break;
        case 'd': parsed->data = optarg; break;
        case 'h': return 1;
        default: break;
        }
    }
    *failed_arg = -1;
    if (!parsed->data) {
        fprintf(stderr, "tessera-test: missing --data\n");
        return 2;
    }
    return 0;
}

static void test_flags_win_over_the_file(void **state)
{
    struct fixture *f = *state;
    struct parsed parsed;
    write_file(f->path, "[meta]\ncopies = 2\ndata = /file\n");
    char *argv[] = {"tessera-meta", "--config", f->path, "--copies=3", NULL};
    assert_int_equal(load(f, NULL, argv), 0);
    assert_int_equal(conffile_parse(&f->config, "tessera-test", parse_like_a_daemon, &parsed), 0);
    assert_int_equal(parsed.copies, 3);
    assert_string_equal(parsed.data, "/file");
}

static void test_bad_values_blamed_on_their_lines(void **state)
{
    struct fixture *f = *state;
    struct parsed parsed = {0};
    write_file(f->path, "[meta]\ncopies = 9\nlog-level = loud\n");
    char *argv[] = {"tessera-meta", "--config", f->path, NULL};
    assert_int_equal(load(f, NULL, argv), 0);
    /* Running: the first bad value stops it, with its line. */
    capture_stderr(f);
    assert_int_equal(conffile_parse(&f->config, "tessera-test", parse_like_a_daemon, &parsed), 2);
    char *err = read_stderr(f);
    assert_non_null(strstr(err, "(--copies=9 is set on line 2 of "));
    assert_null(strstr(err, "--log-level=loud"));
    assert_int_equal(parsed.calls, 1);
    conffile_free(&f->config);

    /* Checking: each bad value in turn, then the missing --data (no line to blame). */
    char *check[] = {"tessera-meta", "--config", f->path, "--check-config", NULL};
    assert_int_equal(load(f, NULL, check), 0);
    parsed.calls = 0;
    capture_stderr(f);
    assert_int_equal(conffile_parse(&f->config, "tessera-test", parse_like_a_daemon, &parsed), 2);
    err = read_stderr(f);
    assert_non_null(strstr(err, "(--copies=9 is set on line 2 of "));
    assert_non_null(strstr(err, "(--log-level=loud is set on line 3 of "));
    assert_non_null(strstr(err, "missing --data"));
    assert_int_equal(parsed.calls, 3);
}

static void test_check_says_valid(void **state)
{
    struct fixture *f = *state;
    struct parsed parsed = {0};
    write_file(f->path, "[meta]\ndata = /d\n");
    char *check[] = {"tessera-meta", "--config", f->path, "--check-config", NULL};
    assert_int_equal(load(f, NULL, check), 0);
    /* Its "valid" line goes to stdout, which carries this test's TAP report. */
    fflush(stdout);
    int saved_stdout = dup(STDOUT_FILENO);
    int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, STDOUT_FILENO);
    int rc = conffile_parse(&f->config, "tessera-test", parse_like_a_daemon, &parsed);
    fflush(stdout);
    dup2(saved_stdout, STDOUT_FILENO);
    close(saved_stdout);
    close(null_fd);
    assert_int_equal(rc, 0);
    assert_true(f->config.checking);
    assert_string_equal(parsed.data, "/d");
}

static void test_written_keys_read_back(void **state)
{
    struct fixture *f = *state;
    FILE *out = fopen(f->path, "w");
    static char long_path[PATH_MAX];
    memset(long_path, 'p', sizeof(long_path) - 1);
    long_path[0] = '/';
    assert_non_null(out);
    fprintf(out, "[meta]\n");
    assert_int_equal(conffile_write_key(out, "key", long_path), 0); /* a path as long as any */
    assert_int_equal(conffile_write_key(out, "data", "/a path;with=odd#chars"), 0);
    assert_int_equal(conffile_write_key(out, "listen", "tcp://127.0.0.1:1"), 0);
    /* What would not read back the same is refused. */
    assert_int_equal(conffile_write_key(out, "copies", " 2"), -EINVAL);
    assert_int_equal(conffile_write_key(out, "copies", "2 ; x"), -EINVAL);
    assert_int_equal(conffile_write_key(out, "copies", "2\n"), -EINVAL);
    assert_int_equal(conffile_write_key(out, "copies", ""), -EINVAL);
    assert_int_equal(fclose(out), 0);
    char *argv[] = {"tessera-meta", "--config", f->path, NULL};
    assert_int_equal(load(f, NULL, argv), 0);
    assert_int_equal(strlen(f->config.argv[1]), strlen("--key=") + strlen(long_path));
    assert_string_equal(f->config.argv[2], "--data=/a path;with=odd#chars");
    assert_string_equal(f->config.argv[3], "--listen=tcp://127.0.0.1:1");
    assert_int_equal(f->config.argc, 6);
}

static void test_section_of_a_file(void **state)
{
    struct fixture *f = *state;
    char section[16];
    write_file(f->path, "; comment\n\n[datanode]\n");
    assert_int_equal(conffile_section(f->path, section, sizeof(section)), 0);
    assert_string_equal(section, "datanode");
    write_file(f->path, "listen = x\n[meta]\n");
    assert_int_equal(conffile_section(f->path, section, sizeof(section)), 0);
    assert_string_equal(section, "meta");
    write_file(f->path, "listen = x\n");
    assert_int_equal(conffile_section(f->path, section, sizeof(section)), -ENOENT);
    unlink(f->path);
    assert_int_equal(conffile_section(f->path, section, sizeof(section)), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keys_become_options_before_flags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_error_with_its_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broken_and_overlong_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_file_only_when_present, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flags_win_over_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_values_blamed_on_their_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_says_valid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_written_keys_read_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_section_of_a_file, setup, teardown),
    };
    return cmocka_run_group_tests_name("conffile", tests, NULL, NULL);
}
