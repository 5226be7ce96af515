/*
 * @file test_metrics.c
 * Unit tests of common/metrics: the exposition text (HELP and TYPE lines,
 * labels, whole numbers exact and fractions short), --metrics addresses
 * (a port alone means the loopback), and the HTTP server answering GET
 * /metrics with the collect function's text, 404 elsewhere, 405 to other
 * methods, and refusing a port already taken.
 */
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

/* The collect function under test: a counter that counts its scrapes. */
static void collect_scrapes(void *context, struct metrics_text *text)
{
    int *scrapes = context;
    (*scrapes)++;
    metrics_text_family(text, "test_scrapes_total", "counter", "Scrapes so far.");
    metrics_text_sample(text, "test_scrapes_total", "op=\"get\"", (double)*scrapes);
    metrics_text_sample(text, "test_seconds", NULL, 0.25);
    metrics_text_sample(text, "test_big", NULL, 4503599627370497.0); /* 2^52 + 1 */
}

static void test_text(void **state)
{
    (void)state;
    int scrapes = 0;
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(metrics_render(collect_scrapes, &scrapes, &text, &len), 0);
    assert_string_equal(text, "# HELP test_scrapes_total Scrapes so far.\n"
                              "# TYPE test_scrapes_total counter\n"
                              "test_scrapes_total{op=\"get\"} 1\n"
                              "test_seconds 0.25\n"
                              "test_big 4503599627370497\n");
    assert_int_equal(len, strlen(text));
    free(text);
}

static void test_addresses(void **state)
{
    (void)state;
    char host[64];
    uint16_t port = 0;
    assert_int_equal(metrics_parse_address("9400", host, sizeof(host), &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 9400);
    assert_int_equal(metrics_parse_address(":9401", host, sizeof(host), &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 9401);
    assert_int_equal(metrics_parse_address("0.0.0.0:80", host, sizeof(host), &port), 0);
    assert_string_equal(host, "0.0.0.0");
    assert_int_equal(port, 80);
    const char *bad[] = {"", "0", "65536", "x", "host:9400", "1.2.3:9", "1.2.3.4:", "9400x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (metrics_parse_address(bad[i], host, sizeof(host), &port) != -EINVAL)
            fail_msg("'%s' was taken as an address", bad[i]);
    }
}

/* A free loopback port: bound by the kernel's choice, then released. */
static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(addr);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
    close(fd);
    return ntohs(addr.sin_port);
}

/* Sends request to 127.0.0.1:port and returns the whole answer (static). */
static const char *http(uint16_t port, const char *request)
{
    static char answer[8192];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
    size_t len = 0;
    ssize_t got;
    while (len < sizeof(answer) - 1 && (got = read(fd, answer + len, sizeof(answer) - 1 - len)) > 0)
        len += (size_t)got;
    answer[len] = '\0';
    close(fd);
    return answer;
}

static void test_server(void **state)
{
    (void)state;
    int scrapes = 0;
    struct metrics_server *server = NULL;
    char address[32];
    uint16_t port = free_port();
    snprintf(address, sizeof(address), "%u", (unsigned)port);
    assert_int_equal(metrics_server_start(address, collect_scrapes, &scrapes, &server), 0);
    assert_non_null(server);

    const char *answer = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(answer, " 200 OK\r\n"));
    assert_non_null(strstr(answer, "text/plain; version=0.0.4"));
    assert_non_null(strstr(answer, "test_scrapes_total{op=\"get\"} 1\n"));
    answer = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(answer, "test_scrapes_total{op=\"get\"} 2\n"));
    assert_non_null(strstr(http(port, "GET /other HTTP/1.0\r\n\r\n"), " 404"));
    assert_non_null(
        strstr(http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n"), " 405"));
    assert_int_equal(scrapes, 2);

    /* The port is taken now: a second server says so. */
    struct metrics_server *second = NULL;
    assert_true(metrics_server_start(address, collect_scrapes, &scrapes, &second) < 0);
    assert_null(second);
    assert_int_equal(metrics_server_start("nonsense", collect_scrapes, &scrapes, &second), -EINVAL);

    metrics_server_stop(&server);
    assert_null(server);
    metrics_server_stop(&server); /* NULL is fine */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_server),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
