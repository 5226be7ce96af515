/*
 * @file reqloop.c
 * See reqloop.h. The loop follows libfuse's own multithreaded loop
 * (fuse_loop_mt.c): the main thread waits until the session is marked
 * exited (by a signal, or by a thread that read ENODEV: the unmount), then
 * ends the threads and joins them. libfuse cancels them; here a signal
 * (REQLOOP_WAKE_SIGNAL, whose handler does nothing) interrupts the read()
 * of each thread waiting in one, and every thread leaves once it sees the
 * session exited, a request it was handling finished first. (Cancelling
 * them made AddressSanitizer report the unwound frames' stack as
 * overflowed, google/sanitizers#1399.) As there, one thread starts
 * the loop and another starts whenever a request leaves none waiting in
 * read(), up to the maximum: each holds a MiB of request memory, so a mount
 * that never sees many requests at once keeps few. Unlike libfuse, each
 * thread reads at an offset into its reqmem memory such that a WRITE
 * request's headers fill the end of the headroom and its data lands on the
 * payload.
 */
#include "reqloop.h"

#include "log.h"
#include "reqmem.h"
#include "mountmetrics.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The kernel's struct fuse_in_header, which every request starts with, and
 * struct fuse_write_in, which follows it in a WRITE (since protocol 7.9):
 * 40 bytes each (linux/fuse.h; libfuse does not install its copy). Were
 * they ever bigger, a write's data would not start at the payload and
 * reqloop_write_memory would say so: the write is copied, nothing breaks. */
#define IN_HEADER_BYTES 40u
#define WRITE_HEADERS_BYTES (IN_HEADER_BYTES + 40u)

/* Interrupts a request thread's read() at the end; nothing else in the
 * mount uses it. */
#define REQLOOP_WAKE_SIGNAL SIGUSR2
/* How often the end signals the threads still in read(): one may have been
 * on its way into it when the signal came. */
#define REQLOOP_WAKE_INTERVAL_MS 50
/* How often the main thread looks whether the session exited, should the
 * signal that ended it have gone to a thread that is not a request thread. */
#define REQLOOP_EXIT_CHECK_MS 1000

struct request_thread {
    struct reqloop *loop;
    pthread_t thread;
    uint8_t *payload; /* reqmem of loop->payload_bytes; exchanged by writes */
    bool in_read;     /* protected by loop->lock: in read(), or on its way to it */
};

struct reqloop {
    struct fuse_session *session;
    int fd;
    size_t payload_bytes;
    sem_t thread_ended;   /* posted by each thread that leaves its loop */
    atomic_int error;     /* errno of a failed read of the device, 0 if none */
    pthread_mutex_t lock; /* protects started, ended, waiting, max_threads, in_read */
    int started;          /* threads[0, started) run or ran */
    int ended;            /* of them, those that left their loop */
    int waiting;          /* threads in read(), or on their way to it */
    int max_threads;
    struct request_thread *threads;
};

/* The request thread this is, for reqloop_write_memory; NULL elsewhere. */
static _Thread_local struct request_thread *current_thread;

static void *request_thread_main(void *arg);

static void wake_handler(int signal_number)
{
    (void)signal_number; /* interrupting the read() was the point */
}

/* Starts one more request thread unless all have started; with loop->lock
 * held. Returns false if none started (the running ones go on). */
static bool start_thread(struct reqloop *loop)
{
    if (loop->started == loop->max_threads)
        return false;
    struct request_thread *thread = &loop->threads[loop->started];
    thread->loop = loop;
    thread->payload = reqmem_new(loop->payload_bytes);
    if (!thread->payload)
        return false;
    if (pthread_create(&thread->thread, NULL, request_thread_main, thread) != 0) {
        reqmem_free(thread->payload);
        thread->payload = NULL;
        return false;
    }
    loop->started++;
    loop->waiting++; /* counted now: the next request must not start another */
    thread->in_read = true;
    return true;
}

/* Reads one request into the thread's memory: its size, 0 when the loop
 * should end (unmounted, or the read failed: loop->error says which). */
static size_t read_request(struct request_thread *self, uint8_t **start)
{
    struct reqloop *loop = self->loop;
    for (;;) {
        *start = self->payload - WRITE_HEADERS_BYTES;
        size_t room = WRITE_HEADERS_BYTES + loop->payload_bytes + REQMEM_TAILROOM;
        ssize_t got = fuse_session_exited(loop->session) ? 0 : read(loop->fd, *start, room);
        int read_errno = errno;
        if (got >= (ssize_t)IN_HEADER_BYTES)
            return (size_t)got;
        if (fuse_session_exited(loop->session))
            return 0;
        if (got < 0 && (read_errno == EINTR || read_errno == EAGAIN || read_errno == ENOENT))
            continue; /* ENOENT: the request was interrupted before it was read */
        if (got >= 0) {
            log_error("short read of %zd bytes from /dev/fuse", got);
            read_errno = EIO;
        }
        if (read_errno != ENODEV) { /* ENODEV: unmounted, the normal end */
            log_error("reading /dev/fuse failed: %s", strerror(read_errno));
            atomic_store(&loop->error, read_errno);
        }
        fuse_session_exit(loop->session);
        return 0;
    }
}

