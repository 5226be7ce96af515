/*
 * @file rebalance.h
 * `tessera rebalance`: plans from the access profiles and runs the plans.
 *
 *   tessera rebalance plan PATH --policy frequent|balanced|lbm [--max-copies N]
 *                                [--groups M] [--topology FILE]
 *                                [--json]
 *       the moves, copies and drops the policy wants for the files under
 *       PATH, with the predicted cost per tile and per datanode before and
 *       after, and the bytes to transfer;
 *   tessera rebalance apply PATH --policy P [--max-copies N] [--groups M]
 *                                [--topology FILE]
 *                                [--concurrency N] [--max-mbps R]
 *       finishes what the relocation journal holds, then plans again and
 *       runs the plan (librarian/relocate.h), with progress on stderr;
 *       SIGINT/SIGTERM stop it cleanly (exit 130);
 *   tessera rebalance status [--json]   the journal's entries and their age;
 *   tessera rebalance abort             lifts each entry's freeze and
 *                                       aborts it.
 */
#ifndef TESSERA_TOOLS_REBALANCE_H
#define TESSERA_TOOLS_REBALANCE_H

/*
 * Runs `tessera rebalance` with argv[0] = "rebalance". Returns the exit
 * code: 0 ok, 1 failure (or steps that failed), 2 usage error, 130
 * interrupted.
 */
int rebalance_main(int argc, char **argv);

#endif
