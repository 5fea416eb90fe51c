/*
 * mimetypes.c - see mimetypes.h. Types and extensions live in one string pool; a slot holds the
 * extension's hash and the pool offsets of the extension and its type (offset 0 = free slot).
 */
#include "mimetypes.h"

#include "compat.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mimetypes_slot {
    uint32_t hash; /* low 32 bits of FNV-1a of the lowercased extension */
    uint32_t ext;  /* pool offset of the lowercased extension; 0 = free */
    uint32_t type; /* pool offset of its type */
};

#define MIN_CAP 16

/* mime.types text for mimetypes_init_builtin */
static const char builtin_table[] = "text/html                 html htm\n"
                                    "text/css                  css\n"
                                    "text/javascript           js mjs\n"
                                    "application/json          json\n"
                                    "text/plain                txt\n"
                                    "application/xml           xml\n"
                                    "image/svg+xml             svg\n"
                                    "image/png                 png\n"
                                    "image/jpeg                jpg jpeg\n"
                                    "image/gif                 gif\n"
                                    "image/webp                webp\n"
                                    "image/vnd.microsoft.icon  ico\n"
                                    "application/pdf           pdf\n"
                                    "application/wasm          wasm\n"
                                    "video/mp4                 mp4\n"
                                    "video/webm                webm\n"
                                    "audio/mpeg                mp3\n"
                                    "audio/ogg                 ogg\n"
                                    "application/zip           zip\n"
                                    "application/gzip          gz\n"
                                    "application/x-tar         tar\n"
                                    "text/csv                  csv\n"
                                    "text/markdown             md\n";

PRINTF_FMT(3, 4)
static void set_err(char *err, size_t errcap, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errcap == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errcap, fmt, ap);
    va_end(ap);
}

/* RFC 9110 tchar */
static bool is_tchar(unsigned char c)
{
    static const char punct[] = "!#$%&'*+-.^_`|~";

    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c != '\0' && memchr(punct, c, sizeof(punct) - 1) != NULL;
}

static bool is_token(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!is_tchar((unsigned char)s[i]))
            return false;
    }
    return true;
}

static bool is_type(const char *s, size_t len)
{
    const char *slash = memchr(s, '/', len);
    size_t left;

    if (len > MIMETYPES_TYPE_MAX || slash == NULL)
        return false;
    left = (size_t)(slash - s);
    return is_token(s, left) && is_token(slash + 1, len - left - 1);
}

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c + ('a' - 'A')) : c;
}

static uint32_t hash_ext(const char *lower, size_t len)
{
    return (uint32_t)fnv1a64(lower, len);
}

/* The empty table: no slots, a pool holding only the NUL at offset 0. */
static void init_empty(struct mimetypes *m)
{
    memset(m, 0, sizeof(*m));
    m->_pool_cap = 256;
    m->_pool = xmalloc(m->_pool_cap);
    m->_pool[0] = '\0';
    m->_pool_len = 1;
}

/* Appends s[0..len) and a NUL to the pool; returns its offset. */
static uint32_t pool_add(struct mimetypes *m, const char *s, size_t len)
{
    size_t off = m->_pool_len;

    if (m->_pool_len + len + 1 > m->_pool_cap) {
        while (m->_pool_len + len + 1 > m->_pool_cap)
            m->_pool_cap *= 2;
        m->_pool = xrealloc(m->_pool, m->_pool_cap);
    }
    memcpy(m->_pool + off, s, len);
    m->_pool[off + len] = '\0';
    m->_pool_len += len + 1;
    return (uint32_t)off; /* at most MIMETYPES_MAX_EXT * (EXT_MAX + TYPE_MAX + 2) bytes */
}

/* The slot holding lower[0..len) with that hash, or the free slot where it would go. */
static struct mimetypes_slot *find_slot(const struct mimetypes *m, const char *lower, size_t len,
                                        uint32_t hash)
{
    size_t mask = m->_cap - 1;

    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        struct mimetypes_slot *s = &m->_slots[i];
        const char *ext = m->_pool + s->ext;

        if (s->ext == 0)
            return s;
        if (s->hash == hash && memcmp(ext, lower, len) == 0 && ext[len] == '\0')
            return s;
    }
}

