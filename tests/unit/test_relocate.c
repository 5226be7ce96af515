/*
 * @file test_relocate.c
 * The relocation executor (librarian/relocate.c) against an in-memory
 * cluster: a fake meta (tile holders and a journal with the contract of
 * proto.h) and fake datanodes (tile files with a size and checksum, freezes
 * and retirements), reached through the same struct relocate_transport the
 * tool fills with rpc clients. Knobs make the fake write a tile during its
 * pull, answer a commit with STALE, lose a commit's answer, keep a pull
 * running, or be down. Like meta, the fake refuses to commit a copy whose
 * source was not relinked to the copy's version first.
 */
#include "plan.h"
#include "proto.h"
#include "relocate.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define FAKE_MAX_TILES 64
#define FAKE_MAX_FILES 512
#define FAKE_MAX_NODES 8

struct fake_tile {
    uint64_t ino;
    uint64_t tile;
    uint32_t count;
    uint32_t nodes[PLAN_MAX_COPIES];
    uint64_t versions[PLAN_MAX_COPIES];
};

struct fake_entry {
    bool used;
    bool committed; /* the map switched; the next commit finishes (removes) it */
    struct relocate_step step;
    uint64_t new_version;
};

/* A tile file on a datanode. */
struct fake_file {
    uint32_t node;
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
    uint64_t bytes;
    uint32_t checksum;
    bool frozen;
    bool retired;
};

struct fake {
    pthread_mutex_t lock;
    struct fake_tile tiles[FAKE_MAX_TILES];
    size_t tile_count;
    struct fake_entry journal[FAKE_MAX_TILES];
    struct fake_file files[FAKE_MAX_FILES];
    size_t file_count;
    bool down[FAKE_MAX_NODES + 1];
    uint64_t next_version;
    /* knobs */
    int writes_during_pull;  /* after this many pulls finish, the source is written (unfrozen) */
    int stale_commits;       /* this many commits answer STALE */
    int running_polls;       /* each pull answers RUNNING this many times first */
    int lost_commits;        /* this many commits are applied but answer TIMEDOUT */
    uint32_t down_at_commit; /* this node goes down when a commit switches the map */
    int refused_relinks;     /* this many relinks answer EXIST (a file of that name) */
    /* counters */
    int begins, commits, finishes, aborts, pulls, freezes, lifts, retires, relinks, opens, closes;
    int running_now, running_max;
    /* pull progress per (target, ino, tile, new_version): polls seen */
    struct {
        uint32_t target;
        uint64_t ino, tile, new_version;
        int polls;
    } pulling[FAKE_MAX_FILES];
    size_t pulling_count;
};

static struct fake_tile *fake_tile_find(struct fake *fake, uint64_t ino, uint64_t tile)
{
    for (size_t i = 0; i < fake->tile_count; i++) {
        if (fake->tiles[i].ino == ino && fake->tiles[i].tile == tile)
            return &fake->tiles[i];
    }
    return NULL;
}

static struct fake_file *fake_file_find(struct fake *fake, uint32_t node, uint64_t ino,
                                        uint64_t tile, uint64_t version)
{
    for (size_t i = 0; i < fake->file_count; i++) {
        struct fake_file *file = &fake->files[i];
        if (file->node == node && file->ino == ino && file->tile == tile &&
            file->version == version)
            return file;
    }
    return NULL;
}

static struct fake_entry *fake_entry_find(struct fake *fake, uint64_t ino, uint64_t tile)
{
    for (size_t i = 0; i < FAKE_MAX_TILES; i++) {
        if (fake->journal[i].used && fake->journal[i].step.ino == ino &&
            fake->journal[i].step.tile == tile)
            return &fake->journal[i];
    }
    return NULL;
}

/* Adds tile (ino, tile) on `nodes` (primary first), version 1, with files. */
static void fake_add_tile(struct fake *fake, uint64_t ino, uint64_t tile, uint64_t bytes,
                          uint32_t count, const uint32_t *nodes)
{
    struct fake_tile *entry = &fake->tiles[fake->tile_count++];
    entry->ino = ino;
    entry->tile = tile;
    entry->count = count;
    for (uint32_t i = 0; i < count; i++) {
        entry->nodes[i] = nodes[i];
        entry->versions[i] = 1;
        struct fake_file *file = &fake->files[fake->file_count++];
        memset(file, 0, sizeof(*file));
        file->node = nodes[i];
        file->ino = ino;
        file->tile = tile;
        file->version = 1;
        file->bytes = bytes;
        file->checksum = (uint32_t)(ino * 1000 + tile);
    }
}

