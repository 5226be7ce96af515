/*
 * @file test_nsqueue.c
 * Unit tests of the background queue of unlinks and creates
 * (fuse/nsqueue.c) with a send function that records what it is given and
 * can be held shut: changes go out in the order pushed, none lost or sent
 * twice; waiting for a directory waits for exactly its changes, in flight
 * or queued; waiting for creates waits for those pushed before it only;
 * waiting for all and destroying send everything; pushes stop at
 * max_pending.
 */
#include "nsqueue.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define MAX_SENT 20000

struct recorder {
    pthread_mutex_t lock;
    pthread_cond_t opened;
    bool shut; /* send() waits while shut */
    atomic_int sending; /* send() calls under way */
    struct nsqueue_item sent[MAX_SENT];
    uint32_t count;
    uint32_t largest;
};

static void record(void *ctx, const struct nsqueue_item *items, uint32_t count)
{
    struct recorder *recorder = ctx;
    atomic_fetch_add(&recorder->sending, 1);
    pthread_mutex_lock(&recorder->lock);
    while (recorder->shut)
        pthread_cond_wait(&recorder->opened, &recorder->lock);
    for (uint32_t i = 0; i < count && recorder->count < MAX_SENT; i++)
        recorder->sent[recorder->count++] = items[i];
    if (count > recorder->largest)
        recorder->largest = count;
    pthread_mutex_unlock(&recorder->lock);
    atomic_fetch_sub(&recorder->sending, 1);
}

static void set_shut(struct recorder *recorder, bool shut)
{
    pthread_mutex_lock(&recorder->lock);
    recorder->shut = shut;
    pthread_cond_broadcast(&recorder->opened);
    pthread_mutex_unlock(&recorder->lock);
}

static uint32_t sent_count(struct recorder *recorder)
{
    pthread_mutex_lock(&recorder->lock);
    uint32_t count = recorder->count;
    pthread_mutex_unlock(&recorder->lock);
    return count;
}

static void pause_ms(int ms)
{
    struct timespec pause = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

static int setup(void **state)
{
    struct recorder *recorder = calloc(1, sizeof(*recorder));
    if (!recorder)
        return -1;
    pthread_mutex_init(&recorder->lock, NULL);
    pthread_cond_init(&recorder->opened, NULL);
    *state = recorder;
    return 0;
}

static int teardown(void **state)
{
    struct recorder *recorder = *state;
    pthread_cond_destroy(&recorder->opened);
    pthread_mutex_destroy(&recorder->lock);
    free(recorder);
    return 0;
}

/* Many unlinks over a small ring: all sent once, in push order, batches bounded. */
static void test_order_and_batches(void **state)
{
    struct recorder *recorder = *state;
    struct nsqueue *queue = nsqueue_new(record, recorder, 16, 40);
    char name[32];
    assert_non_null(queue);
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof(name), "f%05d", i);
        assert_int_equal(nsqueue_push_unlink(queue, 100 + (uint64_t)(i % 3), name, 1000 + (uint64_t)i), 0);
    }
    nsqueue_wait_all(queue);
    assert_int_equal(sent_count(recorder), 10000);
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof(name), "f%05d", i);
        assert_string_equal(recorder->sent[i].name, name);
        assert_int_equal(recorder->sent[i].parent, 100 + (uint64_t)(i % 3));
        assert_int_equal(recorder->sent[i].ino, 1000 + (uint64_t)i);
    }
    assert_true(recorder->largest <= 16);
    nsqueue_destroy(&queue);
    assert_null(queue);
}

struct waiter {
    struct nsqueue *queue;
    uint64_t dir; /* the inode waited for; 0: wait for all */
    atomic_int done;
};

static void *wait_thread(void *arg)
{
    struct waiter *waiter = arg;
    if (waiter->dir)
        nsqueue_wait_for(waiter->queue, waiter->dir);
    else
        nsqueue_wait_all(waiter->queue);
    atomic_store(&waiter->done, 1);
    return NULL;
}

struct name_waiter {
    struct nsqueue *queue;
    uint64_t parent;
    const char *name;
    atomic_int done;
};

static void *wait_name_thread(void *arg)
{
    struct name_waiter *waiter = arg;
    nsqueue_wait_name(waiter->queue, waiter->parent, waiter->name);
    atomic_store(&waiter->done, 1);
    return NULL;
}

/* A waiter waits for the unlinks touching its inode (as directory or as the
 * inode unlinked), or removing its name, only; others go at once. */