/* Doubles the table (or creates it) so that it stays at most half full. */
static void grow(struct mimetypes *m)
{
    struct mimetypes_slot *old = m->_slots;
    size_t old_cap = m->_cap;

    m->_cap = old_cap ? old_cap * 2 : MIN_CAP;
    m->_slots = xcalloc(m->_cap, sizeof(*m->_slots));
    for (size_t i = 0; i < old_cap; i++) {
        size_t mask = m->_cap - 1;
        size_t j = old[i].hash & mask;

        if (old[i].ext == 0)
            continue;
        while (m->_slots[j].ext != 0)
            j = (j + 1) & mask;
        m->_slots[j] = old[i];
    }
    free(old);
}

/*
 * Adds one extension token for type[0..type_len), storing the type in the pool on first use
 * (*type_off 0 = not yet). Returns -1 only when the table is full.
 */
static int add_ext(struct mimetypes *m, const char *tok, size_t len, const char *type,
                   size_t type_len, uint32_t *type_off)
{
    char lower[MIMETYPES_EXT_MAX];
    struct mimetypes_slot *slot;
    uint32_t hash;

    if (len > MIMETYPES_EXT_MAX || !is_token(tok, len)) {
        m->skipped++;
        return 0;
    }
    if (memchr(tok, '.', len) != NULL) {
        m->unreachable++;
        return 0;
    }
    for (size_t i = 0; i < len; i++)
        lower[i] = ascii_lower(tok[i]);
    hash = hash_ext(lower, len);
    if (m->_cap != 0) {
        slot = find_slot(m, lower, len, hash);
        if (slot->ext != 0) {
            m->duplicates++;
            return 0;
        }
    }
    if (m->count == MIMETYPES_MAX_EXT)
        return -1;
    if ((m->count + 1) * 2 > m->_cap)
        grow(m);
    if (*type_off == 0)
        *type_off = pool_add(m, type, type_len);
    slot = find_slot(m, lower, len, hash);
    slot->hash = hash;
    slot->ext = pool_add(m, lower, len);
    slot->type = *type_off;
    m->count++;
    return 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* One line without its '\n'. Returns -1 only when the table is full. */
static int load_line(struct mimetypes *m, const char *line, size_t len)
{
    const char *type = NULL;
    size_t type_len = 0;
    uint32_t type_off = 0;
    size_t i = 0;

    while (i < len) {
        size_t start;

        while (i < len && is_space(line[i]))
            i++;
        if (i == len || line[i] == '#')
            break;
        start = i;
        while (i < len && !is_space(line[i]))
            i++;
        if (type == NULL) {
            type = line + start;
            type_len = i - start;
            if (!is_type(type, type_len)) {
                m->skipped++;
                break;
            }
        } else if (add_ext(m, line + start, i - start, type, type_len, &type_off) < 0) {
            return -1;
        }
    }
    return 0;
}

int mimetypes_load_buffer(struct mimetypes *m, const char *text, size_t len, char *err,
                          size_t errcap)
{
    size_t pos = 0;
    size_t lineno = 0;

    init_empty(m);
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t line_len = nl ? (size_t)(nl - (text + pos)) : len - pos;

        lineno++;
        if (load_line(m, text + pos, line_len) < 0) {
            set_err(err, errcap, "line %zu: more than %d extensions", lineno, MIMETYPES_MAX_EXT);
            mimetypes_release(m);
            init_empty(m);
            return -1;
        }
        pos += line_len + (nl ? 1 : 0);
    }
    return 0;
}

