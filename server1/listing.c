/*
 * listing.c - see listing.h. Two passes: the store's walk of the directory (store_list: its
 * uploads from the cursor on, at most max children, in order), then the operator's files
 * (the prefetch table, or the directory read from disk), each of which is left out if the
 * store has a word on its name (an upload or a deletion stands for it: one lookup); then one
 * sort. No lock is held while another is taken.
 */
#include "listing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pack.h"
#include "xalloc.h"

/* ---- gathering ---- */

struct gather {
    struct listing *l;
    const struct listing_scope *sc;
    struct committer *cm;            /* NULL: no upload store (--read-only) */
    char prefix[FILES_NAME_MAX + 2]; /* dir + "/", or "" for the root */
    size_t plen;
    bool found; /* something is listed beneath the directory, or it exists on disk */
};

/* Directories first, then by name, bytewise. */
static int entry_cmp(const void *pa, const void *pb)
{
    const struct listing_entry *a = pa, *b = pb;
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c;

    if (a->dir != b->dir)
        return a->dir ? -1 : 1;
    c = memcmp(a->name, b->name, n);
    if (c != 0)
        return c;
    return (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

/*
 * Sorts l, merges entries of the same name and kind (a directory seen from several names
 * beneath it, from the store and from disk: the known time wins), and cuts it to max.
 */
static void settle(struct listing *l)
{
    size_t k = 0;

    if (l->n > 0)
        qsort(l->e, l->n, sizeof(*l->e), entry_cmp);
    for (size_t i = 0; i < l->n; i++) {
        if (k > 0 && entry_cmp(&l->e[k - 1], &l->e[i]) == 0) {
            if (l->e[i].mtime_s > l->e[k - 1].mtime_s)
                l->e[k - 1].mtime_s = l->e[i].mtime_s;
            free(l->e[i].name);
            continue;
        }
        l->e[k++] = l->e[i];
    }
    l->n = k;
    if (l->n > l->max) {
        for (size_t i = l->max; i < l->n; i++)
            free(l->e[i].name);
        l->n = l->max;
        l->truncated = true;
    }
}

static void add(struct listing *l, const char *name, size_t len, bool dir, uint64_t size,
                int64_t mtime_s)
{
    struct listing_entry *e;

    if (l->n == l->cap) {
        if (l->cap >= 2 * l->max)
            settle(l); /* back to max at most */
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 64;
            if (l->cap > 2 * l->max)
                l->cap = 2 * l->max;
            l->e = xrealloc(l->e, l->cap * sizeof(*l->e));
        }
    }
    e = &l->e[l->n++];
    e->name = xmalloc(len + 1);
    memcpy(e->name, name, len);
    e->name[len] = '\0';
    e->name_len = len;
    e->dir = dir;
    e->size = size;
    e->mtime_s = mtime_s;
}

/*
 * A name beneath the directory (full: relative to the root, starting with the prefix): its
 * direct child there, a directory if more follows. False if full is not beneath it.
 */
static bool child_of(const struct gather *g, const char *full, size_t len, const char **child,
                     size_t *clen, bool *dir)
{
    const char *rest = full + g->plen;
    const char *slash;

    if (len <= g->plen || memcmp(full, g->prefix, g->plen) != 0)
        return false;
    slash = memchr(rest, '/', len - g->plen);
    *child = rest;
    *clen = slash != NULL ? (size_t)(slash - rest) : len - g->plen;
    *dir = slash != NULL;
    return true;
}

/* Whether an entry comes after the cursor in the listing's order (always, without one). */
static bool after_cursor(const struct gather *g, const char *name, size_t len, bool dir)
{
    const struct listing_scope *sc = g->sc;
    struct listing_entry a = {.name = (char *)sc->after, .name_len = sc->after_len,
                              .dir = sc->after_dir};
    struct listing_entry e = {.name = (char *)name, .name_len = len, .dir = dir};

    return sc->after == NULL || entry_cmp(&e, &a) > 0;
}

/* A child the store's walk found: shown (true) if it may be. */
static bool on_upload(void *arg, const struct store_child *c)
{
    struct gather *g = arg;
    const struct store_found *f = c->f;

    if (!files_name_valid(c->full, c->full_len))
        return false;
    if (g->sc->private_uploads && f->owner[0] != '\0' && strcmp(f->owner, g->sc->user) != 0)
        return false; /* another account's: a GET of it is 404 */
    add(g->l, c->name, c->len, c->dir, c->dir ? 0 : f->size,
        c->dir || f->version == 0 ? -1 : (int64_t)(f->version / 1000000000u));
    g->found = true;
    return true;
}

/*
 * Whether the store has a word on the file full (len bytes: the directory's prefix and a
 * child's name): an upload or a deletion stands for the operator's file of that name.
 */
static bool shadowed(const struct gather *g, const char *full, size_t len)
{
    return g->cm != NULL && store_lookup(&g->cm->store, full, len, false, NULL) != STORE_ABSENT;
}

/* The store's walk of the directory for owner (see store_list), into the listing. */
static int walk_uploads(struct gather *g, const char *owner)
{
    const struct listing_scope *sc = g->sc;
    struct store_list_req rq = {.dir = sc->dir,
                                .dir_len = sc->dir_len,
                                .owner = owner,
                                .after = sc->after,
                                .after_len = sc->after_len,
                                .after_dir = sc->after_dir,
                                .max = g->l->max};
    struct store_list_result res;
    int rc = store_list(&g->cm->store, &rq, on_upload, g, &res);

    if (rc < 0)
        return rc;
    if (res.exists)
        g->found = true;
    if (res.more)
        g->l->truncated = true;
    g->l->visited += res.visited;
    return 0;
}

static void on_prefetched(void *arg, const char *name, size_t len, const struct files_blob *b)
{
    struct gather *g = arg;
    const char *child;
    size_t clen;
    bool dir;

    if (!child_of(g, name, len, &child, &clen, &dir) || clen > FILES_SEGMENT_MAX ||
        !files_name_valid(name, len))
        return;
    if (!dir && shadowed(g, name, len))
        return;
    g->found = true; /* (before the cursor or not: the directory exists) */
    if (!after_cursor(g, child, clen, dir))
        return;
    add(g->l, child, clen, dir, dir ? 0 : b->size,
        dir || b->mtime_ns < 0 ? -1 : b->mtime_ns / 1000000000);
}

/*
 * The children of the directory from the pack (--pack), as from the prefetch table: files,
 * and directories a file lies beneath (with no time). The names beneath the directory are
 * contiguous in the pack's order; after a subdirectory's first name the walk seeks past all
 * of its names ("sub/" is followed by "sub0": '/' + 1), so it costs a lookup per child, not
 * a read of every name beneath. -EIO for a damaged index.
 */
static int read_pack(struct gather *g, const struct pack *p)
{
    struct pack_iter *it = xmalloc(sizeof(*it));
    char key[FILES_NAME_MAX + 2];
    struct pack_entry e;
    const char *child;
    size_t clen;
    bool dir;
    int rc;

    pack_iter_seek(it, p, g->prefix, g->plen);
    while (pack_iter_next(it, &e) && child_of(g, it->name, it->name_len, &child, &clen, &dir)) {
        size_t klen = g->plen + clen;
        if (clen <= FILES_SEGMENT_MAX && files_name_valid(it->name, it->name_len)) {
            g->found = true;
            if (dir ? after_cursor(g, child, clen, true)
                    : after_cursor(g, child, clen, false) &&
                          !shadowed(g, it->name, it->name_len))
                add(g->l, child, clen, dir, dir ? 0 : e.size, dir ? -1 : e.mtime_s);
        }
        if (dir) {
            memcpy(key, it->name, klen);
            key[klen] = '/' + 1;
            pack_iter_seek(it, p, key, klen + 1);
        }
    }
    rc = it->failed ? -EIO : 0;
    free(it);
    return rc;
}

/*
 * One entry of the directory on disk (dfd): a file or a directory, a symlink as what it leads
 * to if that is beneath the root and not in the upload store.
 */
static void on_disk_entry(struct gather *g, struct files *f, int dfd, const char *d_name)
{
    size_t clen = strlen(d_name);
    char full[FILES_NAME_MAX + FILES_SEGMENT_MAX + 2];
    struct stat st;

    if (g->plen + clen > FILES_NAME_MAX)
        return;
    memcpy(full, g->prefix, g->plen);
    memcpy(full + g->plen, d_name, clen + 1);
    if (!files_name_valid(full, g->plen + clen))
        return;
    if (fstatat(dfd, d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    if (S_ISLNK(st.st_mode)) {
        int fd = files_open(f, full, false);
        bool ok = fd >= 0 && fstat(fd, &st) == 0;
        if (fd >= 0)
            close(fd);
        if (!ok)
            return; /* leads outside the root, into the store, or nowhere */
    }
    if (S_ISDIR(st.st_mode) && after_cursor(g, d_name, clen, true))
        add(g->l, d_name, clen, true, 0, (int64_t)st.st_mtim.tv_sec);
    else if (S_ISREG(st.st_mode) && after_cursor(g, d_name, clen, false) &&
             !shadowed(g, full, g->plen + clen))
        add(g->l, d_name, clen, false, (uint64_t)st.st_size, (int64_t)st.st_mtim.tv_sec);
}

static int read_disk(struct gather *g, struct files *f)
{
    char dir[FILES_NAME_MAX + 1];
    struct dirent *de;
    DIR *d;
    int fd;

    memcpy(dir, g->sc->dir, g->sc->dir_len);
    dir[g->sc->dir_len] = '\0';
    fd = files_open_dir(f, dir);
    if (fd < 0) {
        if (files_absent(fd))
            return 0; /* not on disk (maybe only uploads beneath it) */
        return fd;
    }
    d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        return -e;
    }
    g->found = true;
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            on_disk_entry(g, f, dirfd(d), de->d_name);
        errno = 0;
    }
    fd = errno;
    closedir(d);
    return -fd;
}

/* g for sc into out: the prefix "DIR/" ("" for the root), found already for the root. */
static void gather_init(struct gather *g, struct committer *cm, const struct listing_scope *sc,
                        struct listing *out)
{
    *out = (struct listing){.max = sc->max > 0 ? sc->max : 1};
    g->l = out;
    g->sc = sc;
    if (sc->dir_len > 0) {
        memcpy(g->prefix, sc->dir, sc->dir_len);
        g->prefix[sc->dir_len] = '/';
        g->plen = sc->dir_len + 1;
    }
    g->cm = cm;
    g->found = sc->dir_len == 0;
}

/* The uploads beneath sc->dir into g (the user's own and the owner-less, or everyone's). */
static int gather_uploads(struct gather *g)
{
    const struct listing_scope *sc = g->sc;
    /* with the index by owner, a private listing reads its user's uploads and those without
     * an owner; else every owner's, the others' left out by on_upload */
    bool by_owner = sc->private_uploads && g->cm->store.by_owner;
    int rc = walk_uploads(g, by_owner ? sc->user : NULL);

    if (rc == 0 && by_owner && sc->user[0] != '\0')
        rc = walk_uploads(g, "");
    return rc;
}

int listing_build(struct files *f, struct committer *cm, const struct listing_scope *sc,
                  struct listing *out)
{
    struct gather *g = xcalloc(1, sizeof(*g));
    int rc = 0;

    gather_init(g, cm, sc, out);
    if (cm != NULL)
        rc = gather_uploads(g);
    if (rc == 0 && f->pack != NULL)
        rc = read_pack(g, f->pack);
    else if (rc == 0 && f->mode == FILES_PREFETCH)
        files_foreach(f, g->prefix, g->plen, on_prefetched, g);
    else if (rc == 0)
        rc = read_disk(g, f);
    if (rc == 0 && !g->found)
        rc = -ENOENT;
    settle(out);
    free(g);
    return rc;
}

int listing_dir_exists(struct files *f, struct committer *cm, const struct listing_scope *sc)
{
    struct gather *g = xcalloc(1, sizeof(*g));
    struct listing l;
    int rc = 0, found;

    gather_init(g, cm, sc, &l);
    l.max = 1;
    if (cm != NULL)
        rc = gather_uploads(g);
    if (rc == 0 && !g->found) {
        int d = f->pack != NULL ? pack_has_prefix(f->pack, g->prefix, g->plen)
                                : files_dir_exists(f, sc->dir, sc->dir_len);
        if (d < 0)
            rc = d;
        else
            g->found = d == 1;
    }
    found = g->found;
    listing_free(&l);
    free(g);
    return rc < 0 ? rc : found;
}


void listing_free(struct listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->e[i].name);
    free(l->e);
    *l = (struct listing){0};
}

