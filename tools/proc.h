/*
 * @file proc.h
 * The processes of a local cluster: starting a daemon in the background,
 * pid files, telling whether a pid still names our daemon, stopping groups
 * of daemons with SIGTERM then SIGKILL, and showing the end of a log.
 *
 * A pid alone is not trusted: the kernel reuses pids, so a process counts
 * as our daemon only while /proc/PID/cmdline's first word contains the
 * daemon's binary name (a zombie has an empty cmdline, so it counts as
 * gone too).
 */
#ifndef TESSERA_TOOLS_PROC_H
#define TESSERA_TOOLS_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * Starts argv (argv[0] is the executable's path) as a background daemon:
 * the child calls setsid(), reads /dev/null and appends stdout and stderr
 * to log_path (created if missing), and every other descriptor is closed.
 * A line naming the command is appended to the log first, so restarts are
 * easy to tell apart. If exec fails, the child writes why to the log and
 * exits 127. Returns 0 with *pid set, or -errno (nothing started).
 */
int proc_spawn(char *const argv[], const char *log_path, pid_t *pid);

/*
 * Reads a pid file. Returns 0 with *pid > 0; 0 with *pid = 0 when the file
 * is missing or does not hold a pid; or -errno on other read errors.
 */
int proc_pidfile_read(const char *path, pid_t *pid);
/* Writes "PID\n" atomically (temporary file + rename); 0 or -errno. */
int proc_pidfile_write(const char *path, pid_t pid);

/* True while pid is a live process whose argv[0] contains `name`. */
bool proc_is_running(pid_t pid, const char *name);

/*
 * True while pid has a SIGKILL pending (SigPnd or ShdPnd in
 * /proc/PID/status): it is as good as gone but may still show its cmdline
 * for a moment, e.g. right after `kill -9` of a mount with many threads.
 */
bool proc_is_dying(pid_t pid);

/*
 * Has pid ended? For our own children this reaps them (waitpid WNOHANG)
 * and stores the wait status in *wait_status; for other processes it asks
 * proc_is_running() and sets *wait_status to -1. Returns true when gone.
 */
bool proc_has_exited(pid_t pid, const char *name, int *wait_status);

/* "exited with status 1", "was killed by signal 9", or "exited". */
void proc_describe_exit(int wait_status, char *out, size_t cap);

/* One process to stop. */
struct proc_target {
    pid_t pid;
    const char *name;  /* binary name, for the cmdline check */
    const char *label; /* for messages: "meta", "node3", "mount" */
    bool stopped;      /* was running and is gone now */
    bool killed;       /* needed SIGKILL */
};

/*
 * Sends SIGTERM to every target that is running, waits up to timeout_ms
 * for all of them to end, then SIGKILLs the rest and waits up to 2 s more.
 * Targets with pid 0 or not running are skipped (stopped stays false).
 * Returns 0, or -ETIMEDOUT if some target survived SIGKILL.
 */
int proc_stop(struct proc_target *targets, size_t count, int timeout_ms);

/*
 * Prints the last `lines` lines of the file at path to out, each indented
 * by `indent`. Returns 0 or -errno (nothing printed).
 */
int proc_log_tail(const char *path, int lines, const char *indent, FILE *out);

/* Sleeps about ms milliseconds (a signal may end it early). */
void proc_sleep_ms(int ms);

#endif
