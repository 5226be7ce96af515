/*
 * @file rebalanceinput.h
 * The planner's input (librarian/plan.h) built from what meta answers, for
 * `tessera rebalance`: the cluster from NODE_LIST, the profile from
 * PROFILE_GET of each file, the tile map from TILE_MAP. Pure: the caller
 * makes the requests and hands the decoded records in (so tests build an
 * input from fixed records), in this order:
 *
 *   rebalanceinput_set_nodes()              once;
 *   rebalanceinput_add_file()               per file, with its profile;
 *                                           then, before the next file:
 *   rebalanceinput_ranges()                 the tile ranges to ask TILE_MAP
 *                                           about (those holding profiled
 *                                           tiles, at most
 *                                           TS_MAX_TILES_PER_MAP each);
 *   rebalanceinput_add_tiles()              each range's records as seen
 *                                           from no machine (primaries);
 *   rebalanceinput_add_holders()            when a range had replicas
 *                                           besides the primary: its
 *                                           TILE_HOLDERS records, every
 *                                           holder with its own version;
 *   rebalanceinput_set_array()              for an array file, its layout
 *                                           (user.tessera.array's text).
 *
 * Only profiled tiles enter the map (the others cost nothing and never
 * move). A tile's bytes are the file's tile size, less for the last tile
 * of a linear file; tiles past the end of a linear file and holes are left
 * out. Each holder's file version is kept, so a step names the version of
 * the file its source really holds.
 */
#ifndef TESSERA_TOOLS_REBALANCEINPUT_H
#define TESSERA_TOOLS_REBALANCEINPUT_H

#include "toolmeta.h"
#include "plan.h"
#include "proto.h"
#include "relocate.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rebalanceinput_file {
    char *path;
    uint64_t ino;
    uint64_t size;
    uint32_t tile_bytes;
    uint32_t copies;            /* the layout's copies= */
    bool array;                 /* tiles of an array layout: sizes are the upper bound */
    struct arraylayout *layout; /* an array file's, once set_array gave it; else NULL */
    uint64_t *profiled;         /* distinct profiled tiles, sorted */
    size_t profiled_count;
    size_t first_tile_entry; /* its tiles in the map: [first, first + count) */
    size_t tile_entries;
};

/* A range of tiles to ask TILE_MAP about. */
struct rebalanceinput_range {
    uint64_t first;
    uint32_t count;
};

struct rebalanceinput_seen {
    uint64_t ino;
    size_t file;
};

struct rebalanceinput {
    char **names; /* interned machine names */
    size_t name_count;
    size_t name_cap;
    struct plan_node *nodes;
    size_t node_count;
    struct plan_access *accesses;
    size_t access_count;
    size_t access_cap;
    struct plan_tile *tiles; /* per file in tile order; files in the order added */
    uint64_t (*holder_versions)[PLAN_MAX_COPIES]; /* parallel to tiles */
    size_t tile_count;
    size_t tile_cap;
    struct rebalanceinput_file *files;
    size_t file_count;
    size_t file_cap;
    struct rebalanceinput_seen *seen; /* ino -> file index, open addressing (ino 0 = empty) */
    size_t seen_cap;
    struct plan_array_file *arrays; /* the files' layouts, for the lbm policy's roles */
    size_t array_count;
    size_t array_cap;
};

void rebalanceinput_init(struct rebalanceinput *input);
/* Frees what input holds; accepts an initialised, empty input. */
void rebalanceinput_release(struct rebalanceinput *input);

/* The datanodes as NODE_LIST gave them. Returns 0 or -ENOMEM. */
int rebalanceinput_set_nodes(struct rebalanceinput *input, const struct toolmeta_node *nodes,
                             size_t count);

/*
 * Adds a regular file (attr from GETATTR) and its profile records (copied).
 * Returns 0, -EEXIST when the inode was added already (a hard link), or
 * -ENOMEM. *index gets the file's index.
 */
int rebalanceinput_add_file(struct rebalanceinput *input, const char *path,
                            const struct ts_attr *attr, const struct toolmeta_access *records,
                            size_t count, size_t *index);

/* The TILE_MAP ranges of file `index`; *ranges malloc'd. 0 or -ENOMEM. */
int rebalanceinput_ranges(const struct rebalanceinput *input, size_t index,
                          struct rebalanceinput_range **ranges, size_t *count);

/*
 * Adds the profiled tiles of [first, first + count) of file `index` from
 * their TILE_MAP records (as seen from no machine). Ranges must come in
 * increasing order. *has_copies is set when one of them has copies.
 * Returns 0 or -ENOMEM.
 */
int rebalanceinput_add_tiles(struct rebalanceinput *input, size_t index, uint64_t first,
                             const struct ts_tile_map_rec *records, uint32_t count,
                             bool *has_copies);

/*
 * Adds the holders besides each primary from TILE_HOLDERS records
 * (toolmeta_tile_holders) of file `index`, in any order: a holder already
 * known (the primary) is skipped, holders past PLAN_MAX_COPIES are left
 * out, tiles not in the map (unprofiled, holes) ignored. Returns 0.
 */
int rebalanceinput_add_holders(struct rebalanceinput *input, size_t index,
                               const struct toolmeta_holder *holders, size_t count);

/*
 * The disk layout of array file `index` from its canonical text (the
 * user.tessera.array xattr): its lbm roles become its mesh's disk chunks.
 * Returns 0, -EINVAL when the text is not a valid layout, -ENOMEM.
 */
int rebalanceinput_set_array(struct rebalanceinput *input, size_t index, const char *text);

/* Points options->arrays at the array layouts given so far (into input). */
void rebalanceinput_array_options(const struct rebalanceinput *input, struct plan_options *options);

/* The planner's views of the input (pointing into it). */
void rebalanceinput_views(const struct rebalanceinput *input, struct plan_cluster *cluster,
                          struct plan_profile *profile, struct plan_tilemap *map);

/*
 * The executor's steps for a plan made from this input, each with the
 * version of its source's file. *steps malloc'd (NULL when none). Returns
 * 0 or -ENOMEM.
 */
int rebalanceinput_steps(const struct rebalanceinput *input, const struct plan *plan,
                         struct relocate_step **steps, size_t *count);

/* The file of an inode, NULL when not in the input. */
const struct rebalanceinput_file *rebalanceinput_file_of(const struct rebalanceinput *input,
                                                         uint64_t ino);

/* The machine of datanode id ("?" when unknown). */
const char *rebalanceinput_node_machine(const struct rebalanceinput *input, uint32_t id);

#endif
