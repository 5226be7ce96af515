/*
 * @file heartbeat.h
 * The datanode's heartbeat to meta: once a second it reports who it is
 * (node id, machine, advertised address), its space (capacity, free, used,
 * tiles) and its load (measured read and write throughput, queue depth,
 * throttle), confirms the tiles it deleted, and takes from the reply its
 * node id and the next tiles to delete (garbage).
 *
 * The heartbeat never blocks the datanode's loop: a request is sent on its
 * own DEALER socket, the loop polls that socket next to the server's, and
 * heartbeat_tick() takes the reply when it comes. A reply that is not there
 * within HEARTBEAT_TIMEOUT_MS abandons the request and its socket (the Lazy
 * Pirate pattern, as rpc_client does), so meta being down costs the tile
 * traffic nothing. The first failure is logged at warn, the rest quietly,
 * and meta's return at info.
 *
 * The node id lives in DATA/node.id (decimal; missing = 0 = "give me an id").
 * When meta assigns one it is written atomically (tmp file, fsync, rename,
 * fsync of the directory) before the datanode relies on it.
 */
#ifndef TESSERA_DATANODE_HEARTBEAT_H
#define TESSERA_DATANODE_HEARTBEAT_H

#include "tilestore.h"

#include <stdbool.h>
#include <stdint.h>

#define HEARTBEAT_INTERVAL_MS 1000
#define HEARTBEAT_TIMEOUT_MS 2000

/* The load a heartbeat reports (proto.h, HEARTBEAT). */
struct heartbeat_load {
    uint64_t read_bytes_per_sec;
    uint64_t write_bytes_per_sec;
    uint32_t queue_depth;
    uint64_t throttle_bytes_per_sec;
    /* The scrub's current or last pass (scrub.h; zeros: no scrub). */
    uint32_t scrub_running;
    uint64_t scrub_files;
    uint64_t scrub_bytes;
    uint64_t scrub_corrupt;
    uint64_t scrub_rate;
    uint64_t scrub_passes;
};

/* Fills *load; called once per heartbeat sent. */
typedef void (*heartbeat_load_fn)(void *arg, struct heartbeat_load *load);

struct heartbeat_config {
    const char *meta_endpoint; /* where meta listens */
    const char *data_dir;      /* holds node.id */
    const char *machine;       /* this machine's name */
    const char *address;       /* the endpoint clients and peers should use */
    const char *metrics;       /* its Prometheus endpoint HOST:PORT; NULL or "": none */
    heartbeat_load_fn load;    /* NULL: report no load (all zeros) */
    void *load_arg;
};

struct heartbeat;

/*
 * Reads DATA/node.id and prepares the first heartbeat (due at once); the
 * strings are copied. Returns 0, -EINVAL if node.id holds anything but a
 * node number (logged: the operator must fix or remove it), -ENAMETOOLONG
 * for strings the protocol cannot carry, or -ENOMEM. The store must
 * outlive the heartbeat.
 */
int heartbeat_new(const struct heartbeat_config *config, struct tilestore *store,
                  struct heartbeat **heartbeatp);
/* Abandons any heartbeat in flight and frees everything (NULL-safe). */
void heartbeat_destroy(struct heartbeat **heartbeatp);

/* The socket to poll for ZMQ_POLLIN, or NULL when no heartbeat is in flight. */
void *heartbeat_socket(const struct heartbeat *heartbeat);
/* Milliseconds until heartbeat_tick() has work (send or time out), >= 0. */
long heartbeat_wait_ms(const struct heartbeat *heartbeat, int64_t now_ms);
/*
 * Does whatever is due: takes a reply that has arrived (deleting the
 * garbage it names), abandons one that is late, sends the next when its
 * time has come. Call after every zmq_poll.
 */
void heartbeat_tick(struct heartbeat *heartbeat, int64_t now_ms);

/* The datanode served a request at now_ms: garbage deletion then gives way
 * to its work (a slice per regular heartbeat instead of one after another). */
void heartbeat_note_busy(struct heartbeat *heartbeat, int64_t now_ms);
/* This datanode's id (0 until meta has given one). */
uint32_t heartbeat_node_id(const struct heartbeat *heartbeat);
/*
 * True once meta refused this data directory as the node its node.id
 * names (another or a wiped directory: HEARTBEAT incarnation): logged
 * with meta's reason; the datanode must stop.
 */
bool heartbeat_refused(const struct heartbeat *heartbeat);
/* How many heartbeats meta has acknowledged since start. */
uint64_t heartbeat_acknowledged(const struct heartbeat *heartbeat);

#endif
