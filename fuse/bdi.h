/*
 * @file bdi.h
 * Tuning of the mount's backing device info (bdi) in sysfs.
 */
#ifndef TESSERA_BDI_H
#define TESSERA_BDI_H

/* Sets the kernel read-ahead of the FUSE mount at mountpoint to kib KiB. */
void bdi_raise_readahead(const char *mountpoint, unsigned kib);

#endif
