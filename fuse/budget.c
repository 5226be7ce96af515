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
    budget->waiting = 0;
    budget->on_short = NULL;
    budget->on_short_arg = NULL;
}

void budget_fini(struct budget *budget)
{
    pthread_cond_destroy(&budget->freed);
    pthread_mutex_destroy(&budget->lock);
}

void budget_on_short(struct budget *budget, void (*on_short)(void *arg), void *arg)
{
    pthread_mutex_lock(&budget->lock);
    budget->on_short = on_short;
    budget->on_short_arg = arg;
    pthread_mutex_unlock(&budget->lock);
}

/* A request larger than the cap still proceeds alone, never deadlocks. */
static bool budget_short(const struct budget *budget, uint64_t bytes)
{
    return budget->used > 0 && budget->used + bytes > budget->cap;
}

void budget_take(struct budget *budget, uint64_t bytes)
{
    pthread_mutex_lock(&budget->lock);
    if (budget_short(budget, bytes)) {
        budget->waiting++;
        while (budget_short(budget, bytes)) {
            if (budget->on_short) {
                void (*on_short)(void *arg) = budget->on_short;
                void *arg = budget->on_short_arg;
                pthread_mutex_unlock(&budget->lock);
                on_short(arg);
                pthread_mutex_lock(&budget->lock);
                if (!budget_short(budget, bytes))
                    break;
            }
            pthread_cond_wait(&budget->freed, &budget->lock);
        }
        budget->waiting--;
    }
    budget->used += bytes;
    pthread_mutex_unlock(&budget->lock);
}

bool budget_wanted(struct budget *budget)
{
    pthread_mutex_lock(&budget->lock);
    bool wanted = budget->waiting > 0;
    pthread_mutex_unlock(&budget->lock);
    return wanted;
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
