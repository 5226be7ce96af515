/*
 * @file diskspace.h
 * The cluster's space without counting a disk twice. Several datanodes of
 * one machine may keep their data directories on one filesystem (the
 * demo's four datanodes all do); each reports that disk's size, so the sum
 * of their capacities counted the disk four times, and `df` on the mount
 * showed four times the space there is. Datanodes of one machine that
 * report the same disk id form one disk: its capacity is the sum of their
 * capacities (each may be capped by --capacity) but at most the disk's
 * size, and its free space the sum of theirs but at most what the disk
 * has free. A datanode with no disk id (0) is a disk of its own. Pure.
 */
#ifndef TESSERA_LIBRARIAN_DISKSPACE_H
#define TESSERA_LIBRARIAN_DISKSPACE_H

#include <stddef.h>
#include <stdint.h>

struct diskspace_node {
    const char *machine; /* compared as text; NULL is "" */
    uint64_t disk_id;    /* 0: unknown */
    uint64_t disk_bytes; /* the disk's size */
    uint64_t disk_free;  /* what the disk has free */
    uint64_t capacity;   /* the datanode's (its --capacity, or the disk's size) */
    uint64_t free_bytes; /* the datanode's free space */
};

struct diskspace_total {
    uint64_t capacity;
    uint64_t free_bytes;
    size_t disks; /* distinct disks counted */
};

/* Sums nodes[0..count) into *total, each shared disk once. */
void diskspace_sum(const struct diskspace_node *nodes, size_t count, struct diskspace_total *total);

#endif