static void test_wait_dir(void **state)
{
    struct recorder *recorder = *state;
    struct nsqueue *queue = nsqueue_new(record, recorder, 4, 64);
    assert_non_null(queue);
    nsqueue_wait_for(queue, 7); /* nothing pending: returns at once */
    set_shut(recorder, true);
    assert_int_equal(nsqueue_push_unlink(queue, 7, "a", 70), 0);
    while (atomic_load(&recorder->sending) == 0) /* "a" is in flight now */
        pause_ms(1);
    assert_int_equal(nsqueue_push_unlink(queue, 8, "b", 80), 0); /* queued behind it */

    struct waiter on_9 = {queue, 9, 0}, on_8 = {queue, 8, 0}, on_7 = {queue, 7, 0};
    struct waiter on_80 = {queue, 80, 0}, on_all = {queue, 0, 0};
    nsqueue_wait_name(queue, 8, "a"); /* "a" is pending in 7, not in 8 */
    nsqueue_wait_name(queue, 7, "b");
    pthread_t threads[4];
    wait_thread(&on_9); /* no unlink touches 9 */
    assert_int_equal(atomic_load(&on_9.done), 1);
    pthread_create(&threads[0], NULL, wait_thread, &on_8);
    pthread_create(&threads[1], NULL, wait_thread, &on_7);
    pthread_create(&threads[2], NULL, wait_thread, &on_all);
    pthread_create(&threads[3], NULL, wait_thread, &on_80);
    pause_ms(50);
    assert_int_equal(atomic_load(&on_7.done), 0);  /* its unlink is in flight */
    assert_int_equal(atomic_load(&on_8.done), 0);  /* its unlink is queued */
    assert_int_equal(atomic_load(&on_80.done), 0); /* the inode "b" names */
    assert_int_equal(atomic_load(&on_all.done), 0);
    set_shut(recorder, false);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    set_shut(recorder, true);
    assert_int_equal(nsqueue_push_unlink(queue, 5, "c", 50), 0);
    struct name_waiter by_name = {queue, 5, "c", 0};
    pthread_create(&threads[0], NULL, wait_name_thread, &by_name);
    pause_ms(50);
    assert_int_equal(atomic_load(&by_name.done), 0);
    set_shut(recorder, false);
    pthread_join(threads[0], NULL);
    assert_int_equal(sent_count(recorder), 3);
    assert_string_equal(recorder->sent[0].name, "a");
    assert_string_equal(recorder->sent[1].name, "b");
    nsqueue_destroy(&queue);
}

struct pusher {
    struct nsqueue *queue;
    int count;
    atomic_int pushed;
};

static void *push_thread(void *arg)
{
    struct pusher *pusher = arg;
    for (int i = 0; i < pusher->count; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p%d", i);
        nsqueue_push_unlink(pusher->queue, 1, name, 2);
        atomic_fetch_add(&pusher->pushed, 1);
    }
    return NULL;
}

/* At most max_pending outstanding: the next push waits for meta. */
static void test_bounded(void **state)
{
    struct recorder *recorder = *state;
    struct nsqueue *queue = nsqueue_new(record, recorder, 2, 5);
    struct pusher pusher = {queue, 12, 0};
    pthread_t thread;
    assert_non_null(queue);
    set_shut(recorder, true);
    pthread_create(&thread, NULL, push_thread, &pusher);
    pause_ms(100);
    assert_int_equal(atomic_load(&pusher.pushed), 5);
    set_shut(recorder, false);
    pthread_join(thread, NULL);
    nsqueue_wait_all(queue);
    assert_int_equal(sent_count(recorder), 12);
    nsqueue_destroy(&queue);
}

/* Destroy sends what is queued; a too-long name is refused, nothing queued. */
static void test_destroy_sends_and_long_names(void **state)
{
    struct recorder *recorder = *state;
    struct nsqueue *queue = nsqueue_new(record, recorder, 8, 256);
    char long_name[TS_MAX_NAME + 2];
    assert_non_null(queue);
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_int_equal(nsqueue_push_unlink(queue, 1, long_name, 3), -ENAMETOOLONG);
    set_shut(recorder, true);
    for (int i = 0; i < 100; i++)
        assert_int_equal(nsqueue_push_unlink(queue, 2, "same", 4), 0);
    set_shut(recorder, false);
    nsqueue_destroy(&queue);
    assert_int_equal(sent_count(recorder), 100);
    nsqueue_destroy(&queue); /* NULL is fine */
}

struct creates_waiter {
    struct nsqueue *queue;
    atomic_int done;
};

static void *wait_creates_thread(void *arg)
{
    struct creates_waiter *waiter = arg;
    nsqueue_wait_creates(waiter->queue);
    atomic_store(&waiter->done, 1);
    return NULL;
}

