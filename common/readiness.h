/*
 * @file readiness.h
 * What a daemon tells its service manager (systemd's Type=notify, through
 * libsystemd's sd_notify): READY=1 once it serves, STATUS= lines, and
 * STOPPING=1 when a stop signal has been taken. Without $NOTIFY_SOCKET
 * (not under systemd) every call does nothing, so the daemons call them
 * unconditionally.
 */
#ifndef TESSERA_COMMON_READINESS_H
#define TESSERA_COMMON_READINESS_H

/* READY=1 with STATUS=<status>: the daemon serves from now on. */
void readiness_ready(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* STATUS=<status>: a line systemctl status shows. */
void readiness_status(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* STOPPING=1: the daemon is on its way out (a stop signal, or unmounted). */
void readiness_stopping(void);

/*
 * SIGHUP reopens the log file (log_reopen()) instead of ending the
 * process. Install before libfuse's handlers (which leave a signal with a
 * handler alone). 0 or -errno.
 */
int readiness_reopen_log_on_sighup(void);

#endif