/* The holder position of node in the tile, or -1. */
static int fake_holder(const struct fake_tile *entry, uint32_t node)
{
    for (uint32_t i = 0; i < entry->count; i++) {
        if (entry->nodes[i] == node)
            return (int)i;
    }
    return -1;
}

static void *fake_open(void *ctx, unsigned index)
{
    struct fake *fake = ctx;
    (void)index;
    pthread_mutex_lock(&fake->lock);
    fake->opens++;
    pthread_mutex_unlock(&fake->lock);
    return fake;
}

static void fake_close(void *worker)
{
    struct fake *fake = worker;
    pthread_mutex_lock(&fake->lock);
    fake->closes++;
    pthread_mutex_unlock(&fake->lock);
}

static int fake_move_begin(void *worker, const struct relocate_step *step, uint64_t *new_version,
                           char *why, size_t cap)
{
    struct fake *fake = worker;
    int status = TS_OK;
    pthread_mutex_lock(&fake->lock);
    fake->begins++;
    struct fake_tile *entry = fake_tile_find(fake, step->ino, step->tile);
    int holder = entry ? fake_holder(entry, step->from_node) : -1;
    struct fake_entry *journal = fake_entry_find(fake, step->ino, step->tile);
    if (journal && journal->committed) {
        snprintf(why, cap, "a committed entry is not finished");
        status = TS_ERR_BUSY;
    } else if (holder < 0 || entry->versions[holder] != step->version) {
        status = TS_ERR_STALE;
    } else if (journal) {
        if (journal->step.kind == step->kind && journal->step.from_node == step->from_node &&
            journal->step.to_node == step->to_node)
            *new_version = journal->new_version;
        else
            status = TS_ERR_BUSY;
    } else {
        for (size_t i = 0; i < FAKE_MAX_TILES; i++) {
            if (!fake->journal[i].used) {
                fake->journal[i].used = true;
                fake->journal[i].committed = false;
                fake->journal[i].step = *step;
                fake->journal[i].new_version = step->kind == PLAN_DROP ? 0 : ++fake->next_version;
                *new_version = fake->journal[i].new_version;
                break;
            }
        }
    }
    pthread_mutex_unlock(&fake->lock);
    return status;
}

static int fake_move_commit(void *worker, uint64_t ino, uint64_t tile, char *why, size_t cap)
{
    struct fake *fake = worker;
    int status = TS_OK;
    pthread_mutex_lock(&fake->lock);
    fake->commits++;
    struct fake_entry *journal = fake_entry_find(fake, ino, tile);
    struct fake_tile *entry = fake_tile_find(fake, ino, tile);
    if (!journal) {
        status = TS_ERR_NOENT;
    } else if (journal->committed) {
        fake->finishes++;
        journal->used = false;
    } else if (journal->step.kind == PLAN_COPY &&
               !fake_file_find(fake, journal->step.from_node, ino, tile, journal->new_version)) {
        /* Stricter than meta, which cannot see the datanode: the executor's order is tested. */
        snprintf(why, cap, "the copy's source was not relinked before the commit");
        status = TS_ERR_INVAL;
    } else if (fake->stale_commits > 0) {
        fake->stale_commits--;
        journal->used = false;
        snprintf(why, cap, "tile %llu of inode %llu was written", (unsigned long long)tile,
                 (unsigned long long)ino);
        status = TS_ERR_STALE;
    } else {
        const struct relocate_step *step = &journal->step;
        int holder = fake_holder(entry, step->from_node);
        if (step->kind == PLAN_COPY) {
            entry->versions[holder] = journal->new_version;
            entry->nodes[entry->count] = step->to_node;
            entry->versions[entry->count++] = journal->new_version;
        } else if (step->kind == PLAN_MOVE) {
            entry->nodes[holder] = step->to_node;
            entry->versions[holder] = journal->new_version;
        } else {
            for (uint32_t i = (uint32_t)holder; i + 1 < entry->count; i++) {
                entry->nodes[i] = entry->nodes[i + 1];
                entry->versions[i] = entry->versions[i + 1];
            }
            entry->count--;
        }
        journal->committed = true;
        if (fake->down_at_commit)
            fake->down[fake->down_at_commit] = true;
        if (fake->lost_commits > 0) {
            fake->lost_commits--;
            status = TS_ERR_TIMEDOUT;
        }
    }
    pthread_mutex_unlock(&fake->lock);
    return status;
}