static struct nsqueue_item create_item(uint64_t parent, const char *name, uint64_t ino)
{
    struct nsqueue_item item = {.kind = NSQUEUE_CREATE,
                                .parent = parent,
                                .ino = ino,
                                .mode = 0100644,
                                .uid = 1,
                                .gid = 2,
                                .open = 1,
                                .time = {1700000000, 7}};
    snprintf(item.name, sizeof(item.name), "%s", name);
    return item;
}

/* Creates and unlinks share one order; a create holds back what waits for creates. */
static void test_creates(void **state)
{
    struct recorder *recorder = *state;
    struct nsqueue *queue = nsqueue_new(record, recorder, 8, 64);
    assert_non_null(queue);
    nsqueue_wait_creates(queue); /* none pending: at once */
    set_shut(recorder, true);
    assert_int_equal(nsqueue_push_unlink(queue, 3, "old", 30), 0);
    struct creates_waiter no_creates = {queue, 0};
    wait_creates_thread(&no_creates); /* an unlink pending, no create: at once */
    assert_int_equal(atomic_load(&no_creates.done), 1);

    struct nsqueue_item item = create_item(3, "old", 31); /* the name again, made anew */
    assert_int_equal(nsqueue_push_create(queue, &item), 0);
    assert_int_equal(nsqueue_push_unlink(queue, 4, "x", 40), 0);
    struct creates_waiter on_creates = {queue, 0};
    struct waiter on_new_inode = {queue, 31, 0};
    pthread_t threads[2];
    pthread_create(&threads[0], NULL, wait_creates_thread, &on_creates);
    pthread_create(&threads[1], NULL, wait_thread, &on_new_inode);
    pause_ms(50);
    assert_int_equal(atomic_load(&on_creates.done), 0);
    assert_int_equal(atomic_load(&on_new_inode.done), 0); /* getattr of the new inode waits */
    set_shut(recorder, false);
    pthread_join(threads[0], NULL);
    pthread_join(threads[1], NULL);
    nsqueue_wait_all(queue);
    assert_int_equal(sent_count(recorder), 3);
    assert_int_equal(recorder->sent[0].kind, NSQUEUE_UNLINK);
    assert_int_equal(recorder->sent[1].kind, NSQUEUE_CREATE);
    assert_string_equal(recorder->sent[1].name, "old");
    assert_int_equal(recorder->sent[1].ino, 31);
    assert_int_equal(recorder->sent[1].mode, 0100644);
    assert_int_equal(recorder->sent[1].time.tv_nsec, 7);
    assert_int_equal(recorder->sent[2].kind, NSQUEUE_UNLINK);

    /* Not a create, or a name too long: nothing queued. */
    item.kind = NSQUEUE_UNLINK;
    assert_int_equal(nsqueue_push_create(queue, &item), -ENAMETOOLONG);
    item = create_item(3, "y", 32);
    memset(item.name, 'n', sizeof(item.name)); /* no NUL within TS_MAX_NAME + 1 */
    assert_int_equal(nsqueue_push_create(queue, &item), -ENAMETOOLONG);
    nsqueue_destroy(&queue);
    assert_int_equal(sent_count(recorder), 3);
}

static double now_s(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* With a linger, changes pushed together go as one batch, unless someone waits. */
static void test_linger(void **state)
{
    struct recorder *recorder = *state;
    struct nsqueue *queue = nsqueue_new(record, recorder, 64, 64);
    assert_non_null(queue);
    nsqueue_set_linger(queue, 200);
    double start = now_s();
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "l%d", i);
        assert_int_equal(nsqueue_push_unlink(queue, 1, name, 10 + (uint64_t)i), 0);
    }
    while (sent_count(recorder) < 5)
        pause_ms(1);
    assert_true(now_s() - start >= 0.15); /* it waited for more */
    assert_int_equal(recorder->largest, 5);

    nsqueue_set_linger(queue, 10 * 1000);
    start = now_s();
    assert_int_equal(nsqueue_push_unlink(queue, 2, "hurry", 20), 0);
    nsqueue_wait_name(queue, 2, "hurry"); /* a waiter cuts the linger short */
    assert_true(now_s() - start < 5.0);
    assert_int_equal(sent_count(recorder), 6);
    struct nsqueue_item item = create_item(3, "c", 30);
    start = now_s();
    assert_int_equal(nsqueue_push_create(queue, &item), 0);
    nsqueue_wait_creates(queue);
    assert_true(now_s() - start < 5.0);
    assert_int_equal(sent_count(recorder), 7);
    nsqueue_destroy(&queue); /* does not linger either */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order_and_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_creates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_linger, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_sends_and_long_names, setup, teardown),
    };
    return cmocka_run_group_tests_name("nsqueue", tests, NULL, NULL);
}
