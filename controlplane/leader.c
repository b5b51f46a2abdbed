/* leader.c -- the control-plane leadership (see leader.h). */
#include "leader.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "db.h"
#include "log.h"
#include "store.h"
#include "xalloc.h"

struct leader {
    char *url, *holder;
    PGconn *pg;             /* the session holding (or seeking) the lock */
    _Atomic long long term; /* 0: not leading */
};

struct leader *leader_new(const char *url, const char *holder)
{
    struct leader *l = xcalloc(1, sizeof(*l));
    l->url = xstrdup(url);
    l->holder = xstrdup(holder);
    atomic_init(&l->term, 0);
    return l;
}

/* Lead no longer: the thread is unfenced, and a broken session goes. */
static void step_down(struct leader *l, bool drop_session, const char *why)
{
    long long term = atomic_exchange(&l->term, 0);
    db_fence(0);
    if (term != 0)
        log_warn("leadership lost", "term=%lld reason=\"%s\"", term, why);
    if (drop_session && l->pg != NULL) {
        PQfinish(l->pg);
        l->pg = NULL;
    }
}

long long leader_tick(struct leader *l, bool *reachable)
{
    char err[256];
    long long term = 0, held = atomic_load(&l->term);
    enum db_status st;

    if (held != 0) {
        /* Still ours while the session lives and no one began a term since. */
        st = store_leadership_term(l->pg, &term);
        if (st == DB_OK && term == held) {
            *reachable = true;
            return held;
        }
        step_down(l, true,
                  st == DB_OK ? "another cairnd began a later term"
                              : "the session holding the lock broke");
    }
    if (l->pg == NULL && (l->pg = db_connect(l->url, err, sizeof(err))) == NULL) {
        *reachable = false;
        return 0;
    }
    st = store_leadership_seek(l->pg, l->holder, &term);
    *reachable = st == DB_OK;
    if (st != DB_OK) {
        PQfinish(l->pg);
        l->pg = NULL;
        return 0;
    }
    if (term != 0) {
        atomic_store(&l->term, term);
        db_fence(term);
        log_info("leadership taken", "term=%lld holder=\"%s\"", term, l->holder);
    }
    return term;
}

void leader_resign(struct leader *l)
{
    if (atomic_load(&l->term) == 0)
        return;
    if (l->pg != NULL && store_leadership_resign(l->pg) != DB_OK) {
        PQfinish(l->pg);
        l->pg = NULL;
    }
    step_down(l, false, "a decision found its term over");
}

long long leader_current(struct leader *l)
{
    return l != NULL ? atomic_load(&l->term) : 0;
}

void leader_free(struct leader *l)
{
    if (l == NULL)
        return;
    if (l->pg != NULL)
        PQfinish(l->pg); /* the lock goes with the session */
    free(l->url);
    free(l->holder);
    free(l);
}
