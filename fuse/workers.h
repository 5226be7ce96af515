/*
 * @file workers.h
 * A fixed pool of threads running submitted jobs in FIFO order. The data
 * path uses it to have many tile transfers in flight at once: a job blocks
 * on its datanode call, the pool keeps the others moving.
 */
#ifndef TESSERA_WORKERS_H
#define TESSERA_WORKERS_H

struct worker_job {
    void (*run)(struct worker_job *job); /* runs on a pool thread */
    struct worker_job *next;             /* the queue's, not the caller's */
};

struct workers;

/* Starts `threads` threads; NULL if none could be started. */
struct workers *workers_new(int threads);
/* Runs the jobs still queued, stops the threads and frees the pool. */
void workers_destroy(struct workers **workersp);
/* Queues a job; it runs once on some pool thread. Never blocks. */
void workers_submit(struct workers *workers, struct worker_job *job);

#endif
