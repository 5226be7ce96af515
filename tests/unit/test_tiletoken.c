/*
 * @file test_tiletoken.c
 * Unit tests of tile write tokens (common/tiletoken.h) and of the
 * datanode's refusals of writes and truncates without one
 * (datanode/nodehandlers.c): a real secret file in a fresh temporary
 * directory per case, a real tile store behind the handlers; a refused
 * change must leave the tile file exactly as it was.
 */
#include "crc32c.h"
#include "nodehandlers.h"
#include "proto.h"
#include "status.h"
#include "tilestore.h"
#include "tiletoken.h"
#include "util.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define NODE_ID 3u

struct fixture {
    char dir[PATH_MAX];
    char secret[PATH_MAX + 32];
    struct tilestore *store;
    struct diskio *disk;
    struct nodehandlers_context context;
    uint8_t payload[1024];
    uint8_t reply[4096];
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    const char *tmp = getenv("TMPDIR");
    char why[512];
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_tiletoken.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fixture->dir))
        goto fail;
    snprintf(fixture->secret, sizeof(fixture->secret), "%s/%s", fixture->dir, TILETOKEN_FILE);
    if (tiletoken_write_secret(fixture->secret, false, why, sizeof(why)) != 0 ||
        tiletoken_setup(fixture->secret, why, sizeof(why)) != 0)
        goto fail;
    if (tilestore_open(fixture->dir, 0, &fixture->store) != 0 ||
        diskio_new(fixture->store, 0, &fixture->disk) != 0)
        goto fail;
    fixture->context.store = fixture->store;
    fixture->context.disk = fixture->disk;
    fixture->context.node_id = NODE_ID;
    *state = fixture;
    return 0;
fail:
    free(fixture);
    return -1;
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    tiletoken_reset();
    nodehandlers_stats_fini(&fixture->context.stats); /* what reads counted */
    diskio_destroy(&fixture->disk);
    tilestore_close(&fixture->store);
    nftw(fixture->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fixture);
    return 0;
}

static struct tiletoken_claim claim_of(uint64_t ino, uint64_t tile, uint64_t version,
                                       uint32_t node)
{
    return (struct tiletoken_claim){.ino = ino,
                                    .tile = tile,
                                    .version = version,
                                    .node = node,
                                    .rights = TILETOKEN_WRITE,
                                    .expiry_ms = tiletoken_now_ms() + TILETOKEN_LIFETIME_MS};
}

/* A token checks for exactly what it was signed for, and for nothing else. */
static void test_token_binds_every_field(void **state)
{
    (void)state;
    uint8_t mac[TILETOKEN_MAC_BYTES];
    uint64_t now = tiletoken_now_ms();
    struct tiletoken_claim claim = claim_of(10, 2, 7, NODE_ID);
    assert_true(tiletoken_enabled());
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(tiletoken_check(&claim, mac, sizeof(mac), now), 0);

    struct tiletoken_claim other = claim;
    other.ino = 11;
    assert_int_equal(tiletoken_check(&other, mac, sizeof(mac), now), -EPERM);
    other = claim;
    other.tile = 3;
    assert_int_equal(tiletoken_check(&other, mac, sizeof(mac), now), -EPERM);
    other = claim;
    other.version = 8;
    assert_int_equal(tiletoken_check(&other, mac, sizeof(mac), now), -EPERM);
    other = claim;
    other.node = NODE_ID + 1;
    assert_int_equal(tiletoken_check(&other, mac, sizeof(mac), now), -EPERM);
    other = claim;
    other.expiry_ms += 1; /* a holder cannot extend its own token */
    assert_int_equal(tiletoken_check(&other, mac, sizeof(mac), now), -EPERM);

    /* A read token is no write token. */
    other = claim;
    other.rights = TILETOKEN_READ;
    uint8_t read_mac[TILETOKEN_MAC_BYTES];
    assert_int_equal(tiletoken_sign(&other, read_mac), 0);
    assert_int_equal(tiletoken_check(&claim, read_mac, sizeof(read_mac), now), -EPERM);
    assert_int_equal(tiletoken_check(&other, read_mac, sizeof(read_mac), now), 0);
    /* A write-only token is no read token; a read-write one (a writable
     * export's) is both. */
    assert_int_equal(tiletoken_check(&other, mac, sizeof(mac), now), -EPERM);
    struct tiletoken_claim both = claim;
    both.rights = TILETOKEN_READ | TILETOKEN_WRITE;
    uint8_t both_mac[TILETOKEN_MAC_BYTES];
    assert_int_equal(tiletoken_sign(&both, both_mac), 0);
    assert_int_equal(tiletoken_check(&claim, both_mac, sizeof(both_mac), now), 0);
    assert_int_equal(tiletoken_check(&other, both_mac, sizeof(both_mac), now), 0);
    other.ino = 11;
    assert_int_equal(tiletoken_check(&other, both_mac, sizeof(both_mac), now), -EPERM);

    /* Forged, truncated, missing. */
    uint8_t forged[TILETOKEN_MAC_BYTES];
    memcpy(forged, mac, sizeof(forged));
    forged[5] ^= 0x40;
    assert_int_equal(tiletoken_check(&claim, forged, sizeof(forged), now), -EPERM);
    assert_int_equal(tiletoken_check(&claim, mac, sizeof(mac) - 1, now), -EPERM);
    assert_int_equal(tiletoken_check(&claim, NULL, 0, now), -EPERM);
}

