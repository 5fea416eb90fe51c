/*
 * testdata.h - a unit test's captured sample: tests/unit/data/NAME read into a static buffer,
 * relative to the working directory (the repository root, as the Makefile runs tests), else
 * relative to the test's executable (build/VARIANT/tests/); a missing sample fails the test.
 * Header only, for the tests that read samples; include it after <cmocka.h> and "procstat.h".
 */
#ifndef TESTDATA_H
#define TESTDATA_H

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

static char testdata_text[65536];

static const char *sample(const char *name)
{
    char path[PATH_MAX + 64];
    char exe[PATH_MAX];
    ssize_t n;

    snprintf(path, sizeof(path), "tests/unit/data/%s", name);
    if (procstat_read_file(path, testdata_text, sizeof(testdata_text)) >= 0)
        return testdata_text;
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        snprintf(path, sizeof(path), "%s/../../../../tests/unit/data/%s", dirname(exe), name);
        if (procstat_read_file(path, testdata_text, sizeof(testdata_text)) >= 0)
            return testdata_text;
    }
    fail_msg("cannot read sample '%s': errno %d", name, errno);
    return NULL;
}

#endif /* TESTDATA_H */
