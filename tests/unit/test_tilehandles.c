/*
 * @file test_tilehandles.c
 * Unit tests of the datanode's kept tile descriptors (tilehandles.h), on
 * real descriptors: what is found, what a full set puts out, that a
 * forgotten handle is never found again and closes only at its last
 * release, and when a holder's loaded CRCs are kept.
 */
#include "tilehandles.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

struct fixture {
    struct tilehandles *handles;
};

static int setup(void **state)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    if (!fixture || tilehandles_new(TILEHANDLES_MIN, &fixture->handles) != 0) {
        free(fixture);
        return -1;
    }
    *state = fixture;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    tilehandles_destroy(&fixture->handles);
    tilehandles_destroy(&fixture->handles); /* NULL is fine */
    free(fixture);
    return 0;
}

static int open_fd(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    return fd;
}

static bool fd_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

static void test_found_until_forgotten(void **state)
{
    struct tilehandles *handles = ((struct fixture *)*state)->handles;
    assert_null(tilehandles_find(handles, 7, 2, 1));
    int fd = open_fd();
    struct tilehandle *added = tilehandles_add(handles, 7, 2, 1, fd, 4096);
    assert_non_null(added);
    assert_int_equal(added->fd, fd);
    assert_int_equal(added->size, 4096);
    assert_null(added->sums);
    tilehandles_release(handles, added, NULL);

    struct tilehandle *found = tilehandles_find(handles, 7, 2, 1);
    assert_ptr_equal(found, added);
    tilehandles_release(handles, found, NULL);
    /* Another version, another tile, another file: not it. */
    assert_null(tilehandles_find(handles, 7, 2, 2));
    assert_null(tilehandles_find(handles, 7, 3, 1));
    assert_null(tilehandles_find(handles, 8, 2, 1));
    assert_int_equal(tilehandles_count(handles), 1);

    /* Forgetting another tile of the same file leaves it. */
    tilehandles_forget(handles, 7, 3);
    assert_true(fd_open(fd));
    assert_non_null(found = tilehandles_find(handles, 7, 2, 1));
    tilehandles_release(handles, found, NULL);

    tilehandles_forget(handles, 7, 2);
    assert_false(fd_open(fd)); /* unheld: closed at once */
    assert_null(tilehandles_find(handles, 7, 2, 1));
    assert_int_equal(tilehandles_count(handles), 0);
}

static void test_forget_takes_every_version(void **state)
{
    struct tilehandles *handles = ((struct fixture *)*state)->handles;
    int fds[3];
    for (uint64_t version = 1; version <= 3; version++) {
        fds[version - 1] = open_fd();
        struct tilehandle *handle = tilehandles_add(handles, 9, 0, version, fds[version - 1], 1);
        assert_non_null(handle);
        tilehandles_release(handles, handle, NULL);
    }
    int other = open_fd();
    tilehandles_release(handles, tilehandles_add(handles, 9, 1, 1, other, 1), NULL);
    tilehandles_forget(handles, 9, 0);
    for (int i = 0; i < 3; i++)
        assert_false(fd_open(fds[i]));
    assert_int_equal(tilehandles_count(handles), 1);
    struct tilehandle *kept = tilehandles_find(handles, 9, 1, 1);
    assert_non_null(kept);
    tilehandles_release(handles, kept, NULL);
}

/* A reader holding a handle its tile's change forgot reads on; the handle
 * closes at its last release and is never found again. */
static void test_forgotten_while_held(void **state)
{
    struct tilehandles *handles = ((struct fixture *)*state)->handles;
    int fd = open_fd();
    struct tilehandle *first = tilehandles_add(handles, 5, 5, 5, fd, 10);
    struct tilehandle *second = tilehandles_find(handles, 5, 5, 5);
    assert_ptr_equal(first, second);
    tilehandles_forget(handles, 5, 5);
    assert_true(fd_open(fd));
    assert_null(tilehandles_find(handles, 5, 5, 5));

    /* The tile's new file is kept beside it. */
    int new_fd = open_fd();
    struct tilehandle *renewed = tilehandles_add(handles, 5, 5, 5, new_fd, 20);
    assert_non_null(renewed);
    assert_ptr_not_equal(renewed, first);

    struct tilecrc sums = {.blocks = 1, .crcs = {0x1234}};
    tilehandles_release(handles, first, &sums);
    assert_true(fd_open(fd));
    tilehandles_release(handles, second, &sums);
    assert_false(fd_open(fd));
    tilehandles_release(handles, renewed, NULL);

    struct tilehandle *found = tilehandles_find(handles, 5, 5, 5);
    assert_ptr_equal(found, renewed);
    assert_int_equal(found->size, 20);
    assert_null(found->sums); /* the forgotten one's CRCs were not kept */
    tilehandles_release(handles, found, NULL);
}