/* ---- the cursor ---- */

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int listing_after_parse(const char *query, size_t len, char *out, size_t cap, size_t *out_len,
                        bool *dir)
{
    const char *v = NULL;
    size_t vlen = 0, n = 0;

    *out_len = 0;
    *dir = false;
    for (size_t i = 0; query != NULL && i < len;) {
        const char *item = query + i;
        const char *amp = memchr(item, '&', len - i);
        size_t ilen = amp != NULL ? (size_t)(amp - item) : len - i;
        if (ilen >= 6 && memcmp(item, "after=", 6) == 0) {
            v = item + 6;
            vlen = ilen - 6;
            break;
        }
        i += ilen + 1;
    }
    if (v == NULL)
        return 0;
    for (size_t i = 0; i < vlen; i++) {
        int c = (unsigned char)v[i];
        if (c == '%') {
            int hi = i + 2 < vlen ? hex_val(v[i + 1]) : -1;
            int lo = i + 2 < vlen ? hex_val(v[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return -1;
            c = hi << 4 | lo;
            i += 2;
        }
        if (c == '\0' || n + 1 >= cap)
            return -1;
        out[n++] = (char)c;
    }
    *dir = n > 0 && out[n - 1] == '/';
    if (*dir)
        n--;
    if (n == 0 || n > FILES_SEGMENT_MAX || memchr(out, '/', n) != NULL)
        return -1;
    out[n] = '\0';
    *out_len = n;
    return 1;
}

/* ---- Accept ---- */

/* A qvalue (RFC 9110 12.4.2: 0, 0.xxx, 1, 1.000); -1 if it is none. */
static int qvalue_milli(const char *p, size_t n)
{
    int q, scale = 100;

    if (n == 0 || (p[0] != '0' && p[0] != '1') || (n > 1 && p[1] != '.') || n > 5)
        return -1;
    q = (p[0] - '0') * 1000;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        q += (p[i] - '0') * scale;
    }
    return q <= 1000 ? q : -1;
}

static bool token_is(const char *p, size_t n, const char *lit)
{
    return strlen(lit) == n && strncasecmp(p, lit, n) == 0;
}

static size_t trim(const char **p, size_t n)
{
    while (n > 0 && (**p == ' ' || **p == '\t')) {
        (*p)++;
        n--;
    }
    while (n > 0 && ((*p)[n - 1] == ' ' || (*p)[n - 1] == '\t'))
        n--;
    return n;
}

bool listing_wants_html(const char *accept, size_t len)
{
    int q_html = -1, q_json = -1;
    size_t i = 0;

    while (accept != NULL && i < len) {
        const char *item = accept + i;
        const char *end = memchr(item, ',', len - i);
        size_t n = end != NULL ? (size_t)(end - item) : len - i;
        const char *semi = memchr(item, ';', n);
        const char *type = item;
        size_t tn = trim(&type, semi != NULL ? (size_t)(semi - item) : n);
        int q = 1000;

        i += n + 1;
        /* parameters: only q matters */
        while (semi != NULL) {
            const char *par = semi + 1;
            size_t left = n - (size_t)(par - item);
            const char *next = memchr(par, ';', left);
            size_t pn = trim(&par, next != NULL ? (size_t)(next - par) : left);
            if (pn >= 2 && (par[0] == 'q' || par[0] == 'Q') && par[1] == '=') {
                int v = qvalue_milli(par + 2, pn - 2);
                q = v >= 0 ? v : 0; /* an unreadable weight counts as "not acceptable" */
            }
            semi = next;
        }
        if (token_is(type, tn, "text/html") && q > q_html)
            q_html = q;
        else if (token_is(type, tn, "application/json") && q > q_json)
            q_json = q;
    }
    return q_html > 0 && q_html > q_json;
}

/* ---- rendering ---- */

/* Length of the valid UTF-8 sequence at p (n bytes left), or 0 if none starts there. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len;
    uint32_t cp;

    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        len = 2;
        cp = p[0] & 0x1f;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        len = 3;
        cp = p[0] & 0x0f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        len = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0; /* overlong, a surrogate, or beyond Unicode */
    return len;
}

