/*
 * @file budget.c
 * See budget.h.
 */
#include "budget.h"

void budget_init(struct budget *budget, uint64_t cap)
{
    pthread_mutex_init(&budget->lock, NULL);
    pthread_cond_init(&budget->freed, NULL);
    budget->cap = cap;
    budget->used = 0;
}

void budget_fini(struct budget *budget)
{
    pthread_cond_destroy(&budget->freed);
    pthread_mutex_destroy(&budget->lock);
}

void budget_take(struct budget *budget, uint64_t bytes)
{
    pthread_mutex_lock(&budget->lock);
    /* A request larger than the cap still proceeds alone, never deadlocks. */
    while (budget->used > 0 && budget->used + bytes > budget->cap)
        pthread_cond_wait(&budget->freed, &budget->lock);
    budget->used += bytes;
    pthread_mutex_unlock(&budget->lock);
}

bool budget_try_take(struct budget *budget, uint64_t bytes)
{
    bool taken = false;
    pthread_mutex_lock(&budget->lock);
    if (budget->used + bytes <= budget->cap) {
        budget->used += bytes;
        taken = true;
    }
    pthread_mutex_unlock(&budget->lock);
    return taken;
}

void budget_give(struct budget *budget, uint64_t bytes)
{
    pthread_mutex_lock(&budget->lock);
    budget->used = bytes > budget->used ? 0 : budget->used - bytes;
    pthread_cond_broadcast(&budget->freed);
    pthread_mutex_unlock(&budget->lock);
}
