/* converge.c -- the per-node decision and the restart backoff, as pure
 * functions (see converge.h). */
#include "converge.h"

#include <string.h>

enum agent_action agent_converge_decide(const struct agent_facts *f, int64_t *wake_us)
{
    /* Deleted: stop whatever runs, then remove the data. */
    if (f->deleted) {
        if (f->alive)
            return f->stopping ? AGENT_ACT_NONE : AGENT_ACT_STOP;
        return AGENT_ACT_REMOVE;
    }
    /* Not wanted, or wanted stopped: stop it and keep the data. */
    if (!f->wanted || !f->run) {
        if (f->alive && !f->stopping)
            return AGENT_ACT_STOP;
        return AGENT_ACT_NONE;
    }
    /* Wanted running. A process of another engine, line or port is stopped
     * first; once it has exited it is started again below with the desired
     * binary on the same data directory (the in-place upgrade). The exit
     * the agent asked for leaves last_exit at AGENT_EXIT_NONE. */
    if (f->alive) {
        /* Without the desired binary, the old process is better than none. */
        if (f->mismatch && !f->stopping && f->startable)
            return AGENT_ACT_STOP;
        return AGENT_ACT_NONE;
    }
    if (!f->startable)
        return AGENT_ACT_NONE;
    switch (f->last_exit) {
    case AGENT_EXIT_NONE:
        return AGENT_ACT_START;
    case AGENT_EXIT_CLEAN:
        if (f->policy != AGENT_RESTART_ALWAYS)
            return AGENT_ACT_NONE;
        break;
    case AGENT_EXIT_FAILURE:
        if (f->policy == AGENT_RESTART_NEVER || f->hold_after_crash)
            return AGENT_ACT_NONE;
        break;
    }
    if (f->now_us >= f->restart_at_us)
        return AGENT_ACT_START;
    *wake_us = f->restart_at_us;
    return AGENT_ACT_WAIT;
}

int64_t agent_converge_backoff_us(unsigned attempt)
{
    int64_t d = AGENT_BACKOFF_MIN_US;

    for (unsigned i = 0; i < attempt && d < AGENT_BACKOFF_MAX_US; i++)
        d *= 2;
    return d < AGENT_BACKOFF_MAX_US ? d : AGENT_BACKOFF_MAX_US;
}

unsigned agent_converge_attempts_after(unsigned attempt, int64_t healthy_since_us, int64_t now_us)
{
    if (healthy_since_us > 0 && now_us - healthy_since_us >= AGENT_BACKOFF_RESET_US)
        return 0;
    return attempt;
}

enum agent_node_state agent_converge_probe(enum agent_node_state cur, enum agent_probe probe,
                                           int64_t since_start_us)
{
    if (cur == AGENT_NODE_STOPPED || cur == AGENT_NODE_CRASHED)
        return cur;
    switch (probe) {
    case AGENT_PROBE_PONG:
        return AGENT_NODE_RUNNING;
    case AGENT_PROBE_LOADING:
        return AGENT_NODE_LOADING;
    case AGENT_PROBE_REFUSED:
        return cur; /* alive, but which process cannot be told: the agent restarts it */
    case AGENT_PROBE_FAILED:
        break;
    }
    if (cur == AGENT_NODE_STARTING && since_start_us < AGENT_START_GRACE_US)
        return AGENT_NODE_STARTING;
    return AGENT_NODE_UNRESPONSIVE;
}

const char *agent_converge_state_name(enum agent_node_state state)
{
    static const char *const names[] = {"stopped", "starting", "running",
                                        "loading", "crashed",  "unresponsive"};

    return names[state];
}

bool agent_converge_parse_policy(const char *s, enum agent_restart_policy *out)
{
    static const char *const names[] = {"always", "on-failure", "never"};

    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (enum agent_restart_policy)i;
            return true;
        }
    }
    return false;
}

const char *agent_converge_action_name(enum agent_action action)
{
    static const char *const names[] = {"none", "wait", "start", "stop", "remove"};

    return names[action];
}
