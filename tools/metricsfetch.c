/*
 * @file metricsfetch.c
 * See metricsfetch.h. A new easy handle per fetch: `tessera stats` makes
 * a handful of fetches a second, where a reused connection would save
 * nothing worth the state it keeps.
 */
#include "metricsfetch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metricsfetch_body {
    char *bytes;
    size_t len;
    size_t cap;
    int too_big;
};

/* libcurl's write callback: appends, or returns 0 (abort) past the cap. */
static size_t metricsfetch_append(char *data, size_t size, size_t count, void *arg)
{
    struct metricsfetch_body *body = arg;
    size_t chunk = size * count;
    if (body->len + chunk > METRICSFETCH_MAX_BYTES) {
        body->too_big = 1;
        return 0;
    }
    if (body->len + chunk + 1 > body->cap) {
        size_t cap = body->cap ? body->cap : 16384;
        while (cap < body->len + chunk + 1)
            cap *= 2;
        char *grown = realloc(body->bytes, cap);
        if (!grown)
            return 0;
        body->bytes = grown;
        body->cap = cap;
    }
    memcpy(body->bytes + body->len, data, chunk);
    body->len += chunk;
    body->bytes[body->len] = '\0';
    return chunk;
}

int metricsfetch_get(const char *address, long timeout_ms, char **body_out, size_t *len,
                     char *error, size_t error_cap)
{
    struct metricsfetch_body body = {0};
    char url[512];
    char curl_error[CURL_ERROR_SIZE] = "";
    long code = 0;
    int rc = -1;

    *body_out = NULL;
    *len = 0;
    if (snprintf(url, sizeof(url), "http://%s/metrics", address) >= (int)sizeof(url)) {
        snprintf(error, error_cap, "address too long");
        return -1;
    }
    CURL *curl = curl_easy_init();
    if (!curl) {
        snprintf(error, error_cap, "cannot start libcurl (out of memory?)");
        return -1;
    }
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L); /* timeouts without SIGALRM */
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, metricsfetch_append);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    /* Only plain HTTP to the address given: no proxy from the environment
     * between a tool and the cluster's own endpoints. */
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http");
    CURLcode result = curl_easy_perform(curl);
    if (result != CURLE_OK) {
        snprintf(error, error_cap, "%s",
                 body.too_big ? "the answer is larger than 8 MiB"
                              : (*curl_error ? curl_error : curl_easy_strerror(result)));
        goto out;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200) {
        snprintf(error, error_cap, "HTTP status %ld", code);
        goto out;
    }
    if (!body.bytes) {
        body.bytes = calloc(1, 1);
        if (!body.bytes) {
            snprintf(error, error_cap, "out of memory");
            goto out;
        }
    }
    *body_out = body.bytes;
    *len = body.len;
    body.bytes = NULL;
    rc = 0;
out:
    free(body.bytes);
    curl_easy_cleanup(curl);
    return rc;
}