/* Expired (beyond the clock skew allowed) is -ETIME, not -EPERM: ask meta again. */
static void test_token_expires(void **state)
{
    (void)state;
    uint8_t mac[TILETOKEN_MAC_BYTES];
    struct tiletoken_claim claim = claim_of(10, 0, 1, NODE_ID);
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(tiletoken_check(&claim, mac, sizeof(mac), claim.expiry_ms), 0);
    assert_int_equal(
        tiletoken_check(&claim, mac, sizeof(mac), claim.expiry_ms + TILETOKEN_SKEW_MS), 0);
    assert_int_equal(
        tiletoken_check(&claim, mac, sizeof(mac), claim.expiry_ms + TILETOKEN_SKEW_MS + 1),
        -ETIME);
}

/* A rotation keeps the previous secret's tokens valid; a second one drops them. */
static void test_rotation(void **state)
{
    struct fixture *fixture = *state;
    char why[512];
    uint8_t old_mac[TILETOKEN_MAC_BYTES], new_mac[TILETOKEN_MAC_BYTES];
    uint64_t now = tiletoken_now_ms();
    struct tiletoken_claim claim = claim_of(10, 0, 1, NODE_ID);
    assert_int_equal(tiletoken_sign(&claim, old_mac), 0);

    assert_int_equal(tiletoken_write_secret(fixture->secret, true, why, sizeof(why)), 0);
    assert_int_equal(tiletoken_setup(fixture->secret, why, sizeof(why)), 0);
    assert_int_equal(tiletoken_sign(&claim, new_mac), 0);
    assert_memory_not_equal(old_mac, new_mac, sizeof(old_mac));
    assert_int_equal(tiletoken_check(&claim, old_mac, sizeof(old_mac), now), 0);
    assert_int_equal(tiletoken_check(&claim, new_mac, sizeof(new_mac), now), 0);

    assert_int_equal(tiletoken_write_secret(fixture->secret, true, why, sizeof(why)), 0);
    assert_int_equal(tiletoken_setup(fixture->secret, why, sizeof(why)), 0);
    assert_int_equal(tiletoken_check(&claim, old_mac, sizeof(old_mac), now), -EPERM);
    assert_int_equal(tiletoken_check(&claim, new_mac, sizeof(new_mac), now), 0);
}

