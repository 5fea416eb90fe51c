/*
 * fuzz_mimetypes.c - mime.types tables (server1/mimetypes): mimetypes_load_buffer on arbitrary
 * bytes, then lookups of names made from the input's own tokens. Properties: nothing crashes or
 * reads past its length (every buffer is an exact-size heap copy); every type returned is
 * non-empty and holds a '/'; lookups ignore ASCII case; a failed load leaves an empty table;
 * the counters stay within the limits; mimetypes_is_active of a type ignores case and
 * parameters.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../server1/mimetypes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LOOKUPS 32

static void check_type(const char *type)
{
    if (type != NULL && (type[0] == '\0' || strchr(type, '/') == NULL ||
                         strlen(type) > MIMETYPES_TYPE_MAX))
        abort();
    /* whether it is active does not depend on case or parameters */
    if (type != NULL && strlen(type) + 16 <= MIMETYPES_TYPE_MAX) {
        char with[MIMETYPES_TYPE_MAX + 1];
        char upper[MIMETYPES_TYPE_MAX + 1];
        size_t n = strlen(type);

        memcpy(with, type, n);
        memcpy(with + n, "; charset=utf-8", 16);
        for (size_t i = 0; i <= n; i++)
            upper[i] = type[i] >= 'a' && type[i] <= 'z' ? (char)(type[i] - 'a' + 'A') : type[i];
        if (mimetypes_is_active(type) != mimetypes_is_active(with) ||
            mimetypes_is_active(type) != mimetypes_is_active(upper))
            abort();
    }
}

/* Looks up "f." + tok and "F." + TOK (ASCII upper case): both give the same answer. */
static void lookup_token(const struct mimetypes *m, const char *tok, size_t len)
{
    char *lower = malloc(len + 2);
    char *upper = malloc(len + 2);
    const char *a;
    const char *b;

    if (lower == NULL || upper == NULL)
        goto out;
    memcpy(lower, "f.", 2);
    memcpy(upper, "F.", 2);
    for (size_t i = 0; i < len; i++) {
        char c = tok[i];
        lower[i + 2] = c;
        upper[i + 2] = c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
    }
    a = mimetypes_lookup(m, lower, len + 2);
    b = mimetypes_lookup(m, upper, len + 2);
    check_type(a);
    if (a != b)
        abort();
    check_type(mimetypes_lookup(m, tok, len)); /* the token as a whole name */
out:
    free(upper);
    free(lower);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mimetypes m;
    char err[64];
    char *text = malloc(size ? size : 1);
    size_t i = 0;
    int lookups = 0;
    int rc;

    if (text == NULL)
        return 0;
    if (size > 0)
        memcpy(text, data, size);
    rc = mimetypes_load_buffer(&m, text, size, err, sizeof(err));
    if (m.count > MIMETYPES_MAX_EXT || (rc < 0 && m.count != 0))
        abort();
    while (i < size && lookups < MAX_LOOKUPS) {
        size_t start;

        while (i < size && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n'))
            i++;
        start = i;
        while (i < size && text[i] != ' ' && text[i] != '\t' && text[i] != '\n')
            i++;
        if (i > start) {
            lookup_token(&m, text + start, i - start);
            lookups++;
        }
    }
    mimetypes_release(&m);
    free(text);
    return 0;
}
