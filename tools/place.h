/*
 * @file place.h
 * `tessera place PATH [--groups M] [--topology FILE]`: where the `lbm`
 * policy (librarian/plan_lbm.h, seed 003) would serve each group of tiles
 * of the files under PATH, with each server's predicted remote transfer
 * and, with a topology, each link's load; then every machine's predicted
 * remote transfer now and after `frequent`, `balanced` and `lbm`, so the
 * placements can be compared before any is applied. Changes nothing.
 */
#ifndef TESSERA_TOOLS_PLACE_H
#define TESSERA_TOOLS_PLACE_H

/* Runs `tessera place` with argv[0] = "place"; 0 ok, 1 failure, 2 usage error. */
int place_main(int argc, char **argv);

#endif