int mimetypes_load_file(struct mimetypes *m, const char *path, char *err, size_t errcap)
{
    char ebuf[128];
    char why[128];
    char *buf = NULL;
    size_t len = 0;
    int fd;

    init_empty(m);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errcap, "cannot open '%s': %s", path, strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    buf = xmalloc(MIMETYPES_FILE_MAX + 1);
    while (len <= MIMETYPES_FILE_MAX) {
        ssize_t n = read(fd, buf + len, MIMETYPES_FILE_MAX + 1 - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            set_err(err, errcap, "cannot read '%s': %s", path,
                    strerror_r(errno, ebuf, sizeof(ebuf)));
            goto err_close;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > MIMETYPES_FILE_MAX) {
        set_err(err, errcap, "'%s' is larger than %d bytes", path, MIMETYPES_FILE_MAX);
        goto err_close;
    }
    if (close(fd) < 0) {
        set_err(err, errcap, "cannot close '%s': %s", path, strerror_r(errno, ebuf, sizeof(ebuf)));
        goto err_free_buf;
    }
    mimetypes_release(m);
    if (mimetypes_load_buffer(m, buf, len, why, sizeof(why)) < 0) {
        set_err(err, errcap, "'%s': %s", path, why);
        goto err_free_buf;
    }
    free(buf);
    return 0;

err_close:
    close(fd); /* already failing; the first error is the one to report */
err_free_buf:
    free(buf);
    return -1;
}

void mimetypes_init_builtin(struct mimetypes *m)
{
    char err[64];

    if (mimetypes_load_buffer(m, builtin_table, sizeof(builtin_table) - 1, err, sizeof(err)) < 0)
        abort(); /* cannot happen: the table is far below every limit */
}

const char *mimetypes_lookup(const struct mimetypes *m, const char *name, size_t len)
{
    char lower[MIMETYPES_EXT_MAX];
    const struct mimetypes_slot *slot;
    size_t dot = len;
    size_t seg = 0;
    size_t ext_len;

    for (size_t i = len; i > 0; i--) {
        if (name[i - 1] == '/') {
            seg = i;
            break;
        }
        if (name[i - 1] == '.' && dot == len)
            dot = i - 1;
    }
    if (dot == len || dot == seg || m->_cap == 0)
        return NULL; /* no '.', or a dot-file's only one */
    ext_len = len - dot - 1;
    if (ext_len == 0 || ext_len > MIMETYPES_EXT_MAX)
        return NULL;
    for (size_t i = 0; i < ext_len; i++)
        lower[i] = ascii_lower(name[dot + 1 + i]);
    slot = find_slot(m, lower, ext_len, hash_ext(lower, ext_len));
    return slot->ext != 0 ? m->_pool + slot->type : NULL;
}

void mimetypes_release(struct mimetypes *m)
{
    free(m->_slots);
    free(m->_pool);
    memset(m, 0, sizeof(*m));
}

bool mimetypes_is_active(const char *type)
{
    static const char *const exact[] = {
        "text/html", "text/xsl", "text/x-component", "multipart/x-mixed-replace",
        "application/x-shockwave-flash", "application/futuresplash",
    };
    char t[MIMETYPES_TYPE_MAX + 1];
    const char *sub;
    size_t n = 0, sublen;

    /* the essence, lowercased: up to a parameter or whitespace */
    while (type[n] != '\0' && type[n] != ';' && type[n] != ' ' && type[n] != '\t') {
        if (n == MIMETYPES_TYPE_MAX)
            return true;
        t[n] = (char)(type[n] >= 'A' && type[n] <= 'Z' ? type[n] - 'A' + 'a' : type[n]);
        n++;
    }
    t[n] = '\0';
    sub = memchr(t, '/', n);
    if (sub == NULL || sub == t || sub == t + n - 1)
        return true;
    sub++;
    sublen = (size_t)(t + n - sub);
    for (size_t i = 0; i < ARRAY_SIZE(exact); i++) {
        if (strcmp(t, exact[i]) == 0)
            return true;
    }
    return strcmp(sub, "xml") == 0 || (sublen >= 4 && strcmp(sub + sublen - 4, "+xml") == 0) ||
           strstr(sub, "javascript") != NULL || strstr(sub, "ecmascript") != NULL ||
           strstr(sub, "vbscript") != NULL;
}