/* The secret file is a secret: others may not read it, and it must parse. */
static void test_secret_file_refusals(void **state)
{
    struct fixture *fixture = *state;
    char why[512] = "";
    struct stat info;
    assert_int_equal(stat(fixture->secret, &info), 0);
    assert_int_equal(info.st_mode & 0777, 0600);

    assert_int_equal(chmod(fixture->secret, 0644), 0);
    assert_int_equal(tiletoken_setup(fixture->secret, why, sizeof(why)), -EPERM);
    assert_non_null(strstr(why, "chmod 600"));
    assert_int_equal(chmod(fixture->secret, 0600), 0);

    FILE *file = fopen(fixture->secret, "w");
    assert_non_null(file);
    fputs("current 00ff\n", file);
    fclose(file);
    assert_int_equal(tiletoken_setup(fixture->secret, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "not a tile secret file"));

    /* Without a secret nothing is checked: clusters without keys work as before. */
    tiletoken_reset();
    assert_false(tiletoken_enabled());
    struct tiletoken_claim claim = claim_of(1, 0, 1, NODE_ID);
    uint8_t mac[TILETOKEN_MAC_BYTES];
    assert_int_equal(tiletoken_sign(&claim, mac), -ENOKEY);
    assert_int_equal(tiletoken_check(&claim, NULL, 0, tiletoken_now_ms()), 0);
}

/* Runs a TILE_WRITE of data to (ino, 0, version) with this token through the handler. */
static int write_with(struct fixture *fixture, uint64_t ino, uint64_t version,
                      const uint8_t *token, size_t token_len, uint64_t expiry,
                      const uint8_t *data, size_t len, struct rpc_response *response)
{
    struct ts_tile_write_req write_req = {.ino = ino,
                                          .tile = 0,
                                          .version = version,
                                          .offset = 0,
                                          .crc = crc32c(0, data, len),
                                          .token_expiry = expiry,
                                          .token = {.ptr = (const char *)token, .len = token_len}};
    int encoded = ts_tile_write_req_encode(&write_req, fixture->payload, sizeof(fixture->payload));
    assert_true(encoded > 0);
    struct rpc_request request = {.header = {.type = TS_OP_TILE_WRITE},
                                  .key_user = "mount:intruder",
                                  .payload = fixture->payload,
                                  .payload_len = (size_t)encoded,
                                  .data = data,
                                  .data_len = len};
    *response = (struct rpc_response){.payload = fixture->reply,
                                      .payload_cap = sizeof(fixture->reply)};
    return nodehandlers_table[TS_OP_TILE_WRITE](&fixture->context, &request, response);
}

static int truncate_with(struct fixture *fixture, uint64_t ino, uint64_t version,
                         const uint8_t *token, size_t token_len, uint64_t expiry, uint32_t length)
{
    struct ts_tile_truncate_req truncate_req = {
        .ino = ino,
        .tile = 0,
        .version = version,
        .length = length,
        .token_expiry = expiry,
        .token = {.ptr = (const char *)token, .len = token_len}};
    int encoded =
        ts_tile_truncate_req_encode(&truncate_req, fixture->payload, sizeof(fixture->payload));
    assert_true(encoded > 0);
    struct rpc_request request = {.header = {.type = TS_OP_TILE_TRUNCATE},
                                  .payload = fixture->payload,
                                  .payload_len = (size_t)encoded};
    struct rpc_response response = {.payload = fixture->reply,
                                    .payload_cap = sizeof(fixture->reply)};
    return nodehandlers_table[TS_OP_TILE_TRUNCATE](&fixture->context, &request, &response);
}

/*
 * The datanode stores a write only with meta's token for that very file on
 * this datanode: none, another node's, another version's, a forged one are
 * TS_ERR_PERM, an expired one TS_ERR_STALE; the file stays as it was.
 */
