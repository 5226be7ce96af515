/*
 * @file infoview.h
 * `tessera info PATH [--json]`: what a file or a directory tree holds and
 * where (MooseFS's mfsfileinfo and mfsdirinfo in one): entries by kind,
 * bytes, tiles, replicas against the files' copies, and the replicas and
 * bytes on each datanode.
 */
#ifndef TESSERA_TOOLS_INFOVIEW_H
#define TESSERA_TOOLS_INFOVIEW_H

int infoview_main(int argc, char **argv);

#endif
