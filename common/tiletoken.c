/*
 * @file tiletoken.c
 * See tiletoken.h. One secret per process, behind a mutex: meta's handler
 * threads sign and a datanode's loop and stream threads check. The MAC
 * itself runs on a copy of the key taken under the lock, so signing the
 * thousands of holders of a large TILE_MAP never holds it long. The bytes
 * MACed are a fixed little-endian encoding of the claim after a domain
 * tag, so a token can never be mistaken for a MAC of anything else.
 */
#include "tiletoken.h"

#include "curve.h"
#include "keys.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TILETOKEN_TAG "tessera tile token 1"
#define TILETOKEN_CLAIM_BYTES (sizeof(TILETOKEN_TAG) + 3 * 8 + 2 * 4 + 8)
#define TILETOKEN_CHECK_EVERY_MS 1000

struct tiletoken_state {
    pthread_mutex_t lock;
    bool loaded;
    bool has_previous;
    uint8_t current[TILETOKEN_KEY_BYTES];
    uint8_t previous[TILETOKEN_KEY_BYTES];
    char path[4096];
    struct timespec mtime;
    off_t size;
    int64_t checked_ms;
};

static struct tiletoken_state tiletoken = {.lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t tiletoken_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

static uint64_t tiletoken_lifetime = TILETOKEN_LIFETIME_MS;
static pthread_once_t tiletoken_lifetime_once = PTHREAD_ONCE_INIT;

static void tiletoken_lifetime_read(void)
{
    const char *text = getenv(TILETOKEN_LIFETIME_ENV);
    char *end = NULL;
    unsigned long long value = text && *text ? strtoull(text, &end, 10) : 0;
    if (!text || !*text)
        return;
    if (*end != '\0' || value < 1000 || value > TILETOKEN_LIFETIME_MS) {
        log_warn("%s=%s ignored: give 1000 to %d ms", TILETOKEN_LIFETIME_ENV, text,
                 TILETOKEN_LIFETIME_MS);
        return;
    }
    tiletoken_lifetime = value;
}

uint64_t tiletoken_lifetime_ms(void)
{
    pthread_once(&tiletoken_lifetime_once, tiletoken_lifetime_read);
    return tiletoken_lifetime;
}

uint64_t tiletoken_skew_ms(void)
{
    uint64_t lifetime = tiletoken_lifetime_ms();
    return lifetime == TILETOKEN_LIFETIME_MS ? TILETOKEN_SKEW_MS : lifetime / 10;
}

/* Parses 64 hex digits into key. 0 or -1. */
static int tiletoken_parse_hex(const char *hex, uint8_t key[TILETOKEN_KEY_BYTES])
{
    size_t bin_len = 0;
    if (strlen(hex) != 2 * TILETOKEN_KEY_BYTES ||
        sodium_hex2bin(key, TILETOKEN_KEY_BYTES, hex, strlen(hex), NULL, &bin_len, NULL) != 0 ||
        bin_len != TILETOKEN_KEY_BYTES)
        return -1;
    return 0;
}

/*
 * Reads the secret file at path into current/previous. 0, or -errno with
 * why (a file others may read is refused, as every secret key is).
 */
static int tiletoken_read_file(const char *path, uint8_t current[TILETOKEN_KEY_BYTES],
                               uint8_t previous[TILETOKEN_KEY_BYTES], bool *has_previous,
                               char *why, size_t why_cap)
{
    char *text = NULL;
    size_t len = 0;
    bool has_current = false;
    int rc = keys_slurp(path, true, &text, &len, why, why_cap);
    *has_previous = false;
    if (rc != 0)
        return rc;
    for (char *cursor = text; cursor < text + len && rc == 0;) {
        char *words[KEYS_LINE_WORDS];
        int count = keys_line_words(&cursor, text + len, words);
        if (count == 0)
            continue;
        if (count == 2 && strcmp(words[0], "current") == 0 && !has_current &&
            tiletoken_parse_hex(words[1], current) == 0)
            has_current = true;
        else if (count == 2 && strcmp(words[0], "previous") == 0 && !*has_previous &&
                 tiletoken_parse_hex(words[1], previous) == 0)
            *has_previous = true;
        else
            rc = -EINVAL;
    }
    if (rc == 0 && !has_current)
        rc = -EINVAL;
    if (rc != 0)
        snprintf(why, why_cap,
                 "%s is not a tile secret file (lines `current HEX` and `previous HEX`, 64 hex "
                 "digits each; `tessera keys rotate-tile-secret` writes one)",
                 path);
    sodium_memzero(text, len);
    free(text);
    return rc;
}

/* Rereads the file if it changed; caller holds the lock. */
static void tiletoken_refresh_locked(void)
{
    struct stat info;
    int64_t now_ms = util_monotonic_ms();
    if (!tiletoken.loaded || now_ms - tiletoken.checked_ms < TILETOKEN_CHECK_EVERY_MS)
        return;
    tiletoken.checked_ms = now_ms;
    if (stat(tiletoken.path, &info) != 0 || (info.st_size == tiletoken.size &&
                                             info.st_mtim.tv_sec == tiletoken.mtime.tv_sec &&
                                             info.st_mtim.tv_nsec == tiletoken.mtime.tv_nsec))
        return; /* gone: keep the secret we have rather than stop every write */
    uint8_t current[TILETOKEN_KEY_BYTES], previous[TILETOKEN_KEY_BYTES];
    bool has_previous = false;
    char why[512];
    if (tiletoken_read_file(tiletoken.path, current, previous, &has_previous, why,
                            sizeof(why)) != 0) {
        log_error("tile tokens: %s; the secret stays as it was", why);
        return;
    }
    memcpy(tiletoken.current, current, sizeof(current));
    memcpy(tiletoken.previous, previous, sizeof(previous));
    tiletoken.has_previous = has_previous;
    tiletoken.mtime = info.st_mtim;
    tiletoken.size = info.st_size;
    sodium_memzero(current, sizeof(current));
    sodium_memzero(previous, sizeof(previous));
}

int tiletoken_setup(const char *path, char *why, size_t why_cap)
{
    char default_path[4096];
    bool given = path && path[0];
    struct stat info;
    if (sodium_init() < 0) {
        snprintf(why, why_cap, "libsodium cannot start");
        return -EIO;
    }
    if (!given) {
        if (curve_key_dir()[0] == '\0')
            return 0;
        snprintf(default_path, sizeof(default_path), "%s/%s", curve_key_dir(), TILETOKEN_FILE);
        if (access(default_path, F_OK) != 0)
            return 0;
        path = default_path;
    }
    uint8_t current[TILETOKEN_KEY_BYTES], previous[TILETOKEN_KEY_BYTES];
    bool has_previous = false;
    int rc = tiletoken_read_file(path, current, previous, &has_previous, why, why_cap);
    if (rc == 0 && stat(path, &info) != 0)
        rc = -errno;
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&tiletoken.lock);
    memcpy(tiletoken.current, current, sizeof(current));
    memcpy(tiletoken.previous, previous, sizeof(previous));
    tiletoken.has_previous = has_previous;
    snprintf(tiletoken.path, sizeof(tiletoken.path), "%s", path);
    tiletoken.mtime = info.st_mtim;
    tiletoken.size = info.st_size;
    tiletoken.checked_ms = util_monotonic_ms();
    tiletoken.loaded = true;
    pthread_mutex_unlock(&tiletoken.lock);
    sodium_memzero(current, sizeof(current));
    sodium_memzero(previous, sizeof(previous));
    return 0;
}

