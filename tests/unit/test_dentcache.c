/*
 * @file test_dentcache.c
 * Unit tests of the mount's statahead cache (fuse/dentcache.c) with a fake
 * clock: windows answer positive and negative lookups while fresh, walks
 * are detected, and every change the mount reports keeps the cache from
 * answering with data older than the change.
 */
#include "dentcache.h"
#include "status.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#define TIMEOUT 1.0
#define DIR_INO 10
#define OTHER_DIR 11

static double fake_now;

static double fake_clock(void)
{
    return fake_now;
}

static int setup(void **state)
{
    fake_now = 100.0;
    *state = dentcache_new(TIMEOUT, 1024, fake_clock);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    struct dentcache *cache = *state;
    dentcache_destroy(&cache);
    assert_null(cache);
    dentcache_destroy(NULL);
    return 0;
}

static struct ts_attr file_attr(uint64_t ino, uint32_t nlink)
{
    struct ts_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.ino = ino;
    attr.mode = S_IFREG | 0644;
    attr.nlink = nlink;
    attr.size = ino * 10;
    attr.ctime_sec = 1000 + (int64_t)ino;
    return attr;
}

/* count entries named f0000.. with inode 100 + i, from index `first`. */
static struct meta_direntplus *listing(uint32_t first, uint32_t count)
{
    struct meta_direntplus *entries = calloc(count ? count : 1, sizeof(*entries));
    assert_non_null(entries);
    for (uint32_t i = 0; i < count; i++) {
        snprintf(entries[i].name, sizeof(entries[i].name), "f%04u", first + i);
        entries[i].attr = file_attr(100 + first + i, 1);
    }
    return entries;
}

static enum dentcache_answer lookup(struct dentcache *cache, uint64_t parent, const char *name,
                                    struct ts_attr *attr, struct dentcache_fetch *fetch)
{
    struct ts_attr ignored;
    struct dentcache_fetch ignored_fetch;
    double timeout = -1;
    enum dentcache_answer answer = dentcache_lookup(cache, parent, name, attr ? attr : &ignored,
                                                    &timeout, fetch ? fetch : &ignored_fetch);
    if (answer != DENTCACHE_MISS)
        assert_true(timeout > 0 && timeout <= TIMEOUT);
    return answer;
}

/*
 * Misses three names in increasing order, the third of which asks for a
 * window, and installs entries [first, first + count) fetched from `from`.
 */
static void walk_into(struct dentcache *cache, uint64_t dir, const char *from, uint32_t first,
                      uint32_t count, bool done)
{
    struct dentcache_fetch fetch;
    assert_int_equal(lookup(cache, dir, "a1", NULL, &fetch), DENTCACHE_MISS);
    assert_int_equal(fetch.max_entries, 0);
    assert_int_equal(lookup(cache, dir, "a2", NULL, &fetch), DENTCACHE_MISS);
    assert_int_equal(fetch.max_entries, 0);
    assert_int_equal(lookup(cache, dir, from, NULL, &fetch), DENTCACHE_MISS);
    assert_int_equal(fetch.max_entries, DENTCACHE_MIN_FETCH);
    assert_int_equal(fetch.parent, dir);
    struct meta_direntplus *entries = listing(first, count);
    assert_true(dentcache_install(cache, &fetch, from, entries, count, done) > 0);
    free(entries);
}