static int fake_move_abort(void *worker, uint64_t ino, uint64_t tile, char *why, size_t cap)
{
    struct fake *fake = worker;
    int status = TS_OK;
    (void)why;
    (void)cap;
    pthread_mutex_lock(&fake->lock);
    fake->aborts++;
    struct fake_entry *journal = fake_entry_find(fake, ino, tile);
    if (journal && journal->committed)
        status = TS_ERR_INVAL;
    else if (journal)
        journal->used = false;
    else
        status = TS_ERR_NOENT;
    pthread_mutex_unlock(&fake->lock);
    return status;
}

static int fake_tile_pull(void *worker, uint32_t target, uint32_t source,
                          const struct relocate_step *step, uint64_t new_version,
                          struct relocate_pull *pull, char *why, size_t cap)
{
    struct fake *fake = worker;
    int status = TS_OK;
    pthread_mutex_lock(&fake->lock);
    if (fake->down[target] || fake->down[source]) {
        snprintf(why, cap, "node down");
        status = fake->down[target] ? TS_ERR_TIMEDOUT : TS_ERR_IO;
        goto out;
    }
    size_t slot = 0;
    while (slot < fake->pulling_count &&
           !(fake->pulling[slot].target == target && fake->pulling[slot].ino == step->ino &&
             fake->pulling[slot].tile == step->tile &&
             fake->pulling[slot].new_version == new_version))
        slot++;
    if (slot == fake->pulling_count) {
        fake->pulling_count++;
        fake->pulling[slot].target = target;
        fake->pulling[slot].ino = step->ino;
        fake->pulling[slot].tile = step->tile;
        fake->pulling[slot].new_version = new_version;
        fake->pulling[slot].polls = 0;
        fake->pulls++;
        fake->running_now++;
        if (fake->running_now > fake->running_max)
            fake->running_max = fake->running_now;
    }
    if (fake->pulling[slot].polls++ < fake->running_polls) {
        pull->done = false;
        goto out;
    }
    struct fake_file *from = fake_file_find(fake, source, step->ino, step->tile, step->version);
    if (!from) {
        status = TS_ERR_NOENT;
        goto out;
    }
    struct fake_file *copy = fake_file_find(fake, target, step->ino, step->tile, new_version);
    if (!copy) {
        copy = &fake->files[fake->file_count++];
        *copy = *from;
        copy->node = target;
        copy->version = new_version;
        copy->frozen = false;
        copy->retired = false;
        fake->running_now--;
        if (fake->writes_during_pull > 0 && !from->frozen) {
            fake->writes_during_pull--;
            from->checksum ^= 0xffffu;
        }
    }
    pull->done = true;
    pull->bytes = copy->bytes;
    pull->checksum = copy->checksum;
out:
    pthread_mutex_unlock(&fake->lock);
    return status;
}

static int fake_tile_fence(void *worker, uint32_t node, uint64_t ino, uint64_t tile,
                           uint64_t version, uint32_t action, uint32_t lease_ms,
                           uint64_t new_version, uint64_t *bytes, uint32_t *checksum, char *why,
                           size_t cap)
{
    struct fake *fake = worker;
    int status = TS_OK;
    (void)lease_ms;
    pthread_mutex_lock(&fake->lock);
    if (fake->down[node]) {
        status = TS_ERR_TIMEDOUT;
        goto out;
    }
    struct fake_file *file = fake_file_find(fake, node, ino, tile, version);
    *bytes = file ? file->bytes : 0;
    *checksum = file ? file->checksum : 0;
    if (!file)
        goto out;
    switch (action) {
    case TS_FENCE_FREEZE:
        fake->freezes++;
        file->frozen = true;
        break;
    case TS_FENCE_LIFT:
        fake->lifts++;
        file->frozen = false;
        break;
    case TS_FENCE_RETIRE:
        fake->retires++;
        file->frozen = false;
        file->retired = true;
        break;
    case TS_FENCE_RELINK:
        /* As the datanode: only a frozen file, whose bytes cannot change meanwhile. */
        if (!file->frozen || file->retired) {
            snprintf(why, cap, "the file is not frozen");
            status = TS_ERR_STALE;
            break;
        }
        if (fake->refused_relinks > 0) {
            fake->refused_relinks--;
            snprintf(why, cap, "version %llu is another file already",
                     (unsigned long long)new_version);
            status = TS_ERR_EXIST;
            break;
        }
        fake->relinks++;
        if (!fake_file_find(fake, node, ino, tile, new_version)) {
            struct fake_file *linked = &fake->files[fake->file_count++];
            *linked = *file;
            linked->version = new_version;
            linked->frozen = false;
        }
        break;
    }
out:
    pthread_mutex_unlock(&fake->lock);
    return status;
}

