/*
 * @file recentcuts.c
 * See recentcuts.h. A ring: a note never moves, the oldest is overwritten.
 */
#include "recentcuts.h"

void recentcuts_note(struct recentcuts *cuts, uint64_t mount, uint64_t ino, int64_t now_ms)
{
    if (mount == 0)
        return;
    cuts->notes[cuts->next].mount = mount;
    cuts->notes[cuts->next].ino = ino;
    cuts->notes[cuts->next].until_ms = now_ms + RECENTCUTS_TTL_MS;
    cuts->next = (cuts->next + 1) % RECENTCUTS_MAX;
}

bool recentcuts_has(const struct recentcuts *cuts, uint64_t mount, uint64_t ino, int64_t now_ms)
{
    for (unsigned i = 0; i < RECENTCUTS_MAX; i++)
        if (cuts->notes[i].mount == mount && mount != 0 && cuts->notes[i].ino == ino &&
            cuts->notes[i].until_ms > now_ms)
            return true;
    return false;
}
