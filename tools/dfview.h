/*
 * @file dfview.h
 * `tessera df`: the cluster's space per datanode, per machine and in
 * total, a disk that several datanodes share counted once (diskspace.h),
 * as `df` on a mount counts it.
 */
#ifndef TESSERA_TOOLS_DFVIEW_H
#define TESSERA_TOOLS_DFVIEW_H

int dfview_main(int argc, char **argv);

#endif
