/*
 * test_sentinelwatch.c - which +switch-master announcements concern the watched master: the
 * payload's first word, whole, and nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server2/sentinelwatch.h"

static bool names(const char *payload, const char *master)
{
    return sentinelwatch_names(payload, strlen(payload), master);
}

static void test_sentinelwatch_names(void **state)
{
    (void)state;
    assert_true(names("mymaster 10.0.0.1 6379 10.0.0.2 6379", "mymaster"));
    assert_false(names("mymaster2 10.0.0.1 6379 10.0.0.2 6379", "mymaster"));
    assert_false(names("my 10.0.0.1 6379 10.0.0.2 6379", "mymaster"));
    assert_false(names("mymaster", "mymaster")); /* nothing after the name */
    assert_false(names("", "mymaster"));
    assert_false(names("other 10.0.0.1 6379 10.0.0.2 6379", "mymaster"));
    /* a shorter length cuts the name */
    assert_false(sentinelwatch_names("mymaster 1 2 3 4", 4, "mymaster"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sentinelwatch_names),
    };
    return cmocka_run_group_tests_name("sentinelwatch", tests, NULL, NULL);
}
