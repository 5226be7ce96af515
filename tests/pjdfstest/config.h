/* config.h for pjdfstest on Linux with glibc (Debian 12), written by hand in
 * place of its autoconf run: what configure finds there. */
#define HAVE_FACCESSAT 1
#define HAVE_FCHMODAT 1
#define HAVE_FCHOWNAT 1
#define HAVE_FSTATAT 1
#define HAVE_LCHMOD 1
#define HAVE_LINKAT 1
#define HAVE_MKDIRAT 1
#define HAVE_MKFIFOAT 1
#define HAVE_MKNODAT 1
#define HAVE_OPENAT 1
#define HAVE_POSIX_FALLOCATE 1
#define HAVE_READLINKAT 1
#define HAVE_RENAMEAT 1
#define HAVE_SYMLINKAT 1
#define HAVE_UTIMENSAT 1
#define HAVE_STRUCT_STAT_ST_ATIM 1
#define HAVE_STRUCT_STAT_ST_CTIM 1
#define HAVE_STRUCT_STAT_ST_MTIM 1
#define HAVE_SYS_SYSMACROS_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_UNISTD_H 1
#define PACKAGE "pjdfstest"
#define PACKAGE_VERSION "0.1"
#define STDC_HEADERS 1
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
