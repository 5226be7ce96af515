/*
 * @file fuzzdatanode.h
 * What the datanode fuzz targets share: one real tile store, disk, fences
 * and warmer in a temporary directory, made once per run and removed at
 * exit, behind a nodehandlers_context as tessera-datanode builds it (no
 * puller: TILE_PULL would connect to endpoints the input names; no scrub;
 * read replies not counted). Inputs build on each other's state.
 */
#ifndef TESSERA_FUZZDATANODE_H
#define TESSERA_FUZZDATANODE_H

#include "nodehandlers.h"

/* The context, made on first call (aborts if it cannot be). */
struct nodehandlers_context *fuzzdatanode_context(const char *target_name);

#endif