static const struct relocate_transport fake_transport_template = {
    .worker_open = fake_open,
    .worker_close = fake_close,
    .move_begin = fake_move_begin,
    .move_commit = fake_move_commit,
    .move_abort = fake_move_abort,
    .tile_pull = fake_tile_pull,
    .tile_fence = fake_tile_fence,
};

struct state {
    struct fake fake;
    struct relocate_transport transport;
    struct relocate_options options;
    int reports;
    int reported[5];
};

static void record_report(void *ctx, const struct relocate_step *step,
                          const struct relocate_result *result)
{
    struct state *state = ctx;
    (void)step;
    state->reports++;
    state->reported[result->outcome]++;
}

static int setup(void **statep)
{
    struct state *state = calloc(1, sizeof(*state));
    assert_non_null(state);
    pthread_mutex_init(&state->fake.lock, NULL);
    state->fake.next_version = 100;
    state->transport = fake_transport_template;
    state->transport.ctx = &state->fake;
    state->options.poll_ms = 1;
    state->options.report = record_report;
    state->options.report_ctx = state;
    *statep = state;
    return 0;
}

static int teardown(void **statep)
{
    struct state *state = *statep;
    pthread_mutex_destroy(&state->fake.lock);
    free(state);
    return 0;
}

static struct relocate_step make_step(enum plan_action_kind kind, uint64_t ino, uint64_t tile,
                                      uint32_t from, uint32_t to)
{
    struct relocate_step step = {
        .kind = kind,
        .ino = ino,
        .tile = tile,
        .version = 1,
        .tile_bytes = kind == PLAN_DROP ? 0 : 4096,
        .from_node = from,
        .to_node = to,
    };
    return step;
}

static bool any_frozen(const struct fake *fake)
{
    for (size_t i = 0; i < fake->file_count; i++) {
        if (fake->files[i].frozen)
            return true;
    }
    return false;
}

static bool journal_empty(struct fake *fake)
{
    for (size_t i = 0; i < FAKE_MAX_TILES; i++) {
        if (fake->journal[i].used)
            return false;
    }
    return true;
}

static void test_move_commits_and_retires(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 0, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_MOVE, 5, 0, 1, 2);

    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_int_equal(result.pulled, 4096);
    assert_int_equal(fake->tiles[0].count, 1);
    assert_int_equal(fake->tiles[0].nodes[0], 2);
    assert_int_equal(fake->tiles[0].versions[0], 101);
    assert_true(fake_file_find(fake, 1, 5, 0, 1)->retired);
    assert_int_equal(fake->retires, 1);
    assert_int_equal(fake->freezes, 1);
    /* Committed, retired, then finished: two commits. */
    assert_int_equal(fake->commits, 2);
    assert_int_equal(fake->finishes, 1);
    assert_false(any_frozen(fake));
    assert_true(journal_empty(fake));
}

static void test_copy_relinks_and_retires_the_source(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {3};
    fake_add_tile(fake, 7, 2, 1000, 1, holders);
    struct relocate_step step = make_step(PLAN_COPY, 7, 2, 3, 1);

    fake->running_polls = 3; /* the executor has to ask again until done */
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_int_equal(result.pulled, 1000);
    /* Both holders at the copy's version: the source took it by a relink, before the commit. */
    assert_int_equal(fake->tiles[0].count, 2);
    assert_int_equal(fake->tiles[0].nodes[0], 3);
    assert_int_equal(fake->tiles[0].versions[0], 101);
    assert_int_equal(fake->tiles[0].nodes[1], 1);
    assert_int_equal(fake->tiles[0].versions[1], 101);
    assert_int_equal(fake->relinks, 1);
    assert_non_null(fake_file_find(fake, 3, 7, 2, 101));
    /* The old name is retired: a client that cached it is sent back to meta. */
    assert_true(fake_file_find(fake, 3, 7, 2, 1)->retired);
    assert_int_equal(fake->retires, 1);
    assert_int_equal(fake->lifts, 0);
    assert_int_equal(fake->finishes, 1);
    assert_false(any_frozen(fake));
    assert_true(journal_empty(fake));
}

static void test_drop_retires_the_holder(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1, 2};
    fake_add_tile(fake, 9, 0, 4096, 2, holders);
    struct relocate_step step = make_step(PLAN_DROP, 9, 0, 2, 0);

    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_int_equal(result.pulled, 0);
    assert_int_equal(fake->pulls, 0);
    assert_int_equal(fake->tiles[0].count, 1);
    assert_int_equal(fake->tiles[0].nodes[0], 1);
    assert_true(fake_file_find(fake, 2, 9, 0, 1)->retired);
    assert_false(any_frozen(fake));
}

