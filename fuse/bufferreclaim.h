/*
 * @file bufferreclaim.h
 * The reclaimer: a thread of the data path that, while a writer waits for
 * write budget, sends the idle buffers of the other open files. Private to
 * the data path.
 */
#ifndef TESSERA_BUFFERRECLAIM_H
#define TESSERA_BUFFERRECLAIM_H

#include "datapath_i.h"

#include <stdbool.h>

/* Starts the thread (signals blocked) and has the write budget wake it
 * when short. False if the thread could not start. */
bool bufferreclaim_start(struct datapath *datapath);

/* Stops the thread, if it runs, and frees what it used (start or not). */
void bufferreclaim_stop(struct datapath *datapath);

#endif
