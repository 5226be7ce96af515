/*
 * @file jsonout.h
 * Writing JSON and XML text from the tessera command: strings escaped so
 * that any file or machine name comes out as valid text.
 */
#ifndef TESSERA_TOOLS_JSONOUT_H
#define TESSERA_TOOLS_JSONOUT_H

#include <stdio.h>

/* text as a JSON string, quotes included (", \ and control bytes escaped). */
void jsonout_string(FILE *out, const char *text);

/* text escaped for XML character data or an attribute value (&, <, >, ", '). */
void jsonout_xml(FILE *out, const char *text);

#endif
