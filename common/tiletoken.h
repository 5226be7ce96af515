/*
 * @file tiletoken.h
 * Tile read and write capabilities, in the style of HDFS block access tokens and
 * Ceph's cephx tickets: meta hands a mount, with every holder of a tile in
 * a TILE_MAP reply, a token
 *   MAC(ino, tile, holder's version, holder's datanode id, rights, expiry)
 * keyed by a cluster secret that meta and the datanodes share (and mounts
 * never see). A datanode stores nothing for a TILE_WRITE or TILE_TRUNCATE
 * whose token is not a MAC of exactly that tile file on exactly this
 * datanode with the write right, unexpired: a mount key may write only the
 * tile files meta allocated to that node, and only while its export lets
 * it write. Reads alike: a datanode serves a mount key's TILE_READ (and
 * any tile stream request) only with a token of that file on that node
 * with the read right, which meta grants for every file of the mount's
 * export, so a mount key cannot read another subtree's tiles by guessing
 * inode numbers and versions; datanodes' keys (pulls) read by role.
 * The MAC is libsodium's crypto_auth (HMAC-SHA-512-256).
 *
 * The secret file (TILETOKEN_FILE beside the key pairs, mode 0600, made by
 * `tessera keys init` and `tessera up`) has a `current HEX` line and, after
 * a rotation (`tessera keys rotate-tile-secret`), a `previous HEX` line:
 * meta signs with current, datanodes accept either, so a rotation needs no
 * restart and no flag day (copy the file to every datanode first, meta
 * last; rotating again drops the oldest). The process reads it at start
 * and again within a second of a change.
 *
 * Expiry is wall-clock time (meta's and the datanodes' clocks must agree
 * within TILETOKEN_SKEW_MS). An expired token is answered TS_ERR_STALE, as
 * a moved tile is, so a mount asks meta for the tile again and gets a
 * fresh token without the application seeing anything.
 *
 * Without the secret (a cluster without keys, --insecure) meta issues no
 * tokens and datanodes check none: tile writes work as before.
 */
#ifndef TESSERA_TILETOKEN_H
#define TESSERA_TILETOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TILETOKEN_FILE "tile.secret"
#define TILETOKEN_KEY_BYTES 32
#define TILETOKEN_MAC_BYTES 32
/* How long a token lets its holder write: long enough that a streaming
 * writer asks meta again rarely, short enough that a revoked or
 * re-exported mount loses its write rights soon. */
#define TILETOKEN_LIFETIME_MS (10 * 60 * 1000)
/* How far the datanode's clock may be behind meta's. */
#define TILETOKEN_SKEW_MS (60 * 1000)
/*
 * The environment variable that shortens both, for a cluster whose every
 * daemon has it (tests of expiry; an operator who wants a revoked export
 * to lose its tokens within seconds): tokens live that many ms (at least
 * 1000, at most TILETOKEN_LIFETIME_MS) and the clocks may disagree by a
 * tenth of it.
 */
#define TILETOKEN_LIFETIME_ENV "TESSERA_TILE_TOKEN_LIFETIME_MS"

/* The rights a token grants. */
#define TILETOKEN_READ 0x1u
#define TILETOKEN_WRITE 0x2u

/* What one token says: this tile file, on this datanode, these rights, until then. */
struct tiletoken_claim {
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
    uint32_t node;
    uint32_t rights;
    uint64_t expiry_ms; /* wall clock, ms since the epoch */
};

/*
 * Loads the secret file at path for this process (meta, datanode); path
 * NULL or "": DIR/TILETOKEN_FILE of the key directory (curve_key_dir()),
 * none without keys. A missing default file is not an error: tokens are
 * then off (logged by the caller through tiletoken_enabled()). A given
 * path that cannot be read, a file group or others may access, or one
 * that does not parse, is -errno with why. 0 otherwise.
 */
int tiletoken_setup(const char *path, char *why, size_t why_cap);
/*
 * What a daemon's main() calls after curve_setup() with its --tile-secret
 * (NULL: the default): tiletoken_setup(), logging whether tokens are on,
 * and a warning when the process has keys but no secret. 0, or -1 after
 * logging why.
 */
int tiletoken_daemon_setup(const char *path);
/* Whether a secret is loaded: meta signs, datanodes check. */
bool tiletoken_enabled(void);
/* Forgets the secret (tests; a daemon's exit). */
void tiletoken_reset(void);

/*
 * Signs claim with the current secret into mac. -ENOKEY without one.
 * Thread-safe; rereads the file if it changed (at most once a second).
 */
int tiletoken_sign(const struct tiletoken_claim *claim, uint8_t mac[TILETOKEN_MAC_BYTES]);

/*
 * Whether mac (mac_len bytes) is a token for claim with the one right
 * claim->rights names (meta grants TILETOKEN_READ, or TILETOKEN_READ |
 * TILETOKEN_WRITE: either passes a read check, only the second a write
 * check; a read-write token passes in one MAC, a read-only one in two), valid at now_ms
 * (wall clock): 0; -EPERM for no token, a forged or altered one, one for
 * another tile file or datanode, one without that right, or one signed by
 * a secret rotated away twice (so rotate no more often than
 * TILETOKEN_LIFETIME_MS); -ETIME for one expired (asking meta again cures
 * it). Without a secret: 0 (nothing to check).
 */
int tiletoken_check(const struct tiletoken_claim *claim, const uint8_t *mac, size_t mac_len,
                    uint64_t now_ms);

/*
 * Makes the secret file at path: a fresh current secret, and with rotate
 * the old current kept as previous (path must then exist). Mode 0600,
 * written to a new file then renamed over path. 0 or -errno with why.
 */
int tiletoken_write_secret(const char *path, bool rotate, char *why, size_t why_cap);

/* How long meta's tokens live, and the clock skew a datanode allows:
 * TILETOKEN_LIFETIME_MS and TILETOKEN_SKEW_MS, or as TILETOKEN_LIFETIME_ENV says. */
uint64_t tiletoken_lifetime_ms(void);
uint64_t tiletoken_skew_ms(void);

/* The wall clock in ms since the epoch, as token expiries are. */
uint64_t tiletoken_now_ms(void);

#endif
