/*
 * @file conffile.h
 * A daemon's configuration file: INI, read with libinih, with one section
 * named for the daemon ([meta], [datanode] or [mount]) whose keys are the
 * daemon's long options without their dashes:
 *
 *   [datanode]
 *   listen = tcp://10.0.0.2:7401
 *   meta = tcp://10.0.0.1:7400
 *   data = /srv/tessera/disk1
 *   insecure = true          ; a switch: true/false (yes/no, on/off, 1/0)
 *
 * The file turns into command-line arguments ("--listen=tcp://..."), put
 * before the real ones, so that the daemon's one getopt table (or fuse_opt
 * table) parses both, the same checks apply to both, and a flag given on
 * the command line wins over the file (it is parsed later). A switch set
 * to true in the file cannot be turned off by a flag (there are no --no-
 * flags); leave it out of the file instead.
 *
 * Which file: --config FILE (or --config=FILE) on the command line, else
 * the daemon's default path (CONFFILE_DIR/SECTION.conf) when it exists,
 * else none. Errors name the file and line ("FILE:LINE: ..."); all the
 * file's errors are printed before the daemon gives up, with "did you
 * mean" for a mistyped key.
 */
#ifndef TESSERA_COMMON_CONFFILE_H
#define TESSERA_COMMON_CONFFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct option;

#define CONFFILE_DIR "/etc/tessera"
/* The flag that names the file; every daemon's option table has it. */
#define CONFFILE_FLAG "config"
/* The flag that checks the configuration and exits (`tessera config check`). */
#define CONFFILE_CHECK_FLAG "check-config"

struct conffile {
    int argc;
    char **argv;   /* argv[0], the file's options, the command line's; NULL-terminated */
    int *lines;    /* per argv element: its line in the file; 0 from the command line */
    char *path;    /* the file read; NULL when none */
    bool checking; /* --check-config was given */
};

/*
 * Reads the configuration of the daemon `who` (for messages, e.g.
 * "tessera-meta") whose section is `section` and whose long options are
 * `options` (a getopt_long table ending in a NULL name): every key must be
 * one of them, but for config, check-config, help and version. Fills
 * *config with the argv to parse (the command line's own when there is no
 * file). default_path may be NULL (no default file).
 * Returns 0, or 2 after printing every error found (a usage error: the
 * daemon exits 2); *config is then empty. Free with conffile_free().
 */
int conffile_load(int argc, char **argv, const char *who, const char *section,
                  const struct option *options, const char *default_path, struct conffile *config);

/*
 * A daemon's parser over the argv conffile_load() made: returns 0 to run,
 * another exit code to stop (2 when the arguments are wrong, the reason
 * printed); on 2, *failed_arg is the index of the argv element at fault,
 * or -1 when none is (a missing option, say).
 */
typedef int conffile_parse_fn(int argc, char **argv, void *context, int *failed_arg);

/*
 * Runs parse over config's argv. When it fails at an element that came
 * from the file, says which line of the file (after the parser's message).
 * With --check-config, also drops that element and parses again, so every
 * bad value of the file is told, and on success says the configuration is
 * valid; the caller then exits with the result instead of running (check
 * config->checking). Returns the parser's first nonzero result, else 0.
 */
int conffile_parse(struct conffile *config, const char *who, conffile_parse_fn *parse,
                   void *context);

/* The index of the last argv element setting long option `name`, or -1. */
int conffile_find(const struct conffile *config, const char *name);

/* Frees what conffile_load() made; accepts an empty or freed config. */
void conffile_free(struct conffile *config);

/*
 * The section of the configuration file at path (its first), into
 * section[cap]. 0, -ENOENT when it has none, or -errno when it cannot be
 * read. For `tessera config check`, to know which daemon a file is for.
 */
int conffile_section(const char *path, char *section, size_t cap);

/*
 * Writes "key = value" to out when the value reads back unchanged (no
 * newline, no leading or trailing space, no " ;" that inih would take for
 * a comment, not longer than a line may be). 0, or -EINVAL.
 */
int conffile_write_key(FILE *out, const char *key, const char *value);

#endif
