/* converge.h -- what the agent should do next for one node, and when.
 *
 * Pure functions, no I/O: the supervisor (supervise.c) gathers the facts
 * about a node into a struct agent_facts, asks agent_converge_decide() for
 * one action, carries it out, and asks again whenever a fact changes. The
 * restart backoff and the health transitions live here too, so they can be
 * tested without processes. A node's reported state moves like this:
 *
 *     stopped/crashed --start--> starting --PONG--> running <--PONG--+
 *                                   |  \--LOADING--> loading --PONG--/|
 *                                   |                                 |
 *                                   +-- no answer (10 s grace; 1 s when
 *                                       running or loading) --> unresponsive
 *     any live state --exit--> crashed (non-zero, signal, or unknown)
 *                              stopped (status 0, or stopped by the agent)
 *     crashed/stopped --restart policy, after the backoff--> starting */
#ifndef CAIRN_AGENT_CONVERGE_H
#define CAIRN_AGENT_CONVERGE_H

#include <stdbool.h>
#include <stdint.h>

/* Restart backoff: 100 ms after the first unplanned exit, doubling up to
 * 10 s; forgotten once the engine has run healthily for a minute. */
#define AGENT_BACKOFF_MIN_US   100000LL
#define AGENT_BACKOFF_MAX_US   10000000LL
#define AGENT_BACKOFF_RESET_US 60000000LL

/* How long a just-started engine may take to answer its first PING before
 * it counts as unresponsive. */
#define AGENT_START_GRACE_US 10000000LL

/* A node's state as reported to cairnd. */
enum agent_node_state {
    AGENT_NODE_STOPPED,
    AGENT_NODE_STARTING,
    AGENT_NODE_RUNNING,
    AGENT_NODE_LOADING,
    AGENT_NODE_CRASHED,
    AGENT_NODE_UNRESPONSIVE,
};

/* The outcome of one health check of a live engine. */
enum agent_probe {
    AGENT_PROBE_PONG,    /* PING answered (any reply but LOADING: it serves) */
    AGENT_PROBE_LOADING, /* PING answered -LOADING, or INFO says loading:1 */
    AGENT_PROBE_FAILED,  /* no answer within the timeout, refused, or closed */
    AGENT_PROBE_REFUSED, /* the engine answered, refusing the agent's login */
};

enum agent_restart_policy {
    AGENT_RESTART_ALWAYS,
    AGENT_RESTART_ON_FAILURE,
    AGENT_RESTART_NEVER,
};

/* How the engine's last process ended. */
enum agent_exit {
    AGENT_EXIT_NONE,    /* never started, or stopped by the agent */
    AGENT_EXIT_CLEAN,   /* exited with status 0 on its own */
    AGENT_EXIT_FAILURE, /* non-zero status, a signal, or unknown (adopted) */
};

struct agent_facts {
    /* Desired state (from cairnd). */
    bool wanted;  /* the node is in the desired set */
    bool run;     /* desired run=true */
    bool deleted; /* desired deleted=true */
    enum agent_restart_policy policy;
    /* A primary with replicas under automatic failover: after a crash it
     * stays down until cairnd has promoted a replica and sent a new
     * instruction, so it never comes back as a primary that its replicas
     * would copy (and lose writes from). */
    bool hold_after_crash;
    bool startable; /* a binary for the desired engine and line is installed */
    /* Observed state. */
    bool alive;    /* a process exists (running, or being stopped) */
    bool stopping; /* the agent has asked it to stop and waits for the exit */
    bool mismatch; /* the process runs another engine, line or port than desired */
    enum agent_exit last_exit;
    int64_t restart_at_us; /* after an unplanned exit: earliest restart */
    int64_t now_us;
};

enum agent_action {
    AGENT_ACT_NONE,   /* nothing to do until a fact changes */
    AGENT_ACT_WAIT,   /* restart later: call again at the returned time */
    AGENT_ACT_START,  /* start the engine now */
    AGENT_ACT_STOP,   /* stop the engine gracefully */
    AGENT_ACT_REMOVE, /* delete the node's directory and forget it */
};

/* Decide the one next action for a node. When it returns AGENT_ACT_WAIT,
 * *wake_us is set to the time to decide again. */
enum agent_action agent_converge_decide(const struct agent_facts *f, int64_t *wake_us);

/* Delay before restart number attempt + 1 after unplanned exits
 * (attempt 0 → 100 ms, 1 → 200 ms, ... capped at 10 s). */
int64_t agent_converge_backoff_us(unsigned attempt);

/* The restart attempt counter to keep after a process ended at now_us:
 * 0 when it had been healthy (answering PING) without a break since
 * healthy_since_us for a minute or more, so a good run forgives earlier
 * crashes; else attempt unchanged. healthy_since_us is 0 when the process
 * never became healthy. */
unsigned agent_converge_attempts_after(unsigned attempt, int64_t healthy_since_us, int64_t now_us);

/* The state of a live engine after a health check: an answer makes it
 * running (or loading); no answer makes it unresponsive, except that a
 * starting engine gets AGENT_START_GRACE_US after its start (since_start_us
 * ago) to open its port. States without a process do not change. */
enum agent_node_state agent_converge_probe(enum agent_node_state cur, enum agent_probe probe,
                                           int64_t since_start_us);

/* The protocol's name of a state: "starting", "running", ... */
const char *agent_converge_state_name(enum agent_node_state state);

/* "always" / "on-failure" / "never"; returns false for anything else. */
bool agent_converge_parse_policy(const char *s, enum agent_restart_policy *out);

/* The name of an action, for logs. */
const char *agent_converge_action_name(enum agent_action action);

#endif
