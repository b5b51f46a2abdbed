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

static void test_silence_is_zero_while_the_primary_answers_in_time(void **state)
{
    (void)state;
    assert_int_equal(agent_watch_silent_ms(10 * S, 10 * S), 0);
    /* The next PING goes out 200 ms after the last answer; its answer may
     * come a little later than that. */
    assert_int_equal(agent_watch_silent_ms(10 * S, 10 * S + 200 * MS), 0);
    assert_int_equal(agent_watch_silent_ms(10 * S, 10 * S + 300 * MS), 0);
    /* Past that, all of the time since the last answer counts. */
    assert_int_equal(agent_watch_silent_ms(10 * S, 10 * S + 300 * MS + 1), 300);
    assert_int_equal(agent_watch_silent_ms(10 * S, 10 * S + 499 * MS), 499);
    assert_int_equal(agent_watch_silent_ms(10 * S, 10 * S + 500 * MS), 500);
    assert_int_equal(agent_watch_silent_ms(10 * S, 70 * S + 250), 60000);
    /* No more than the protocol takes. */
    assert_int_equal(agent_watch_silent_ms(0, 20LL * 86400 * S), AGENT_WATCH_SILENT_MAX_MS);
    /* A time before the answer (never, with a monotonic clock) is no silence. */
    assert_int_equal(agent_watch_silent_ms(10 * S, 9 * S), 0);
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
    int64_t answered = 42 * S;
    int64_t at = agent_watch_silent_at_us(answered);

    (void)state;
    assert_int_equal(at, answered + AGENT_WATCH_SILENT_MS * MS);
    assert_int_equal(agent_watch_news(false, agent_watch_silent_ms(answered, at - 1)),
                     AGENT_WATCH_NEWS_NONE);
    assert_int_equal(agent_watch_news(false, agent_watch_silent_ms(answered, at)),
                     AGENT_WATCH_NEWS_SILENT);
}

/* The decisions the agent takes over a run, as supervise.c takes them: a
 * primary that answers every PING, stops for two seconds and comes back.
 * cairnd hears exactly twice: when the silence reaches 500 ms, and at the
 * first answer after it. */
static void test_a_pause_is_news_twice(void **state)
{
    int64_t answered = 0;
    bool told = false;
    unsigned silent_news = 0, answering_news = 0;
    int64_t silent_news_at = 0;
    const int64_t stop = 5 * S + 10 * MS, resume = stop + 2 * S;

    (void)state;
    for (int64_t now = 0; now <= 10 * S; now += 10 * MS) {
        /* A PING every 200 ms, answered within a millisecond while the
         * primary runs; the one outstanding when it stopped is answered as
         * soon as it resumes. */
        bool pinged = now % (200 * MS) == 0;
        bool running = now < stop || now >= resume;
        if (running && (pinged || now == resume))
            answered = now;
        switch (agent_watch_news(told, agent_watch_silent_ms(answered, now))) {
        case AGENT_WATCH_NEWS_NONE:
            break;
        case AGENT_WATCH_NEWS_SILENT:
            silent_news++;
            silent_news_at = now;
            told = true;
            break;
        case AGENT_WATCH_NEWS_ANSWERING:
            answering_news++;
            assert_int_equal(now, resume);
            told = false;
            break;
        }
    }
    assert_int_equal(silent_news, 1);
    assert_int_equal(answering_news, 1);
    /* The last answer came at 5.0 s: the news 500 ms later, 490 ms into
     * the pause. */
    assert_int_equal(silent_news_at, 5 * S + 500 * MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silence_is_zero_while_the_primary_answers_in_time),
        cmocka_unit_test(test_news_on_crossing_only),
        cmocka_unit_test(test_silent_at_is_when_the_news_comes),
        cmocka_unit_test(test_a_pause_is_news_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
