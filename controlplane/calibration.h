/* calibration.h -- the sizing model calibrated on the fleet's own hosts
 * (POST /v1/sizing/calibrations, docs/sizing.md "Calibration").
 *
 * A calibration measures what one node of a node type answers on a host
 * of this fleet: a temporary one-node cluster is placed on the host, the
 * engine's own load generator (engine/benchmark.h) runs SET then GET
 * against it from cairnd for a bounded time, and the node is removed. The
 * figures -- requests/s for the workload's mix of reads, median and 99th
 * percentile latency, requests/s per vCPU of the host -- are recorded,
 * and sizing takes the latest that succeeded for a node type over the
 * published table (sizing.h's capacity_rps).
 *
 * Here is what decides, apart from the I/O (api_calibrations.c takes the
 * request, ops_calibrate.c runs it): the request's fields and defaults,
 * the host, node type and engine line it runs on, how many requests and
 * keys the benchmark uses, and what its lines come to. Pure: no database,
 * no clock, no process. */
#ifndef CAIRN_CALIBRATION_H
#define CAIRN_CALIBRATION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "benchmark.h"
#include "jspec.h"
#include "problem.h"

/* The request's parameters: defaults (those of the published figures) and
 * limits. The benchmark runs for duration_s seconds, so that the whole
 * calibration, with the node's start and removal, stays well under 30 s. */
#define CALIB_VALUE_BYTES_DEFAULT 200
#define CALIB_VALUE_BYTES_MAX     (1 << 20)
#define CALIB_READ_RATIO_DEFAULT  0.8
#define CALIB_PIPELINE_DEFAULT    1
#define CALIB_PIPELINE_MAX        64
#define CALIB_CLIENTS_DEFAULT     20
#define CALIB_CLIENTS_MAX         500
#define CALIB_DURATION_DEFAULT_S  10
#define CALIB_DURATION_MAX_S      20

/* The body of POST /v1/sizing/calibrations, every field optional:
 * host_id (a UUID), node_type, engine, engine_version, value_bytes,
 * read_ratio, pipeline, clients, duration_s. */
extern const struct jspec_field calib_request_spec[];

/* How the benchmark loads the node. */
struct calib_params {
    int value_bytes;
    double read_ratio; /* of the requests, GETs */
    int pipeline, clients, duration_s;
};

/* The parameters of a body that passed calib_request_spec, defaults filled
 * in. */
void calib_params_read(const json_t *body, struct calib_params *out);

/* Where a calibration runs and what it stands for. */
struct calib_choice {
    char host_id[40], host_name[256];
    int host_vcpus;
    char node_type[64];
    double node_memory_gib;
    char engine[16], engine_version[16];
};

/* Resolve a body that passed calib_request_spec against choices, what the
 * store knows (store_calibration_choices()):
 *
 *   {"hosts": [{"id", "name", "status", "vcpus", "free_vcpus",
 *               "free_memory_mib", "lines": {"valkey": ["8.0"], ...}}],
 *    "node_types": [{"name", "vcpus", "memory_gib", "memory_mib",
 *                    "burstable"}],          (the catalog's order)
 *    "lines": {"valkey": ["7.2", "8.0", ...], "redis": [...]}}
 *                                            (oldest first)
 *
 * The engine is valkey unless asked. The host is host_id, which must be
 * registered and healthy; else the healthy host with the most free memory
 * among those that run the engine (the engine_version asked, if any) and
 * have room for the node type asked (else for some non-burstable type),
 * ties to the first by name. The engine line is the one asked, which the
 * host must run, else the newest the host runs. The node type is the one
 * asked, which must fit in what the host has free, else the smallest
 * non-burstable type that does (by memory, then vCPUs, then the catalog's
 * order).
 *
 * True with out filled, or false with p: VALIDATION_FAILED naming each
 * field that names nothing (host_id, node_type, engine_version),
 * INSUFFICIENT_CAPACITY (the host is not healthy, or has no room; no host
 * that runs the line has room), ENGINE_NOT_INSTALLED (the host does not
 * run the line, or no line of the engine; no healthy host runs it). */
bool calib_choose(const json_t *body, const json_t *choices, struct calib_choice *out,
                  struct problem *p);

/* The benchmark runs twice: a pilot, which warms the engine up and
 * measures its pace, then the run that counts, sized from that pace to
 * last about duration_s. Requests per test (SET, then GET) of the pilot:
 * 100 per client and pipelined request in flight, from 20,000 to
 * 1,000,000. */
long long calib_pilot_requests(const struct calib_params *p);

/* Requests per test of the run that counts, after a pilot of pilot
 * requests per test took pilot_s seconds: as many as take duration_s at
 * the pilot's pace, at least the pilot's, at most 100,000,000. 0 when the
 * pilot itself took half of duration_s or more: it is measurement enough. */
long long calib_main_requests(const struct calib_params *p, long long pilot, double pilot_s);

/* Seconds a run of the benchmark may take before it is killed: the pilot
 * duration_s + 2, the run that counts 1.5 x duration_s + 2. */
int calib_deadline_s(const struct calib_params *p, bool pilot);

/* The keys the requests are spread over (-r): a third of the SETs, so
 * that about 95% of the GETs find their key, at least 1, and at most what
 * half of the node's maxmemory holds (the reserve of sizing.h kept out),
 * counting each key's payload and the engine's overhead as sizing does. */
long long calib_keys(long long requests, const struct calib_params *p, const char *engine,
                     const char *engine_version, double node_memory_gib);

/* The benchmark's figures for the workload's mix. */
struct calib_figures {
    double rps;    /* 1 / (r / GET's + (1 - r) / SET's), r the read ratio */
    double p50_ms; /* the larger of GET's and SET's with a share of the mix: */
    double p99_ms; /* the mix's own lies between them, so it never flatters */
};

/* Combine csv's GET and SET lines for read_ratio. False with err when a
 * command with a share of the mix has no line or answered nothing. */
bool calib_combine(const struct engine_bench_csv *csv, double read_ratio, struct calib_figures *mix,
                   char *err, size_t errsize);

/* What a calibration records ("results"): requests_per_second,
 * p50_latency_ms, p99_latency_ms, requests_per_second_per_vcpu (of the
 * host's host_vcpus), host_vcpus, and per command (get, set) its
 * requests_per_second, p50_latency_ms and p99_latency_ms; figures rounded
 * to what the benchmark prints. The caller adds how the run went. */
json_t *calib_results_json(const struct engine_bench_csv *csv, const struct calib_figures *mix,
                           int host_vcpus);

#endif
