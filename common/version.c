/*
 * @file version.c
 * See version.h. TESSERA_VERSION comes from meson (-D), TESSERA_REVISION
 * from the header vcs_tag writes at build time (git describe).
 */
#include "version.h"

#include "proto.h"
#include "revision.h"

#define VERSION_STR(x) #x
#define VERSION_XSTR(x) VERSION_STR(x)

const char *version_text(void)
{
    return TESSERA_VERSION " (revision " TESSERA_REVISION ", protocol " VERSION_XSTR(
        TS_PROTO_VERSION) ")";
}

void version_print(FILE *out, const char *program)
{
    fprintf(out, "%s %s\n", program, version_text());
}