enum esc { ESC_JSON, ESC_HTML };

/*
 * Text as a JSON string's contents or HTML text; bytes that are not UTF-8 become U+FFFD, as do
 * control characters in HTML.
 */
static void put_text(FILE *o, const char *s, size_t n, enum esc how)
{
    const unsigned char *p = (const unsigned char *)s;

    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(p + i, n - i);
        unsigned char c = p[i];

        if (k == 0 || (how == ESC_HTML && c < 0x20)) { /* (HTML text has no escape for them) */
            fputs(how == ESC_JSON ? "\\ufffd" : "\xef\xbf\xbd", o);
            i++;
            continue;
        }
        if (k > 1) {
            fwrite(p + i, 1, k, o);
        } else if (how == ESC_JSON && (c == '"' || c == '\\')) {
            fputc('\\', o);
            fputc(c, o);
        } else if (how == ESC_JSON && c < 0x20) {
            fprintf(o, "\\u%04x", c);
        } else if (how == ESC_HTML && (c == '&' || c == '<' || c == '>' || c == '"' ||
                                       c == '\'')) {
            fputs(c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" :
                  c == '"' ? "&quot;" : "&#39;", o);
        } else {
            fputc(c, o);
        }
        i += k;
    }
}

/* Percent-encodes all but the unreserved characters (RFC 3986 2.3), keeping '/' if keep_slash. */
static void put_href(FILE *o, const char *s, size_t n, bool keep_slash)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/'))
            fputc(c, o);
        else
            fprintf(o, "%%%02X", c);
    }
}

