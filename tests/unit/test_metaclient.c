/*
 * @file test_metaclient.c
 * The mount's meta client (fuse/metaclient.c), its session with meta and
 * its retries of requests a directory lease refuses: a real
 * metaclient talks over ZeroMQ (ipc://) to meta's real handlers on a real
 * LMDB store in a temporary directory, served by a thread of this test.
 * "Restarting meta" closes the service and opens it again on the same
 * store; the client's own thread must notice and announce its opens, so an
 * unlinked file it holds open outlives the restart, and one meta deleted
 * in the meantime is reported lost.
 */
#include "handlers.h"
#include "metaclient.h"
#include "proto.h"
#include "rpc.h"
#include "service.h"
#include "status.h"
#include "util.h"

#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include <cmocka.h>

#define LEASE_MS 1000
#define META_TIMEOUT_MS 400 /* under half the lease (metaclient.c warns otherwise) */
#define WAIT_MS 5000

struct fixture {
    char dir[PATH_MAX];
    char endpoint[PATH_MAX + 16];
    struct service *service;
    struct rpc_server *server;
    pthread_t thread;
    atomic_bool stop;
    struct metaclient *client;
    atomic_uint_least64_t lost_ino;
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

/* Meta's request loop, as tessera-meta's main.c runs it. */
static void *serve(void *arg)
{
    struct fixture *f = arg;
    zmq_pollitem_t item = {rpc_server_socket(f->server), 0, ZMQ_POLLIN, 0};
    while (!atomic_load(&f->stop)) {
        if (zmq_poll(&item, 1, 20) > 0)
            rpc_server_handle_pending(f->server);
        service_tick(f->service);
    }
    return NULL;
}

/* Starts meta on the store in f->dir; with sweep, its grace is over at once. */
static void meta_start(struct fixture *f, bool sweep)
{
    assert_int_equal(service_open(f->dir, 60000, &f->service), 0);
    service_set_mount_lease(f->service, LEASE_MS);
    if (sweep)
        service_tick_at(f->service, f->service->reap_after_ms);
    f->server = rpc_server_new(f->endpoint, handlers_table, f->service);
    assert_non_null(f->server);
    atomic_store(&f->stop, false);
    assert_int_equal(pthread_create(&f->thread, NULL, serve, f), 0);
}

static void meta_stop(struct fixture *f)
{
    atomic_store(&f->stop, true);
    pthread_join(f->thread, NULL);
    rpc_server_destroy(&f->server);
    service_close(&f->service);
}

static void on_lost(void *ctx, uint64_t ino)
{
    struct fixture *f = ctx;
    atomic_store(&f->lost_ino, ino);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    const char *tmp = getenv("TMPDIR");
    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "%s/test_metaclient.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->endpoint, sizeof(f->endpoint), "ipc://%s/meta.sock", f->dir);
    meta_start(f, false);
    f->client = metaclient_new(f->endpoint, META_TIMEOUT_MS, "machine");
    assert_non_null(f->client);
    assert_int_equal(metaclient_defer_releases(f->client, 10), TS_OK);
    metaclient_on_lost(f->client, on_lost, f);
    assert_int_equal(metaclient_keep_session(f->client), TS_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    metaclient_destroy(&f->client);
    meta_stop(f);
    nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* A new file, open (MKNOD with open), then unlinked: an orphan held by the client. */
static uint64_t make_orphan(struct fixture *f, const char *name)
{
    struct ts_attr attr = {0};
    assert_int_equal(
        metaclient_mknod(f->client, TS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, 1, &attr, NULL),
        TS_OK);
    assert_int_equal(metaclient_unlink(f->client, TS_ROOT_INO, name, NULL), TS_OK);
    return attr.ino;
}

static int getattr_of(struct fixture *f, uint64_t ino)
{
    struct ts_attr attr;
    return metaclient_getattr(f->client, ino, &attr);
}

/* Polls until getattr of ino gives want, up to WAIT_MS. */
static void wait_getattr(struct fixture *f, uint64_t ino, int want)
{
    int64_t deadline = util_monotonic_ms() + WAIT_MS;
    while (getattr_of(f, ino) != want && util_monotonic_ms() < deadline)
        util_sleep_ms(20);
    assert_int_equal(getattr_of(f, ino), want);
}

static void test_restart_keeps_held_orphans(void **state)
{
    struct fixture *f = *state;
    uint64_t created = make_orphan(f, "created");
    struct ts_attr attr;
    char *spec = NULL;
    assert_int_equal(
        metaclient_mknod(f->client, TS_ROOT_INO, "twice", S_IFREG | 0644, 0, 0, 0, 0, &attr, NULL),
        TS_OK);
    uint64_t twice = attr.ino;
    assert_int_equal(metaclient_open(f->client, twice, 0, 0, &attr, &spec), TS_OK);
    assert_int_equal(metaclient_open(f->client, twice, 0, 0, &attr, &spec), TS_OK);
    assert_int_equal(metaclient_unlink(f->client, TS_ROOT_INO, "twice", NULL), TS_OK);
    /* Released while meta is down: the announcement leaves it out. */
    uint64_t closed = make_orphan(f, "closed");

    meta_stop(f);
    assert_int_equal(metaclient_release(f->client, closed), TS_OK); /* queued, then lost */
    meta_start(f, false);
    /* Past the grace: the sweep ran, and kept what the client announced. */
    util_sleep_ms(LEASE_MS + 300);
    assert_int_equal(getattr_of(f, created), TS_OK);
    assert_int_equal(getattr_of(f, twice), TS_OK);
    assert_int_equal(getattr_of(f, closed), TS_ERR_NOENT);
    /* Each open goes with its release. */
    assert_int_equal(metaclient_release(f->client, twice), TS_OK);
    assert_int_equal(metaclient_release(f->client, created), TS_OK);
    wait_getattr(f, created, TS_ERR_NOENT);
    assert_int_equal(getattr_of(f, twice), TS_OK);
    assert_int_equal(metaclient_release(f->client, twice), TS_OK);
    wait_getattr(f, twice, TS_ERR_NOENT);
    assert_int_equal(atomic_load(&f->lost_ino), 0);
}

static void test_deleted_meanwhile_is_lost(void **state)
{
    struct fixture *f = *state;
    uint64_t orphan = make_orphan(f, "gone");
    meta_stop(f);
    /* Meta comes back and deletes the orphan before the client announces
     * (as after its lease expired). */
    meta_start(f, true);
    int64_t deadline = util_monotonic_ms() + WAIT_MS;
    while (atomic_load(&f->lost_ino) == 0 && util_monotonic_ms() < deadline)
        util_sleep_ms(20);
    assert_int_equal(atomic_load(&f->lost_ino), orphan);
    assert_int_equal(getattr_of(f, orphan), TS_ERR_NOENT);
    /* Its release, later, is harmless. */
    assert_int_equal(metaclient_release(f->client, orphan), TS_OK);
}

/* Another mount, which holds a directory's lease and gives it back late. */
struct lease_holder {
    struct metaclient *mount;
    uint64_t dir;
    int return_after_ms; /* < 0: never */
    pthread_t thread;
};

static void *lease_holder_return(void *arg)
{
    struct lease_holder *holder = arg;
    struct ts_dir_lease_rep reply;
    util_sleep_ms(holder->return_after_ms);
    assert_int_equal(
        metaclient_dir_lease(holder->mount, holder->dir, TS_LEASE_RETURN, 0, &reply), TS_OK);
    return NULL;
}

/* Makes holder's mount take dir's lease and, unless never, give it back later. */
static void lease_holder_start(struct fixture *f, struct lease_holder *holder, uint64_t dir,
                               int return_after_ms)
{
    struct ts_dir_lease_rep reply;
    holder->mount = metaclient_new(f->endpoint, META_TIMEOUT_MS, "other");
    assert_non_null(holder->mount);
    holder->dir = dir;
    holder->return_after_ms = return_after_ms;
    assert_int_equal(metaclient_dir_lease(holder->mount, dir, TS_LEASE_GET, 0, &reply), TS_OK);
    if (return_after_ms >= 0)
        assert_int_equal(pthread_create(&holder->thread, NULL, lease_holder_return, holder), 0);
}

static void lease_holder_stop(struct lease_holder *holder)
{
    if (holder->return_after_ms >= 0)
        pthread_join(holder->thread, NULL);
    metaclient_destroy(&holder->mount);
}

/*
 * A request about a directory another mount holds the lease on is refused
 * until that mount gives it back; the meta client sends it again, so the
 * caller sees one call that took as long as the holder did.
 */
static void test_leased_directory_retried(void **state)
{
    struct fixture *f = *state;
    struct lease_holder holder;
    struct ts_attr attr;

    lease_holder_start(f, &holder, TS_ROOT_INO, 50);
    int64_t started = util_monotonic_ms();
    assert_int_equal(metaclient_getattr(f->client, TS_ROOT_INO, &attr), TS_OK);
    assert_true(util_monotonic_ms() - started >= 40);
    lease_holder_stop(&holder);

    /* A pipelined call (mkdir with its parent's attributes) too. */
    struct metaclient_dirs dirs = {.count = 1, .ino = {TS_ROOT_INO}};
    lease_holder_start(f, &holder, TS_ROOT_INO, 50);
    started = util_monotonic_ms();
    assert_int_equal(
        metaclient_mkdir(f->client, TS_ROOT_INO, "made", S_IFDIR | 0755, 0, 0, &attr, &dirs),
        TS_OK);
    assert_true(util_monotonic_ms() - started >= 40);
    assert_int_equal(dirs.status[0], TS_OK);
    lease_holder_stop(&holder);
}

/* A lease never given back: the refusal, not a timeout, once the time is up. */
static void test_leased_directory_gives_up(void **state)
{
    struct fixture *f = *state;
    struct lease_holder holder;
    struct ts_attr attr;

    lease_holder_start(f, &holder, TS_ROOT_INO, -1);
    int64_t started = util_monotonic_ms();
    assert_int_equal(metaclient_getattr(f->client, TS_ROOT_INO, &attr), TS_ERR_LEASED);
    int64_t took = util_monotonic_ms() - started;
    assert_true(took >= META_TIMEOUT_MS - 100 - 10);
    assert_true(took <= META_TIMEOUT_MS + 200);
    lease_holder_stop(&holder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restart_keeps_held_orphans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_meanwhile_is_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leased_directory_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leased_directory_gives_up, setup, teardown),
    };
    return cmocka_run_group_tests_name("metaclient", tests, NULL, NULL);
}
