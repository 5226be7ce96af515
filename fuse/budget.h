/*
 * @file budget.h
 * A byte budget shared by threads: the cap on the client's tile buffers, so
 * the mount's memory stays bounded whatever the number and size of files.
 */
#ifndef TESSERA_BUDGET_H
#define TESSERA_BUDGET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct budget {
    pthread_mutex_t lock; /* protects used and waiting */
    pthread_cond_t freed;
    uint64_t cap;
    uint64_t used;
    int waiting; /* threads in budget_take waiting for bytes */
    /* Called (without the lock) each time a take is about to wait, so that
     * whoever holds bytes nobody is using can give them back. */
    void (*on_short)(void *arg);
    void *on_short_arg;
};

void budget_init(struct budget *budget, uint64_t cap);
void budget_fini(struct budget *budget);
/* Sets what budget_take calls before it waits (NULL: nothing). */
void budget_on_short(struct budget *budget, void (*on_short)(void *arg), void *arg);
/* Takes bytes, waiting until they are free. */
void budget_take(struct budget *budget, uint64_t bytes);
/* Whether a budget_take is waiting now. */
bool budget_wanted(struct budget *budget);
/* Takes bytes if free now; returns false (taking nothing) otherwise. */
bool budget_try_take(struct budget *budget, uint64_t bytes);
void budget_give(struct budget *budget, uint64_t bytes);

#endif