static void test_window_answers(void **state)
{
    struct dentcache *cache = *state;
    struct ts_attr attr;

    walk_into(cache, DIR_INO, "f0000", 0, 10, false);
    assert_int_equal(lookup(cache, DIR_INO, "f0003", &attr, NULL), DENTCACHE_FOUND);
    assert_int_equal(attr.ino, 103);
    assert_int_equal(attr.size, 1030);
    /* Inside [f0000, f0009] and not listed: it does not exist. */
    assert_int_equal(lookup(cache, DIR_INO, "f0003x", NULL, NULL), DENTCACHE_ABSENT);
    /* Past the window's end (the listing was not done): unknown. */
    assert_int_equal(lookup(cache, DIR_INO, "f0010", NULL, NULL), DENTCACHE_MISS);
    assert_int_equal(lookup(cache, DIR_INO, "e", NULL, NULL), DENTCACHE_MISS);
    /* Another directory knows nothing. */
    assert_int_equal(lookup(cache, OTHER_DIR, "f0003", NULL, NULL), DENTCACHE_MISS);
    /* "." and ".." are the kernel's business. */
    assert_int_equal(lookup(cache, DIR_INO, "..", NULL, NULL), DENTCACHE_MISS);

    struct dentcache_stats stats;
    dentcache_stats(cache, &stats);
    assert_int_equal(stats.found, 1);
    assert_int_equal(stats.absent, 1);
    assert_int_equal(stats.installed, 1);
}

static void test_window_expires(void **state)
{
    struct dentcache *cache = *state;
    double timeout = 0;
    struct ts_attr attr;
    struct dentcache_fetch fetch;

    walk_into(cache, DIR_INO, "f0000", 0, 4, true);
    fake_now += 0.75;
    assert_int_equal(dentcache_lookup(cache, DIR_INO, "f0001", &attr, &timeout, &fetch),
                     DENTCACHE_FOUND);
    /* What is left of the timeout, not a fresh one. */
    assert_true(timeout > 0.2 && timeout < 0.3);
    assert_int_equal(lookup(cache, DIR_INO, "zzz", NULL, NULL), DENTCACHE_ABSENT);
    fake_now += 0.3;
    assert_int_equal(lookup(cache, DIR_INO, "f0001", NULL, NULL), DENTCACHE_MISS);
    assert_int_equal(lookup(cache, DIR_INO, "zzz", NULL, NULL), DENTCACHE_MISS);
}

/* A done listing from the looked-up name proves everything after it absent. */
static void test_negative_window(void **state)
{
    struct dentcache *cache = *state;
    walk_into(cache, DIR_INO, "g0002", 0, 0, true);
    assert_int_equal(lookup(cache, DIR_INO, "g0002", NULL, NULL), DENTCACHE_ABSENT);
    assert_int_equal(lookup(cache, DIR_INO, "g0003", NULL, NULL), DENTCACHE_ABSENT);
    assert_int_equal(lookup(cache, DIR_INO, "zz", NULL, NULL), DENTCACHE_ABSENT);
    assert_int_equal(lookup(cache, DIR_INO, "g0001", NULL, NULL), DENTCACHE_MISS);
}

/* The mount's own creates and unlinks update the window at once. */
static void test_added_and_removed(void **state)
{
    struct dentcache *cache = *state;
    struct ts_attr attr = file_attr(500, 1);
    struct ts_attr found;

    walk_into(cache, DIR_INO, "g0000", 0, 0, true);
    struct dentcache_ticket ticket = dentcache_ticket(cache);
    dentcache_added(cache, DIR_INO, "g0000", &attr, NULL, ticket);
    assert_int_equal(lookup(cache, DIR_INO, "g0000", &found, NULL), DENTCACHE_FOUND);
    assert_int_equal(found.ino, 500);
    assert_int_equal(lookup(cache, DIR_INO, "g0001", NULL, NULL), DENTCACHE_ABSENT);

    ticket = dentcache_ticket(cache);
    dentcache_removed(cache, DIR_INO, "g0000", NULL, ticket);
    assert_int_equal(lookup(cache, DIR_INO, "g0000", NULL, NULL), DENTCACHE_ABSENT);

    /* Names outside every window are left alone. */
    ticket = dentcache_ticket(cache);
    dentcache_added(cache, OTHER_DIR, "x", &attr, NULL, ticket);
    assert_int_equal(lookup(cache, OTHER_DIR, "x", NULL, NULL), DENTCACHE_MISS);
}

