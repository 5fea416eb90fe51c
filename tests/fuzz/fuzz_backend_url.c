/*
 * fuzz_backend_url.c - server2's --backend URL parser (server2/backend_url). Properties: a URL is
 * accepted with every field NUL-terminated within its limit, or refused with a reason that never
 * holds the password; the password span found in any string (even a malformed one) is inside
 * it, and masking replaces exactly that span; the description for logs shows no password.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../server2/backend_url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* needle[0..n) occurs in hay (NUL-terminated) */
static int contains(const char *hay, const char *needle, size_t n)
{
    size_t hl = strlen(hay);
    for (size_t i = 0; n > 0 && i + n <= hl; i++)
        if (memcmp(hay + i, needle, n) == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[1200], err[BACKEND_URL_ERR_LEN], masked[1400], desc[1400];
    struct backend_url u;
    size_t off = 0, len = 0;
    bool has_span;

    if (size >= sizeof(s))
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size = strlen(s);

    has_span = backend_url_password_span(s, &off, &len);
    if (has_span && (off > size || len > size - off))
        abort();
    backend_url_mask(s, masked, sizeof(masked));
    if (has_span) {
        if (strncmp(masked, s, off) != 0 || strncmp(masked + off, "***", 3) != 0 ||
            strcmp(masked + off + 3, s + off + len) != 0)
            abort(); /* masking changed something else, or missed the password */
    } else if (strcmp(masked, s) != 0) {
        abort();
    }

    memset(err, 0, sizeof(err));
    if (backend_url_parse(s, &u, err) != 0) {
        if (err[0] == '\0' || memchr(err, '\0', sizeof(err)) == NULL)
            abort();
        /* the password is never in a reason: where the reason holds the password's text, the
         * same URL with every letter and digit of the password shifted must give a reason
         * without the shifted text (else the message echoes the password) */
        if (has_span && len >= 4 && contains(err, s + off, len)) {
            char s2[sizeof(s)], err2[BACKEND_URL_ERR_LEN];
            struct backend_url u2;
            bool changed = false;
            memcpy(s2, s, size + 1);
            for (size_t i = off; i < off + len; i++) {
                char c = s2[i];
                if ((c >= 'a' && c < 'z') || (c >= 'A' && c < 'Z') || (c >= '0' && c < '9'))
                    s2[i] = (char)(c + 1), changed = true;
            }
            memset(err2, 0, sizeof(err2));
            if (changed && backend_url_parse(s2, &u2, err2) != 0 && contains(err2, s2 + off, len))
                abort();
        }
        return 0;
    }
    if (strlen(u.host) > BACKEND_URL_HOST_MAX || strlen(u.socket) > BACKEND_URL_SOCK_MAX ||
        strlen(u.user) > BACKEND_URL_USER_MAX || strlen(u.db) > BACKEND_URL_DB_MAX ||
        strlen(u.password) > BACKEND_URL_PASS_MAX)
        abort();
    if (u.kind != BACKEND_REDIS && u.kind != BACKEND_MYSQL)
        abort();
    if (u.password[0] != '\0' && !has_span)
        abort(); /* a password the masking would not hide */
    /* describe never prints the password field: mark it with a byte no other field holds */
    {
        struct backend_url marked = u;
        size_t pl = strlen(marked.password);
        int mark = 1;
        while (mark < 256 && (memchr(u.host, mark, strlen(u.host)) != NULL ||
                              memchr(u.user, mark, strlen(u.user)) != NULL ||
                              memchr(u.db, mark, strlen(u.db)) != NULL ||
                              memchr(u.socket, mark, strlen(u.socket)) != NULL))
            mark++;
        if (mark < 256 && pl > 0) {
            memset(marked.password, mark, pl);
            backend_url_describe(&marked, desc, sizeof(desc));
            if (memchr(desc, mark, strlen(desc)) != NULL)
                abort();
        }
    }
    backend_url_wipe(&u);
    if (u.password[0] != '\0')
        abort();
    return 0;
}
