/*
 * @file crc32c.c
 * See crc32c.h. Two implementations of one function:
 * - slicing-by-8: eight 256-entry tables (built once, under pthread_once)
 *   let each step fold 8 input bytes with 8 lookups instead of 8 dependent
 *   byte steps; about 1.5 GB/s, so a 1 MiB tile costs well under 1 ms;
 * - on x86-64 with SSE4.2, the crc32 instruction 8 bytes at a time in three
 *   independent chains joined by crc32c_combine's algebra (~10 GB/s), compiled for that target only in its own function and chosen at
 *   run time, so the binary still runs on CPUs without it.
 * Both keep the register inverted (the usual ~crc in, ~crc out), which is
 * what makes the function incremental. Words are loaded with memcpy: the
 * buffer may have any alignment.
 */
#include "crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define CRC32C_HAVE_SSE42 1
#endif

#define CRC32C_POLY_REFLECTED 0x82F63B78u

static uint32_t crc32c_table[8][256];
static bool crc32c_use_hardware;
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

/* ---- combining: the CRC of a||b from the CRCs of a and b (also what the
 * three chains of the hardware path are joined with) -------------------- */

/*
 * As zlib's crc32_combine(): appending len zero bytes to a message is a
 * linear map of the CRC register over GF(2), a 32x32 bit matrix; squaring
 * it doubles the number of zeros. The maps for every power of two of bytes
 * are made once (crc32c_power_operator).
 */

static uint32_t crc32c_gf2_times(const uint32_t *matrix, uint32_t vector)
{
    uint32_t sum = 0;
    for (int i = 0; vector; i++, vector >>= 1) {
        if (vector & 1)
            sum ^= matrix[i];
    }
    return sum;
}

static void crc32c_gf2_square(uint32_t *square, const uint32_t *matrix)
{
    for (int n = 0; n < 32; n++)
        square[n] = crc32c_gf2_times(matrix, matrix[n]);
}


/* shift = step x shift: one more power of two of zero bytes multiplied in. */
static void crc32c_gf2_apply(uint32_t shift[32], const uint32_t step[32])
{
    uint32_t product[32];
    for (int n = 0; n < 32; n++)
        product[n] = crc32c_gf2_times(step, shift[n]);
    memcpy(shift, product, sizeof(product));
}
/* The map of appending len zero bytes into shift (len > 0). */
static void crc32c_zeros_operator(uint32_t shift[32], size_t len)
{
    uint32_t odd[32], even[32];
    uint32_t row = 1;
    odd[0] = CRC32C_POLY_REFLECTED; /* one zero bit */
    for (int n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    crc32c_gf2_square(even, odd); /* two zero bits */
    crc32c_gf2_square(odd, even); /* four */
    /* shift starts as the identity; each set bit of len multiplies in 2^k bytes. */
    for (int n = 0; n < 32; n++)
        shift[n] = 1u << n;
    for (;;) {
        crc32c_gf2_square(even, odd); /* 1, 4, 16... bytes */
        if (len & 1)
            crc32c_gf2_apply(shift, even);
        len >>= 1;
        if (len == 0)
            break;
        crc32c_gf2_square(odd, even); /* 2, 8, 32... bytes */
        if (len & 1)
            crc32c_gf2_apply(shift, odd);
        len >>= 1;
        if (len == 0)
            break;
    }
}

/*
 * The shift of the three-chain sum: "append stride zero bytes" as four
 * tables of 256 (one per byte of the register), so a shift is four lookups
 * instead of 32 steps over the matrix.
 */
static void crc32c_shift_table_init(uint32_t table[4][256], size_t stride)
{
    uint32_t matrix[32];
    crc32c_zeros_operator(matrix, stride);
    for (int byte = 0; byte < 4; byte++) {
        for (uint32_t value = 0; value < 256; value++)
            table[byte][value] = crc32c_gf2_times(matrix, value << (8 * byte));
    }
}

static inline uint32_t crc32c_shift_by_table(const uint32_t table[4][256], uint32_t reg)
{
    return table[0][reg & 0xff] ^ table[1][(reg >> 8) & 0xff] ^ table[2][(reg >> 16) & 0xff] ^
           table[3][reg >> 24];
}

#ifdef CRC32C_HAVE_SSE42
/* Three gears: 8 KiB for tiles; 1,360 bytes, so a 4 KiB checksum block
 * (tilecrc.h) is three chains but for 16 bytes (with 512, 1 KiB of it went
 * through one chain, at a third of the speed); 256 for shorter pieces. */
#define CRC32C_LONG_STRIDE 8192u
#define CRC32C_MID_STRIDE 1360u
#define CRC32C_SHORT_STRIDE 256u
static uint32_t crc32c_long_shift[4][256];
static uint32_t crc32c_mid_shift[4][256];
static uint32_t crc32c_short_shift[4][256];
#endif

static void crc32c_init(void)
{
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 1) ? (crc >> 1) ^ CRC32C_POLY_REFLECTED : crc >> 1;
        crc32c_table[0][byte] = crc;
    }
    /* table[k][b]: the CRC of byte b followed by k zero bytes. */
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = crc32c_table[0][byte];
        for (int k = 1; k < 8; k++) {
            crc = crc32c_table[0][crc & 0xff] ^ (crc >> 8);
            crc32c_table[k][byte] = crc;
        }
    }
