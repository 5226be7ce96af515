/*
 * @file viewargs.h
 * The command line every "show the cluster" command shares (tessera
 * status, health, df): [--state DIR | --meta ENDPOINT] [--json]
 * [--timeout-ms MS] [-h], no operands, and which meta to ask resolved
 * (metatarget.h).
 */
#ifndef TESSERA_TOOLS_VIEWARGS_H
#define TESSERA_TOOLS_VIEWARGS_H

#include "metatarget.h"

#include <stdbool.h>
#include <stdio.h>

struct viewargs {
    struct metatarget target;
    bool json;
};

/*
 * Parses argv for command who (usage prints its --help) into *args, meta's
 * replies waited for timeout_ms unless --timeout-ms says otherwise.
 * Returns CLIARGS_GO_ON with args->target resolved, else the exit code
 * (after --help, or a usage or resolution error printed).
 */
int viewargs_parse(const char *who, void (*usage)(FILE *out), long timeout_ms, int argc,
                   char **argv, struct viewargs *args);

#endif
