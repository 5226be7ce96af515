/*
 * @file readiness.c
 * See readiness.h. sd_notify() failures are logged at debug level only: a
 * daemon that cannot tell systemd it is ready still serves, and systemd
 * reports the timeout itself.
 */
#include "readiness.h"

#include "log.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

/* Sends "PREFIXSTATUS=<formatted>" (prefix "" or "READY=1\n"). */
static void readiness_send(const char *prefix, const char *format, va_list args)
{
    char status[256];
    vsnprintf(status, sizeof(status), format, args);
    int rc = sd_notifyf(0, "%sSTATUS=%s", prefix, status);
    if (rc < 0)
        log_debug("sd_notify: %s", strerror(-rc));
}

void readiness_ready(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    readiness_send("READY=1\n", format, args);
    va_end(args);
}

void readiness_status(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    readiness_send("", format, args);
    va_end(args);
}

void readiness_stopping(void)
{
    int rc = sd_notify(0, "STOPPING=1\nSTATUS=stopping");
    if (rc < 0)
        log_debug("sd_notify: %s", strerror(-rc));
}

static void readiness_on_sighup(int signal_number)
{
    (void)signal_number;
    log_reopen(); /* async-signal-safe; a failure keeps the old file */
}

int readiness_reopen_log_on_sighup(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = readiness_on_sighup;
    action.sa_flags = SA_RESTART; /* other threads' blocking calls go on */
    sigemptyset(&action.sa_mask);
    return sigaction(SIGHUP, &action, NULL) == 0 ? 0 : -errno;
}