/* An inode the mount changed is looked up in meta again. */
static void test_changed_entry_not_trusted(void **state)
{
    struct dentcache *cache = *state;
    struct dentcache_fetch fetch;

    walk_into(cache, DIR_INO, "f0000", 0, 8, true);
    dentcache_changed(cache, 102);
    assert_int_equal(lookup(cache, DIR_INO, "f0002", NULL, &fetch), DENTCACHE_MISS);
    /* Still a walk: the miss asks for a newer window. */
    assert_true(fetch.max_entries > 0);
    assert_int_equal(lookup(cache, DIR_INO, "f0003", NULL, NULL), DENTCACHE_FOUND);
    /* A window fetched after the change is trusted again. */
    struct meta_direntplus *entries = listing(2, 6);
    entries[0].attr.size = 7;
    assert_true(dentcache_install(cache, &fetch, "f0002", entries, 6, true) > 0);
    free(entries);
    struct ts_attr attr;
    assert_int_equal(lookup(cache, DIR_INO, "f0002", &attr, NULL), DENTCACHE_FOUND);
    assert_int_equal(attr.size, 7);
}

/* A window asked for before a change of its directory is not installed. */
static void test_install_discarded_after_change(void **state)
{
    struct dentcache *cache = *state;
    struct dentcache_fetch fetch;
    struct ts_attr attr = file_attr(600, 1);

    lookup(cache, DIR_INO, "a", NULL, NULL);
    lookup(cache, DIR_INO, "b", NULL, NULL);
    assert_int_equal(lookup(cache, DIR_INO, "c", NULL, &fetch), DENTCACHE_MISS);
    assert_true(fetch.max_entries > 0);
    /* Meanwhile this mount created "d" in the directory. */
    struct dentcache_ticket ticket = dentcache_ticket(cache);
    dentcache_added(cache, DIR_INO, "d", &attr, NULL, ticket);
    struct meta_direntplus *entries = listing(0, 0);
    assert_true(dentcache_install(cache, &fetch, "c", entries, 0, true) == 0);
    free(entries);
    assert_int_equal(lookup(cache, DIR_INO, "d", NULL, NULL), DENTCACHE_MISS);

    struct dentcache_stats stats;
    dentcache_stats(cache, &stats);
    assert_int_equal(stats.discarded, 1);

    /* Too old by the time it came back: not kept either. */
    assert_int_equal(lookup(cache, DIR_INO, "e", NULL, &fetch), DENTCACHE_MISS);
    assert_true(fetch.max_entries > 0);
    fake_now += 2 * TIMEOUT;
    entries = listing(0, 0);
    assert_true(dentcache_install(cache, &fetch, "e", entries, 0, true) == 0);
    free(entries);
}

/* Unsorted or out-of-range listings are refused. */
static void test_install_checks_order(void **state)
{
    struct dentcache *cache = *state;
    struct dentcache_fetch fetch;
    lookup(cache, DIR_INO, "a", NULL, NULL);
    lookup(cache, DIR_INO, "b", NULL, NULL);
    assert_int_equal(lookup(cache, DIR_INO, "f0005", NULL, &fetch), DENTCACHE_MISS);
    struct meta_direntplus *entries = listing(0, 4); /* starts before f0005 */
    assert_true(dentcache_install(cache, &fetch, "f0005", entries, 4, true) == 0);
    free(entries);
    entries = listing(5, 3);
    memcpy(entries[2].name, "f0004", 6); /* not sorted */
    assert_true(dentcache_install(cache, &fetch, "f0005", entries, 3, true) == 0);
    free(entries);
    assert_int_equal(lookup(cache, DIR_INO, "f0006", NULL, NULL), DENTCACHE_MISS);
}

