/*
 * pack.c - see pack.h. Integers are little-endian; variable-length ones are LEB128 (7 bits a
 * byte, at most 10 bytes), a signed delta zigzag-coded first. Every decode goes through a
 * cursor that refuses to read past its block's end.
 */
#include "pack.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <isa-l/crc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "compat.h"
#include "xalloc.h"

#define PACK_TABLE_ENTRY 16u /* a block table row: u64 body offset, u64 data offset */
#define PACK_INDEX_ALIGN 4096u

/* A growable byte array for the encoder. */
struct obuf {
    uint8_t *p;
    size_t len, cap;
};

static void ob_need(struct obuf *b, size_t n)
{
    if (b->len + n <= b->cap)
        return;
    while (b->len + n > b->cap)
        b->cap = b->cap ? b->cap * 2 : 4096;
    b->p = xrealloc(b->p, b->cap);
}

static void ob_bytes(struct obuf *b, const void *s, size_t n)
{
    if (n == 0)
        return;
    ob_need(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void ob_varint(struct obuf *b, uint64_t v)
{
    ob_need(b, LEB128_MAX);
    b->len += leb128_put(b->p + b->len, v);
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A bounded reader over [pos, end) of base. */
struct cur {
    const uint8_t *base;
    uint64_t pos, end;
    bool bad;
};

static uint64_t cur_varint(struct cur *c)
{
    uint64_t v = 0;
    size_t n = c->pos < c->end ? leb128_get(c->base + c->pos, c->end - c->pos, &v) : 0;

    if (n == 0)
        c->bad = true;
    c->pos += n;
    return v;
}

static const uint8_t *cur_bytes(struct cur *c, uint64_t n)
{
    const uint8_t *p;

    if (c->bad || n > c->end - c->pos) {
        c->bad = true;
        return NULL;
    }
    p = c->base + c->pos;
    c->pos += n;
    return p;
}

/* ---- checksums ---- */

uint32_t pack_crc32(uint32_t crc, const void *data, size_t len)
{
    return len > 0 ? crc32_gzip_refl(crc, (unsigned char *)data, (uint64_t)len) : crc;
}

uint64_t pack_index_id(const uint8_t *index, size_t len)
{
    uint32_t c = 0xffffffffu;

    /* crc32_iscsi takes an int length: fed in pieces */
    for (size_t o = 0; o < len;) {
        size_t n = len - o > (1u << 30) ? (1u << 30) : len - o;
        c = crc32_iscsi((unsigned char *)index + o, (int)n, c);
        o += n;
    }
    return (uint64_t)c << 32 | pack_crc32(0, index, len);
}

uint64_t pack_index_off(uint64_t data_len)
{
    return pack_round_up(PACK_HEADER_BYTES + data_len, PACK_INDEX_ALIGN);
}

/* ---- the encoder ---- */

static int errf(char *err, const char *fmt, ...) PRINTF_FMT(2, 3);
static int errf(char *err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, PACK_ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

/* name[0..len) for a message: at most 80 bytes of it, "..." after a cut. */
static const char *shown(const char *name, size_t len, char *buf)
{
    size_t n = len < 80 ? len : 80;

    memcpy(buf, name, n);
    strcpy(buf + n, n < len ? "..." : "");
    return buf;
}

/* Bytewise order of two names, as strcmp on unsigned bytes with length. */
static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    if (c != 0)
        return c;
    return (alen > blen) - (alen < blen);
}

int pack_index_encode(const struct pack_src *files, size_t n, unsigned block_names,
                      unsigned align, uint8_t **index, size_t *index_len, uint64_t *data_len,
                      int64_t *mtime_base, char *err)
{
    uint64_t nblocks = (n + block_names - 1) / (block_names ? block_names : 1);
    struct obuf b = {0};
    char sb[96];
    uint64_t doff = 0;
    int64_t base = 0;
    int64_t prev_m = 0;

    *index = NULL;
    *index_len = 0;
    if (block_names < 1 || block_names > PACK_BLOCK_NAMES_MAX)
        return errf(err, "names per block must be 1..1024, not %u", block_names);
    if (align < 512 || align > 65536 || (align & (align - 1)) != 0)
        return errf(err, "alignment must be a power of two in 512..65536, not %u", align);
    if ((uint64_t)n > PACK_FILES_MAX)
        return errf(err, "too many files: %zu (at most 4294967295)", n);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || files[i].mtime_s < base)
            base = files[i].mtime_s;
    if (nblocks > 0) {
        ob_need(&b, nblocks * PACK_TABLE_ENTRY);
        memset(b.p, 0, nblocks * PACK_TABLE_ENTRY);
        b.len = nblocks * PACK_TABLE_ENTRY;
    }
    for (size_t i = 0; i < n; i++) {
        const struct pack_src *f = &files[i];
        bool first = i % block_names == 0;

        if (!files_name_valid(f->name, f->name_len) || f->name_len > FILES_NAME_MAX) {
            errf(err, "'%s' is not a name server1 serves", shown(f->name, f->name_len, sb));
            goto err;
        }
        if (i > 0) {
            int c = name_cmp(files[i - 1].name, files[i - 1].name_len, f->name, f->name_len);
            if (c >= 0) {
                errf(err, "'%s' is %s", shown(f->name, f->name_len, sb),
                     c == 0 ? "named twice" : "out of order");
                goto err;
            }
        }
        if (f->size > PACK_FILE_SIZE_MAX) {
            errf(err, "'%s' is too big: %llu bytes (at most 1 TiB)",
                 shown(f->name, f->name_len, sb), (unsigned long long)f->size);
            goto err;
        }
        if (first) {
            uint8_t *row = b.p + (i / block_names) * PACK_TABLE_ENTRY;
            bytes_put_le64(row, b.len);
            bytes_put_le64(row + 8, doff);
            ob_varint(&b, f->name_len);
            ob_bytes(&b, f->name, f->name_len);
        } else {
            const struct pack_src *pv = &files[i - 1];
            size_t shared = 0;
            while (shared < pv->name_len && shared < f->name_len &&
                   pv->name[shared] == f->name[shared])
                shared++;
            ob_varint(&b, shared);
            ob_varint(&b, f->name_len - shared);
            ob_bytes(&b, f->name + shared, f->name_len - shared);
        }
        ob_varint(&b, f->size);
        if (first)
            ob_varint(&b, (uint64_t)f->mtime_s - (uint64_t)base);
        else
            ob_varint(&b, zigzag((int64_t)((uint64_t)f->mtime_s - (uint64_t)prev_m)));
        prev_m = f->mtime_s;
        ob_need(&b, 4);
        bytes_put_le32(b.p + b.len, f->crc);
        b.len += 4;
        doff += pack_round_up(f->size, align);
        if (doff > PACK_DATA_MAX) {
            errf(err, "the files pass the data limit of 1 PiB at %llu bytes",
                 (unsigned long long)doff);
            goto err;
        }
    }
    if (b.len > PACK_INDEX_MAX) {
        errf(err, "the index would take %zu bytes (at most 64 GiB)", b.len);
        goto err;
    }
    *index = b.p;
    *index_len = b.len;
    *data_len = doff;
    *mtime_base = base;
    return 0;
err:
    free(b.p);
    return -1;
}

void pack_header_make(uint8_t *hdr, uint64_t count, unsigned block_names, unsigned align,
                      uint64_t data_len, uint64_t index_len, int64_t mtime_base,
                      uint32_t index_crc, uint64_t id)
{
    memset(hdr, 0, PACK_HEADER_BYTES);
    memcpy(hdr, PACK_MAGIC, 8);
    bytes_put_le32(hdr + 8, PACK_VERSION);
    bytes_put_le32(hdr + 12, align);
    bytes_put_le64(hdr + 16, count);
    bytes_put_le64(hdr + 24, PACK_HEADER_BYTES); /* data offset */
    bytes_put_le64(hdr + 32, data_len);
    bytes_put_le64(hdr + 40, pack_index_off(data_len));
    bytes_put_le64(hdr + 48, index_len);
    bytes_put_le32(hdr + 56, block_names);
    bytes_put_le32(hdr + 60, 0);
    bytes_put_le64(hdr + 64, (count + block_names - 1) / block_names);
    bytes_put_le64(hdr + 72, id);
    bytes_put_le64(hdr + 80, (uint64_t)mtime_base);
    bytes_put_le32(hdr + 88, index_crc);
    bytes_put_le32(hdr + 92, pack_crc32(0, hdr, 92));
}

/* ---- opening ---- */

/*
 * Checks hdr (PACK_HEADER_USED bytes) against a pack of file_len bytes and fills p's sizes;
 * *index_off is where the index starts.
 */
static int parse_header(struct pack *p, const uint8_t *hdr, uint64_t file_len,
                        uint64_t *index_off, uint32_t *index_crc, char *err)
{
    uint32_t version;
    uint64_t data_off;

    if (file_len < PACK_HEADER_USED || memcmp(hdr, PACK_MAGIC, 8) != 0)
        return errf(err, "not a pack (no pack magic at its start)");
    version = bytes_get_le32(hdr + 8);
    if (version != PACK_VERSION)
        return errf(err, "pack version %u, this server1 reads version %u", version, PACK_VERSION);
    if (bytes_get_le32(hdr + 92) != pack_crc32(0, hdr, 92))
        return errf(err, "damaged pack header (its checksum does not match)");
    p->align = bytes_get_le32(hdr + 12);
    p->count = bytes_get_le64(hdr + 16);
    data_off = bytes_get_le64(hdr + 24);
    p->data_len = bytes_get_le64(hdr + 32);
    *index_off = bytes_get_le64(hdr + 40);
    p->index_len = bytes_get_le64(hdr + 48);
    p->block_names = bytes_get_le32(hdr + 56);
    p->nblocks = bytes_get_le64(hdr + 64);
    p->id = bytes_get_le64(hdr + 72);
    p->mtime_base = (int64_t)bytes_get_le64(hdr + 80);
    *index_crc = bytes_get_le32(hdr + 88);
    p->data_off = data_off;
    if (p->align < 512 || p->align > 65536 || (p->align & (p->align - 1)) != 0)
        return errf(err, "bad pack header: alignment %u", p->align);
    if (p->block_names < 1 || p->block_names > PACK_BLOCK_NAMES_MAX)
        return errf(err, "bad pack header: %u names per block", p->block_names);
    if (p->count > PACK_FILES_MAX ||
        p->nblocks != (p->count + p->block_names - 1) / p->block_names)
        return errf(err, "bad pack header: %" PRIu64 " files in %" PRIu64 " blocks", p->count, p->nblocks);
    if (data_off != PACK_HEADER_BYTES || p->data_len > PACK_DATA_MAX ||
        p->data_len % p->align != 0 || *index_off != pack_index_off(p->data_len) ||
        p->index_len > PACK_INDEX_MAX || p->index_len < p->nblocks * PACK_TABLE_ENTRY)
        return errf(err, "bad pack header: data of %" PRIu64 " bytes, index of %" PRIu64 " bytes",
                    p->data_len, p->index_len);
    if (*index_off + p->index_len != file_len)
        return errf(err, "pack is %" PRIu64 " bytes, its header says %" PRIu64 " (truncated or grown?)",
                    file_len, *index_off + p->index_len);
    return 0;
}

/* Checks the block table: offsets in order and within the index and the data part. */
static int check_table(const struct pack *p, char *err)
{
    uint64_t prev_body = p->nblocks * PACK_TABLE_ENTRY;
    uint64_t prev_data = 0;

    for (uint64_t k = 0; k < p->nblocks; k++) {
        const uint8_t *row = p->index + k * PACK_TABLE_ENTRY;
        uint64_t body = bytes_get_le64(row);
        uint64_t data = bytes_get_le64(row + 8);
        if ((k == 0 && body != prev_body) || (k > 0 && body <= prev_body) ||
            body >= p->index_len)
            return errf(err, "damaged pack index: block %" PRIu64 " starts at %" PRIu64 "", k, body);
        if (data < prev_data || data > p->data_len || data % p->align != 0)
            return errf(err, "damaged pack index: block %" PRIu64 "'s data at %" PRIu64 "", k, data);
        prev_body = body;
        prev_data = data;
    }
    return 0;
}

static int open_parsed(struct pack *p, const uint8_t *index, bool check_crc, uint32_t crc,
                       char *err)
{
    p->index = index;
    p->bodies = index;
    if (check_crc && pack_crc32(0, index, p->index_len) != crc)
        return errf(err, "damaged pack index: its checksum does not match");
    return check_table(p, err);
}

int pack_open_mem(struct pack *p, const void *img, size_t len, bool check_crc, char *err)
{
    uint64_t index_off;
    uint32_t crc;

    *p = (struct pack){.fd = -1, .since_ns = -1, .dio_align = 4096};
    if (parse_header(p, img, len, &index_off, &crc, err) < 0)
        return -1;
    return open_parsed(p, (const uint8_t *)img + index_off, check_crc, crc, err);
}

int pack_open(struct pack *p, const char *path, bool direct, char *err)
{
    uint8_t hdr[PACK_HEADER_USED];
    char ebuf[128];
    char why[PACK_ERR_LEN];
    uint64_t index_off;
    struct stat st;
    uint32_t crc;
    ssize_t got;
    int fd;

    *p = (struct pack){.fd = -1, .since_ns = -1};
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, PACK_ERR_LEN, "cannot open pack '%s': %s", path,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, PACK_ERR_LEN, "pack '%s' is not a regular file", path);
        goto err_close;
    }
    do {
        got = pread(fd, hdr, sizeof(hdr), 0);
    } while (got < 0 && errno == EINTR);
    if (parse_header(p, hdr, got < 0 ? 0 : (uint64_t)got < sizeof(hdr) ? (uint64_t)got
                                                                       : (uint64_t)st.st_size,
                     &index_off, &crc, why) < 0) {
        snprintf(err, PACK_ERR_LEN, "pack '%.200s': %.300s", path, why);
        goto err_close;
    }
    p->since_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
    if (p->index_len > 0) {
        /* index_off is a multiple of 4096, so of the page size */
        p->map = mmap(NULL, (size_t)p->index_len, PROT_READ, MAP_PRIVATE, fd, (off_t)index_off);
        if (p->map == MAP_FAILED) {
            p->map = NULL;
            snprintf(err, PACK_ERR_LEN, "cannot map the index of pack '%s': %s", path,
                     strerror_r(errno, ebuf, sizeof(ebuf)));
            goto err_close;
        }
        p->map_len = (size_t)p->index_len;
    }
    if (open_parsed(p, p->map, true, crc, why) < 0) {
        snprintf(err, PACK_ERR_LEN, "pack '%.200s': %.300s", path, why);
        goto err_unmap;
    }
    if (direct) {
        int dfd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
        if (dfd < 0) {
            snprintf(err, PACK_ERR_LEN, "cannot open pack '%s' with O_DIRECT: %s", path,
                     strerror_r(errno, ebuf, sizeof(ebuf)));
            goto err_unmap;
        }
        close(fd);
        fd = dfd;
    }
    p->fd = fd;
    p->direct = direct;
    p->dio_align = files_direct_alignment(fd);
    return 0;
err_unmap:
    if (p->map != NULL)
        munmap(p->map, p->map_len);
    p->map = NULL;
err_close:
    close(fd);
    p->fd = -1;
    return -1;
}

