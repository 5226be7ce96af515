/*
 * @file configcmd.c
 * `tessera config check FILE`. The file's section says which daemon it is
 * for; that daemon then reads it with --config FILE --check-config, so the
 * check is the daemon's own: the same option table, the same value checks,
 * every error with its line, nothing started. The tool keeps no second
 * list of the options to drift from the daemons'.
 */
#include "configcmd.h"

#include "bindir.h"
#include "cliargs.h"
#include "conffile.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CONFIGCMD_WHO "tessera config"

/* Each section and the daemon that reads it. */
static const struct {
    const char *section;
    const char *binary;
} configcmd_daemons[] = {
    {"meta", "tessera-meta"},
    {"datanode", "tessera-datanode"},
    {"mount", "tessera-mount"},
};
#define CONFIGCMD_DAEMONS (sizeof(configcmd_daemons) / sizeof(configcmd_daemons[0]))

static void configcmd_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera config check FILE\n"
            "\n"
            "Checks a configuration file of tessera-meta ([meta]), tessera-datanode\n"
            "([datanode]) or tessera-mount ([mount]) as that daemon reads it: unknown keys\n"
            "(with the likely one meant), bad values, keys outside the section, each with\n"
            "its line. Exits 0 when the file makes a whole, valid configuration.\n"
            "Default files: %s/meta.conf, datanode.conf and mount.conf.\n",
            CONFFILE_DIR);
}

/* Runs BINARY --config FILE --check-config and returns its exit code. */
static int configcmd_run_check(const char *binary, const char *path)
{
    char binary_path[PATH_MAX];
    char config_arg[PATH_MAX + 16];
    int status;

    if (bindir_find(binary, binary_path, sizeof(binary_path)) != 0)
        return CLIARGS_EXIT_FAILED;
    snprintf(config_arg, sizeof(config_arg), "--%s=%s", CONFFILE_FLAG, path);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: cannot fork: %s\n", CONFIGCMD_WHO, strerror(errno));
        return CLIARGS_EXIT_FAILED;
    }
    if (pid == 0) {
        char *argv[] = {binary_path, config_arg, "--" CONFFILE_CHECK_FLAG, NULL};
        execv(binary_path, argv);
        fprintf(stderr, "%s: cannot run %s: %s\n", CONFIGCMD_WHO, binary_path, strerror(errno));
        _exit(CLIARGS_EXIT_FAILED);
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return CLIARGS_EXIT_FAILED;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : CLIARGS_EXIT_FAILED;
}

static int configcmd_check(const char *path)
{
    char section[64];
    int rc = conffile_section(path, section, sizeof(section));

    if (rc == -ENOENT) {
        fprintf(stderr,
                "%s: %s: missing section: begin the file with [meta], [datanode] or [mount]\n",
                CONFIGCMD_WHO, path);
        return CLIARGS_EXIT_USAGE;
    }
    if (rc < 0) {
        fprintf(stderr, "%s: cannot read %s: %s\n", CONFIGCMD_WHO, path, strerror(-rc));
        return CLIARGS_EXIT_FAILED;
    }
    for (size_t i = 0; i < CONFIGCMD_DAEMONS; i++) {
        if (strcmp(section, configcmd_daemons[i].section) == 0)
            return configcmd_run_check(configcmd_daemons[i].binary, path);
    }
    const char *names[CONFIGCMD_DAEMONS];
    for (size_t i = 0; i < CONFIGCMD_DAEMONS; i++)
        names[i] = configcmd_daemons[i].section;
    const char *guess = util_closest_name(section, names, CONFIGCMD_DAEMONS);
    fprintf(stderr, "%s: %s: unknown section [%s]%s%s%s: want [meta], [datanode] or [mount]\n",
            CONFIGCMD_WHO, path, section, guess ? " (did you mean [" : "", guess ? guess : "",
            guess ? "]?)" : "");
    return CLIARGS_EXIT_USAGE;
}

int configcmd_main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        configcmd_usage(stdout);
        return CLIARGS_EXIT_OK;
    }
    if (argc >= 2 && strcmp(argv[1], "check") == 0) {
        if (argc == 3 && strcmp(argv[2], "--help") != 0)
            return configcmd_check(argv[2]);
        if (argc == 3) {
            configcmd_usage(stdout);
            return CLIARGS_EXIT_OK;
        }
        fprintf(stderr, "%s check: want one FILE (see tessera config --help)\n", CONFIGCMD_WHO);
        return CLIARGS_EXIT_USAGE;
    }
    if (argc < 2) {
        configcmd_usage(stderr);
        return CLIARGS_EXIT_USAGE;
    }
    static const char *const subcommands[] = {"check"};
    return cliargs_unknown_error(CONFIGCMD_WHO, "unknown subcommand", argv[1], "", subcommands, 1);
}