/* A UTC time: RFC 3339 (2026-01-02T03:04:05Z) if iso, else 2026-01-02 03:04:05. */
static void put_time(FILE *o, int64_t secs, bool iso)
{
    time_t t = (time_t)secs;
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL)
        return;
    fprintf(o, "%04d-%02d-%02d%c%02d:%02d:%02d%s", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
            iso ? 'T' : ' ', tm.tm_hour, tm.tm_min, tm.tm_sec, iso ? "Z" : "");
}

/* What write() puts into a stream, as a malloc'd string (*len bytes, NUL-terminated). */
static char *render(const struct listing *l, const char *dir, size_t dir_len, size_t *len,
                    void (*write)(FILE *o, const struct listing *l, const char *dir,
                                  size_t dir_len))
{
    char *buf = NULL;
    FILE *o = open_memstream(&buf, len);

    if (o == NULL)
        abort(); /* out of memory: as xmalloc */
    write(o, l, dir, dir_len);
    if (fclose(o) != 0) /* (which sets buf and *len) */
        abort();
    return buf;
}

static void write_json(FILE *o, const struct listing *l, const char *dir, size_t dir_len)
{
    fputs("{\"path\":\"/files/", o);
    put_text(o, dir, dir_len, ESC_JSON);
    fputs(dir_len > 0 ? "/\",\"entries\":[" : "\",\"entries\":[", o);
    for (size_t i = 0; i < l->n; i++) {
        const struct listing_entry *e = &l->e[i];
        fputs(i > 0 ? ",{\"name\":\"" : "{\"name\":\"", o);
        put_text(o, e->name, e->name_len, ESC_JSON);
        fputs("\",\"href\":\"", o);
        put_href(o, e->name, e->name_len, false);
        fputs(e->dir ? "/\",\"type\":\"directory\"" : "\",\"type\":\"file\"", o);
        if (!e->dir)
            fprintf(o, ",\"size\":%llu", (unsigned long long)e->size);
        if (e->mtime_s >= 0) {
            fputs(",\"mtime\":\"", o);
            put_time(o, e->mtime_s, true);
            fputc('"', o);
        }
        fputc('}', o);
    }
    fprintf(o, "],\"truncated\":%s", l->truncated ? "true" : "false");
    if (l->truncated && l->n > 0) {
        const struct listing_entry *e = &l->e[l->n - 1];
        fputs(",\"next\":\"?after=", o);
        put_href(o, e->name, e->name_len, false);
        fputs(e->dir ? "%2F\"" : "\"", o);
    }
    fputs("}\n", o);
}