#ifdef CRC32C_HAVE_SSE42
    __builtin_cpu_init();
    crc32c_use_hardware = __builtin_cpu_supports("sse4.2");
    if (crc32c_use_hardware) {
        crc32c_shift_table_init(crc32c_long_shift, CRC32C_LONG_STRIDE);
        crc32c_shift_table_init(crc32c_mid_shift, CRC32C_MID_STRIDE);
        crc32c_shift_table_init(crc32c_short_shift, CRC32C_SHORT_STRIDE);
    }
#endif
}

/* Little-endian load of 8 bytes from any address. */
static uint64_t crc32c_load64(const uint8_t *at)
{
    uint64_t word;
    memcpy(&word, at, sizeof(word));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

/* The inverted register over len bytes, by the tables. */
static uint32_t crc32c_slice8(uint32_t crc, const uint8_t *at, size_t len)
{
    while (len >= 8) {
        uint64_t word = crc32c_load64(at) ^ crc;
        crc = crc32c_table[7][word & 0xff] ^ crc32c_table[6][(word >> 8) & 0xff] ^
              crc32c_table[5][(word >> 16) & 0xff] ^ crc32c_table[4][(word >> 24) & 0xff] ^
              crc32c_table[3][(word >> 32) & 0xff] ^ crc32c_table[2][(word >> 40) & 0xff] ^
              crc32c_table[1][(word >> 48) & 0xff] ^ crc32c_table[0][word >> 56];
        at += 8;
        len -= 8;
    }
    while (len > 0) {
        crc = crc32c_table[0][(crc ^ *at) & 0xff] ^ (crc >> 8);
        at++;
        len--;
    }
    return crc;
}

#ifdef CRC32C_HAVE_SSE42
/* The inverted register over len bytes, one crc32 instruction after another. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hardware_serial(uint32_t crc,
                                                                         const uint8_t *at,
                                                                         size_t len)
{
    uint64_t wide = crc;
    while (len >= 8) {
        wide = _mm_crc32_u64(wide, crc32c_load64(at));
        at += 8;
        len -= 8;
    }
    crc = (uint32_t)wide;
    while (len > 0) {
        crc = _mm_crc32_u8(crc, *at);
        at++;
        len--;
    }
    return crc;
}

/*
 * Three runs of `stride` bytes at once: a, b, c summed side by side, b and
 * c from a zero register, then joined as reg(a||b||c) = shift(shift(a) ^ b)
 * ^ c, shift being "append stride zero bytes" (one table). Returns the
 * register after every whole group of 3 x stride bytes; *at and *len are
 * moved past them.
 */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hardware_triple(
    uint32_t crc, const uint8_t **at, size_t *len, size_t stride, const uint32_t shift[4][256])
{
    while (*len >= 3 * stride) {
        const uint8_t *first = *at, *second = first + stride, *third = second + stride;
        uint64_t a = crc, b = 0, c = 0;
        for (size_t done = 0; done < stride; done += 8) {
            a = _mm_crc32_u64(a, crc32c_load64(first + done));
            b = _mm_crc32_u64(b, crc32c_load64(second + done));
            c = _mm_crc32_u64(c, crc32c_load64(third + done));
        }
        crc = crc32c_shift_by_table(shift, (uint32_t)a) ^ (uint32_t)b;
        crc = crc32c_shift_by_table(shift, crc) ^ (uint32_t)c;
        *at += 3 * stride;
        *len -= 3 * stride;
    }
    return crc;
}

/*
 * The inverted register over len bytes, by the crc32 instruction. It takes
 * 3 cycles and a new one can start every cycle, so one chain of them runs
 * at a third of what the CPU can do: three independent chains (big runs,
 * then small ones for what is left) fill it, which made a 1 MiB tile's
 * sum about 3x faster than the serial loop.
 */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *at,
                                                                  size_t len)
{
    crc = crc32c_hardware_triple(crc, &at, &len, CRC32C_LONG_STRIDE, crc32c_long_shift);
    crc = crc32c_hardware_triple(crc, &at, &len, CRC32C_MID_STRIDE, crc32c_mid_shift);
    crc = crc32c_hardware_triple(crc, &at, &len, CRC32C_SHORT_STRIDE, crc32c_short_shift);
    return crc32c_hardware_serial(crc, at, len);
}
#endif

uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init);
    if (len == 0)
        return crc;
    return ~crc32c_slice8(~crc, buf, len);
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init);
    if (len == 0)
        return crc;
#ifdef CRC32C_HAVE_SSE42
    if (crc32c_use_hardware)
        return ~crc32c_hardware(~crc, buf, len);
#endif
    return ~crc32c_slice8(~crc, buf, len);
}

bool crc32c_uses_instruction(void)
{
    pthread_once(&crc32c_once, crc32c_init);
    return crc32c_use_hardware;
}

/*
 * crc32c_power_operator[k]: the map of appending 2^k zero bytes. A combine
 * applies one per set bit of the length to the register (32 steps each),
 * where building the length's own matrix took ~20 squarings of 1024 steps:
 * that was 40 % of a datanode's CPU under small-file writes (`tar x`).
 */
#define CRC32C_POWERS 64
static uint32_t crc32c_power_operator[CRC32C_POWERS][32];
/* A 4 KiB checksum block's shift (tilecrc.h: a write combines one per
 * block) by table, four lookups: the 32 steps over the matrix were 2 % of a
 * datanode's CPU taking 4 streams of writes. */
#define CRC32C_BLOCK_SHIFT_BYTES 4096u
static uint32_t crc32c_block_shift[4][256];
static pthread_once_t crc32c_powers_once = PTHREAD_ONCE_INIT;

static void crc32c_powers_init(void)
{
    crc32c_zeros_operator(crc32c_power_operator[0], 1);
    for (int k = 1; k < CRC32C_POWERS; k++)
        crc32c_gf2_square(crc32c_power_operator[k], crc32c_power_operator[k - 1]);
    crc32c_shift_table_init(crc32c_block_shift, CRC32C_BLOCK_SHIFT_BYTES);
}

uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b)
{
    /* The map is linear: a zero register stays zero (the first piece). */
    if (len_b == 0 || crc_a == 0)
        return crc_a ^ crc_b;
    pthread_once(&crc32c_powers_once, crc32c_powers_init);
    if (len_b == CRC32C_BLOCK_SHIFT_BYTES)
        return crc32c_shift_by_table(crc32c_block_shift, crc_a) ^ crc_b;
    for (int k = 0; len_b != 0; k++, len_b >>= 1) {
        if (len_b & 1)
            crc_a = crc32c_gf2_times(crc32c_power_operator[k], crc_a);
    }
    return crc_a ^ crc_b;
}