void pack_close(struct pack *p)
{
    if (p->map != NULL)
        munmap(p->map, p->map_len);
    p->map = NULL;
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

/* ---- decoding ---- */

static uint64_t block_body(const struct pack *p, uint64_t k)
{
    return bytes_get_le64(p->index + k * PACK_TABLE_ENTRY);
}

static uint64_t block_end(const struct pack *p, uint64_t k)
{
    return k + 1 < p->nblocks ? block_body(p, k + 1) : p->index_len;
}

static uint32_t block_count(const struct pack *p, uint64_t k)
{
    return k + 1 < p->nblocks ? p->block_names
                              : (uint32_t)(p->count - (p->nblocks - 1) * p->block_names);
}

/*
 * Compares block k's first name with key: <0, 0, >0 as name_cmp(first, key); a damaged
 * first name compares as 2 (after everything), so no search enters its block.
 */
static int first_cmp(const struct pack *p, uint64_t k, const char *key, size_t klen)
{
    struct cur c = {.base = p->index, .pos = block_body(p, k), .end = block_end(p, k)};
    uint64_t len = cur_varint(&c);
    const uint8_t *s;

    if (len > FILES_NAME_MAX)
        return 2;
    s = cur_bytes(&c, len);
    if (s == NULL)
        return 2;
    return name_cmp((const char *)s, (size_t)len, key, klen);
}

/* The last block whose first name is <= key; 0 when key is before every name. */
static uint64_t find_block(const struct pack *p, const char *key, size_t klen)
{
    uint64_t lo = 0, hi = p->nblocks; /* answer in [lo, hi) */

    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (first_cmp(p, mid, key, klen) <= 0)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void iter_block(struct pack_iter *it, uint64_t k)
{
    const struct pack *p = it->p;

    it->block = k;
    it->pos = block_body(p, k);
    it->end = block_end(p, k);
    it->in_block = 0;
    it->data_off = bytes_get_le64(p->index + k * PACK_TABLE_ENTRY + 8);
    it->name_len = 0;
}

/* Decodes the next entry; false at the end or on damage (it->failed). */
static bool decode_next(struct pack_iter *it, struct pack_entry *e)
{
    const struct pack *p = it->p;
    struct cur c;
    uint64_t shared = 0, len, size;
    const uint8_t *s;
    bool first;

    if (it->failed || it->block >= p->nblocks)
        return false;
    if (it->in_block == block_count(p, it->block)) {
        if (it->block + 1 >= p->nblocks) {
            it->block = p->nblocks;
            return false;
        }
        iter_block(it, it->block + 1);
    }
    first = it->in_block == 0;
    c = (struct cur){.base = p->index, .pos = it->pos, .end = it->end};
    if (!first)
        shared = cur_varint(&c);
    len = cur_varint(&c);
    if (c.bad || shared > it->name_len || len > FILES_NAME_MAX - shared)
        goto damaged;
    s = cur_bytes(&c, len);
    if (s == NULL)
        goto damaged;
    memcpy(it->name + shared, s, len);
    it->name_len = (size_t)(shared + len);
    it->name[it->name_len] = '\0';
    size = cur_varint(&c);
    if (first)
        it->mtime = (int64_t)((uint64_t)p->mtime_base + cur_varint(&c));
    else
        it->mtime = (int64_t)((uint64_t)it->mtime + (uint64_t)unzigzag(cur_varint(&c)));
    s = cur_bytes(&c, 4);
    if (c.bad || s == NULL || size > PACK_FILE_SIZE_MAX ||
        size > p->data_len - it->data_off)
        goto damaged;
    *e = (struct pack_entry){.seq = it->block * p->block_names + it->in_block,
                             .off = p->data_off + it->data_off, .size = size,
                             .mtime_s = it->mtime, .crc = bytes_get_le32(s)};
    it->data_off += pack_round_up(size, p->align);
    it->pos = c.pos;
    it->in_block++;
    return true;
damaged:
    it->failed = true;
    return false;
}

void pack_iter_seek(struct pack_iter *it, const struct pack *p, const char *key, size_t klen)
{
    struct pack_entry e;

    it->p = p;
    it->failed = false;
    it->block = p->nblocks;
    it->name_len = 0;
    it->name[0] = '\0';
    it->pending = false;
    if (p->nblocks == 0)
        return;
    iter_block(it, find_block(p, key, klen));
    while (decode_next(it, &e)) {
        if (name_cmp(it->name, it->name_len, key, klen) >= 0) {
            it->pending = true;
            it->pending_e = e;
            return;
        }
    }
}

bool pack_iter_next(struct pack_iter *it, struct pack_entry *e)
{
    if (it->pending) {
        it->pending = false;
        *e = it->pending_e;
        return true;
    }
    return decode_next(it, e);
}

uint64_t pack_entry_ino(const struct pack *p, const struct pack_entry *e)
{
    uint64_t ino = p->id ^ ((e->seq + 1) * 0x9e3779b97f4a7c15ull);

    return ino != 0 ? ino : 1;
}

int pack_lookup(const struct pack *p, const char *name, size_t len, struct pack_entry *e)
{
    struct pack_iter it;

    if (len > FILES_NAME_MAX)
        return 0;
    pack_iter_seek(&it, p, name, len);
    return pack_iter_next(&it, e) && it.name_len == len && memcmp(it.name, name, len) == 0;
}

bool pack_has_prefix(const struct pack *p, const char *prefix, size_t plen)
{
    struct pack_iter it;
    struct pack_entry e;

    if (plen > FILES_NAME_MAX)
        return false;
    pack_iter_seek(&it, p, prefix, plen);
    return pack_iter_next(&it, &e) && it.name_len >= plen &&
           memcmp(it.name, prefix, plen) == 0;
}

int pack_check(const struct pack *p, char *err)
{
    struct pack_iter it = {.p = p};
    struct pack_entry e;
    char prev[FILES_NAME_MAX + 1];
    size_t prev_len = 0;
    uint64_t n = 0;

    if (p->nblocks == 0)
        return p->count == 0 && p->data_len == 0
                   ? 0
                   : errf(err, "damaged pack: %" PRIu64 " files, %" PRIu64 " data bytes, no blocks",
                          p->count, p->data_len);
    iter_block(&it, 0);
    for (;;) {
        uint64_t block = it.block;
        uint64_t pos = it.pos, end = it.end;
        uint32_t in_block = it.in_block;
        uint64_t doff = it.data_off;
        if (!decode_next(&it, &e))
            break;
        if (it.block != block) {
            /* the block before ended where the table says the next begins */
            if (pos != end || in_block != block_count(p, block) ||
                doff != bytes_get_le64(p->index + it.block * PACK_TABLE_ENTRY + 8))
                return errf(err, "damaged pack index: block %" PRIu64 " does not end where block "
                            "%" PRIu64 " starts",
                            block, it.block);
        }
        if (!files_name_valid(it.name, it.name_len))
            return errf(err, "damaged pack index: file %" PRIu64 " has a name server1 would not "
                        "serve",
                        n);
        if (n > 0 && name_cmp(prev, prev_len, it.name, it.name_len) >= 0)
            return errf(err, "damaged pack index: file %" PRIu64 " is out of order", n);
        memcpy(prev, it.name, it.name_len);
        prev_len = it.name_len;
        n++;
    }
    if (it.failed)
        return errf(err, "damaged pack index: cannot decode file %" PRIu64 " (block %" PRIu64 ")", n,
                    it.block);
    if (n != p->count)
        return errf(err, "damaged pack index: %" PRIu64 " files, its header says %" PRIu64 "", n, p->count);
    if (it.pos != it.end || it.data_off != p->data_len)
        return errf(err, "damaged pack index: it ends at %" PRIu64 ", data at %" PRIu64 "", it.pos,
                    it.data_off);
    return 0;
}