static void write_html(FILE *o, const struct listing *l, const char *dir, size_t dir_len)
{
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of /files/", o);
    put_text(o, dir, dir_len, ESC_HTML);
    fputs(dir_len > 0 ? "/</title></head>\n<body>\n<h1>Index of /files/" :
                        "</title></head>\n<body>\n<h1>Index of /files/", o);
    put_text(o, dir, dir_len, ESC_HTML);
    fputs(dir_len > 0 ? "/</h1>\n" : "</h1>\n", o);
    fputs("<table>\n<tr><th>Name</th><th>Last modified (UTC)</th><th>Size</th></tr>\n", o);
    if (dir_len > 0)
        fputs("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n", o);
    for (size_t i = 0; i < l->n; i++) {
        const struct listing_entry *e = &l->e[i];
        fputs("<tr><td><a href=\"", o);
        put_href(o, e->name, e->name_len, false);
        fputs(e->dir ? "/\">" : "\">", o);
        put_text(o, e->name, e->name_len, ESC_HTML);
        fputs(e->dir ? "/</a></td><td>" : "</a></td><td>", o);
        if (e->mtime_s >= 0)
            put_time(o, e->mtime_s, false);
        if (e->dir)
            fputs("</td><td>-</td></tr>\n", o);
        else
            fprintf(o, "</td><td>%llu</td></tr>\n", (unsigned long long)e->size);
    }
    fputs("</table>\n", o);
    if (l->truncated && l->n > 0) {
        const struct listing_entry *e = &l->e[l->n - 1];
        fprintf(o, "<p>Only %zu entries are shown: <a href=\"?after=", l->n);
        put_href(o, e->name, e->name_len, false);
        fputs(e->dir ? "%2F\">next</a></p>\n" : "\">next</a></p>\n", o);
    } else if (l->truncated) {
        fprintf(o, "<p>Only the first %zu entries are shown.</p>\n", l->max);
    }
    fputs("</body></html>\n", o);
}

char *listing_json(const struct listing *l, const char *dir, size_t dir_len, size_t *len)
{
    return render(l, dir, dir_len, len, write_json);
}

char *listing_html(const struct listing *l, const char *dir, size_t dir_len, size_t *len)
{
    return render(l, dir, dir_len, len, write_html);
}

char *listing_dir_location(const char *dir, size_t dir_len, size_t *len)
{
    const char *seg = memrchr(dir, '/', dir_len);
    size_t off = seg != NULL ? (size_t)(seg + 1 - dir) : 0;
    char *out = NULL;
    FILE *o = open_memstream(&out, len);

    if (o == NULL)
        abort(); /* out of memory: as xmalloc */
    put_href(o, dir + off, dir_len - off, false);
    fputc('/', o);
    if (fclose(o) != 0)
        abort(); /* out of memory */
    return out;
}
