/*
 * @file keyscmd.h
 * `tessera keys init|add|list|revoke`: the cluster's CURVE keys (keysdir.h).
 */
#ifndef TESSERA_TOOLS_KEYSCMD_H
#define TESSERA_TOOLS_KEYSCMD_H

int keyscmd_main(int argc, char **argv);

#endif
