/*
 * form.h - application/x-www-form-urlencoded bodies (the POST /users body): "a=1&b=2" with
 * '+' as space and %XX escapes. The caller names the fields it wants; each must appear at most
 * once; other fields are ignored (but must still be well encoded). Pure, thread-safe.
 */
#ifndef FORM_H
#define FORM_H

#include <stdbool.h>
#include <stddef.h>

struct http_form_field {
    const char *name; /* in: the field name, NUL-terminated */
    char *out;        /* in: where the decoded value goes (NUL-terminated on success) */
    size_t cap;       /* in: size of out, including room for the NUL */
    size_t len;       /* out: decoded length */
    bool found;       /* out: the field was present */
};

/*
 * Parses body[0..len) and fills the fields. Returns 0, or -1 with a static reason in *why:
 * bad %-escape, a field repeated, a value longer than cap - 1, a pair without '='.
 * Empty pairs ("a=1&&b=2") are skipped. A missing field is not an error: check .found.
 */
int http_form_parse(const char *body, size_t len, struct http_form_field *fields, size_t nfields,
                    const char **why);

/*
 * Decodes one form component (%XX and '+'). Returns the decoded length, or -1 on a bad escape
 * or if the result does not fit in cap bytes. No NUL terminator is added.
 */
long http_form_decode(const char *in, size_t len, char *out, size_t cap);

/* True if the Content-Type value names application/x-www-form-urlencoded (parameters allowed). */
bool http_form_is_urlencoded(const char *ctype, size_t len);

#endif /* FORM_H */