static void test_drop_of_a_down_holder_waits_in_the_journal(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1, 2};
    fake_add_tile(fake, 9, 0, 4096, 2, holders);
    fake->down[2] = true;
    struct relocate_step step = make_step(PLAN_DROP, 9, 0, 2, 0);

    /* Committed without its freeze, but never finished without its RETIRE. */
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_FAILED);
    assert_non_null(strstr(result.why, "RETIRE on datanode 2 failed"));
    assert_non_null(strstr(result.why, "run apply again"));
    assert_int_equal(fake->tiles[0].count, 1);
    assert_int_equal(fake->retires, 0);
    assert_int_equal(fake->finishes, 0);
    assert_true(fake_entry_find(fake, 9, 0)->committed);

    /* The holder is back: the next run finds the committed entry and finishes it. */
    fake->down[2] = false;
    step.committed = true;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_true(fake_file_find(fake, 2, 9, 0, 1)->retired);
    assert_int_equal(fake->finishes, 1);
    assert_true(journal_empty(fake));
}

static void test_retire_failure_keeps_the_entry(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 0, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_MOVE, 5, 0, 1, 2);

    /* The source dies right after the commit (or the tool would, at kill -9). */
    fake->down_at_commit = 1;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_FAILED);
    assert_non_null(strstr(result.why, "RETIRE on datanode 1 failed"));
    assert_int_equal(fake->tiles[0].nodes[0], 2);
    assert_int_equal(fake->aborts, 0);
    assert_int_equal(fake->finishes, 0);
    assert_true(fake_entry_find(fake, 5, 0)->committed);
    assert_false(fake_file_find(fake, 1, 5, 0, 1)->retired);

    /* Resumed while the source is still down: it stays. */
    step.committed = true;
    step.tile_bytes = 0;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_FAILED);
    assert_int_equal(fake->finishes, 0);
    assert_false(journal_empty(fake));

    /* Resumed once it answers: RETIRE, then finish; nothing is pulled or begun again. */
    fake->down[1] = false;
    int begins = fake->begins, pulls = fake->pulls;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_true(fake_file_find(fake, 1, 5, 0, 1)->retired);
    assert_int_equal(fake->finishes, 1);
    assert_int_equal(fake->begins, begins);
    assert_int_equal(fake->pulls, pulls);
    assert_int_equal(fake->tiles[0].nodes[0], 2);
    assert_false(any_frozen(fake));
    assert_true(journal_empty(fake));
}

static void test_resumed_committed_copy_is_retired_and_finished(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {3};
    fake_add_tile(fake, 7, 0, 1000, 1, holders);
    struct relocate_step step = make_step(PLAN_COPY, 7, 0, 3, 1);
    uint64_t new_version = 0;
    char why[64];

    /* A run killed between the two commits (relinked and committed), its source still frozen. */
    assert_int_equal(fake_move_begin(fake, &step, &new_version, why, sizeof(why)), TS_OK);
    fake_file_find(fake, 3, 7, 0, 1)->frozen = true;
    uint64_t bytes;
    uint32_t checksum;
    assert_int_equal(fake_tile_fence(fake, 3, 7, 0, 1, TS_FENCE_RELINK, 0, new_version, &bytes,
                                     &checksum, why, sizeof(why)),
                     TS_OK);
    assert_int_equal(fake_move_commit(fake, 7, 0, why, sizeof(why)), TS_OK);
    step.committed = true;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_int_equal(fake->lifts, 0);
    assert_int_equal(fake->retires, 1);
    assert_true(fake_file_find(fake, 3, 7, 0, 1)->retired);
    assert_int_equal(fake->tiles[0].count, 2);
    assert_false(any_frozen(fake));
    assert_true(journal_empty(fake));

    /* A source that does not take the RETIRE keeps the entry: a cached old version could
     * still be written past the new replica. */
    uint32_t other[] = {3};
    fake_add_tile(fake, 7, 1, 1000, 1, other);
    struct relocate_step second = make_step(PLAN_COPY, 7, 1, 3, 1);
    assert_int_equal(fake_move_begin(fake, &second, &new_version, why, sizeof(why)), TS_OK);
    fake_file_find(fake, 3, 7, 1, 1)->frozen = true;
    assert_int_equal(fake_tile_fence(fake, 3, 7, 1, 1, TS_FENCE_RELINK, 0, new_version, &bytes,
                                     &checksum, why, sizeof(why)),
                     TS_OK);
    assert_int_equal(fake_move_commit(fake, 7, 1, why, sizeof(why)), TS_OK);
    fake->down[3] = true;
    second.committed = true;
    relocate_run_step(&state->transport, fake, &second, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_FAILED);
    assert_non_null(strstr(result.why, "RETIRE on datanode 3 failed"));
    assert_false(journal_empty(fake));
    fake->down[3] = false;
    relocate_run_step(&state->transport, fake, &second, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_true(journal_empty(fake));
}

static void test_lost_commit_answer_is_finished(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 0, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_MOVE, 5, 0, 1, 2);

    /* Meta committed but the answer timed out: the abort says committed, so it is finished. */
    fake->lost_commits = 1;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_string_equal(result.why, "");
    assert_int_equal(fake->aborts, 1);
    assert_int_equal(fake->lifts, 0);
    assert_true(fake_file_find(fake, 1, 5, 0, 1)->retired);
    assert_int_equal(fake->tiles[0].nodes[0], 2);
    assert_true(journal_empty(fake));
}