/* Lookups in no particular order never ask for windows; a readdir does. */
static void test_walk_detection(void **state)
{
    struct dentcache *cache = *state;
    struct dentcache_fetch fetch;
    const char *names[] = {"m", "c", "x", "b", "q", "a"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        assert_int_equal(lookup(cache, DIR_INO, names[i], NULL, &fetch), DENTCACHE_MISS);
        assert_int_equal(fetch.max_entries, 0);
    }
    dentcache_walk_hint(cache, DIR_INO);
    assert_int_equal(lookup(cache, DIR_INO, "a", NULL, &fetch), DENTCACHE_MISS);
    assert_int_equal(fetch.max_entries, DENTCACHE_MIN_FETCH);
}

/*
 * An rm asks twice for each name its kernel had no entry for (a LOOKUP,
 * then the UNLINK's own question): the repeat neither counts nor breaks the
 * streak, so the third new name in order starts a window.
 */
static void test_walk_with_repeats(void **state)
{
    struct dentcache *cache = *state;
    struct dentcache_fetch fetch;
    const char *asked[] = {"f1", "f1", "f2", "f2", "f3"};
    for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
        assert_int_equal(lookup(cache, DIR_INO, asked[i], NULL, &fetch), DENTCACHE_MISS);
        assert_int_equal(fetch.max_entries, i + 1 < sizeof(asked) / sizeof(asked[0])
                                                ? 0
                                                : DENTCACHE_MIN_FETCH);
    }
    /* Going back still starts over. */
    assert_int_equal(lookup(cache, DIR_INO, "f0", NULL, &fetch), DENTCACHE_MISS);
    assert_int_equal(fetch.max_entries, 0);
}

/* Windows that get used grow, up to the maximum. */
static void test_window_growth(void **state)
{
    struct dentcache *cache = *state;
    struct dentcache_fetch fetch;
    uint32_t first = 0;
    uint32_t size = DENTCACHE_MIN_FETCH;

    walk_into(cache, DIR_INO, "f0000", 0, DENTCACHE_MIN_FETCH, false);
    for (int round = 0; round < 8; round++) {
        char name[16];
        for (uint32_t i = 0; i < size; i++) {
            snprintf(name, sizeof(name), "f%04u", first + i);
            assert_int_equal(lookup(cache, DIR_INO, name, NULL, NULL), DENTCACHE_FOUND);
        }
        first += size;
        snprintf(name, sizeof(name), "f%04u", first);
        assert_int_equal(lookup(cache, DIR_INO, name, NULL, &fetch), DENTCACHE_MISS);
        uint32_t expected = size * 2 > 1024 ? 1024 : size * 2;
        assert_int_equal(fetch.max_entries, expected);
        size = expected;
        struct meta_direntplus *entries = listing(first, size);
        assert_true(dentcache_install(cache, &fetch, name, entries, size, false) > 0);
        free(entries);
    }
    assert_int_equal(size, 1024);
}

/* An unlink this cache cannot name distrusts entries of multiply linked files. */
static void test_hard_links(void **state)
{
    struct dentcache *cache = *state;
    struct dentcache_fetch fetch;
    struct meta_direntplus *entries = listing(0, 2);
    entries[1].attr.nlink = 2;

    lookup(cache, DIR_INO, "a", NULL, NULL);
    lookup(cache, DIR_INO, "b", NULL, NULL);
    assert_int_equal(lookup(cache, DIR_INO, "f0000", NULL, &fetch), DENTCACHE_MISS);
    assert_true(dentcache_install(cache, &fetch, "f0000", entries, 2, true) > 0);
    free(entries);
    struct dentcache_ticket ticket = dentcache_ticket(cache);
    dentcache_removed(cache, OTHER_DIR, "some-link", NULL, ticket);
    assert_int_equal(lookup(cache, DIR_INO, "f0000", NULL, NULL), DENTCACHE_FOUND);
    assert_int_equal(lookup(cache, DIR_INO, "f0001", NULL, NULL), DENTCACHE_MISS);
}

