/*
 * @file tileplace.c
 * See tileplace.h. The loads count the tile writes of every file of the
 * mount, under datapath->loads_lock alone.
 *
 * Dynamic placement keeps NODE_SLOTS tile writes in flight per datanode. A
 * node gets a batch only when it has room for all of it, so the writer
 * never waits on a slow node while a fast one idles. The choice itself is
 * the librarian's (dynamicalloc_pick()), over a snapshot of the loads taken
 * under loads_lock.
 */
#include "tileplace.h"

#include "dynamicalloc.h"
#include "nodedir.h"

#include <pthread.h>

/* Tile writes in flight per datanode (dynamic placement). */
#define NODE_SLOTS 4

static struct node_load *node_load_find(struct datapath *datapath, uint32_t node)
{
    for (size_t i = 0; i < datapath->load_count; i++) {
        if (datapath->loads[i].node == node)
            return &datapath->loads[i];
    }
    if (datapath->load_count == MAX_NODES)
        return NULL;
    datapath->loads[datapath->load_count] = (struct node_load){node, 0};
    return &datapath->loads[datapath->load_count++];
}

void tileplace_load_change(struct datapath *datapath, uint32_t node, int delta)
{
    pthread_mutex_lock(&datapath->loads_lock);
    struct node_load *load = node_load_find(datapath, node);
    if (load)
        load->in_flight += delta;
    if (delta < 0)
        pthread_cond_broadcast(&datapath->load_dropped);
    pthread_mutex_unlock(&datapath->loads_lock);
}

uint32_t tileplace_pick(struct datapath *datapath, struct open_file *file, uint32_t tiles)
{
    uint32_t candidates[MAX_NODES];
    struct dynamicalloc_node snapshot[MAX_NODES];
    size_t count = nodedir_candidates(datapath->nodes, candidates, MAX_NODES);
    if (count == 0)
        return 0;
    for (;;) {
        pthread_mutex_lock(&datapath->loads_lock);
        for (size_t k = 0; k < count; k++) {
            size_t i = (datapath->next_pick + k) % count; /* the order loads are first met */
            struct node_load *load = node_load_find(datapath, candidates[i]);
            snapshot[i] = (struct dynamicalloc_node){candidates[i], load ? load->in_flight : 0};
        }
        uint32_t chosen =
            dynamicalloc_pick(snapshot, count, datapath->next_pick, tiles, NODE_SLOTS);
        if (chosen != 0) {
            datapath->next_pick++;
            pthread_mutex_unlock(&datapath->loads_lock);
            return chosen;
        }
        /* Not with file->lock held: the write jobs that free the slots take
         * it when they finish, and the workers that run the queued ones may
         * all be waiting for it. (The caller's write-out holds its ticket, so
         * nothing of this file's write-outs moves meanwhile.) */
        pthread_mutex_unlock(&file->lock);
        pthread_cond_wait(&datapath->load_dropped, &datapath->loads_lock);
        pthread_mutex_unlock(&datapath->loads_lock);
        pthread_mutex_lock(&file->lock);
    }
}
