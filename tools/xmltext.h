/*
 * @file xmltext.h
 * Writing XML text from the tessera command (the SVG heat map of tessera
 * profile show): strings escaped so that any file or machine name comes
 * out as valid character data or attribute value. JSON goes through
 * jansson instead (jsonname.h).
 */
#ifndef TESSERA_TOOLS_XMLTEXT_H
#define TESSERA_TOOLS_XMLTEXT_H

#include <stdio.h>

/* text escaped for XML character data or an attribute value (&, <, >, ", '). */
void xmltext_escape(FILE *out, const char *text);

#endif