/* A rename forgets both windows. */
static void test_renamed(void **state)
{
    struct dentcache *cache = *state;
    walk_into(cache, DIR_INO, "f0000", 0, 4, true);
    struct dentcache_ticket ticket = dentcache_ticket(cache);
    dentcache_renamed(cache, DIR_INO, "f0001", OTHER_DIR, "moved", NULL, ticket);
    assert_int_equal(lookup(cache, DIR_INO, "f0001", NULL, NULL), DENTCACHE_MISS);
    assert_int_equal(lookup(cache, DIR_INO, "f0002", NULL, NULL), DENTCACHE_MISS);
}

static struct ts_attr dir_attr(uint64_t ino, int64_t mtime)
{
    struct ts_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.ino = ino;
    attr.mode = S_IFDIR | 0755;
    attr.nlink = 2;
    attr.mtime_sec = mtime;
    attr.ctime_sec = mtime;
    return attr;
}

/* Directory attributes fetched with a change answer the kernel's next GETATTR. */
static void test_dir_attrs(void **state)
{
    struct dentcache *cache = *state;
    struct ts_attr attr;
    double timeout = 0;
    struct metaclient_dirs dirs = {.count = 1, .ino = {DIR_INO}};

    assert_false(dentcache_getattr(cache, DIR_INO, &attr, &timeout));
    assert_false(dentcache_dir_attr_known(cache, DIR_INO));
    struct dentcache_ticket ticket = dentcache_ticket(cache);
    dirs.attr[0] = dir_attr(DIR_INO, 2000);
    dirs.status[0] = TS_OK;
    dentcache_removed(cache, DIR_INO, "gone", &dirs, ticket);
    assert_true(dentcache_getattr(cache, DIR_INO, &attr, &timeout));
    assert_int_equal(attr.mtime_sec, 2000);
    assert_true(timeout > 0 && timeout <= TIMEOUT);
    assert_true(dentcache_dir_attr_known(cache, DIR_INO));

    /* An entry added without fetching them: derived from its ctime. */
    struct ts_attr sub = dir_attr(700, 2005);
    ticket = dentcache_ticket(cache);
    dentcache_added(cache, DIR_INO, "sub", &sub, NULL, ticket);
    assert_true(dentcache_getattr(cache, DIR_INO, &attr, &timeout));
    assert_int_equal(attr.mtime_sec, 2005);
    assert_int_equal(attr.ctime_sec, 2005);
    assert_int_equal(attr.nlink, 3);
    /* Reported out of order: the times stay. */
    struct ts_attr older = file_attr(701, 1);
    older.ctime_sec = 2003;
    ticket = dentcache_ticket(cache);
    dentcache_added(cache, DIR_INO, "older", &older, NULL, ticket);
    assert_true(dentcache_getattr(cache, DIR_INO, &attr, &timeout));
    assert_int_equal(attr.mtime_sec, 2005);
    assert_int_equal(attr.nlink, 3);

    /* Any other change of the directory: ask meta. */
    dentcache_changed(cache, DIR_INO);
    assert_false(dentcache_getattr(cache, DIR_INO, &attr, &timeout));

    /* Fetched while another change of the same directory was reported: not kept. */
    ticket = dentcache_ticket(cache);
    dentcache_changed(cache, DIR_INO);
    dirs.attr[0] = dir_attr(DIR_INO, 3000);
    dentcache_removed(cache, DIR_INO, "x", &dirs, ticket);
    assert_false(dentcache_getattr(cache, DIR_INO, &attr, &timeout));

    /* Kept ones expire. */
    ticket = dentcache_ticket(cache);
    dentcache_removed(cache, DIR_INO, "y", &dirs, ticket);
    assert_true(dentcache_getattr(cache, DIR_INO, &attr, &timeout));
    fake_now += TIMEOUT;
    assert_false(dentcache_getattr(cache, DIR_INO, &attr, &timeout));

    /* A failed fetch keeps nothing; a rename drops what was kept. */
    ticket = dentcache_ticket(cache);
    dentcache_removed(cache, DIR_INO, "z", &dirs, ticket);
    assert_true(dentcache_getattr(cache, DIR_INO, &attr, &timeout));
    ticket = dentcache_ticket(cache);
    dentcache_renamed(cache, OTHER_DIR, "a", OTHER_DIR, "b", NULL, ticket);
    assert_false(dentcache_getattr(cache, DIR_INO, &attr, &timeout));
    dirs.status[0] = TS_ERR_TIMEDOUT;
    ticket = dentcache_ticket(cache);
    dentcache_removed(cache, DIR_INO, "w", &dirs, ticket);
    assert_false(dentcache_getattr(cache, DIR_INO, &attr, &timeout));
}

