/*
 * @file metrics.c
 * See metrics.h. libmicrohttpd runs one internal polling thread; every GET
 * renders the daemon's figures afresh into a heap buffer that the response
 * owns (MHD_RESPMEM_MUST_FREE), so nothing is shared between scrapes.
 * Anything but GET is answered 405, any path but /metrics and / 404.
 */
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metrics_text {
    char *bytes;
    size_t len;
    size_t cap;
    bool failed; /* out of memory: the scrape is answered 500 */
};

struct metrics_server {
    struct MHD_Daemon *daemon;
    metrics_collect_fn *collect;
    void *context;
};

void metrics_text_append(struct metrics_text *text, const char *chunk, size_t len)
{
    if (text->failed)
        return;
    if (text->len + len + 1 > text->cap) {
        size_t cap = text->cap ? text->cap : 4096;
        while (cap < text->len + len + 1)
            cap *= 2;
        char *grown = realloc(text->bytes, cap);
        if (!grown) {
            text->failed = true;
            return;
        }
        text->bytes = grown;
        text->cap = cap;
    }
    memcpy(text->bytes + text->len, chunk, len);
    text->len += len;
    text->bytes[text->len] = '\0';
}

void metrics_text_family(struct metrics_text *text, const char *name, const char *type,
                         const char *help)
{
    char line[512];
    int len = snprintf(line, sizeof(line), "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    if (len > 0)
        metrics_text_append(text, line,
                            (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
}

void metrics_text_sample(struct metrics_text *text, const char *name, const char *labels,
                         double value)
{
    char line[512];
    /* Whole numbers (counters, bytes) exactly up to 2^53; fractions (seconds) to 9 digits. */
    bool whole = value < 9007199254740992.0 && value > -9007199254740992.0 &&
                 value == (double)(int64_t)value; /* the range first: the cast needs it */
    int len = snprintf(line, sizeof(line), whole ? "%s%s%s%s %.0f\n" : "%s%s%s%s %.9g\n", name,
                       labels ? "{" : "", labels ? labels : "", labels ? "}" : "", value);
    if (len > 0)
        metrics_text_append(text, line,
                            (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
}

void metrics_text_one(struct metrics_text *text, const char *name, const char *type,
                      const char *help, double value)
{
    metrics_text_family(text, name, type, help);
    metrics_text_sample(text, name, NULL, value);
}

int metrics_render(metrics_collect_fn *collect, void *context, char **out, size_t *len)
{
    struct metrics_text text = {0};
    collect(context, &text);
    metrics_text_append(&text, "", 0); /* an empty scrape is still a string */
    if (text.failed) {
        free(text.bytes);
        return -ENOMEM;
    }
    *out = text.bytes;
    *len = text.len;
    return 0;
}

int metrics_parse_address(const char *text, char *host, size_t host_cap, uint16_t *port)
{
    const char *colon = strrchr(text, ':');
    const char *port_text = colon ? colon + 1 : text;
    size_t host_len = colon ? (size_t)(colon - text) : 0;
    struct in_addr parsed;
    char *end;

    errno = 0;
    unsigned long value = strtoul(port_text, &end, 10);
    if (errno != 0 || end == port_text || *end != '\0' || value == 0 || value > 65535)
        return -EINVAL;
    if (host_len == 0) {
        snprintf(host, host_cap, "127.0.0.1");
    } else {
        if (host_len >= host_cap)
            return -EINVAL;
        memcpy(host, text, host_len);
        host[host_len] = '\0';
        if (inet_pton(AF_INET, host, &parsed) != 1)
            return -EINVAL;
    }
    *port = (uint16_t)value;
    return 0;
}

int metrics_announced_address(const char *address, const char *any_host, char *out, size_t cap)
{
    char host[64];
    uint16_t port;
    if (metrics_parse_address(address, host, sizeof(host), &port) != 0)
        return -EINVAL;
    const char *shown = host;
    if (strcmp(host, "0.0.0.0") == 0 && any_host && *any_host)
        shown = any_host;
    int len = snprintf(out, cap, "%s:%u", shown, (unsigned)port);
    return len < 0 || (size_t)len >= cap ? -EINVAL : 0;
}

void metrics_endpoint_host(const char *endpoint, char *host, size_t cap)
{
    static const char scheme[] = "tcp://";
    if (cap == 0)
        return;
    host[0] = '\0';
    if (strncmp(endpoint, scheme, sizeof(scheme) - 1) != 0)
        return;
    const char *start = endpoint + sizeof(scheme) - 1;
    const char *colon = strrchr(start, ':');
    size_t len = colon ? (size_t)(colon - start) : 0;
    if (len == 0 || len >= cap || (len == 1 && start[0] == '*'))
        return;
    memcpy(host, start, len);
    host[len] = '\0';
}

static enum MHD_Result metrics_answer(void *cls, struct MHD_Connection *connection, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **request_state)
{
    struct metrics_server *server = cls;
    struct MHD_Response *response;
    unsigned int code = MHD_HTTP_OK;
    char *body = NULL;
    size_t len = 0;
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)request_state;

    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0) {
        code = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/metrics") != 0 && strcmp(url, "/") != 0) {
        code = MHD_HTTP_NOT_FOUND;
    } else if (metrics_render(server->collect, server->context, &body, &len) != 0) {
        code = MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (code != MHD_HTTP_OK) {
        static const char refused[] = "GET /metrics\n";
        response = MHD_create_response_from_buffer(sizeof(refused) - 1, (void *)refused,
                                                   MHD_RESPMEM_PERSISTENT);
    } else {
        response = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    }
    if (!response) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8");
    enum MHD_Result result = MHD_queue_response(connection, code, response);
    MHD_destroy_response(response);
    return result;
}

int metrics_server_start(const char *address, metrics_collect_fn *collect, void *context,
                         struct metrics_server **serverp)
{
    char host[64];
    uint16_t port;
    struct sockaddr_in addr;

    *serverp = NULL;
    if (metrics_parse_address(address, host, sizeof(host), &port) != 0)
        return -EINVAL;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    inet_pton(AF_INET, host, &addr.sin_addr);

    struct metrics_server *server = calloc(1, sizeof(*server));
    if (!server)
        return -ENOMEM;
    server->collect = collect;
    server->context = context;
    /* The HTTP thread inherits a mask of every signal: stop signals and SIGHUP
     * stay with the daemon's own threads, whose polls they must interrupt. */
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    errno = 0;
    /* One thread; MHD_USE_ERROR_LOG off: a failure comes back as errno and the daemon says it. */
    server->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, port, NULL, NULL, metrics_answer, server,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)16, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10, MHD_OPTION_END);
    int err = errno ? errno : EADDRINUSE;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (!server->daemon) {
        free(server);
        return -err;
    }
    *serverp = server;
    return 0;
}

void metrics_server_stop(struct metrics_server **serverp)
{
    struct metrics_server *server = serverp ? *serverp : NULL;
    if (!server)
        return;
    MHD_stop_daemon(server->daemon);
    free(server);
    *serverp = NULL;
}
