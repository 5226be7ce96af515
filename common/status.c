/*
 * @file status.c
 * The table of status codes, their texts and errno equivalents.
 */
#include "status.h"

#include <errno.h>
#include <stdlib.h>

struct status_entry {
    int status;
    int errno_value;
    const char *text;
};

static const struct status_entry status_table[] = {
#define TS_STATUS_ROW(name, value, errno_value, text) {value, errno_value, text},
    TS_STATUS_LIST(TS_STATUS_ROW)
#undef TS_STATUS_ROW
};
#define STATUS_COUNT (sizeof(status_table) / sizeof(status_table[0]))

static const struct status_entry *status_find(int status)
{
    for (size_t i = 0; i < STATUS_COUNT; i++) {
        if (status_table[i].status == status)
            return &status_table[i];
    }
    return NULL;
}

const char *status_text(int status)
{
    const struct status_entry *entry = status_find(status);
    return entry ? entry->text : "unknown status";
}

int status_to_errno(int status)
{
    const struct status_entry *entry = status_find(status);
    return entry ? entry->errno_value : EIO;
}

int status_from_errno(int errno_value)
{
    int positive = abs(errno_value);
    if (positive == 0)
        return TS_OK;
    if (positive == EDQUOT)
        return TS_ERR_NOSPC;
    if (positive == EAGAIN)
        return TS_ERR_TIMEDOUT;
    if (positive == EBADMSG)
        return TS_ERR_CORRUPT;
    /* The first status with this errno is its own (BADMSG etc. share EIO). */
    for (size_t i = 0; i < STATUS_COUNT; i++) {
        if (status_table[i].errno_value == positive)
            return status_table[i].status;
    }
    return TS_ERR_IO;
}
