/*
 * @file modelcmd.h
 * `tessera model`: the performance model (perfmodel.h) on the live
 * cluster -- predict a workload, advise its tile size, mesh and datanode
 * count, calibrate the model's CPU and round-trip figures from probes and
 * store them in meta, show them.
 */
#ifndef TESSERA_TOOLS_MODELCMD_H
#define TESSERA_TOOLS_MODELCMD_H

int modelcmd_main(int argc, char **argv);

#endif
