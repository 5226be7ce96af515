/*
 * @file test_budget.c
 * Unit tests of the mount's byte budget (budget.h): takes within the cap
 * pass, try_take refuses beyond it, a take that must wait calls on_short
 * (which may give bytes back itself) and ends when bytes come back, and
 * budget_wanted tells whether a take is waiting.
 */
#include "budget.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MIB (1ull << 20)

static void test_try_take_stops_at_the_cap(void **state)
{
    (void)state;
    struct budget budget;
    budget_init(&budget, 4 * MIB);
    assert_true(budget_try_take(&budget, 3 * MIB));
    assert_false(budget_try_take(&budget, 2 * MIB)); /* 5 > 4: nothing taken */
    assert_true(budget_try_take(&budget, 1 * MIB));
    assert_false(budget_try_take(&budget, 1));
    budget_give(&budget, 2 * MIB);
    assert_true(budget_try_take(&budget, 2 * MIB));
    assert_int_equal(budget.used, 4 * MIB);
    budget_fini(&budget);
}

static void test_take_larger_than_cap_proceeds_alone(void **state)
{
    (void)state;
    struct budget budget;
    budget_init(&budget, 1 * MIB);
    budget_take(&budget, 8 * MIB); /* nothing else used: never waits */
    assert_int_equal(budget.used, 8 * MIB);
    budget_give(&budget, 8 * MIB);
    assert_int_equal(budget.used, 0);
    budget_fini(&budget);
}

struct short_calls {
    struct budget *budget;
    atomic_int calls;
    uint64_t give_back; /* bytes the callback returns on its first call */
};

static void on_short_give_back(void *arg)
{
    struct short_calls *calls = arg;
    if (atomic_fetch_add(&calls->calls, 1) == 0 && calls->give_back > 0)
        budget_give(calls->budget, calls->give_back);
}

static void test_on_short_may_give_back_itself(void **state)
{
    (void)state;
    struct budget budget;
    struct short_calls calls = {.budget = &budget, .give_back = 2 * MIB};
    budget_init(&budget, 4 * MIB);
    budget_on_short(&budget, on_short_give_back, &calls);
    budget_take(&budget, 3 * MIB);
    assert_int_equal(atomic_load(&calls.calls), 0); /* it fit: no call */
    /* 3 + 2 > 4: on_short is called and gives 2 back, so this take ends
     * without any other thread. */
    budget_take(&budget, 2 * MIB);
    assert_int_equal(atomic_load(&calls.calls), 1);
    assert_int_equal(budget.used, 3 * MIB);
    assert_false(budget_wanted(&budget));
    budget_fini(&budget);
}

static void *take_two(void *arg)
{
    budget_take(arg, 2 * MIB);
    return NULL;
}

static void test_waiting_take_is_wanted_until_given(void **state)
{
    (void)state;
    struct budget budget;
    struct short_calls calls = {.budget = &budget, .give_back = 0};
    pthread_t taker;
    budget_init(&budget, 4 * MIB);
    budget_on_short(&budget, on_short_give_back, &calls);
    budget_take(&budget, 4 * MIB);
    assert_false(budget_wanted(&budget));
    assert_int_equal(pthread_create(&taker, NULL, take_two, &budget), 0);
    for (int i = 0; i < 5000 && !budget_wanted(&budget); i++)
        usleep(1000);
    assert_true(budget_wanted(&budget));
    assert_true(atomic_load(&calls.calls) >= 1);
    budget_give(&budget, 1 * MIB); /* 3 + 2 > 4: still waiting */
    usleep(20000);
    assert_true(budget_wanted(&budget));
    budget_give(&budget, 1 * MIB); /* 2 + 2 fits */
    assert_int_equal(pthread_join(taker, NULL), 0);
    assert_false(budget_wanted(&budget));
    assert_int_equal(budget.used, 4 * MIB);
    budget_fini(&budget);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_try_take_stops_at_the_cap),
        cmocka_unit_test(test_take_larger_than_cap_proceeds_alone),
        cmocka_unit_test(test_on_short_may_give_back_itself),
        cmocka_unit_test(test_waiting_take_is_wanted_until_given),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
