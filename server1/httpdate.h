/*
 * httpdate.h - HTTP dates (RFC 9110 section 5.6.7) for Date, Last-Modified and
 * If-Modified-Since: seconds since the epoch (UTC) to IMF-fixdate and back.
 *
 * Rules: we always send IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"). We accept exactly the
 * three forms a recipient must accept - IMF-fixdate, obsolete RFC 850 ("Sunday, 06-Nov-94
 * 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37 1994") - and nothing else: names are
 * case-sensitive as in the grammar, single spaces only, no leading or trailing bytes (the caller
 * strips OWS). The day name must be one of the seven valid names for that form but need not
 * match the date (RFC 9110 asks recipients to be lenient there). Fields must be in range for the
 * actual month and year (Feb 29 only in leap years); seconds are 00-59, as a leap second ":60"
 * has no value in seconds since the epoch. Years are 0000-9999 (proleptic Gregorian).
 *
 * Pure and thread-safe, no locale, no allocation; a struct httpdate_cache belongs to one thread.
 */
#ifndef HTTPDATE_H
#define HTTPDATE_H

#include <stddef.h>
#include <stdint.h>

#define HTTPDATE_LEN 29                    /* strlen("Sun, 06 Nov 1994 08:49:37 GMT") */
#define HTTPDATE_MIN INT64_C(-62167219200) /* 0000-01-01 00:00:00 UTC */
#define HTTPDATE_MAX INT64_C(253402300799) /* 9999-12-31 23:59:59 UTC */

/*
 * Writes t (seconds since the epoch, UTC) as IMF-fixdate into out, NUL-terminated, and returns
 * HTTPDATE_LEN. t outside [HTTPDATE_MIN, HTTPDATE_MAX] is clamped to that range, so the output
 * always has a four-digit year. Never writes more than HTTPDATE_LEN + 1 bytes.
 */
size_t httpdate_format(int64_t t, char out[HTTPDATE_LEN + 1]);

/*
 * Parses s[0..len) (need not be NUL-terminated) in one of the three forms above. On success
 * stores the time in *out and returns 0; otherwise returns -1 and leaves *out alone.
 * now (seconds since the epoch, clamped like t above) resolves the two-digit year of the RFC 850
 * form: the year is the latest one with those last two digits that puts the timestamp at most 50
 * years after now (RFC 9110: a date "more than 50 years in the future" is in the past). A year
 * that falls outside 0000-9999 that way is rejected.
 */
int httpdate_parse(const char *s, size_t len, int64_t now, int64_t *out);

/*
 * A per-thread cache of the Date header value: formats only when the second changes. Owned by
 * one thread (no locking); text always holds httpdate_format(sec).
 */
struct httpdate_cache {
    int64_t sec;                 /* the second that text shows */
    char text[HTTPDATE_LEN + 1]; /* IMF-fixdate of sec, NUL-terminated */
};

/* Sets sec to -1 (and text to its date), so the first httpdate_cached call formats. */
void httpdate_cache_init(struct httpdate_cache *c);

/*
 * Returns the IMF-fixdate of now_sec, reformatting only if now_sec differs from the cached
 * second. The pointer is c->text: valid until the next call on c.
 */
const char *httpdate_cached(struct httpdate_cache *c, int64_t now_sec);

#endif /* HTTPDATE_H */
