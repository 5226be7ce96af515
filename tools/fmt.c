/*
 * @file fmt.c
 * See fmt.h.
 */
#include "fmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int fmt_into(char *out, size_t cap, const char *format, ...)
{
    va_list args;
    int written;

    va_start(args, format);
    written = vsnprintf(out, cap, format, args);
    va_end(args);
    if (written < 0 || (size_t)written >= cap)
        return -ENAMETOOLONG;
    return 0;
}

void fmt_size(uint64_t bytes, char *out, size_t cap)
{
    static const char units[] = "BKMGTPE";
    double value = (double)bytes;
    size_t unit = 0;

    if (cap == 0)
        return;
    while (value >= 1024.0 && unit + 1 < sizeof(units) - 1) {
        value /= 1024.0;
        unit++;
    }
    if (unit == 0)
        snprintf(out, cap, "%lluB", (unsigned long long)bytes);
    else if (value < 9.95)
        snprintf(out, cap, "%.1f%c", value, units[unit]);
    else
        snprintf(out, cap, "%.0f%c", value, units[unit]);
}
