/*
 * @file recentcuts.h
 * Which mount was just told to cut which file's tile (a SETATTR that
 * shrank a file inside a tile, proto.h), in memory: a truncate(2) by path
 * cuts without the file open, and a holder that fails that cut while
 * another took it leaves the replica set (REPLICA_DROP), which meta
 * otherwise accepts from a mount only for a file that mount holds open
 * (handlers_moves.c). A note lasts RECENTCUTS_TTL_MS, long enough for the
 * cut's calls to every holder; the table keeps the last RECENTCUTS_MAX
 * notes (a mount whose note was pushed out by many others' truncates gets
 * its drop refused, and its truncate fails loudly). Single-threaded.
 */
#ifndef TESSERA_META_RECENTCUTS_H
#define TESSERA_META_RECENTCUTS_H

#include <stdbool.h>
#include <stdint.h>

#define RECENTCUTS_MAX 256
#define RECENTCUTS_TTL_MS 120000

struct recentcuts {
    struct {
        uint64_t mount;
        uint64_t ino;
        int64_t until_ms;
    } notes[RECENTCUTS_MAX];
    unsigned next; /* the slot the next note takes (the oldest) */
};

/* mount (!= 0) was told at now_ms to cut a tile of ino. */
void recentcuts_note(struct recentcuts *cuts, uint64_t mount, uint64_t ino, int64_t now_ms);
/* Whether mount was told to cut a tile of ino less than RECENTCUTS_TTL_MS before now_ms. */
bool recentcuts_has(const struct recentcuts *cuts, uint64_t mount, uint64_t ino, int64_t now_ms);

#endif
