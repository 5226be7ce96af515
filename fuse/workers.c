/*
 * @file workers.c
 * See workers.h. One mutex and one condition variable guard the queue; the
 * pool is small (tens of threads), so contention is not an issue next to the
 * millisecond-scale transfers the jobs do.
 */
#include "workers.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct workers {
    pthread_mutex_t lock; /* protects head, tail, stopping */
    pthread_cond_t wake;
    struct worker_job *head;
    struct worker_job *tail;
    bool stopping;
    int thread_count;
    pthread_t *threads;
};

static void *worker_main(void *arg)
{
    struct workers *workers = arg;
    for (;;) {
        pthread_mutex_lock(&workers->lock);
        while (!workers->head && !workers->stopping)
            pthread_cond_wait(&workers->wake, &workers->lock);
        struct worker_job *job = workers->head;
        if (job) {
            workers->head = job->next;
            if (!workers->head)
                workers->tail = NULL;
        }
        pthread_mutex_unlock(&workers->lock);
        if (!job)
            return NULL; /* stopping and the queue is empty */
        job->next = NULL;
        job->run(job);
    }
}

struct workers *workers_new(int threads)
{
    struct workers *workers = calloc(1, sizeof(*workers));
    if (!workers)
        return NULL;
    workers->threads = calloc((size_t)threads, sizeof(*workers->threads));
    if (!workers->threads) {
        free(workers);
        return NULL;
    }
    pthread_mutex_init(&workers->lock, NULL);
    pthread_cond_init(&workers->wake, NULL);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&workers->threads[i], NULL, worker_main, workers) != 0)
            break;
        workers->thread_count++;
    }
    if (workers->thread_count == 0) {
        workers_destroy(&workers);
        return NULL;
    }
    return workers;
}

void workers_destroy(struct workers **workersp)
{
    if (!workersp || !*workersp)
        return;
    struct workers *workers = *workersp;
    pthread_mutex_lock(&workers->lock);
    workers->stopping = true;
    pthread_cond_broadcast(&workers->wake);
    pthread_mutex_unlock(&workers->lock);
    for (int i = 0; i < workers->thread_count; i++)
        pthread_join(workers->threads[i], NULL);
    pthread_cond_destroy(&workers->wake);
    pthread_mutex_destroy(&workers->lock);
    free(workers->threads);
    free(workers);
    *workersp = NULL;
}

void workers_submit(struct workers *workers, struct worker_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&workers->lock);
    if (workers->tail)
        workers->tail->next = job;
    else
        workers->head = job;
    workers->tail = job;
    pthread_cond_signal(&workers->wake);
    pthread_mutex_unlock(&workers->lock);
}
