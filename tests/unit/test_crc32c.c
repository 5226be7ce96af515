/*
 * @file test_crc32c.c
 * Unit tests of common/crc32c: the published check values (the "123456789"
 * check of the CRC catalogue and the iSCSI vectors of RFC 3720, B.4), the
 * incremental form against the one-shot form at every split point, and the
 * dispatched (hardware where there is one) and portable paths against a
 * bit-by-bit reference over many lengths and alignments, and against each
 * other where the hardware path switches between its three-chain gears.
 */
#include "crc32c.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <time.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* The definition, one bit at a time: slow and obviously right. */
static uint32_t reference_crc32c(uint32_t crc, const uint8_t *buf, size_t len)
{
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc ^= buf[i];
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

/* Deterministic bytes (xorshift), so a failure reproduces. */
static void fill_random(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (uint8_t)(x >> 24);
    }
}

static void test_check_value(void **state)
{
    (void)state;
    assert_int_equal(crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(crc32c_portable(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(reference_crc32c(0, (const uint8_t *)"123456789", 9), 0xE3069283u);
}

static void test_iscsi_vectors(void **state)
{
    uint8_t buf[32];
    (void)state;

    memset(buf, 0, sizeof(buf));
    assert_int_equal(crc32c(0, buf, sizeof(buf)), 0x8A9136AAu);
    assert_int_equal(crc32c_portable(0, buf, sizeof(buf)), 0x8A9136AAu);
    memset(buf, 0xff, sizeof(buf));
    assert_int_equal(crc32c(0, buf, sizeof(buf)), 0x62A8AB43u);
    assert_int_equal(crc32c_portable(0, buf, sizeof(buf)), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    assert_int_equal(crc32c(0, buf, sizeof(buf)), 0x46DD794Eu);
    assert_int_equal(crc32c_portable(0, buf, sizeof(buf)), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    assert_int_equal(crc32c(0, buf, sizeof(buf)), 0x113FDB5Cu);
    assert_int_equal(crc32c_portable(0, buf, sizeof(buf)), 0x113FDB5Cu);
}

static void test_empty_and_zeros(void **state)
{
    (void)state;
    /* Nothing added leaves the running value alone, NULL included. */
    assert_int_equal(crc32c(0, NULL, 0), 0);
    assert_int_equal(crc32c(0x12345678u, NULL, 0), 0x12345678u);
    assert_int_equal(crc32c_portable(0xdeadbeefu, "", 0), 0xdeadbeefu);

    /* Zero buffers of tile sizes: every path agrees, and zeros still change the sum. */
    size_t len = 1u << 20;
    uint8_t *zeros = calloc(1, len);
    assert_non_null(zeros);
    uint32_t whole = crc32c(0, zeros, len);
    assert_int_equal(whole, crc32c_portable(0, zeros, len));
    assert_int_equal(crc32c(0, zeros, 4096), reference_crc32c(0, zeros, 4096));
    assert_int_not_equal(whole, 0);
    assert_int_not_equal(crc32c(0, zeros, len - 1), whole);
    free(zeros);
}

static void test_incremental_equals_one_shot(void **state)
{
    uint8_t buf[1000];
    (void)state;

    fill_random(buf, sizeof(buf), 7);
    uint32_t whole = crc32c(0, buf, sizeof(buf));
    assert_int_equal(whole, reference_crc32c(0, buf, sizeof(buf)));
    for (size_t split = 0; split <= sizeof(buf); split++) {
        uint32_t first = crc32c(0, buf, split);
        assert_int_equal(crc32c(first, buf + split, sizeof(buf) - split), whole);
        first = crc32c_portable(0, buf, split);
        assert_int_equal(crc32c_portable(first, buf + split, sizeof(buf) - split), whole);
    }
    /* Three pieces, byte by byte, mixing the two paths. */
    uint32_t running = 0;
    for (size_t i = 0; i < sizeof(buf); i++)
        running = (i % 2) ? crc32c(running, buf + i, 1) : crc32c_portable(running, buf + i, 1);
    assert_int_equal(running, whole);
}

static void test_lengths_and_alignments(void **state)
{
    uint8_t buf[300];
    (void)state;

    fill_random(buf, sizeof(buf), 99);
    for (size_t offset = 0; offset < 16; offset++) {
        for (size_t len = 0; offset + len <= sizeof(buf); len += 1 + len / 8) {
            uint32_t expected = reference_crc32c(0, buf + offset, len);
            assert_int_equal(crc32c(0, buf + offset, len), expected);
            assert_int_equal(crc32c_portable(0, buf + offset, len), expected);
        }
    }
}

/*
 * Lengths where the hardware path changes gear (three chains of 8 KiB,
 * then of 1,360 bytes, then of 256, then one chain for the rest), at every alignment and
 * from a running CRC: the dispatched path gives the tables' answer.
 */
static void test_three_chain_lengths(void **state)
{
    (void)state;
    const size_t cap = 200008;
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    fill_random(buf, cap, 7);
    const size_t lens[] = {767,   768,   769,   776,    1535,   4079,  4080,
                           4095,  4096,  4097,  4848,  24575,  24576, 24577,
                           26111, 26112, 65536, 65539, 131071, 131072, 200000};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (size_t offset = 0; offset < 8; offset++) {
            uint32_t start = (uint32_t)(lens[i] * 2654435761u + offset);
            assert_int_equal(crc32c(start, buf + offset, lens[i]),
                             crc32c_portable(start, buf + offset, lens[i]));
        }
    }
    free(buf);
}

/* crc32c_combine() gives the CRC of a||b for every cut, 64 KiB ones included. */
static void test_combine(void **state)
{
    (void)state;
    const size_t len = 200000;
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 37 + (i >> 7));
    uint32_t whole = crc32c(0, buf, len);
    const size_t cuts[] = {0,           1,          3,       4096, 65536, 100000, 131072,
                           len - 65536, len - 4096, len - 1, len};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        size_t cut = cuts[i];
        uint32_t a = crc32c(0, buf, cut);
        uint32_t b = crc32c(0, buf + cut, len - cut);
        assert_int_equal(crc32c_combine(a, b, len - cut), whole);
    }
    /* Every short length and a spread of long ones (one power-of-two map per set bit). */
    for (size_t tail = 1; tail < len; tail = tail < 300 ? tail + 1 : tail * 3 + 7) {
        uint32_t a = crc32c(0, buf, len - tail);
        uint32_t b = crc32c(0, buf + len - tail, tail);
        assert_int_equal(crc32c_combine(a, b, tail), whole);
    }
    /* Three pieces, joined left to right as a datanode joins blocks. */
    uint32_t joined = crc32c(0, buf, 10000);
    joined = crc32c_combine(joined, crc32c(0, buf + 10000, 65536), 65536);
    joined = crc32c_combine(joined, crc32c(0, buf + 75536, len - 75536), len - 75536);
    assert_int_equal(joined, whole);
    free(buf);
}

/* MB/s of one function over a 1 MiB buffer (warm in cache), at least 0.2 s of it. */
static double crc32c_mbps(uint32_t (*sum)(uint32_t, const void *, size_t), const uint8_t *buf,
                          size_t len)
{
    struct timespec start, now;
    uint32_t crc = 0;
    uint64_t bytes = 0;
    double seconds = 0;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        for (int i = 0; i < 16; i++)
            crc = sum(crc, buf, len);
        bytes += 16 * (uint64_t)len;
        clock_gettime(CLOCK_MONOTONIC, &now);
        seconds = (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
    } while (seconds < 0.2);
    assert_true(crc != 0 || len == 0); /* keeps the loop from being optimised away */
    return (double)bytes / seconds / 1e6;
}

/*
 * crc32c() takes the instruction path exactly when the CPU has SSE4.2, and
 * how fast each path sums is printed (the datanode sums every byte it
 * stores and serves, the mount every byte it writes): a figure, not an
 * assertion, as a loaded machine may stall either measurement.
 */
static void test_throughput(void **state)
{
    (void)state;
    const size_t len = 1u << 20;
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    double chosen = crc32c_mbps(crc32c, buf, len);
    double portable = crc32c_mbps(crc32c_portable, buf, len);
    printf("# crc32c: %.0f MB/s as chosen, %.0f MB/s by the tables\n", chosen, portable);
#if defined(__x86_64__)
    __builtin_cpu_init();
    assert_int_equal(crc32c_uses_instruction(), __builtin_cpu_supports("sse4.2") != 0);
#else
    assert_false(crc32c_uses_instruction());
#endif
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_value),
        cmocka_unit_test(test_iscsi_vectors),
        cmocka_unit_test(test_three_chain_lengths),
        cmocka_unit_test(test_empty_and_zeros),
        cmocka_unit_test(test_incremental_equals_one_shot),
        cmocka_unit_test(test_lengths_and_alignments),
        cmocka_unit_test(test_throughput),
        cmocka_unit_test(test_combine),
    };
    return cmocka_run_group_tests_name("crc32c", tests, NULL, NULL);
}
