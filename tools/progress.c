/*
 * @file progress.c
 * See progress.h.
 */
#include "progress.h"

#include "fmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PROGRESS_MB 1e6
#define PROGRESS_MAX_SECONDS (99.0 * 3600.0)

void progress_format_duration(double seconds, char *out, size_t cap)
{
    if (cap == 0)
        return;
    if (!isfinite(seconds) || seconds < 0 || seconds > PROGRESS_MAX_SECONDS) {
        snprintf(out, cap, "--:--");
        return;
    }
    unsigned long total = (unsigned long)llround(seconds);
    unsigned long hours = total / 3600, minutes = total / 60 % 60, secs = total % 60;
    if (hours > 0)
        snprintf(out, cap, "%lu:%02lu:%02lu", hours, minutes, secs);
    else
        snprintf(out, cap, "%lu:%02lu", minutes, secs);
}

double progress_eta(const struct progress_view *view)
{
    if (view->elapsed_sec <= 0)
        return -1;
    if (view->bytes_total > 0 && view->bytes_done > 0) {
        double rate = (double)view->bytes_done / view->elapsed_sec;
        uint64_t left =
            view->bytes_total > view->bytes_done ? view->bytes_total - view->bytes_done : 0;
        return (double)left / rate;
    }
    if (view->tiles_done > 0) {
        size_t left =
            view->tiles_total > view->tiles_done ? view->tiles_total - view->tiles_done : 0;
        return view->elapsed_sec / (double)view->tiles_done * (double)left;
    }
    return -1;
}

void progress_format(const struct progress_view *view, char *out, size_t cap)
{
    char done[16], total[16], eta[16];
    double rate = view->elapsed_sec > 0 ? (double)view->bytes_done / view->elapsed_sec : 0;
    size_t len;

    if (cap == 0)
        return;
    fmt_size(view->bytes_done, done, sizeof(done));
    fmt_size(view->bytes_total, total, sizeof(total));
    progress_format_duration(progress_eta(view), eta, sizeof(eta));
    snprintf(out, cap, "tiles %zu/%zu, %s/%s, %.1f MB/s, ETA %s", view->tiles_done,
             view->tiles_total, done, total, rate / PROGRESS_MB, eta);
    len = strlen(out);
    if (view->failed > 0 && len < cap)
        len += (size_t)snprintf(out + len, cap - len, ", %zu failed", view->failed);
    if (view->stale > 0 && len < cap)
        snprintf(out + len, cap - len, ", %zu stale", view->stale);
}
