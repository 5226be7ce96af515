/*
 * @file tessera.c
 * The `tessera` command: finds the subcommand in argv[1] and hands it the
 * rest of the arguments (argv[0] becomes the subcommand's name). Each
 * subcommand parses its own options (with cliargs.h), prints its own --help,
 * and returns the exit code: 0 ok, 1 runtime failure, 2 usage error.
 */
#include "bindir.h"
#include "cliargs.h"
#include "clusterstatus.h"
#include "configcmd.h"
#include "fsck.h"
#include "infoview.h"
#include "healthview.h"
#include "dfview.h"
#include "statsview.h"
#include "keyscmd.h"
#include "down.h"
#include "filelayout.h"
#include "log.h"
#include "modelcmd.h"
#include "nodeadmin.h"
#include "version.h"
#include "scrubrun.h"
#include "profile.h"
#include "place.h"
#include "rebalance.h"
#include "toolkey.h"
#include "up.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tessera_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct tessera_command tessera_commands[] = {
    {"up", up_main, "start a local cluster (meta, datanodes, mount) and wait for it"},
    {"down", down_main, "unmount and stop the local cluster"},
    {"status", clusterstatus_main, "show the datanodes and totals tessera-meta knows"},
    {"node", nodeadmin_main,
     "administer one datanode: throttle ID R|off, stats ID, drain|remove|activate ID"},
    {"health", healthview_main, "HEALTHY, DEGRADED or UNAVAILABLE, and the repair's progress"},
    {"fsck", fsck_main,
     "check meta's tile map against the datanodes; --repair what replicas allow"},
    {"scrub", scrubrun_main, "check every stored tile against its checksums now"},
    {"df", dfview_main, "space per datanode, machine and in total, shared disks counted once"},
    {"stats", statsview_main, "live figures of every daemon, like top (from their metrics)"},
    {"info", infoview_main, "what a file or directory tree holds: entries, bytes, tiles, replicas"},
    {"layout", filelayout_main, "set or show a file's layout and its tile map"},
    {"profile", profile_main, "count who accesses which tiles: start, stop, reset, show"},
    {"rebalance", rebalance_main, "move tiles to their users: plan, apply, status, abort"},
    {"place", place_main, "where Load Balance Matching would serve the files under a path"},
    {"model", modelcmd_main, "predict a read or write, name its bottleneck, advise a layout"},
    {"keys", keyscmd_main, "the cluster's CURVE keys: init, add, list, revoke"},
    {"config", configcmd_main, "check a daemon's configuration file: check FILE"},
};

#define TESSERA_COMMAND_COUNT (sizeof(tessera_commands) / sizeof(tessera_commands[0]))

static void tessera_usage(FILE *out)
{
    fprintf(out, "Usage: tessera [--key FILE] COMMAND [OPTIONS]\n"
                 "\n"
                 "Tessera is a userspace parallel filesystem. Commands:\n");
    for (size_t i = 0; i < TESSERA_COMMAND_COUNT; i++)
        fprintf(out, "  %-10s %s\n", tessera_commands[i].name, tessera_commands[i].summary);
    fprintf(out, "\n"
                 "`tessera COMMAND --help` describes a command's options; "
                 "`tessera --version` the build.\n"
                 "--key FILE: the key pair to connect with (default $TESSERA_KEY, else\n"
                 "STATE/keys/admin.key of the command's --state or the default state, if any).\n"
                 "Quick start: tessera up --nodes 4 --mount /tmp/tessera; tessera status; "
                 "tessera down\n");
}

static const struct tessera_command *tessera_find(const char *name)
{
    for (size_t i = 0; i < TESSERA_COMMAND_COUNT; i++) {
        if (strcmp(tessera_commands[i].name, name) == 0)
            return &tessera_commands[i];
    }
    return NULL;
}

/*
 * `mount -t fuse.tessera SOURCE DIR -o OPTS` (or an fstab line of that
 * type) has mount.fuse run "tessera SOURCE DIR -o OPTS": a SOURCE naming
 * a meta endpoint ("tcp://...", "tessera:...", "tessera") and a directory
 * after it are that call, handed to tessera-mount, which takes that form.
 */
static bool tessera_is_mount_call(int argc, char **argv)
{
    struct stat st;
    if (argc < 3 || !(strstr(argv[1], "://") || strncmp(argv[1], "tessera", 7) == 0))
        return false;
    return stat(argv[2], &st) == 0 && S_ISDIR(st.st_mode);
}

static int tessera_run_mount(char **argv)
{
    char mount_path[PATH_MAX];
    if (bindir_find("tessera-mount", mount_path, sizeof(mount_path)) != 0)
        return CLIARGS_EXIT_FAILED;
    argv[0] = mount_path;
    execv(mount_path, argv);
    fprintf(stderr, "tessera: cannot run %s: %s\n", mount_path, strerror(errno));
    return CLIARGS_EXIT_FAILED;
}

int main(int argc, char **argv)
{
    const struct tessera_command *command;
    const char *key_path = NULL;
    int exit_code;

    /* Library messages (rpc.c) are warnings for a person at a terminal. */
    log_init("tessera", LOG_LEVEL_WARN);
    /* Progress lines and error lines must come out in the order they happen. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && strcmp(argv[1], "--key") == 0) {
        key_path = argv[2];
        argc -= 2;
        argv += 2;
    }
    if (argc < 2) {
        tessera_usage(stderr);
        return CLIARGS_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        tessera_usage(stdout);
        return CLIARGS_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0 ||
        strcmp(argv[1], "version") == 0) {
        version_print(stdout, "tessera");
        return CLIARGS_EXIT_OK;
    }
    command = tessera_find(argv[1]);
    if (!command && tessera_is_mount_call(argc, argv))
        return tessera_run_mount(argv);
    if (!command) {
        const char *names[TESSERA_COMMAND_COUNT];
        for (size_t i = 0; i < TESSERA_COMMAND_COUNT; i++)
            names[i] = tessera_commands[i].name;
        return cliargs_unknown_error("tessera", "unknown command", argv[1], "", names,
                                     TESSERA_COMMAND_COUNT);
    }
    exit_code = toolkey_choose(key_path, argc - 1, argv + 1);
    if (exit_code != 0)
        return exit_code;
    return command->run(argc - 1, argv + 1);
}
