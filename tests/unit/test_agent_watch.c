/* test_agent_watch.c -- the pure half of the watch of a replica's primary
 * (agent/watch.h): how long the primary has been silent, and when cairnd
 * must hear of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "watch.h"

#define MS 1000LL
#define S  1000000LL

/* The times after an answer at answered_us and a PING at asked_us (0:
 * none since). */
static struct agent_watch_times times(int64_t answered_us, int64_t asked_us)
{
    return (struct agent_watch_times){.answered_us = answered_us, .asked_us = asked_us};
}

static long long silent_ms(int64_t answered_us, int64_t asked_us, int64_t now_us)
{
    struct agent_watch_times t = times(answered_us, asked_us);
    return agent_watch_silent_ms(&t, now_us);
}

static void test_silence_since_the_last_answer(void **state)
{
    (void)state;
    /* Answered at 10 s, asked again at 10.2 s. */
    assert_int_equal(silent_ms(10 * S, 10200 * MS, 10200 * MS), 0);
    /* The answer to a PING due 200 ms after the last may come a little
     * later still. */
    assert_int_equal(silent_ms(10 * S, 10200 * MS, 10300 * MS), 0);
    /* Past that, all of the time since the last answer counts. */
    assert_int_equal(silent_ms(10 * S, 10200 * MS, 10300 * MS + 1), 300);
    assert_int_equal(silent_ms(10 * S, 10200 * MS, 10499 * MS), 499);
    assert_int_equal(silent_ms(10 * S, 10200 * MS, 10500 * MS), 500);
    assert_int_equal(silent_ms(10 * S, 10200 * MS, 70 * S + 250), 60000);
    /* No more than the protocol takes. */
    assert_int_equal(silent_ms(S, 2 * S, 20LL * 86400 * S), AGENT_WATCH_SILENT_MAX_MS);
    /* A time before the answer (never, with a monotonic clock) is no silence. */
    assert_int_equal(silent_ms(10 * S, 10 * S, 9 * S), 0);
}

static void test_no_question_no_silence(void **state)
{
    struct agent_watch_times t;

    (void)state;
    /* Between an answer and the next PING the primary owes nothing. */
    assert_int_equal(silent_ms(10 * S, 0, 10100 * MS), 0);
    /* Nor when the agent was stopped for a minute before it asked again:
     * that minute is the agent's, not the primary's. */
    assert_int_equal(silent_ms(10 * S, 0, 70 * S), 0);
    assert_int_equal(silent_ms(10 * S, 70 * S, 70 * S), 0);
    assert_int_equal(silent_ms(10 * S, 70 * S, 70 * S + 100 * MS), 0);
    /* Asked and not answered, the silence counts from one interval before
     * the question. */
    assert_int_equal(silent_ms(10 * S, 70 * S, 70 * S + 400 * MS), 600);
    /* A new watch: counted from its start, once it has asked. */
    agent_watch_began(&t, 5 * S);
    assert_int_equal(agent_watch_silent_ms(&t, 7 * S), 0);
    agent_watch_asked(&t, 5 * S);
    assert_int_equal(agent_watch_silent_ms(&t, 7 * S), 2000);
    /* Later questions leave the first one standing; an answer ends it. */
    agent_watch_asked(&t, 6 * S);
    assert_int_equal(t.asked_us, 5 * S);
    agent_watch_answered(&t, 7 * S);
    assert_int_equal(agent_watch_silent_ms(&t, 7 * S), 0);
    assert_int_equal(t.answered_us, 7 * S);
    assert_int_equal(t.asked_us, 0);
}

static void test_news_on_crossing_only(void **state)
{
    (void)state;
    assert_int_equal(agent_watch_news(false, 0), AGENT_WATCH_NEWS_NONE);
    assert_int_equal(agent_watch_news(false, 499), AGENT_WATCH_NEWS_NONE);
    assert_int_equal(agent_watch_news(false, 500), AGENT_WATCH_NEWS_SILENT);
    assert_int_equal(agent_watch_news(false, 4000), AGENT_WATCH_NEWS_SILENT);
    /* Told already: the silence growing is no news... */
    assert_int_equal(agent_watch_news(true, 500), AGENT_WATCH_NEWS_NONE);
    assert_int_equal(agent_watch_news(true, 4000), AGENT_WATCH_NEWS_NONE);
    /* ...its end is. */
    assert_int_equal(agent_watch_news(true, 0), AGENT_WATCH_NEWS_ANSWERING);
}