/* A setattr's answer answers the kernel's getattr right after it. */
static void test_file_attrs(void **state)
{
    struct dentcache *cache = *state;
    struct ts_attr attr;
    double timeout = 0;
    struct ts_attr set = file_attr(900, 1);

    assert_false(dentcache_getattr(cache, 900, &attr, &timeout));
    dentcache_attr_set(cache, &set);
    assert_true(dentcache_getattr(cache, 900, &attr, &timeout));
    assert_int_equal(attr.size, set.size);
    assert_true(timeout > 0 && timeout <= TIMEOUT);
    /* Any other change of it (a commit, an xattr): ask meta. */
    dentcache_changed(cache, 900);
    assert_false(dentcache_getattr(cache, 900, &attr, &timeout));
    /* A newer setattr replaces the kept answer; kept answers expire. */
    set.size = 77;
    dentcache_attr_set(cache, &set);
    assert_true(dentcache_getattr(cache, 900, &attr, &timeout));
    assert_int_equal(attr.size, 77);
    fake_now += TIMEOUT;
    assert_false(dentcache_getattr(cache, 900, &attr, &timeout));
    /* A file with several links: the removal of a name this cache cannot
     * place may have been one of them (its nlink changed). */
    set = file_attr(950, 3);
    dentcache_attr_set(cache, &set);
    assert_true(dentcache_getattr(cache, 950, &attr, &timeout));
    struct dentcache_ticket ticket = dentcache_ticket(cache);
    dentcache_removed(cache, OTHER_DIR, "unknown", NULL, ticket);
    assert_false(dentcache_getattr(cache, 950, &attr, &timeout));
    /* One link only: no other name of it can go. */
    set = file_attr(951, 1);
    dentcache_attr_set(cache, &set);
    ticket = dentcache_ticket(cache);
    dentcache_removed(cache, OTHER_DIR, "unknown2", NULL, ticket);
    assert_true(dentcache_getattr(cache, 951, &attr, &timeout));
    /* Only the last few files are kept. */
    for (uint64_t ino = 1000; ino < 1100; ino++) {
        set = file_attr(ino, 1);
        dentcache_attr_set(cache, &set);
    }
    assert_true(dentcache_getattr(cache, 1099, &attr, &timeout));
    assert_false(dentcache_getattr(cache, 1000, &attr, &timeout));
}

/* A directory this mount made is known empty: its names need no lookup. */
static void test_dir_made(void **state)
{
    struct dentcache *cache = *state;
    struct dentcache_fetch fetch;
    struct ts_attr made = dir_attr(800, 3000);
    struct ts_attr attr;

    struct dentcache_ticket ticket = dentcache_ticket(cache);
    dentcache_added(cache, DIR_INO, "new", &made, NULL, ticket);
    dentcache_dir_made(cache, 800, ticket);
    assert_int_equal(lookup(cache, 800, "anything", NULL, &fetch), DENTCACHE_ABSENT);
    assert_true(dentcache_absent(cache, 800, "b"));
    /* Names created in it join the window. */
    struct ts_attr file = file_attr(801, 1);
    ticket = dentcache_ticket(cache);
    dentcache_added(cache, 800, "f", &file, NULL, ticket);
    assert_int_equal(lookup(cache, 800, "f", &attr, &fetch), DENTCACHE_FOUND);
    assert_int_equal(attr.ino, 801);
    /* It is a window like a fetched one: it expires from the mkdir. */
    fake_now += TIMEOUT;
    assert_int_equal(lookup(cache, 800, "anything", NULL, &fetch), DENTCACHE_MISS);

    /* A mkdir answered too long ago says nothing any more. */
    ticket = dentcache_ticket(cache);
    fake_now += TIMEOUT;
    dentcache_dir_made(cache, 802, ticket);
    assert_int_equal(lookup(cache, 802, "x", NULL, &fetch), DENTCACHE_MISS);
}