static void test_write_during_pull_pulls_again_frozen(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 3, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_MOVE, 5, 3, 1, 4);

    fake->writes_during_pull = 1;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_true(result.pulled_again);
    assert_int_equal(fake->pulls, 2);
    assert_int_equal(fake->begins, 2);
    assert_int_equal(fake->aborts, 1);
    /* The map names the second pull's file, which has the written bytes. */
    assert_int_equal(fake->tiles[0].nodes[0], 4);
    assert_int_equal(fake->tiles[0].versions[0], 102);
    struct fake_file *moved = fake_file_find(fake, 4, 5, 3, 102);
    assert_non_null(moved);
    assert_int_equal(moved->checksum, fake_file_find(fake, 1, 5, 3, 1)->checksum);
    assert_false(any_frozen(fake));
    assert_true(journal_empty(fake));
}

static void test_stale_commit_is_skipped_and_lifted(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 0, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_MOVE, 5, 0, 1, 2);

    fake->stale_commits = 1;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_STALE);
    assert_non_null(strstr(result.why, "written"));
    assert_int_equal(fake->tiles[0].nodes[0], 1);
    assert_int_equal(fake->lifts, 1);
    assert_int_equal(fake->retires, 0);
    assert_false(any_frozen(fake));
    assert_true(journal_empty(fake));
}

static void test_stale_begin_does_nothing(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 0, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_MOVE, 5, 0, 1, 2);

    step.version = 2; /* the tile moved on since the plan */
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_STALE);
    assert_int_equal(fake->pulls, 0);
    assert_int_equal(fake->freezes, 0);
}

static void test_source_down_aborts(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 0, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_MOVE, 5, 0, 1, 2);

    fake->down[1] = true;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_FAILED);
    assert_non_null(strstr(result.why, "TILE_PULL on datanode 2 from datanode 1"));
    assert_int_equal(fake->aborts, 1);
    assert_int_equal(fake->commits, 0);
    assert_int_equal(fake->tiles[0].nodes[0], 1);
    assert_true(journal_empty(fake));
}

static void test_pull_timeout_aborts(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 0, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_COPY, 5, 0, 1, 2);

    fake->running_polls = 1000000;
    state->options.pull_timeout_ms = 30;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_FAILED);
    assert_non_null(strstr(result.why, "still running"));
    assert_int_equal(fake->aborts, 1);
    assert_true(journal_empty(fake));
}

/* Runs steps through relocate_start and waits; returns the progress. */
static struct relocate_progress run_all(struct state *state, const struct relocate_step *steps,
                                        size_t count)
{
    struct relocate *run = NULL;
    struct relocate_progress progress;
    assert_int_equal(relocate_start(steps, count, &state->transport, &state->options, &run), 0);
    assert_int_equal(relocate_wait(run, 20000), 0);
    relocate_progress(run, &progress);
    relocate_destroy(&run);
    assert_null(run);
    return progress;
}

static void test_run_many_tiles_concurrently(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_step steps[40];
    size_t count = 0;

    for (uint64_t tile = 0; tile < 20; tile++) {
        uint32_t holders[] = {1, 2};
        fake_add_tile(fake, 11, tile, 4096, 2, holders);
        /* A copy to 3, then the copy on 2 is dropped: in that order. */
        steps[count++] = make_step(PLAN_COPY, 11, tile, 1, 3);
        steps[count++] = make_step(PLAN_DROP, 11, tile, 2, 0);
    }
    fake->running_polls = 2;
    state->options.concurrency = 4;
    struct relocate_progress progress = run_all(state, steps, count);
    assert_int_equal(progress.steps_total, 40);
    assert_int_equal(progress.steps_done, 40);
    assert_int_equal(progress.tiles_total, 20);
    assert_int_equal(progress.tiles_finished, 20);
    assert_int_equal(progress.bytes_total, 20 * 4096);
    assert_int_equal(progress.bytes_done, 20 * 4096);
    assert_int_equal(progress.steps_not_run, 0);
    assert_int_equal(state->reports, 40);
    for (size_t i = 0; i < fake->tile_count; i++) {
        assert_int_equal(fake->tiles[i].count, 2);
        assert_int_equal(fake->tiles[i].nodes[0], 1);
        assert_int_equal(fake->tiles[i].nodes[1], 3);
    }
    assert_true(fake->running_max > 1);
    assert_true(fake->running_max <= 4);
    assert_int_equal(fake->opens, 4);
    assert_int_equal(fake->closes, 4);
    assert_false(any_frozen(fake));
    assert_true(journal_empty(fake));
}

