/*
 * fuzz_form.c - application/x-www-form-urlencoded bodies (server1/form), as POST /users reads
 * them. Properties: a value found fits its buffer and is NUL-terminated at its length; a field
 * decoded from a component never holds more bytes than the component; http_form_decode never
 * writes past cap; the Content-Type check never reads past its length.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../server1/form.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char user[65], pass[257], small[4];
    struct http_form_field f[3] = {
        {.name = "username", .out = user, .cap = sizeof(user)},
        {.name = "password", .out = pass, .cap = sizeof(pass)},
        {.name = "x", .out = small, .cap = sizeof(small)},
    };
    const char *why = NULL;
    char *copy;
    long n;

    if (http_form_parse((const char *)data, size, f, 3, &why) == 0) {
        for (int i = 0; i < 3; i++) {
            if (!f[i].found)
                continue;
            if (f[i].len >= f[i].cap || f[i].out[f[i].len] != '\0' || f[i].len > size)
                abort();
        }
    } else if (why == NULL) {
        abort();
    }

    /* one component, decoded into an exact-size heap buffer so ASan sees any overrun */
    copy = malloc(size + 1);
    if (copy == NULL)
        return 0;
    n = http_form_decode((const char *)data, size, copy, size);
    if (n > (long)size)
        abort();
    free(copy);
    (void)http_form_is_urlencoded((const char *)data, size);
    return 0;
}