static void test_loaded_sums_are_kept_once(void **state)
{
    struct tilehandles *handles = ((struct fixture *)*state)->handles;
    struct tilehandle *handle = tilehandles_add(handles, 1, 0, 1, open_fd(), 100);
    struct tilecrc first = {.run = 3, .blocks = 1, .crcs = {0xAAAA}};
    struct tilecrc second = {.run = 4, .blocks = 1, .crcs = {0xBBBB}};
    tilehandles_release(handles, handle, &first);
    handle = tilehandles_find(handles, 1, 0, 1);
    assert_non_null(handle->sums);
    assert_int_equal(handle->sums->crcs[0], 0xAAAA);
    /* A second holder that loaded them too changes nothing a reader may be using. */
    tilehandles_release(handles, handle, &second);
    handle = tilehandles_find(handles, 1, 0, 1);
    assert_int_equal(handle->sums->run, 3);
    assert_int_equal(handle->sums->crcs[0], 0xAAAA);
    tilehandles_release(handles, handle, NULL);
}

/* A full set puts out its least recently released handle, never a held one. */
static void test_full_set_puts_out_the_oldest(void **state)
{
    struct tilehandles *handles = ((struct fixture *)*state)->handles;
    size_t capacity = tilehandles_capacity(handles);
    assert_int_equal(capacity, TILEHANDLES_MIN);
    int fds[TILEHANDLES_MIN];
    for (size_t i = 0; i < capacity; i++) {
        fds[i] = open_fd();
        tilehandles_release(handles, tilehandles_add(handles, 100 + i, 0, 1, fds[i], 1), NULL);
    }
    /* Used again, so 100 is no longer the least recent: 101 is. */
    tilehandles_release(handles, tilehandles_find(handles, 100, 0, 1), NULL);
    int fd = open_fd();
    struct tilehandle *added = tilehandles_add(handles, 999, 0, 1, fd, 1);
    assert_non_null(added);
    assert_false(fd_open(fds[1]));
    assert_null(tilehandles_find(handles, 101, 0, 1));
    assert_true(fd_open(fds[0]));
    assert_int_equal(tilehandles_count(handles), capacity);
    tilehandles_release(handles, added, NULL);

    /* Every one held: nothing is put out and the descriptor stays the caller's. */
    struct tilehandle *held[TILEHANDLES_MIN];
    size_t count = 0;
    for (size_t i = 0; i < capacity; i++) {
        uint64_t ino = i == 1 ? 999 : 100 + i;
        held[count] = tilehandles_find(handles, ino, 0, 1);
        assert_non_null(held[count]);
        count++;
    }
    int extra = open_fd();
    assert_null(tilehandles_add(handles, 5000, 0, 1, extra, 1));
    assert_true(fd_open(extra));
    close(extra);
    for (size_t i = 0; i < count; i++)
        tilehandles_release(handles, held[i], NULL);
}

static void test_capacity_is_clamped(void **state)
{
    (void)state;
    struct tilehandles *handles = NULL;
    assert_int_equal(tilehandles_new(0, &handles), 0);
    assert_int_equal(tilehandles_capacity(handles), TILEHANDLES_MIN);
    tilehandles_destroy(&handles);
    assert_null(handles);
    assert_int_equal(tilehandles_new(1u << 30, &handles), 0);
    assert_int_equal(tilehandles_capacity(handles), TILEHANDLES_MAX);
    tilehandles_destroy(&handles);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_found_until_forgotten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forget_takes_every_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forgotten_while_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loaded_sums_are_kept_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_set_puts_out_the_oldest, setup, teardown),
        cmocka_unit_test(test_capacity_is_clamped),
    };
    return cmocka_run_group_tests_name("tilehandles", tests, NULL, NULL);
}