static void test_failed_step_skips_the_rest_of_its_tile(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    uint32_t holders[] = {1, 2};
    fake_add_tile(fake, 11, 0, 4096, 2, holders);
    fake_add_tile(fake, 11, 1, 4096, 2, holders);
    struct relocate_step steps[] = {
        make_step(PLAN_COPY, 11, 0, 1, 5), /* node 5 is down */
        make_step(PLAN_DROP, 11, 0, 2, 0),
        make_step(PLAN_MOVE, 11, 1, 2, 3),
    };

    fake->down[5] = true;
    state->options.concurrency = 2;
    struct relocate_progress progress = run_all(state, steps, 3);
    assert_int_equal(progress.steps_failed, 1);
    assert_int_equal(progress.steps_not_run, 1);
    assert_int_equal(progress.steps_done, 1);
    assert_int_equal(state->reported[RELOCATE_NOT_RUN], 1);
    /* The drop did not run: tile 0 keeps both holders. */
    assert_int_equal(fake->tiles[0].count, 2);
    assert_int_equal(fake->tiles[1].nodes[1], 3);
    assert_true(journal_empty(fake));
}

static void test_stop_finishes_running_steps_only(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_step steps[30];
    struct relocate *run = NULL;
    struct relocate_progress progress;

    for (uint64_t tile = 0; tile < 30; tile++) {
        uint32_t holders[] = {1};
        fake_add_tile(fake, 12, tile, 4096, 1, holders);
        steps[tile] = make_step(PLAN_MOVE, 12, tile, 1, 2);
    }
    fake->running_polls = 20; /* each pull takes about 20 ms */
    state->options.concurrency = 2;
    assert_int_equal(relocate_start(steps, 30, &state->transport, &state->options, &run), 0);
    struct timespec pause = {0, 30 * 1000000L};
    nanosleep(&pause, NULL);
    relocate_stop(run);
    assert_int_equal(relocate_wait(run, 20000), 0);
    relocate_progress(run, &progress);
    relocate_destroy(&run);
    assert_true(progress.stopping);
    assert_true(progress.steps_done >= 1);
    assert_true(progress.steps_done < 30);
    assert_int_equal(progress.steps_done + progress.steps_not_run, 30);
    assert_int_equal(progress.tiles_finished, progress.steps_done);
    assert_int_equal(progress.steps_failed, 0);
    assert_false(any_frozen(fake));
    assert_true(journal_empty(fake));
}

static void test_pacing_limits_the_rate(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_step steps[4];
    struct timespec start, end;

    for (uint64_t tile = 0; tile < 4; tile++) {
        uint32_t holders[] = {1};
        fake_add_tile(fake, 13, tile, 100000, 1, holders);
        steps[tile] = make_step(PLAN_COPY, 13, tile, 1, 2);
        steps[tile].tile_bytes = 100000;
    }
    state->options.concurrency = 4;
    state->options.max_bytes_per_sec = 1000000; /* 4 x 100 kB: the last starts at 300 ms */
    clock_gettime(CLOCK_MONOTONIC, &start);
    struct relocate_progress progress = run_all(state, steps, 4);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double elapsed_ms =
        (double)(end.tv_sec - start.tv_sec) * 1000.0 + (double)(end.tv_nsec - start.tv_nsec) / 1e6;
    assert_int_equal(progress.steps_done, 4);
    assert_true(elapsed_ms >= 280.0);
}

