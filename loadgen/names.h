/*
 * names.h - the set of names (--names) each request's path draws one of: a file of names, one
 * a line, kept in one arena with one offset per name; or a pattern whose numbered fields are
 * the digits of the name's index in a mixed radix, so that millions of names cost no memory.
 * Pure parsing and formatting, no sockets; which name a request gets is pick.h's draw.
 *
 * A names file: one name a line; blank lines and lines whose first non-blank is '#' are
 * skipped; a line may end with "\r\n"; leading and trailing blanks are not part of the name.
 * A name is visible ASCII (0x21-0x7e), at most LG_NAME_LEN_MAX bytes; at most
 * LG_NAMES_FILE_MAX names and LG_NAMES_BYTES_MAX bytes of file.
 *
 * A pattern: text with numbered fields {A..B} (bash's brace sequence): the values A to B, zero
 * padded to the wider of A and B when either is written with a leading zero ({00..99}: 00 to
 * 99; {0..99}: 0 to 99). Name i (0-based) takes the fields' values as the digits of i, the last
 * field fastest: d{00..99}/f{00..99} is d00/f00, d00/f01, ... d00/f99, d01/f00, ...; N is the
 * product of the fields' sizes (at most LG_NAMES_PATTERN_MAX). At most LG_NAMES_FIELDS_MAX
 * fields of at most 9 digits; the text is visible ASCII without '{' and '}' outside fields.
 * An argument that contains '{' is a pattern, any other one a file.
 *
 * Names are percent-encoded once, when loaded: every byte but the RFC 3986 pchar set
 * (A-Z a-z 0-9 - . _ ~ ! $ & ' ( ) * + , ; = : @) and '/' becomes %XX, so a name is a path
 * (or part of one) as it is.
 *
 * DESIGN: a struct lg_names is built by lg_config_validate before any thread starts and is
 * immutable afterwards; lg_names_get is thread-safe.
 */
#ifndef LG_NAMES_H
#define LG_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LG_NAMES_ERR_LEN 512
#define LG_NAME_SLOT "{name}"               /* where a path takes the name */
#define LG_NAME_LEN_MAX 1024                 /* bytes of a name as written (3 x that encoded) */
#define LG_NAMES_FILE_MAX 100000000          /* names in a --names file */
#define LG_NAMES_BYTES_MAX (2ull << 30)      /* bytes of a --names file, and of its arena */
#define LG_NAMES_FIELDS_MAX 8                /* {A..B} fields in a pattern */
#define LG_NAMES_PATTERN_MAX 1000000000000000ull /* names of a pattern (10^15) */
#define LG_NAMES_PATTERN_LEN 1024            /* bytes of a pattern */
#define LG_NAMES_SOURCE_MAX 1024             /* bytes of --names's argument, file or pattern */

enum lg_names_kind {
    LG_NAMES_NONE = 0,    /* no --names */
    LG_NAMES_FILE = 1,    /* a file of names */
    LG_NAMES_PATTERN = 2, /* a pattern with {A..B} fields */
};

struct lg_names_field {
    uint32_t lit_off; /* the encoded text before the field: lit[lit_off..lit_off+lit_len) */
    uint32_t lit_len;
    uint64_t lo;    /* first value */
    uint64_t count; /* values: B - A + 1 */
    unsigned width; /* zero-padded to this many digits (0: no padding) */
};

struct lg_names {
    enum lg_names_kind kind;
    uint64_t n;     /* names: 1..LG_NAMES_FILE_MAX or 1..LG_NAMES_PATTERN_MAX */
    size_t len_max; /* bytes of the longest name, encoded */
    /* LG_NAMES_FILE: name i is arena[off[i]..off[i + 1]) */
    char *arena;  /* heap, owned */
    uint32_t *off; /* heap, owned: n + 1 offsets */
    /* LG_NAMES_PATTERN */
    char lit[LG_NAMES_PATTERN_LEN * 3 + 1]; /* the encoded text between the fields */
    struct lg_names_field field[LG_NAMES_FIELDS_MAX];
    unsigned nfields;
    uint32_t tail_off; /* the encoded text after the last field */
    uint32_t tail_len;
};

/* The bytes lg_names_encode writes for s[0..len): len plus 2 per byte that is encoded. */
size_t lg_names_encoded_len(const char *s, size_t len);
/* Percent-encodes s[0..len) as names are (see above) into out; returns the bytes written. */
size_t lg_names_encode(const char *s, size_t len, char *out);

/* Parses pattern pat into n (released first). 0, or -1 with err ("--names '...': why"). */
int lg_names_parse_pattern(struct lg_names *n, const char *pat, char *err);
/*
 * Parses the text of a names file (len bytes; name for errors) into n, with at most max_names
 * names (n is released first). text is taken over (freed, or kept as the arena). Every error
 * names "name:LINE". 0, or -1 with err.
 */
int lg_names_parse_text(struct lg_names *n, char *text, size_t len, const char *name,
                        uint64_t max_names, char *err);
/*
 * --names ARG into n (released first): a pattern when ARG contains '{', else a file read
 * whole (at most LG_NAMES_BYTES_MAX bytes, LG_NAMES_FILE_MAX names). 0, or -1 with err.
 */
int lg_names_load(struct lg_names *n, const char *arg, char *err);
/*
 * Writes name i (< n->n), encoded, into out (at least n->len_max bytes; not NUL-terminated)
 * and returns its length. Thread-safe.
 */
size_t lg_names_get(const struct lg_names *n, uint64_t i, char *out);
/* "file" or "pattern" (or "none"). */
const char *lg_names_kind_name(const struct lg_names *n);
void lg_names_release(struct lg_names *n);

#endif /* LG_NAMES_H */