static void test_handlers_refuse_writes_without_token(void **state)
{
    struct fixture *fixture = *state;
    struct rpc_response response;
    uint8_t original[4096], attack[4096], back[4096];
    uint8_t mac[TILETOKEN_MAC_BYTES];
    size_t got = 0;
    uint64_t size = 0;
    memset(original, 'o', sizeof(original));
    memset(attack, 'X', sizeof(attack));
    assert_int_equal(tilestore_write(fixture->store, 20, 0, 5, 0, original, sizeof(original)), 0);

    /* No token. */
    assert_int_equal(write_with(fixture, 20, 5, NULL, 0, 0, attack, sizeof(attack), &response),
                     TS_ERR_PERM);
    assert_non_null(strstr(response.error_text, "no valid tile token"));
    /* Another datanode's token for the same file. */
    struct tiletoken_claim claim = claim_of(20, 0, 5, NODE_ID + 1);
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(write_with(fixture, 20, 5, mac, sizeof(mac), claim.expiry_ms, attack,
                                sizeof(attack), &response),
                     TS_ERR_PERM);
    /* A token of another version (an old replica) used on this one. */
    claim = claim_of(20, 0, 4, NODE_ID);
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(write_with(fixture, 20, 5, mac, sizeof(mac), claim.expiry_ms, attack,
                                sizeof(attack), &response),
                     TS_ERR_PERM);
    /* Forged: the right claim, a made-up MAC. */
    claim = claim_of(20, 0, 5, NODE_ID);
    memset(mac, 0x5a, sizeof(mac));
    assert_int_equal(write_with(fixture, 20, 5, mac, sizeof(mac), claim.expiry_ms, attack,
                                sizeof(attack), &response),
                     TS_ERR_PERM);
    /* Stale: expired long ago. */
    claim.expiry_ms = tiletoken_now_ms() - TILETOKEN_SKEW_MS - 1000;
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(write_with(fixture, 20, 5, mac, sizeof(mac), claim.expiry_ms, attack,
                                sizeof(attack), &response),
                     TS_ERR_STALE);
    assert_non_null(strstr(response.error_text, "expired"));
    /* A tile file meta never allocated here: refused, and no file made. */
    assert_int_equal(write_with(fixture, 21, 1, NULL, 0, 0, attack, sizeof(attack), &response),
                     TS_ERR_PERM);
    assert_int_equal(tilestore_size(fixture->store, 21, 0, 1, &size), -ENOENT);
    /* Truncates alike. */
    assert_int_equal(truncate_with(fixture, 20, 5, NULL, 0, 0, 10), TS_ERR_PERM);

    assert_int_equal(tilestore_read(fixture->store, 20, 0, 5, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, sizeof(original));
    assert_memory_equal(back, original, sizeof(original));
    assert_int_equal(fixture->context.stats.changes_refused_token, 6);

    /* Meta's token goes through. */
    claim = claim_of(20, 0, 5, NODE_ID);
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(write_with(fixture, 20, 5, mac, sizeof(mac), claim.expiry_ms, attack,
                                sizeof(attack), &response),
                     TS_OK);
    assert_int_equal(tilestore_read(fixture->store, 20, 0, 5, 0, sizeof(back), back, &got), 0);
    assert_memory_equal(back, attack, sizeof(attack));
    assert_int_equal(truncate_with(fixture, 20, 5, mac, sizeof(mac), claim.expiry_ms, 10), TS_OK);
    assert_int_equal(tilestore_size(fixture->store, 20, 0, 5, &size), 0);
    assert_int_equal(size, 10);
}

/* Before meta gave the datanode its id, no token can be checked: BUSY, nothing written. */
static void test_handlers_without_node_id(void **state)
{
    struct fixture *fixture = *state;
    struct rpc_response response;
    uint8_t data[100] = {1};
    uint8_t mac[TILETOKEN_MAC_BYTES];
    uint64_t size = 0;
    struct tiletoken_claim claim = claim_of(30, 0, 1, 0);
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    fixture->context.node_id = 0;
    assert_int_equal(write_with(fixture, 30, 1, mac, sizeof(mac), claim.expiry_ms, data,
                                sizeof(data), &response),
                     TS_ERR_BUSY);
    assert_int_equal(tilestore_size(fixture->store, 30, 0, 1, &size), -ENOENT);
}

/* Runs a TILE_READ of (ino, 0, version) from key_user with this token through the handler. */
static int read_with(struct fixture *fixture, const char *key_user, uint64_t ino,
                     uint64_t version, const uint8_t *token, size_t token_len, uint64_t expiry,
                     struct rpc_response *response)
{
    struct ts_tile_read_req read_req = {.ino = ino,
                                        .tile = 0,
                                        .version = version,
                                        .length = 4096,
                                        .token_expiry = expiry,
                                        .token = {.ptr = (const char *)token, .len = token_len}};
    int encoded = ts_tile_read_req_encode(&read_req, fixture->payload, sizeof(fixture->payload));
    assert_true(encoded > 0);
    struct rpc_request request = {.header = {.type = TS_OP_TILE_READ},
                                  .key_user = key_user,
                                  .payload = fixture->payload,
                                  .payload_len = (size_t)encoded};
    *response = (struct rpc_response){.payload = fixture->reply,
                                      .payload_cap = sizeof(fixture->reply)};
    return nodehandlers_table[TS_OP_TILE_READ](&fixture->context, &request, response);
}

/*
 * A mount key reads a tile file only with meta's token of that very file
 * on this datanode with the read right: none, another file's, another
 * node's or a forged one are TS_ERR_PERM with no byte in the reply, an
 * expired one TS_ERR_STALE; a datanode's key (a pull's source read) reads
 * by its role. The handler's reply buffer is the one nodehandlers.c
 * allocates per read, freed by the loop; the test frees what it got.
 */
static void test_handlers_refuse_reads_without_token(void **state)
{
    struct fixture *fixture = *state;
    struct rpc_response response;
    uint8_t original[4096];
    uint8_t mac[TILETOKEN_MAC_BYTES];
    memset(original, 's', sizeof(original));
    assert_int_equal(tilestore_write(fixture->store, 40, 0, 2, 0, original, sizeof(original)), 0);
    assert_int_equal(tilestore_write(fixture->store, 41, 0, 2, 0, original, sizeof(original)), 0);

    assert_int_equal(read_with(fixture, "mount:alice", 40, 2, NULL, 0, 0, &response),
                     TS_ERR_PERM);
    assert_null(response.data);
    assert_non_null(strstr(response.error_text, "nothing read"));
    /* A token of her own file 41 used on file 40. */
    struct tiletoken_claim claim = claim_of(41, 0, 2, NODE_ID);
    claim.rights = TILETOKEN_READ;
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(read_with(fixture, "mount:alice", 40, 2, mac, sizeof(mac), claim.expiry_ms,
                               &response),
                     TS_ERR_PERM);
    assert_null(response.data);
    /* Another node's token of file 40; a forged one. */
    claim = claim_of(40, 0, 2, NODE_ID + 1);
    claim.rights = TILETOKEN_READ;
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(read_with(fixture, "mount:alice", 40, 2, mac, sizeof(mac), claim.expiry_ms,
                               &response),
                     TS_ERR_PERM);
    memset(mac, 0x33, sizeof(mac));
    assert_int_equal(read_with(fixture, "mount:alice", 40, 2, mac, sizeof(mac), claim.expiry_ms,
                               &response),
                     TS_ERR_PERM);
    /* A link without keys is no way around it. */
    assert_int_equal(read_with(fixture, "", 40, 2, NULL, 0, 0, &response), TS_ERR_PERM);
    /* A file this datanode lacks is "no file", token or not (a lost tile). */
    assert_int_equal(read_with(fixture, "mount:alice", 42, 2, NULL, 0, 0, &response),
                     TS_ERR_NOENT);
    assert_null(response.data);
    assert_int_equal(fixture->context.stats.reads_refused_token, 5);
    assert_int_equal(fixture->context.stats.changes_refused_token, 0);

    /* Expired: STALE, so the mount asks meta again. */
    claim = claim_of(40, 0, 2, NODE_ID);
    claim.rights = TILETOKEN_READ;
    claim.expiry_ms = tiletoken_now_ms() - TILETOKEN_SKEW_MS - 1000;
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(read_with(fixture, "mount:alice", 40, 2, mac, sizeof(mac), claim.expiry_ms,
                               &response),
                     TS_ERR_STALE);
    assert_null(response.data);

    /* Meta's read token, and a writable export's read-write one, are served. */
    const uint32_t rights[2] = {TILETOKEN_READ, TILETOKEN_READ | TILETOKEN_WRITE};
    for (size_t i = 0; i < 2; i++) {
        claim = claim_of(40, 0, 2, NODE_ID);
        claim.rights = rights[i];
        assert_int_equal(tiletoken_sign(&claim, mac), 0);
        assert_int_equal(read_with(fixture, "mount:alice", 40, 2, mac, sizeof(mac),
                                   claim.expiry_ms, &response),
                         TS_OK);
        assert_int_equal(response.data_len, sizeof(original));
        assert_memory_equal(response.data, original, sizeof(original));
        free(response.data);
    }
    /* Another datanode's key reads by its role (TILE_PULL's source read). */
    assert_int_equal(read_with(fixture, "datanode:dn2", 40, 2, NULL, 0, 0, &response), TS_OK);
    assert_int_equal(response.data_len, sizeof(original));
    free(response.data);
    assert_int_equal(fixture->context.stats.reads_refused_token, 5);
}

/* Sends one tile stream request through the datanode's handler; its answer's status. */
static int32_t stream_with(struct fixture *fixture, enum ts_stream_kind kind, uint64_t ino,
                           uint64_t version, const uint8_t *token, uint64_t expiry,
                           const uint8_t *data, uint32_t len, uint32_t *data_bytes)
{
    int pair[2];
    uint8_t request_bytes[TS_STREAM_REQ_BYTES];
    uint8_t head[TS_STREAM_REP_BYTES];
    struct ts_tile_read_req request = {
        .ino = ino,
        .tile = 0,
        .version = version,
        .length = kind == TS_STREAM_WRITE ? len : 4096,
        .token_expiry = expiry,
        .token = {.ptr = (const char *)token, .len = token ? TILETOKEN_MAC_BYTES : 0}};
    struct nodehandlers_write_buffer buffer = {0};
    struct nodehandlers_drop_behind drop = {.fd = -1};
    int32_t status = 0;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    ts_stream_req_encode(&request, kind, kind == TS_STREAM_WRITE ? crc32c(0, data, len) : 0,
                         request_bytes);
    if (kind == TS_STREAM_WRITE)
        assert_int_equal(send(pair[1], data, len, 0), (ssize_t)len);
    assert_int_equal(
        nodehandlers_stream_request(&fixture->context, request_bytes, pair[0], &buffer, &drop), 0);
    assert_int_equal(recv(pair[1], head, sizeof(head), MSG_WAITALL), (ssize_t)sizeof(head));
    assert_int_equal(ts_stream_rep_decode(&status, data_bytes, head), TS_OK);
    nodehandlers_drop_behind(&drop, -1);
    free(buffer.bytes);
    close(pair[0]);
    close(pair[1]);
    return status;
}

/*
 * The tile stream's requests need their tokens as ZeroMQ's do: a read or
 * write without one, or with another tile's, is answered TS_ERR_PERM with
 * no byte sent and nothing written; an expired one TS_ERR_STALE (the
 * mount then asks over ZeroMQ, and meta); meta's token is served.
 */
static void test_stream_refuses_requests_without_token(void **state)
{
    struct fixture *fixture = *state;
    uint8_t original[4096], attack[4096], back[4096];
    uint8_t mac[TILETOKEN_MAC_BYTES], other_mac[TILETOKEN_MAC_BYTES];
    uint32_t data_bytes = 1;
    size_t got = 0;
    memset(original, 'b', sizeof(original));
    memset(attack, 'X', sizeof(attack));
    assert_int_equal(pthread_mutex_init(&fixture->context.lock, NULL), 0);
    assert_int_equal(tilestore_write(fixture->store, 50, 0, 3, 0, original, sizeof(original)), 0);
    struct tiletoken_claim other = claim_of(51, 0, 3, NODE_ID);
    other.rights = TILETOKEN_READ | TILETOKEN_WRITE;
    assert_int_equal(tiletoken_sign(&other, other_mac), 0);

    const enum ts_stream_kind kinds[3] = {TS_STREAM_READ, TS_STREAM_READ_KEPT, TS_STREAM_WRITE};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(stream_with(fixture, kinds[i], 50, 3, NULL, 0, attack, sizeof(attack),
                                     &data_bytes),
                         TS_ERR_PERM);
        assert_int_equal(data_bytes, 0);
        assert_int_equal(stream_with(fixture, kinds[i], 50, 3, other_mac, other.expiry_ms, attack,
                                     sizeof(attack), &data_bytes),
                         TS_ERR_PERM);
        assert_int_equal(data_bytes, 0);
    }
    assert_int_equal(fixture->context.stats.reads_refused_token, 4);
    assert_int_equal(fixture->context.stats.changes_refused_token, 2);
    assert_int_equal(tilestore_read(fixture->store, 50, 0, 3, 0, sizeof(back), back, &got), 0);
    assert_memory_equal(back, original, sizeof(original));

    struct tiletoken_claim claim = claim_of(50, 0, 3, NODE_ID);
    claim.rights = TILETOKEN_READ;
    claim.expiry_ms = tiletoken_now_ms() - TILETOKEN_SKEW_MS - 1000;
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(
        stream_with(fixture, TS_STREAM_READ, 50, 3, mac, claim.expiry_ms, NULL, 0, &data_bytes),
        TS_ERR_STALE);
    /* A read-only export's token reads and does not write. */
    claim = claim_of(50, 0, 3, NODE_ID);
    claim.rights = TILETOKEN_READ;
    assert_int_equal(tiletoken_sign(&claim, mac), 0);
    assert_int_equal(stream_with(fixture, TS_STREAM_WRITE, 50, 3, mac, claim.expiry_ms, attack,
                                 sizeof(attack), &data_bytes),
                     TS_ERR_PERM);
    assert_int_equal(
        stream_with(fixture, TS_STREAM_READ, 50, 3, mac, claim.expiry_ms, NULL, 0, &data_bytes),
        TS_OK);
    assert_int_equal(data_bytes, sizeof(original));
    assert_int_equal(tilestore_read(fixture->store, 50, 0, 3, 0, sizeof(back), back, &got), 0);
    assert_memory_equal(back, original, sizeof(original));
    pthread_mutex_destroy(&fixture->context.lock);
}