static void test_copy_whose_relink_fails_is_undone(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 0, 4096, 1, holders);
    fake_add_tile(fake, 6, 0, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_COPY, 5, 0, 1, 2);

    /* The source refuses the relink: nothing is committed, the freeze is lifted. */
    fake->refused_relinks = 1;
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_FAILED);
    assert_non_null(strstr(result.why, "relink on datanode 1"));
    assert_int_equal(fake->commits, 0);
    assert_int_equal(fake->aborts, 1);
    assert_int_equal(fake->lifts, 1);
    assert_int_equal(fake->tiles[0].count, 1);
    assert_int_equal(fake->tiles[0].versions[0], 1);
    assert_false(fake_file_find(fake, 1, 5, 0, 1)->retired);
    assert_false(any_frozen(fake));
    assert_true(journal_empty(fake));

    /* In a run: counted as failed, the rest of its tile not run, other tiles go on. */
    fake->refused_relinks = 1;
    struct relocate_step steps[] = {
        make_step(PLAN_COPY, 5, 0, 1, 3),
        make_step(PLAN_DROP, 5, 0, 1, 0), /* after the copy: not run */
        make_step(PLAN_MOVE, 6, 0, 1, 3),
    };
    struct relocate_progress progress = run_all(state, steps, 3);
    assert_int_equal(progress.steps_failed, 1);
    assert_int_equal(progress.steps_not_run, 1);
    assert_int_equal(progress.steps_done, 1);
    assert_int_equal(fake->tiles[1].nodes[0], 3);
    assert_true(journal_empty(fake));
}

static void test_resumed_entry_uses_the_journal(void **statep)
{
    struct state *state = *statep;
    struct fake *fake = &state->fake;
    struct relocate_result result;
    uint32_t holders[] = {1};
    fake_add_tile(fake, 5, 0, 4096, 1, holders);
    struct relocate_step step = make_step(PLAN_MOVE, 5, 0, 1, 2);
    uint64_t new_version = 0;
    char why[64];

    /* A run that stopped after MOVE_BEGIN: the entry is in the journal. */
    assert_int_equal(fake_move_begin(fake, &step, &new_version, why, sizeof(why)), TS_OK);
    step.tile_bytes = 0; /* journal records carry no size */
    relocate_run_step(&state->transport, fake, &step, &state->options, &result);
    assert_int_equal(result.outcome, RELOCATE_DONE);
    assert_int_equal(fake->tiles[0].versions[0], new_version);
    assert_int_equal(result.pulled, 4096);
}

static void test_start_rejects_bad_steps(void **statep)
{
    struct state *state = *statep;
    struct relocate *run = NULL;
    struct relocate_step same = make_step(PLAN_MOVE, 1, 0, 2, 2);
    struct relocate_step no_target = make_step(PLAN_COPY, 1, 0, 2, 0);

    assert_int_equal(relocate_start(&same, 1, &state->transport, NULL, &run), -EINVAL);
    assert_int_equal(relocate_start(&no_target, 1, &state->transport, NULL, &run), -EINVAL);
    assert_null(run);
    /* Nothing to do is a run that has ended at once. */
    struct relocate_progress progress = run_all(state, NULL, 0);
    assert_int_equal(progress.steps_total, 0);
    assert_int_equal(state->fake.opens, 0);
}

static void test_step_from_action(void **statep)
{
    (void)statep;
    struct plan_action action = {
        .kind = PLAN_DROP,
        .ino = 4,
        .tile = 6,
        .version = 8,
        .tile_bytes = 512,
        .from_node = 2,
        .to_node = 9,
    };
    struct relocate_step step;
    relocate_step_from_action(&action, &step);
    assert_int_equal(step.kind, PLAN_DROP);
    assert_int_equal(step.ino, 4);
    assert_int_equal(step.tile, 6);
    assert_int_equal(step.version, 8);
    assert_int_equal(step.tile_bytes, 0);
    assert_int_equal(step.to_node, 0);
    action.kind = PLAN_MOVE;
    relocate_step_from_action(&action, &step);
    assert_int_equal(step.tile_bytes, 512);
    assert_int_equal(step.to_node, 9);
    assert_string_equal(relocate_outcome_name(RELOCATE_STALE), "stale");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_move_commits_and_retires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_relinks_and_retires_the_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_retires_the_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_of_a_down_holder_waits_in_the_journal, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_retire_failure_keeps_the_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resumed_committed_copy_is_retired_and_finished, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lost_commit_answer_is_finished, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_whose_relink_fails_is_undone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_during_pull_pulls_again_frozen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_commit_is_skipped_and_lifted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_begin_does_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_down_aborts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pull_timeout_aborts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_many_tiles_concurrently, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_step_skips_the_rest_of_its_tile, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stop_finishes_running_steps_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pacing_limits_the_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resumed_entry_uses_the_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_rejects_bad_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_from_action, setup, teardown),
    };
    return cmocka_run_group_tests_name("relocate", tests, NULL, NULL);
}
