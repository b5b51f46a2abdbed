/* leader.h -- the control-plane leadership. Several cairnd may share one
 * database behind a load balancer: each serves the API and agents, and
 * each runner claims operations by lease (runner.h), but the host monitor
 * and the HA decisions (monitor.h, ha.h) are made by one of them, the
 * holder of a PostgreSQL session advisory lock. A cairnd that dies loses
 * its session and with it the lock, and another takes it at its next tick
 * (a tenth of a second).
 *
 * Each takeover begins a new term (migrations/0033_leadership.sql), and the
 * leader's thread is fenced by it (db_fence()): each of its decisions'
 * transactions checks the term first and records it with the decision, so
 * a former leader that has not noticed yet (its lock's session broken, the
 * database failed over) cannot land one after its successor's first.
 *
 * Used by the monitor's thread only, except leader_current(). */
#ifndef CAIRN_LEADER_H
#define CAIRN_LEADER_H

#include <stdbool.h>

struct leader;

/* For the database at url; holder names this cairnd in the leadership row. */
struct leader *leader_new(const char *url, const char *holder);
void leader_free(struct leader *l);

/* Keep the leadership, or seek it: the term this cairnd leads in, 0 when
 * another does. *reachable says whether the database answered. The calling
 * thread is fenced by the term (0: unfenced). */
long long leader_tick(struct leader *l, bool *reachable);

/* A decision was fenced: the term is over. Give the lock up, if the session
 * still holds it, and lead no longer until a later tick takes a new term. */
void leader_resign(struct leader *l);

/* The term this cairnd leads in, 0 when it does not (any thread). */
long long leader_current(struct leader *l);

#endif
