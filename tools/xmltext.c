/*
 * @file xmltext.c
 * See xmltext.h.
 */
#include "xmltext.h"

void xmltext_escape(FILE *out, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            /* XML 1.0 allows no control characters but tab, newline, return. */
            if (*c < 0x20 && *c != '\t' && *c != '\n' && *c != '\r')
                fputc('?', out);
            else
                fputc(*c, out);
        }
    }
}