int tiletoken_daemon_setup(const char *path)
{
    char why[512] = "";
    if (tiletoken_setup(path, why, sizeof(why)) != 0) {
        log_error("not started: tile tokens: %s", why);
        return -1;
    }
    pthread_mutex_lock(&tiletoken.lock);
    bool loaded = tiletoken.loaded;
    char loaded_path[sizeof(tiletoken.path)];
    snprintf(loaded_path, sizeof(loaded_path), "%s", tiletoken.path);
    pthread_mutex_unlock(&tiletoken.lock);
    if (loaded)
        log_info("tile tokens on: tile writes need meta's token (secret %s)", loaded_path);
    else if (curve_key_dir()[0] != '\0')
        log_warn("tile tokens off: no %s/%s, so a mount key may write any tile file on any "
                 "datanode; `tessera keys init %s` makes one (copy it to every datanode)",
                 curve_key_dir(), TILETOKEN_FILE, curve_key_dir());
    return 0;
}

bool tiletoken_enabled(void)
{
    pthread_mutex_lock(&tiletoken.lock);
    bool loaded = tiletoken.loaded;
    pthread_mutex_unlock(&tiletoken.lock);
    return loaded;
}

void tiletoken_reset(void)
{
    pthread_mutex_lock(&tiletoken.lock);
    sodium_memzero(tiletoken.current, sizeof(tiletoken.current));
    sodium_memzero(tiletoken.previous, sizeof(tiletoken.previous));
    tiletoken.loaded = false;
    tiletoken.has_previous = false;
    tiletoken.path[0] = '\0';
    pthread_mutex_unlock(&tiletoken.lock);
}

/* The bytes a token MACs. */
static void tiletoken_encode(const struct tiletoken_claim *claim,
                             uint8_t out[TILETOKEN_CLAIM_BYTES])
{
    uint8_t *at = out;
    memcpy(at, TILETOKEN_TAG, sizeof(TILETOKEN_TAG));
    at += sizeof(TILETOKEN_TAG);
    const uint64_t wide[4] = {claim->ino, claim->tile, claim->version, claim->expiry_ms};
    const uint32_t narrow[2] = {claim->node, claim->rights};
    for (size_t i = 0; i < 4; i++)
        for (size_t b = 0; b < 8; b++)
            *at++ = (uint8_t)(wide[i] >> (8 * b));
    for (size_t i = 0; i < 2; i++)
        for (size_t b = 0; b < 4; b++)
            *at++ = (uint8_t)(narrow[i] >> (8 * b));
}

