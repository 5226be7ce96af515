/*
 * @file test_replymem.c
 * Unit tests of the datanode's reply memory (replymem.h): buffers count
 * until freed, room is refused at the cap, and the eventfd wakes the loop
 * only once a free brings the count back under the cap after a refusal.
 */
#include "replymem.h"

#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define MIB (1u << 20)

static bool readable(int fd)
{
    struct pollfd item = {.fd = fd, .events = POLLIN};
    return poll(&item, 1, 0) == 1 && (item.revents & POLLIN);
}

static void test_counts_until_freed(void **state)
{
    (void)state;
    struct replymem *mem = NULL;
    assert_int_equal(replymem_new(4 * MIB, &mem), 0);
    uint8_t *a = replymem_alloc(mem, MIB);
    uint8_t *b = replymem_alloc(mem, 2 * MIB);
    assert_non_null(a);
    assert_non_null(b);
    memset(a, 1, MIB); /* the whole buffer is usable */
    memset(b, 2, 2 * MIB);
    assert_int_equal(replymem_used(mem), 3 * MIB);
    assert_true(replymem_room(mem));
    replymem_free(a, NULL);
    assert_int_equal(replymem_used(mem), 2 * MIB);
    replymem_free(b, NULL);
    replymem_free(NULL, NULL); /* nothing */
    assert_int_equal(replymem_used(mem), 0);
    assert_int_equal(replymem_peak(mem), 3 * MIB);
    assert_int_equal(replymem_full_count(mem), 0);
    assert_false(readable(replymem_event_fd(mem))); /* nobody waited: no wake-up */
    replymem_destroy(&mem);
    assert_null(mem);
}

static void test_full_then_woken_under_the_cap(void **state)
{
    (void)state;
    struct replymem *mem = NULL;
    assert_int_equal(replymem_new(2 * MIB, &mem), 0);
    void *a = replymem_alloc(mem, MIB);
    void *b = replymem_alloc(mem, MIB);
    assert_false(replymem_room(mem)); /* at the cap */
    assert_int_equal(replymem_full_count(mem), 1);
    assert_false(readable(replymem_event_fd(mem)));
    replymem_free(a, NULL); /* back under: the waiting loop is woken */
    assert_true(readable(replymem_event_fd(mem)));
    replymem_collect(mem);
    assert_false(readable(replymem_event_fd(mem)));
    assert_true(replymem_room(mem));
    replymem_free(b, NULL); /* nobody waits now: no second wake-up */
    assert_false(readable(replymem_event_fd(mem)));
    replymem_destroy(&mem);
}

static void test_one_request_may_pass_the_cap(void **state)
{
    (void)state;
    struct replymem *mem = NULL;
    assert_int_equal(replymem_new(MIB, &mem), 0);
    assert_true(replymem_room(mem));
    void *big = replymem_alloc(mem, 3 * MIB); /* taken when there was room */
    assert_non_null(big);
    assert_false(replymem_room(mem));
    replymem_free(big, NULL);
    assert_true(replymem_room(mem));
    replymem_destroy(&mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_until_freed),
        cmocka_unit_test(test_full_then_woken_under_the_cap),
        cmocka_unit_test(test_one_request_may_pass_the_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