/*
 * What a datanode's check costs per request (printed, for the README's
 * figure; no timing is asserted): the read right found first (a read-only
 * export's token, one MAC) and second (a writable export's read-write
 * token, two MACs), and a forged token (both tried, refused).
 */
static void test_check_cost(void **state)
{
    (void)state;
    enum { CHECKS = 20000 };
    uint8_t mac[TILETOKEN_MAC_BYTES];
    const uint32_t rights[2] = {TILETOKEN_READ, TILETOKEN_READ | TILETOKEN_WRITE};
    double us[3];
    for (size_t kind = 0; kind < 3; kind++) {
        struct tiletoken_claim claim = claim_of(60, 1, 2, NODE_ID);
        claim.rights = rights[kind == 0 ? 0 : 1];
        assert_int_equal(tiletoken_sign(&claim, mac), 0);
        if (kind == 2)
            mac[0] ^= 1;
        claim.rights = TILETOKEN_READ;
        uint64_t now = tiletoken_now_ms();
        int64_t start = util_monotonic_ns();
        for (int i = 0; i < CHECKS; i++)
            assert_int_equal(tiletoken_check(&claim, mac, sizeof(mac), now),
                             kind == 2 ? -EPERM : 0);
        us[kind] = (double)(util_monotonic_ns() - start) / 1e3 / CHECKS;
    }
    printf("# tile token read check: %.2f us (read token), %.2f us (read-write token), "
           "%.2f us (forged)\n",
           us[0], us[1], us[2]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_token_binds_every_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_expires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rotation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret_file_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handlers_refuse_writes_without_token, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_handlers_without_node_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handlers_refuse_reads_without_token, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stream_refuses_requests_without_token, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_check_cost, setup, teardown),
    };
    return cmocka_run_group_tests_name("tiletoken", tests, NULL, NULL);
}
