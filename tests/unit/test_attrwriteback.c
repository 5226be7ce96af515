/*
 * @file test_attrwriteback.c
 * Unit tests of fuse/attrwriteback.c: mode, owner and time changes of a
 * file created here are held and answered from meta's last attributes with
 * them put over; later changes win field by field; what is held merges
 * into a SETATTR under the fields the SETATTR sets itself; a write drops a
 * held mtime; size changes, privilege kills, files not created here,
 * root-squashed mounts and stale bases are never held.
 */
#include "attrwriteback.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

struct fixture {
    struct datapath *datapath;
    struct open_file file;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->datapath = calloc(1, sizeof(*f->datapath));
    assert_non_null(f->datapath);
    f->file.ino = 77;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    free(f->datapath);
    free(f);
    return 0;
}

static struct ts_attr created_attr(uint32_t uid)
{
    struct ts_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.ino = 77;
    attr.mode = S_IFREG | 0600;
    attr.uid = uid;
    attr.gid = 100;
    attr.size = 0;
    attr.mtime_sec = attr.ctime_sec = attr.atime_sec = 1000;
    return attr;
}

/* tar's three changes after a write: held, answered, merged into one SETATTR. */
static void test_held_and_merged(void **state)
{
    struct fixture *f = *state;
    struct ts_attr made = created_attr(0);
    struct ts_attr attr;
    attrwriteback_created(f->datapath, &f->file, &made, 0, false);
    assert_false(attrwriteback_pending(&f->file));

    struct ts_setattr_req times = {.ino = 77,
                                   .valid = TS_SET_ATIME | TS_SET_MTIME,
                                   .atime_sec = 5,
                                   .mtime_sec = 6,
                                   .mtime_nsec = 7};
    struct ts_setattr_req owner = {.ino = 77, .valid = TS_SET_UID | TS_SET_GID, .uid = 9, .gid = 10};
    struct ts_setattr_req mode = {.ino = 77, .valid = TS_SET_MODE, .mode = S_IFREG | 04751};
    assert_true(attrwriteback_hold(&f->file, &times, &attr));
    assert_int_equal(attr.mtime_sec, 1000); /* meta's; the overlay completes it */
    assert_true(attrwriteback_hold(&f->file, &owner, &attr));
    assert_true(attrwriteback_hold(&f->file, &mode, &attr));
    assert_true(attrwriteback_pending(&f->file));
    assert_int_equal(atomic_load(&f->file.mode), S_IFREG | 04751); /* writes check set-id bits */

    attrwriteback_overlay(&f->file, &attr);
    assert_int_equal(attr.mode, S_IFREG | 04751);
    assert_int_equal(attr.uid, 9);
    assert_int_equal(attr.gid, 10);
    assert_int_equal(attr.atime_sec, 5);
    assert_int_equal(attr.mtime_sec, 6);
    assert_int_equal(attr.mtime_nsec, 7);
    assert_true(attr.ctime_sec > 1000); /* changed now */

    /* Into a SETATTR that sets a mode of its own: its mode wins. */
    struct ts_setattr_req change = {.ino = 77, .valid = TS_SET_MODE | TS_SET_SIZE, .mode = 0700};
    attrwriteback_into(&f->file, &change);
    assert_false(attrwriteback_pending(&f->file));
    assert_int_equal(change.valid & (TS_SET_MODE | TS_SET_SIZE | TS_SET_UID | TS_SET_GID |
                                     TS_SET_ATIME | TS_SET_MTIME),
                     TS_SET_MODE | TS_SET_SIZE | TS_SET_UID | TS_SET_GID | TS_SET_ATIME |
                         TS_SET_MTIME);
    assert_int_equal(change.mode, 0700);
    assert_int_equal(change.uid, 9);
    assert_int_equal(change.atime_sec, 5);
    assert_int_equal(change.mtime_sec, 6);

    /* Nothing held: the overlay leaves meta's answer alone. */
    struct ts_attr plain = made;
    attrwriteback_overlay(&f->file, &plain);
    assert_memory_equal(&plain, &made, sizeof(made));
}

