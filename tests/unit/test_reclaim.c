/*
 * @file test_reclaim.c
 * Unit tests of the rule by which a datanode deletes tile files meta maps
 * nowhere (reclaim_decide(), datanode/reclaim.h): the grace comes first,
 * then meta's answer, then the fences, then the map's state.
 */
#include "proto.h"
#include "reclaim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#define GRACE_MS (600 * 1000)

struct facts_fixture {
    struct reclaim_facts facts;
};

/* An old file meta answered UNMAPPED for, not frozen: the one to delete. */
static int setup(void **state)
{
    struct facts_fixture *fixture = calloc(1, sizeof(*fixture));
    if (!fixture)
        return -1;
    fixture->facts = (struct reclaim_facts){.age_ms = 2 * GRACE_MS,
                                            .grace_ms = GRACE_MS,
                                            .answered = true,
                                            .state = TS_RECONCILE_UNMAPPED,
                                            .frozen = false};
    *state = fixture;
    return 0;
}

static int teardown(void **state)
{
    free(*state);
    return 0;
}

static void test_old_unmapped_is_deleted(void **state)
{
    struct facts_fixture *fixture = *state;
    assert_int_equal(reclaim_decide(&fixture->facts), RECLAIM_DELETE);
    /* Exactly at the grace counts as old. */
    fixture->facts.age_ms = GRACE_MS;
    assert_int_equal(reclaim_decide(&fixture->facts), RECLAIM_DELETE);
}

static void test_young_is_never_touched(void **state)
{
    struct facts_fixture *fixture = *state;
    struct reclaim_facts *facts = &fixture->facts;
    static const uint32_t states[] = {TS_RECONCILE_UNMAPPED,
                                      TS_RECONCILE_MAPPED,
                                      TS_RECONCILE_MOVING,
                                      TS_RECONCILE_QUEUED,
                                      TS_RECONCILE_ELSEWHERE,
                                      TS_RECONCILE_UNISSUED,
                                      0,
                                      99};
    /* Whatever meta says, and whether it said anything. */
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        facts->state = states[i];
        facts->age_ms = GRACE_MS - 1;
        facts->answered = true;
        assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_YOUNG);
        facts->answered = false;
        assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_YOUNG);
    }
    /* A file written this instant, and one whose mtime is in the future
     * (a clock stepped back): young. */
    facts->state = TS_RECONCILE_UNMAPPED;
    facts->answered = true;
    facts->age_ms = 0;
    assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_YOUNG);
    facts->age_ms = -3600 * 1000;
    assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_YOUNG);
}

/* A version newer than the one meta maps here is garbage too, but only past the grace. */
static void test_newer_version_waits_for_grace(void **state)
{
    struct facts_fixture *fixture = *state;
    fixture->facts.state = TS_RECONCILE_UNMAPPED;
    fixture->facts.age_ms = GRACE_MS / 2;
    assert_int_equal(reclaim_decide(&fixture->facts), RECLAIM_KEEP_YOUNG);
    fixture->facts.age_ms = GRACE_MS + 1;
    assert_int_equal(reclaim_decide(&fixture->facts), RECLAIM_DELETE);
}

static void test_no_answer_deletes_nothing(void **state)
{
    struct facts_fixture *fixture = *state;
    fixture->facts.answered = false;
    assert_int_equal(reclaim_decide(&fixture->facts), RECLAIM_KEEP_UNANSWERED);
    fixture->facts.age_ms = 100 * GRACE_MS;
    assert_int_equal(reclaim_decide(&fixture->facts), RECLAIM_KEEP_UNANSWERED);
}

static void test_frozen_is_kept(void **state)
{
    struct facts_fixture *fixture = *state;
    fixture->facts.frozen = true;
    assert_int_equal(reclaim_decide(&fixture->facts), RECLAIM_KEEP_BUSY);
}

static void test_states_other_than_unmapped_keep(void **state)
{
    struct facts_fixture *fixture = *state;
    struct reclaim_facts *facts = &fixture->facts;
    facts->state = TS_RECONCILE_MAPPED;
    assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_MAPPED);
    facts->state = TS_RECONCILE_MOVING;
    assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_BUSY);
    facts->state = TS_RECONCILE_QUEUED;
    assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_BUSY);
    facts->state = TS_RECONCILE_ELSEWHERE;
    assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_DOUBT);
    facts->state = TS_RECONCILE_UNISSUED;
    assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_DOUBT);
    /* A state a newer meta may send: kept until this datanode knows it. */
    facts->state = 0;
    assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_DOUBT);
    facts->state = TS_RECONCILE_UNISSUED + 1;
    assert_int_equal(reclaim_decide(facts), RECLAIM_KEEP_DOUBT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_old_unmapped_is_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_young_is_never_touched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_version_waits_for_grace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_answer_deletes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frozen_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_states_other_than_unmapped_keep, setup, teardown),
    };
    return cmocka_run_group_tests_name("reclaim", tests, NULL, NULL);
}