int tiletoken_sign(const struct tiletoken_claim *claim, uint8_t mac[TILETOKEN_MAC_BYTES])
{
    uint8_t key[TILETOKEN_KEY_BYTES];
    uint8_t bytes[TILETOKEN_CLAIM_BYTES];
    pthread_mutex_lock(&tiletoken.lock);
    tiletoken_refresh_locked();
    bool loaded = tiletoken.loaded;
    memcpy(key, tiletoken.current, sizeof(key));
    pthread_mutex_unlock(&tiletoken.lock);
    if (!loaded)
        return -ENOKEY;
    tiletoken_encode(claim, bytes);
    crypto_auth(mac, bytes, sizeof(bytes), key);
    sodium_memzero(key, sizeof(key));
    return 0;
}

int tiletoken_check(const struct tiletoken_claim *claim, const uint8_t *mac, size_t mac_len,
                    uint64_t now_ms)
{
    uint8_t current[TILETOKEN_KEY_BYTES], previous[TILETOKEN_KEY_BYTES];
    uint8_t bytes[TILETOKEN_CLAIM_BYTES];
    pthread_mutex_lock(&tiletoken.lock);
    tiletoken_refresh_locked();
    bool loaded = tiletoken.loaded;
    bool has_previous = tiletoken.has_previous;
    memcpy(current, tiletoken.current, sizeof(current));
    memcpy(previous, tiletoken.previous, sizeof(previous));
    pthread_mutex_unlock(&tiletoken.lock);
    if (!loaded)
        return 0;
    int rc = -EPERM;
    /* Meta grants READ, or READ|WRITE (tiletoken.h): the read-write token
     * of a writable export first (most mounts: one MAC), then the right
     * asked for alone (a read-only export's reads). */
    struct tiletoken_claim granted = *claim;
    const uint32_t grants[2] = {TILETOKEN_READ | TILETOKEN_WRITE, claim->rights};
    for (size_t i = 0; mac && mac_len == TILETOKEN_MAC_BYTES && rc != 0 && i < 2; i++) {
        if (i == 1 && grants[1] == grants[0])
            break;
        granted.rights = grants[i];
        tiletoken_encode(&granted, bytes);
        if (crypto_auth_verify(mac, bytes, sizeof(bytes), current) == 0 ||
            (has_previous && crypto_auth_verify(mac, bytes, sizeof(bytes), previous) == 0))
            rc = now_ms > claim->expiry_ms + tiletoken_skew_ms() ? -ETIME : 0;
    }
    sodium_memzero(current, sizeof(current));
    sodium_memzero(previous, sizeof(previous));
    return rc;
}

int tiletoken_write_secret(const char *path, bool rotate, char *why, size_t why_cap)
{
    uint8_t fresh[TILETOKEN_KEY_BYTES], current[TILETOKEN_KEY_BYTES], previous[TILETOKEN_KEY_BYTES];
    char fresh_hex[2 * TILETOKEN_KEY_BYTES + 1], old_hex[2 * TILETOKEN_KEY_BYTES + 1];
    char text[512], temporary[4200];
    bool has_previous = false;
    int rc;
    if (sodium_init() < 0) {
        snprintf(why, why_cap, "libsodium cannot start");
        return -EIO;
    }
    if (rotate) {
        rc = tiletoken_read_file(path, current, previous, &has_previous, why, why_cap);
        if (rc != 0)
            return rc;
        sodium_bin2hex(old_hex, sizeof(old_hex), current, sizeof(current));
    }
    randombytes_buf(fresh, sizeof(fresh));
    sodium_bin2hex(fresh_hex, sizeof(fresh_hex), fresh, sizeof(fresh));
    snprintf(text, sizeof(text),
             "# tessera tile secret: meta signs tile write tokens with `current`, datanodes\n"
             "# accept `current` and `previous`. Keep it secret (mode 0600); copy it to every\n"
             "# datanode's key directory, then meta's.\ncurrent %s\n%s%s%s",
             fresh_hex, rotate ? "previous " : "", rotate ? old_hex : "", rotate ? "\n" : "");
    snprintf(temporary, sizeof(temporary), "%s.new", path);
    unlink(temporary);
    rc = keys_write_new(temporary, text, 0600);
    if (rc == 0 && rename(temporary, path) != 0) {
        rc = -errno;
        unlink(temporary);
    }
    if (rc != 0)
        snprintf(why, why_cap, "cannot write %s: %s", path, strerror(-rc));
    sodium_memzero(text, sizeof(text));
    sodium_memzero(fresh_hex, sizeof(fresh_hex));
    sodium_memzero(old_hex, sizeof(old_hex));
    sodium_memzero(fresh, sizeof(fresh));
    sodium_memzero(current, sizeof(current));
    sodium_memzero(previous, sizeof(previous));
    return rc;
}