static void *request_thread_main(void *arg)
{
    struct request_thread *self = arg;
    struct reqloop *loop = self->loop;
    current_thread = self;
    while (!fuse_session_exited(loop->session)) {
        uint8_t *start;
        size_t size = read_request(self, &start);
        pthread_mutex_lock(&loop->lock);
        loop->waiting--;
        self->in_read = false;
        if (size > 0 && loop->waiting == 0)
            start_thread(loop); /* else the next request would find nobody */
        pthread_mutex_unlock(&loop->lock);
        if (size == 0)
            break;
        struct fuse_buf buf = {.size = size, .mem = start};
        /* What the metrics need of the request, taken before it is served:
         * a whole-tile write hands its memory to the write-behind, which
         * may free it before fuse_session_process_buf() returns. */
        uint8_t head[MOUNTMETRICS_HEAD_BYTES];
        size_t head_size = size < sizeof(head) ? size : sizeof(head);
        memcpy(head, start, head_size);
        int64_t started_ns = util_monotonic_ns();
        fuse_session_process_buf(loop->session, &buf);
        mountmetrics_note(head, head_size, util_monotonic_ns() - started_ns);
        pthread_mutex_lock(&loop->lock);
        loop->waiting++;
        self->in_read = true;
        pthread_mutex_unlock(&loop->lock);
    }
    pthread_mutex_lock(&loop->lock);
    loop->ended++;
    pthread_mutex_unlock(&loop->lock);
    sem_post(&loop->thread_ended);
    return NULL;
}

bool reqloop_write_memory(const char *buf, struct reqmem_slot *memory)
{
    struct request_thread *self = current_thread;
    if (!self || (const uint8_t *)buf != self->payload)
        return false;
    memory->payload = &self->payload;
    memory->payload_bytes = self->loop->payload_bytes;
    return true;
}

int reqloop_run(struct fuse_session *session, int max_threads, size_t payload_bytes)
{
    struct reqloop loop = {.session = session,
                           .fd = fuse_session_fd(session),
                           .payload_bytes = payload_bytes,
                           .max_threads = max_threads};
    atomic_init(&loop.error, 0);
    loop.threads = calloc((size_t)max_threads, sizeof(*loop.threads));
    if (!loop.threads || sem_init(&loop.thread_ended, 0, 0) != 0) {
        free(loop.threads);
        log_error("cannot start the request threads: out of memory");
        return -1;
    }
    pthread_mutex_init(&loop.lock, NULL);
    struct sigaction wake = {.sa_handler = wake_handler}; /* no SA_RESTART */
    struct sigaction old_wake;
    sigemptyset(&wake.sa_mask);
    sigaction(REQLOOP_WAKE_SIGNAL, &wake, &old_wake);

    pthread_mutex_lock(&loop.lock);
    bool running = start_thread(&loop);
    pthread_mutex_unlock(&loop.lock);
    if (!running)
        log_error("cannot start a request thread (out of memory or threads)");
    /* A signal interrupts sem_clockwait here or a thread's read; either way
     * the session is marked exited by then. */
    while (running && !fuse_session_exited(session)) {
        struct timespec deadline = util_monotonic_deadline(REQLOOP_EXIT_CHECK_MS);
        sem_clockwait(&loop.thread_ended, CLOCK_MONOTONIC, &deadline);
    }

    for (;;) {
        pthread_mutex_lock(&loop.lock);
        loop.max_threads = loop.started; /* no thread starts another now */
        bool all_ended = loop.ended == loop.started;
        for (int i = 0; i < loop.started && !all_ended; i++) {
            if (loop.threads[i].in_read)
                pthread_kill(loop.threads[i].thread, REQLOOP_WAKE_SIGNAL);
        }
        pthread_mutex_unlock(&loop.lock);
        if (all_ended)
            break;
        struct timespec deadline = util_monotonic_deadline(REQLOOP_WAKE_INTERVAL_MS);
        sem_clockwait(&loop.thread_ended, CLOCK_MONOTONIC, &deadline);
    }
    log_info("%d of at most %d request threads were started", loop.started, max_threads);
    for (int i = 0; i < loop.started; i++) {
        pthread_join(loop.threads[i].thread, NULL);
        reqmem_free(loop.threads[i].payload);
    }
    sigaction(REQLOOP_WAKE_SIGNAL, &old_wake, NULL);
    pthread_mutex_destroy(&loop.lock);
    sem_destroy(&loop.thread_ended);
    free(loop.threads);
    return running && atomic_load(&loop.error) == 0 ? 0 : -1;
}