/* "now" times are taken when held; a later write's mtime wins over a held one. */
static void test_now_and_writes(void **state)
{
    struct fixture *f = *state;
    struct ts_attr made = created_attr(1000);
    struct ts_attr attr;
    attrwriteback_created(f->datapath, &f->file, &made, 1000, false);
    struct ts_setattr_req touch = {.ino = 77, .valid = TS_SET_ATIME_NOW | TS_SET_MTIME_NOW};
    assert_true(attrwriteback_hold(&f->file, &touch, &attr));
    attrwriteback_overlay(&f->file, &attr);
    assert_true(attr.mtime_sec > 1000 && attr.atime_sec > 1000);
    struct ts_setattr_req change = {.ino = 77};
    attrwriteback_into(&f->file, &change);
    assert_int_equal(change.valid & (TS_SET_MTIME | TS_SET_MTIME_NOW), TS_SET_MTIME);
    assert_int_equal(change.mtime_sec, attr.mtime_sec);

    struct ts_setattr_req old = {.ino = 77, .valid = TS_SET_MTIME | TS_SET_MODE, .mtime_sec = 3, .mode = 0644};
    assert_true(attrwriteback_hold(&f->file, &old, &attr));
    attrwriteback_written(&f->file);
    change = (struct ts_setattr_req){.ino = 77};
    attrwriteback_into(&f->file, &change);
    assert_int_equal(change.valid & TS_SET_MTIME, 0);
    assert_int_equal(change.valid & TS_SET_MODE, TS_SET_MODE);

    /* A NOW of the SETATTR's own stays NOW, the held time under it goes. */
    assert_true(attrwriteback_hold(&f->file, &old, &attr));
    change = (struct ts_setattr_req){.ino = 77, .valid = TS_SET_MTIME_NOW};
    attrwriteback_into(&f->file, &change);
    assert_int_equal(change.valid & (TS_SET_MTIME | TS_SET_MTIME_NOW), TS_SET_MTIME_NOW);
}

/* What is never held. */
static void test_not_held(void **state)
{
    struct fixture *f = *state;
    struct ts_attr attr;
    struct ts_setattr_req mode = {.ino = 77, .valid = TS_SET_MODE, .mode = 0644};

    /* A file not created here. */
    assert_false(attrwriteback_hold(&f->file, &mode, &attr));

    struct ts_attr made = created_attr(0);
    attrwriteback_created(f->datapath, &f->file, &made, 0, false);
    struct ts_setattr_req size = {.ino = 77, .valid = TS_SET_SIZE | TS_SET_MODE, .size = 1};
    struct ts_setattr_req kill = {.ino = 77, .valid = TS_SET_KILL_PRIV};
    assert_false(attrwriteback_hold(&f->file, &size, &attr));
    assert_false(attrwriteback_hold(&f->file, &kill, &attr));
    assert_false(attrwriteback_pending(&f->file));

    /* A base older than an attribute cache keeps it. */
    f->file.attrs_learned_ms -= 5000;
    assert_false(attrwriteback_hold(&f->file, &mode, &attr));
    attrwriteback_learn(&f->file, &made);
    assert_true(attrwriteback_hold(&f->file, &mode, &attr));
}

/* A create by root answered with another owner: this mount is squashed. */
static void test_root_squash(void **state)
{
    struct fixture *f = *state;
    struct ts_attr attr;
    struct ts_setattr_req owner = {.ino = 77, .valid = TS_SET_UID, .uid = 0};

    /* Before any synchronous create by root, root's early creates are not held. */
    struct ts_attr guessed = created_attr(0);
    attrwriteback_created(f->datapath, &f->file, &guessed, 0, true);
    assert_false(attrwriteback_hold(&f->file, &owner, &attr));
    /* Another user's are: squashing is root's only. */
    struct ts_attr user = created_attr(1000);
    attrwriteback_created(f->datapath, &f->file, &user, 1000, true);
    assert_true(attrwriteback_hold(&f->file, &owner, &attr));
    attrwriteback_into(&f->file, &(struct ts_setattr_req){.ino = 77});

    /* Root's create kept its owner: root's early creates are held too. */
    struct ts_attr kept = created_attr(0);
    attrwriteback_created(f->datapath, &f->file, &kept, 0, false);
    attrwriteback_created(f->datapath, &f->file, &guessed, 0, true);
    assert_true(attrwriteback_hold(&f->file, &owner, &attr));
    attrwriteback_into(&f->file, &(struct ts_setattr_req){.ino = 77});

    /* One came back squashed: not that file, nor root's early creates after. */
    struct ts_attr squashed = created_attr(65534);
    attrwriteback_created(f->datapath, &f->file, &squashed, 0, false);
    assert_false(attrwriteback_hold(&f->file, &owner, &attr));
    attrwriteback_created(f->datapath, &f->file, &guessed, 0, true);
    assert_false(attrwriteback_hold(&f->file, &owner, &attr));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_held_and_merged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_now_and_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_root_squash, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