/* Many directories: the least recently used gives way, nothing breaks. */
static void test_many_directories(void **state)
{
    struct dentcache *cache = *state;
    for (uint64_t dir = 1000; dir < 1000 + 3 * DENTCACHE_DIRS; dir++)
        walk_into(cache, dir, "f0000", 0, 3, true);
    assert_int_equal(lookup(cache, 1000 + 3 * DENTCACHE_DIRS - 1, "f0001", NULL, NULL),
                     DENTCACHE_FOUND);
    assert_int_equal(lookup(cache, 1000, "f0001", NULL, NULL), DENTCACHE_MISS);
    /* Many changed inodes: the change log grows and sheds old records. */
    for (uint64_t ino = 1; ino < 20000; ino++) {
        dentcache_changed(cache, ino);
        if (ino % 1000 == 0)
            fake_now += 0.5;
    }
    assert_int_equal(lookup(cache, 1000 + 3 * DENTCACHE_DIRS - 1, "f0001", NULL, NULL),
                     DENTCACHE_MISS);
}

/* Creates faster than windows expire: a window that grows too big is dropped. */
static void test_window_growth_bounded(void **state)
{
    (void)state;
    struct dentcache *cache = dentcache_new(TIMEOUT, 4, fake_clock);
    struct dentcache_fetch fetch;
    lookup(cache, DIR_INO, "a", NULL, NULL);
    lookup(cache, DIR_INO, "b", NULL, NULL);
    assert_int_equal(lookup(cache, DIR_INO, "c", NULL, &fetch), DENTCACHE_MISS);
    assert_int_equal(fetch.max_entries, 4);
    assert_true(dentcache_install(cache, &fetch, "c", NULL, 0, true) > 0);
    for (uint32_t i = 0; i < 100; i++) {
        char name[16];
        struct ts_attr attr = file_attr(1000 + i, 1);
        snprintf(name, sizeof(name), "c%04u", i);
        dentcache_added(cache, DIR_INO, name, &attr, NULL, dentcache_ticket(cache));
    }
    assert_int_equal(lookup(cache, DIR_INO, "c0099", NULL, NULL), DENTCACHE_MISS);
    dentcache_destroy(&cache);
}

/* Timeout 0 or no statahead: the cache is off and answers nothing. */
static void test_off(void **state)
{
    (void)state;
    struct dentcache *cache = dentcache_new(0, 1024, fake_clock);
    struct dentcache_fetch fetch;
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "n%d", i);
        assert_int_equal(lookup(cache, DIR_INO, name, NULL, &fetch), DENTCACHE_MISS);
        assert_int_equal(fetch.max_entries, 0);
    }
    dentcache_walk_hint(cache, DIR_INO);
    assert_int_equal(lookup(cache, DIR_INO, "z", NULL, &fetch), DENTCACHE_MISS);
    assert_int_equal(fetch.max_entries, 0);
    dentcache_destroy(&cache);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_window_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_expires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_negative_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_added_and_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changed_entry_not_trusted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_install_discarded_after_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_install_checks_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_detection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_with_repeats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_growth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hard_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renamed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_attrs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_attrs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_made, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_directories, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_growth_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_off, setup, teardown),
    };
    return cmocka_run_group_tests_name("dentcache", tests, NULL, NULL);
}