static void test_silent_at_is_when_the_news_comes(void **state)
{
    static const struct {
        int64_t answered_us, asked_us, at_us;
    } cases[] = {
        {42 * S, 42200 * MS, 42500 * MS}, /* PING on time: 500 ms after the answer */
        {42 * S, 50 * S, 50300 * MS},     /* PING late: 500 ms after it was due */
        {42 * S, 0, INT64_MAX},           /* nothing asked: never */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct agent_watch_times t = times(cases[i].answered_us, cases[i].asked_us);
        int64_t at = agent_watch_silent_at_us(&t);
        assert_int_equal(at, cases[i].at_us);
        if (at == INT64_MAX)
            continue;
        assert_int_equal(agent_watch_news(false, agent_watch_silent_ms(&t, at - 1)),
                         AGENT_WATCH_NEWS_NONE);
        assert_int_equal(agent_watch_news(false, agent_watch_silent_ms(&t, at)),
                         AGENT_WATCH_NEWS_SILENT);
    }
}

/* The agent's decisions over a run, taken as supervise.c takes them, every
 * 10 ms: a PING every 200 ms, answered within the same 10 ms while the
 * primary runs. from_us..to_us is a pause of the primary (it answers the
 * PING outstanding as soon as it resumes); agent_from_us..agent_to_us one
 * of the agent (it neither asks nor looks). Returns how often cairnd heard
 * that the primary is silent, and when it did first (*first_us). */
static unsigned run(int64_t from_us, int64_t to_us, int64_t agent_from_us, int64_t agent_to_us,
                    int64_t *first_us)
{
    struct agent_watch_times t;
    bool told = false, outstanding = false;
    unsigned news = 0;

    agent_watch_began(&t, 0);
    *first_us = 0;
    for (int64_t now = 0; now <= 10 * S; now += 10 * MS) {
        if (now >= agent_from_us && now < agent_to_us)
            continue;
        bool primary_runs = now < from_us || now >= to_us;
        if (!outstanding && now % (200 * MS) == 0) {
            agent_watch_asked(&t, now);
            outstanding = true;
        }
        if (outstanding && primary_runs) {
            agent_watch_answered(&t, now);
            outstanding = false;
        }
        switch (agent_watch_news(told, agent_watch_silent_ms(&t, now))) {
        case AGENT_WATCH_NEWS_NONE:
            break;
        case AGENT_WATCH_NEWS_SILENT:
            if (news++ == 0)
                *first_us = now;
            told = true;
            break;
        case AGENT_WATCH_NEWS_ANSWERING:
            assert_true(now >= to_us);
            told = false;
            break;
        }
    }
    assert_false(told); /* every silence ended by the end of the run */
    return news;
}

static void test_a_pause_of_the_primary_is_news_once(void **state)
{
    int64_t first;

    (void)state;
    assert_int_equal(run(INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, &first), 0);
    /* Paused 10 ms after answering at 5.0 s: news 500 ms after that answer. */
    assert_int_equal(run(5 * S + 10 * MS, 7 * S, INT64_MAX, INT64_MAX, &first), 1);
    assert_int_equal(first, 5 * S + 500 * MS);
    /* A pause shorter than the news threshold is no news. */
    assert_int_equal(run(5 * S + 10 * MS, 5 * S + 300 * MS, INT64_MAX, INT64_MAX, &first), 0);
}

static void test_a_pause_of_the_agent_is_no_news(void **state)
{
    int64_t first;

    (void)state;
    /* Stopped for two seconds between a PING's answer and the next PING:
     * on its return it asks, hears at once, and has nothing to say. */
    assert_int_equal(run(INT64_MAX, INT64_MAX, 5 * S + 10 * MS, 7 * S + 10 * MS, &first), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silence_since_the_last_answer),
        cmocka_unit_test(test_no_question_no_silence),
        cmocka_unit_test(test_news_on_crossing_only),
        cmocka_unit_test(test_silent_at_is_when_the_news_comes),
        cmocka_unit_test(test_a_pause_of_the_primary_is_news_once),
        cmocka_unit_test(test_a_pause_of_the_agent_is_no_news),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
