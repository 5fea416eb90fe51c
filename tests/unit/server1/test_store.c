/*
 * test_store.c - cmocka tests for the upload store (server1/store): open on an empty root,
 * put/delete visible only after sync + publish, bodies from memory and from a descriptor
 * (bigger than the copy chunk), overwrites and whiteouts, the index rebuilt on reopen with the
 * right recovery counts, a torn tail cut off, damage followed by valid records refused, a
 * foreign file refused, segments rolling, compaction (bounded size, latest bytes kept,
 * whiteouts dropped or kept as hide_needed says), a reader's descriptor outliving the
 * compacted segment, store_foreach, and store_list: a directory's subdirectories then its
 * files in order, deletions never shown, a cursor that pages through, the entries read being
 * only the directory's own (a bound, whatever the index holds), an index ordered by owner
 * (--private-uploads) that reads only the asker's, and the order kept through deletions,
 * re-uploads, compaction and a restart. The index checkpoint: written at close and loaded at
 * open (only the log after it replayed), a damaged or stale one not used (full replay, nothing
 * lost), and the index it gives equal to a full replay's entry by entry after random runs
 * killed at random points (in a batch, in the middle of writing a checkpoint).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../../common/compat.h"
#include "../../../server1/btree.h"
#include "../../../server1/store.h"

#define BIG_SEG (64ull << 20)
#define SMALL_SEG 4096ull

/* ---- fixture: a temp root per test ---- */

struct fx {
    char dir[PATH_MAX];
    int root_fd;
    struct store s;
    bool open;
    struct store_recovery rec;
    char err[STORE_ERR_LEN];
    bool keep_ckpt; /* fx_close leaves the checkpoint in place */
    char first_why[160]; /* ckpt_matches_replay_as: why its first open used none */
};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static void rm_rf(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    const char *tmp = getenv("TMPDIR");

    if (f == NULL)
        return -1;
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/var/tmp";
    snprintf(f->dir, sizeof(f->dir), "%s/test_store.XXXXXX", tmp);
    if (mkdtemp(f->dir) == NULL) {
        snprintf(f->dir, sizeof(f->dir), "/tmp/test_store.XXXXXX");
        if (mkdtemp(f->dir) == NULL) {
            free(f);
            return -1;
        }
    }
    f->root_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (f->root_fd < 0) {
        rm_rf(f->dir);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f == NULL)
        return 0;
    if (f->open)
        store_close(&f->s);
    close(f->root_fd);
    rm_rf(f->dir);
    free(f);
    return 0;
}

static void fx_open(struct fx *f, uint64_t segment_bytes)
{
    assert_false(f->open);
    f->err[0] = '\0';
    if (store_open(&f->s, f->root_fd, segment_bytes, 0, &f->rec, f->err) != 0)
        fail_msg("store_open: %s", f->err);
    f->open = true;
}

/* Expects store_open to fail; returns err. */
static const char *fx_open_fails(struct fx *f, uint64_t segment_bytes)
{
    assert_false(f->open);
    f->err[0] = '\0';
    assert_int_equal(store_open(&f->s, f->root_fd, segment_bytes, 0, &f->rec, f->err), -1);
    assert_true(f->err[0] != '\0');
    return f->err;
}

/* The checkpoint's path (index.ckpt). */
static void ckpt_path(struct fx *f, char *out, size_t cap)
{
    snprintf(out, cap, "%s/" STORE_DIR "/" STORE_CKPT_NAME, f->dir);
}

/*
 * Closes the store; the checkpoint its close wrote is removed unless f->keep_ckpt, so that
 * the next open replays the whole log (what most tests here are about).
 */
static void fx_close(struct fx *f)
{
    char path[PATH_MAX + 32];

    assert_true(f->open);
    store_close(&f->s);
    f->open = false;
    ckpt_path(f, path, sizeof(path));
    if (!f->keep_ckpt)
        unlink(path);
}

static void fx_reopen(struct fx *f, uint64_t segment_bytes)
{
    fx_close(f);
    fx_open(f, segment_bytes);
}

/* ---- helpers ---- */

static void fill(char *buf, size_t len, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (char)(x >> 16);
    }
}

static void put_mem(struct store *s, const char *name, const char *owner, const void *data,
                    size_t len)
{
    struct store_body b = {.mem = data, .fd = -1, .off = 0, .len = len};
    struct store_pos pos;

    assert_int_equal(store_append_put(s, name, strlen(name), owner, &b, &pos), 0);
    assert_int_equal(store_sync(s), 0);
    store_publish(s, name, strlen(name), owner, &pos);
}

static void del(struct store *s, const char *name)
{
    struct store_pos pos;

    assert_int_equal(store_append_delete(s, name, strlen(name), &pos), 0);
    assert_int_equal(store_sync(s), 0);
    store_publish(s, name, strlen(name), NULL, &pos);
}

/*
 * store_lookup, its answers in separate places (each may be NULL; a descriptor and a pin are
 * asked for when fd is not NULL; fd is left alone unless one is made).
 */
static int find(struct store *s, const char *name, size_t len, char *owner, int *fd,
                struct store_segment **pin, uint64_t *off, uint64_t *size)
{
    struct store_found f;
    int st = store_lookup(s, name, len, fd != NULL, &f);

    if (st == STORE_ABSENT)
        return st;
    if (owner != NULL)
        memcpy(owner, f.owner, sizeof(f.owner));
    if (fd != NULL && f.fd >= 0) {
        *fd = f.fd;
        *pin = f.pin;
    }
    if (off != NULL)
        *off = f.off;
    if (size != NULL)
        *size = f.size;
    return st;
}

static int state_of(struct store *s, const char *name)
{
    return find(s, name, strlen(name), NULL, NULL, NULL, NULL, NULL);
}

/* name must be a file owned by owner holding exactly data[0..len). */
static void check_file(struct store *s, const char *name, const char *owner, const void *data,
                       size_t len)
{
    char own[STORE_OWNER_MAX + 1];
    struct store_segment *pin = NULL;
    int fd = -1;
    uint64_t off = 0, size = 0;
    char *got;
    int st;

    memset(own, 'x', sizeof(own));
    st = find(s, name, strlen(name), own, &fd, &pin, &off, &size);
    if (st != STORE_FILE)
        fail_msg("'%s': state %d, expected STORE_FILE", name, st);
    assert_true(fd >= 0);
    assert_string_equal(own, owner);
    assert_int_equal(size, len);
    got = malloc(len + 1);
    assert_non_null(got);
    if (len > 0)
        assert_int_equal(pread(fd, got, len, (off_t)off), (ssize_t)len);
    assert_memory_equal(got, data, len);
    free(got);
    close(fd);
    store_unpin(pin);
}

static void seg_path(struct fx *f, uint32_t id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/" STORE_DIR "/%08x.seg", f->dir, id);
}

/* The files in <root>/.s1store: how many, and (if non-NULL) the highest segment id. */
static size_t list_store(struct fx *f, uint32_t *max_id, uint64_t *total_bytes)
{
    char path[PATH_MAX + 16];
    DIR *d;
    struct dirent *de;
    size_t n = 0;

    snprintf(path, sizeof(path), "%s/" STORE_DIR, f->dir);
    d = opendir(path);
    assert_non_null(d);
    if (max_id != NULL)
        *max_id = 0;
    if (total_bytes != NULL)
        *total_bytes = 0;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        char p[PATH_MAX + 300];
        size_t nl = strlen(de->d_name);
        /* segments only: not spares (dead segments kept for reuse) nor dot files */
        if (de->d_name[0] == '.' || nl < 4 || strcmp(de->d_name + nl - 4, ".seg") != 0)
            continue;
        n++;
        if (max_id != NULL) {
            uint32_t id = (uint32_t)strtoul(de->d_name, NULL, 16);
            if (id > *max_id)
                *max_id = id;
        }
        snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
        assert_int_equal(stat(p, &st), 0);
        if (total_bytes != NULL)
            *total_bytes += (uint64_t)st.st_size;
    }
    closedir(d);
    return n;
}

static off_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void append_bytes(const char *path, const void *buf, size_t n)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, n), (ssize_t)n);
    close(fd);
}

/* ---- 1. open on an empty root ---- */

static void test_store_open_empty(void **state)
{
    struct fx *f = *state;
    char path[PATH_MAX + 32];
    struct stat st;
    struct store_stats ss;

    fx_open(f, BIG_SEG);
    seg_path(f, 0, path, sizeof(path));
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, STORE_SEG_HDR_BYTES); /* the header, no record */
    assert_int_equal(list_store(f, NULL, NULL), 1);
    assert_int_equal(f->rec.segments, 0);
    assert_int_equal(f->rec.records, 0);
    assert_int_equal(f->rec.files, 0);
    assert_int_equal(f->rec.whiteouts, 0);
    assert_int_equal(f->rec.torn_bytes, 0);
    assert_int_equal(state_of(&f->s, "a"), STORE_ABSENT);
    assert_int_equal(state_of(&f->s, "dir/some file.txt"), STORE_ABSENT);
    store_stats(&f->s, &ss);
    assert_int_equal(ss.files, 0);
    assert_int_equal(ss.whiteouts, 0);
    assert_int_equal(ss.segments, 1);
    assert_int_equal(ss.bytes, STORE_SEG_HDR_BYTES);
    /* reopening the empty store finds its one segment */
    fx_reopen(f, BIG_SEG);
    assert_int_equal(f->rec.segments, 1);
    assert_int_equal(f->rec.records, 0);
    assert_int_equal(list_store(f, NULL, NULL), 1);
}

/* ---- 2. put, visibility, bodies ---- */

static void test_store_put_visibility(void **state)
{
    struct fx *f = *state;
    char data[3000];
    struct store_body b = {.mem = data, .fd = -1, .len = sizeof(data)};
    struct store_pos pos;

    fill(data, sizeof(data), 1);
    fx_open(f, BIG_SEG);
    assert_int_equal(store_append_put(&f->s, "hello.txt", 9, "alice", &b, &pos), 0);
    assert_int_equal(pos.size, sizeof(data));
    assert_false(pos.whiteout);
    /* appended, not yet synced or published: invisible */
    assert_int_equal(state_of(&f->s, "hello.txt"), STORE_ABSENT);
    assert_int_equal(store_sync(&f->s), 0);
    /* durable but not published: still invisible */
    assert_int_equal(state_of(&f->s, "hello.txt"), STORE_ABSENT);
    store_publish(&f->s, "hello.txt", 9, "alice", &pos);
    check_file(&f->s, "hello.txt", "alice", data, sizeof(data));
    /* only the exact name */
    assert_int_equal(state_of(&f->s, "hello.tx"), STORE_ABSENT);
    assert_int_equal(state_of(&f->s, "hello.txt2"), STORE_ABSENT);
    /* the length given counts, not a NUL */
    assert_int_equal(find(&f->s, "hello.txtXYZ", 9, NULL, NULL, NULL, NULL, NULL), STORE_FILE);
}

static void test_store_put_empty_body(void **state)
{
    struct fx *f = *state;
    struct store_body b = {.mem = NULL, .fd = -1, .len = 0};
    struct store_body b2 = {.mem = "", .fd = -1, .len = 0};
    struct store_pos pos;

    fx_open(f, BIG_SEG);
    assert_int_equal(store_append_put(&f->s, "empty", 5, "bob", &b, &pos), 0);
    assert_int_equal(store_sync(&f->s), 0);
    store_publish(&f->s, "empty", 5, "bob", &pos);
    check_file(&f->s, "empty", "bob", "", 0);
    assert_int_equal(store_append_put(&f->s, "empty2", 6, "carol", &b2, &pos), 0);
    assert_int_equal(store_sync(&f->s), 0);
    store_publish(&f->s, "empty2", 6, "carol", &pos);
    check_file(&f->s, "empty2", "carol", "", 0);
    fx_reopen(f, BIG_SEG);
    assert_int_equal(f->rec.records, 2);
    assert_int_equal(f->rec.files, 2);
    check_file(&f->s, "empty", "bob", "", 0);
    check_file(&f->s, "empty2", "carol", "", 0);
}

/* The CRC: the standard check value, chaining, and a body CRC computed in pieces while it
 * arrives (as server1's workers do) that the store takes over and checks at the next start. */
static void test_store_crc(void **state)
{
    struct fx *f = *state;
    char data[5000];
    uint32_t piecewise = 0;
    struct store_body good = {.mem = data, .fd = -1, .len = sizeof(data), .has_crc = true};
    struct store_body bad;
    struct store_pos pos;

    assert_int_equal(store_crc32(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(store_crc32(store_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
    assert_int_equal(store_crc32(0x1234u, NULL, 0), 0x1234u);
    fill(data, sizeof(data), 7);
    for (size_t at = 0; at < sizeof(data); at += 1000)
        piecewise = store_crc32(piecewise, data + at, 1000);
    assert_int_equal(piecewise, store_crc32(0, data, sizeof(data)));
    good.data_crc = piecewise;
    bad = good;
    bad.data_crc = piecewise ^ 1u;
    fx_open(f, BIG_SEG);
    assert_int_equal(store_append_put(&f->s, "good", 4, "u", &good, &pos), 0);
    assert_int_equal(store_sync(&f->s), 0);
    store_publish(&f->s, "good", 4, "u", &pos);
    /* a CRC that does not match the bytes: the record reads as torn at the next start */
    assert_int_equal(store_append_put(&f->s, "bad", 3, "u", &bad, &pos), 0);
    assert_int_equal(store_sync(&f->s), 0);
    store_publish(&f->s, "bad", 3, "u", &pos);
    fx_reopen(f, BIG_SEG);
    assert_int_equal(f->rec.records, 1);
    assert_true(f->rec.torn_bytes > 0);
    check_file(&f->s, "good", "u", data, sizeof(data));
    assert_int_equal(state_of(&f->s, "bad"), STORE_ABSENT);
}

static void test_store_put_from_fd(void **state)
{
    struct fx *f = *state;
    const size_t skip = 1237, len = 600u * 1024 + 123;
    char path[PATH_MAX + 16];
    char *data = malloc(skip + len);
    struct store_body b;
    struct store_pos pos;
    int fd;

    assert_non_null(data);
    fill(data, skip + len, 7);
    snprintf(path, sizeof(path), "%s/body.tmp", f->dir);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, skip + len), (ssize_t)(skip + len));
    fx_open(f, BIG_SEG);
    b = (struct store_body){.mem = NULL, .fd = fd, .off = skip, .len = len};
    assert_int_equal(store_append_put(&f->s, "big.bin", 7, "dave", &b, &pos), 0);
    assert_int_equal(store_sync(&f->s), 0);
    store_publish(&f->s, "big.bin", 7, "dave", &pos);
    close(fd);
    unlink(path);
    check_file(&f->s, "big.bin", "dave", data + skip, len);
    /* and a small one after it from memory, then both survive a reopen (CRC over chunks) */
    put_mem(&f->s, "small", "eve", data, 100);
    fx_reopen(f, BIG_SEG);
    assert_int_equal(f->rec.records, 2);
    assert_int_equal(f->rec.torn_bytes, 0);
    check_file(&f->s, "big.bin", "dave", data + skip, len);
    check_file(&f->s, "small", "eve", data, 100);
    free(data);
}

/* ---- 3. overwrite, delete, put again ---- */

static void test_store_overwrite_delete(void **state)
{
    struct fx *f = *state;
    char d1[500], d2[700], d3[10];
    char own[STORE_OWNER_MAX + 1];
    int fd = -12345;
    struct store_segment *pin = NULL;

    fill(d1, sizeof(d1), 11);
    fill(d2, sizeof(d2), 12);
    fill(d3, sizeof(d3), 13);
    fx_open(f, BIG_SEG);
    put_mem(&f->s, "x", "alice", d1, sizeof(d1));
    check_file(&f->s, "x", "alice", d1, sizeof(d1));
    put_mem(&f->s, "x", "bob", d2, sizeof(d2));
    check_file(&f->s, "x", "bob", d2, sizeof(d2));
    del(&f->s, "x");
    assert_int_equal(find(&f->s, "x", 1, own, &fd, &pin, NULL, NULL), STORE_WHITEOUT);
    assert_int_equal(fd, -12345); /* no descriptor for a whiteout */
    assert_string_equal(own, "");
    /* deleting a name never uploaded leaves a whiteout too (it hides an operator file) */
    del(&f->s, "operator-file");
    assert_int_equal(state_of(&f->s, "operator-file"), STORE_WHITEOUT);
    put_mem(&f->s, "x", "carol", d3, sizeof(d3));
    check_file(&f->s, "x", "carol", d3, sizeof(d3));
    {
        struct store_stats ss;
        store_stats(&f->s, &ss);
        assert_int_equal(ss.files, 1);
        assert_int_equal(ss.whiteouts, 1);
    }
}

/* ---- 4. reopen rebuilds the index ---- */

struct expect {
    const char *name;
    int state;
    const char *owner;
    unsigned seed;
    size_t len;
};

static void check_expect(struct store *s, const struct expect *ex, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ex[i].state == STORE_FILE) {
            char *buf = malloc(ex[i].len + 1);
            assert_non_null(buf);
            fill(buf, ex[i].len, ex[i].seed);
            check_file(s, ex[i].name, ex[i].owner, buf, ex[i].len);
            free(buf);
        } else {
            int st = state_of(s, ex[i].name);
            if (st != ex[i].state)
                fail_msg("'%s': state %d, expected %d", ex[i].name, st, ex[i].state);
        }
    }
}

static void do_put(struct store *s, const char *name, const char *owner, unsigned seed, size_t len,
                   bool roll)
{
    char *buf = malloc(len + 1);
    assert_non_null(buf);
    fill(buf, len, seed);
    if (roll)
        assert_int_equal(store_roll(s), 0);
    put_mem(s, name, owner, buf, len);
    free(buf);
}

static void do_del(struct store *s, const char *name, bool roll)
{
    if (roll)
        assert_int_equal(store_roll(s), 0);
    del(s, name);
}

static void run_reopen(struct fx *f, uint64_t seg_bytes, bool roll)
{
    static const struct expect ex[] = {
        {"a", STORE_FILE, "o2", 104, 1100},
        {"b", STORE_WHITEOUT, NULL, 0, 0},
        {"c", STORE_FILE, "o1", 106, 900},
        {"d", STORE_FILE, "o3", 107, 0},
        {"dir/e", STORE_WHITEOUT, NULL, 0, 0},
        {"f", STORE_FILE, "owner-with-a-rather-long-name-0123456789", 109, 1500},
        {"g", STORE_ABSENT, NULL, 0, 0},
    };
    struct store_stats before, after;
    uint64_t disk;
    size_t nfiles;

    fx_open(f, seg_bytes);
    do_put(&f->s, "a", "o1", 101, 1000, roll);
    do_put(&f->s, "b", "o2", 102, 1000, roll);
    do_put(&f->s, "c", "o1", 103, 1000, roll);
    do_put(&f->s, "a", "o2", 104, 1100, roll); /* overwrite, other owner */
    do_del(&f->s, "b", roll);
    do_put(&f->s, "c", "o1", 106, 900, roll);
    do_put(&f->s, "d", "o3", 107, 0, roll);
    do_del(&f->s, "dir/e", roll);
    do_put(&f->s, "f", "o1", 108, 1000, roll);
    do_put(&f->s, "f", "owner-with-a-rather-long-name-0123456789", 109, 1500, roll);
    /* 10 records */
    check_expect(&f->s, ex, sizeof(ex) / sizeof(ex[0]));
    store_stats(&f->s, &before);
    assert_int_equal(before.files, 4);
    assert_int_equal(before.whiteouts, 2);
    nfiles = list_store(f, NULL, &disk);
    assert_int_equal(nfiles, before.segments);
    assert_int_equal(disk, before.bytes);

    fx_reopen(f, seg_bytes);
    assert_int_equal(f->rec.records, 10);
    assert_int_equal(f->rec.files, 4);
    assert_int_equal(f->rec.whiteouts, 2);
    assert_int_equal(f->rec.segments, before.segments);
    assert_int_equal(f->rec.torn_bytes, 0);
    check_expect(&f->s, ex, sizeof(ex) / sizeof(ex[0]));
    store_stats(&f->s, &after);
    assert_int_equal(after.files, before.files);
    assert_int_equal(after.whiteouts, before.whiteouts);
    assert_int_equal(after.segments, before.segments);
    assert_int_equal(after.bytes, before.bytes);
    assert_int_equal(after.live_bytes, before.live_bytes);
    if (roll)
        assert_true(after.segments > 1);
    else
        assert_int_equal(after.segments, 1);
}

static void test_store_reopen(void **state)
{
    run_reopen(*state, BIG_SEG, false);
}

static void test_store_reopen_segments(void **state)
{
    run_reopen(*state, SMALL_SEG, true);
}

/* ---- 5. torn tail ---- */

static void run_torn(struct fx *f, bool partial_record)
{
    char d1[800], d2[300], d3[1234];
    char path[PATH_MAX + 32];
    char garbage[100];
    size_t ngarbage;
    off_t size;
    uint32_t last;
    uint64_t last_off = 0;

    fill(d1, sizeof(d1), 21);
    fill(d2, sizeof(d2), 22);
    fill(d3, sizeof(d3), 23);
    fx_open(f, BIG_SEG);
    put_mem(&f->s, "one", "alice", d1, sizeof(d1));
    put_mem(&f->s, "two", "bob", d2, sizeof(d2));
    put_mem(&f->s, "one", "carol", d2, sizeof(d2));
    assert_int_equal(find(&f->s, "one", 3, NULL, NULL, NULL, &last_off, NULL), STORE_FILE);
    fx_close(f);
    list_store(f, &last, NULL);
    seg_path(f, last, path, sizeof(path));
    size = file_size(path);
    if (partial_record) {
        /* the first 30 bytes of the last batch (its header, with this segment's salt): a
         * batch cut short */
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        off_t batch = (off_t)last_off - STORE_BATCH_HDR_BYTES - STORE_REC_HDR_BYTES - 3 - 5;
        assert_true(fd >= 0);
        ngarbage = 30;
        assert_int_equal(pread(fd, garbage, ngarbage, batch), (ssize_t)ngarbage);
        close(fd);
    } else {
        /* bytes that are no batch of this segment: old contents of a reused file, say */
        ngarbage = sizeof(garbage);
        fill(garbage, ngarbage, 99);
    }
    append_bytes(path, garbage, ngarbage);
    assert_int_equal(file_size(path), size + (off_t)ngarbage);

    fx_open(f, BIG_SEG);
    /* counted as an unfinished batch only if it is one of this segment's */
    assert_int_equal(f->rec.torn_bytes, partial_record ? ngarbage : 0);
    assert_int_equal(f->rec.records, 3);
    assert_int_equal(f->rec.files, 2);
    assert_int_equal(file_size(path), size + (off_t)ngarbage); /* left to be written over */
    check_file(&f->s, "one", "carol", d2, sizeof(d2));
    check_file(&f->s, "two", "bob", d2, sizeof(d2));
    /* the log goes on where the good records end */
    put_mem(&f->s, "three", "dave", d3, sizeof(d3));
    check_file(&f->s, "three", "dave", d3, sizeof(d3));
    fx_reopen(f, BIG_SEG);
    assert_int_equal(f->rec.torn_bytes, 0);
    assert_int_equal(f->rec.records, 4);
    assert_int_equal(f->rec.files, 3);
    check_file(&f->s, "one", "carol", d2, sizeof(d2));
    check_file(&f->s, "two", "bob", d2, sizeof(d2));
    check_file(&f->s, "three", "dave", d3, sizeof(d3));
}

static void test_store_torn_partial_record(void **state)
{
    run_torn(*state, true);
}

static void test_store_torn_garbage(void **state)
{
    run_torn(*state, false);
}

/* A damaged LAST batch (nothing whole after it) is one cut short: dropped, previous version. */
static void test_store_torn_last_record_damaged(void **state)
{
    struct fx *f = *state;
    char d1[600], d2[700];
    char path[PATH_MAX + 32];
    uint64_t off1 = 0, off = 0, size = 0;
    off_t fsize;
    int fd = -1, wfd;
    struct store_segment *pin = NULL;
    char c;

    fill(d1, sizeof(d1), 31);
    fill(d2, sizeof(d2), 32);
    fx_open(f, BIG_SEG);
    put_mem(&f->s, "k", "alice", d1, sizeof(d1));
    assert_int_equal(find(&f->s, "k", 1, NULL, NULL, NULL, &off1, NULL), STORE_FILE);
    put_mem(&f->s, "k", "bob", d2, sizeof(d2));
    assert_int_equal(find(&f->s, "k", 1, NULL, &fd, &pin, &off, &size), STORE_FILE);
    close(fd);
    store_unpin(pin);
    fx_close(f);
    seg_path(f, 0, path, sizeof(path));
    fsize = file_size(path);
    assert_int_equal((uint64_t)fsize, off + size);
    wfd = open(path, O_RDWR | O_CLOEXEC);
    assert_true(wfd >= 0);
    assert_int_equal(pread(wfd, &c, 1, (off_t)off + 10), 1);
    c ^= 0x40;
    assert_int_equal(pwrite(wfd, &c, 1, (off_t)off + 10), 1);
    close(wfd);
    fx_open(f, BIG_SEG);
    assert_int_equal(f->rec.records, 1);
    /* the whole second batch went: the log ends where the first record's data ends */
    assert_int_equal(f->rec.torn_bytes, (uint64_t)fsize - (off1 + sizeof(d1)));
    assert_int_equal(file_size(path), fsize); /* left to be written over */
    check_file(&f->s, "k", "alice", d1, sizeof(d1));
}

/* ---- 6. damage followed by valid records ---- */

static void test_store_damage_refused(void **state)
{
    struct fx *f = *state;
    char d[1000];
    char path[PATH_MAX + 32];
    char *before, *after;
    uint64_t off = 0, size = 0;
    off_t fsize;
    uint32_t last;
    int fd = -1, wfd;
    struct store_segment *pin = NULL;
    struct stat st1, st2;
    const char *err;
    char c;

    fx_open(f, SMALL_SEG);
    /* fill a first segment, then three records in the second (last) one */
    for (unsigned i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%u", i);
        do_put(&f->s, name, "alice", 40 + i, sizeof(d), true);
    }
    do_put(&f->s, "n5", "bob", 45, 200, true);
    do_put(&f->s, "n6", "bob", 46, 300, true);
    assert_int_equal(list_store(f, &last, NULL), 2);
    assert_int_equal(last, 1);
    /* n4 is the first record of the last segment */
    assert_int_equal(find(&f->s, "n4", 2, NULL, &fd, &pin, &off, &size), STORE_FILE);
    seg_path(f, last, path, sizeof(path));
    assert_int_equal(fstat(fd, &st1), 0);
    assert_int_equal(stat(path, &st2), 0);
    assert_int_equal(st1.st_ino, st2.st_ino);
    assert_true(off < 100); /* the first record */
    close(fd);
    store_unpin(pin);
    fx_close(f);

    fsize = file_size(path);
    wfd = open(path, O_RDWR | O_CLOEXEC);
    assert_true(wfd >= 0);
    assert_int_equal(pread(wfd, &c, 1, (off_t)(off + size / 2)), 1);
    c ^= 0x01;
    assert_int_equal(pwrite(wfd, &c, 1, (off_t)(off + size / 2)), 1);
    before = malloc((size_t)fsize);
    assert_non_null(before);
    assert_int_equal(pread(wfd, before, (size_t)fsize, 0), (ssize_t)fsize);
    close(wfd);

    err = fx_open_fails(f, SMALL_SEG);
    if (strstr(err, "damaged") == NULL || strstr(err, "refusing") == NULL)
        fail_msg("unexpected error: %s", err);
    assert_non_null(strstr(err, "00000001.seg"));
    /* nothing was cut off or changed */
    assert_int_equal(file_size(path), fsize);
    after = malloc((size_t)fsize);
    assert_non_null(after);
    wfd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(wfd >= 0);
    assert_int_equal(pread(wfd, after, (size_t)fsize, 0), (ssize_t)fsize);
    close(wfd);
    assert_memory_equal(before, after, (size_t)fsize);
    /* and again: still refused */
    fx_open_fails(f, SMALL_SEG);
    assert_int_equal(file_size(path), fsize);
    free(before);
    free(after);
}

/* ---- 7. a foreign file ---- */

static void test_store_foreign_file(void **state)
{
    static const char *const foreign[] = {"junk.txt", "00000001.seg.bak"};
    struct fx *f = *state;
    char path[PATH_MAX + 32];
    const char *err;
    int fd;

    fx_open(f, SMALL_SEG);
    /* several segments, so that readdir meets some of them before the foreign file */
    for (unsigned i = 0; i < 24; i++)
        do_put(&f->s, "filler", "alice", 600 + i, 1024, true);
    put_mem(&f->s, "a", "alice", "abc", 3);
    assert_true(list_store(f, NULL, NULL) >= 5);
    fx_close(f);
    /* a near-miss of a segment name is foreign too */
    for (size_t i = 0; i < ARRAY_SIZE(foreign); i++) {
        snprintf(path, sizeof(path), "%s/" STORE_DIR "/%s", f->dir, foreign[i]);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        err = fx_open_fails(f, BIG_SEG);
        if (strstr(err, foreign[i]) == NULL)
            fail_msg("error does not name the file: %s", err);
        unlink(path);
    }
    fx_open(f, SMALL_SEG);
    check_file(&f->s, "a", "alice", "abc", 3);
}

/* ---- 8. segments roll ---- */

static void test_store_roll(void **state)
{
    struct fx *f = *state;
    struct store_stats ss;
    uint64_t disk;
    uint32_t last;
    size_t n;

    fx_open(f, SMALL_SEG);
    /* roll on a fresh store does nothing */
    assert_int_equal(store_roll(&f->s), 0);
    assert_int_equal(list_store(f, NULL, NULL), 1);
    for (unsigned i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof(name), "r%u", i);
        do_put(&f->s, name, "alice", 300 + i, 1024, true);
    }
    store_stats(&f->s, &ss);
    n = list_store(f, &last, &disk);
    assert_true(ss.segments > 1);
    assert_true(ss.segments >= 20 * 1024 / SMALL_SEG);
    assert_int_equal(n, ss.segments);
    assert_int_equal(last, ss.segments - 1);
    assert_int_equal(disk, ss.bytes);
    assert_int_equal(ss.files, 20);
    /* all but the segment headers and the 20 batch headers (one sync each) */
    assert_int_equal(ss.live_bytes,
                     ss.bytes - ss.segments * STORE_SEG_HDR_BYTES - 20 * STORE_BATCH_HDR_BYTES);
    /* a segment is sealed once it reaches segment_bytes: none is much bigger */
    for (uint32_t id = 0; id < last; id++) {
        char path[PATH_MAX + 32];
        seg_path(f, id, path, sizeof(path));
        assert_true((uint64_t)file_size(path) >= SMALL_SEG);
        assert_true((uint64_t)file_size(path) < SMALL_SEG + 1200);
    }
    fx_reopen(f, SMALL_SEG);
    assert_int_equal(f->rec.segments, ss.segments);
    assert_int_equal(f->rec.records, 20);
    for (unsigned i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof(name), "r%u", i);
        char buf[1024];
        fill(buf, sizeof(buf), 300 + i);
        check_file(&f->s, name, "alice", buf, sizeof(buf));
    }
}

/* ---- 9. compaction ---- */

struct hide {
    const char *keep; /* the one name whose whiteout hides an operator file */
    unsigned calls;
};

static bool hide_needed(void *arg, const char *name)
{
    struct hide *h = arg;
    h->calls++;
    return h->keep != NULL && strcmp(name, h->keep) == 0;
}

/* One batch as the committer does it: roll, append, sync, publish, compact. */
static void commit_put(struct store *s, struct hide *h, const char *name, const char *owner,
                       unsigned seed, size_t len)
{
    do_put(s, name, owner, seed, len, true);
    assert_true(store_compact(s, hide_needed, h) >= 0);
}

static void commit_del(struct store *s, struct hide *h, const char *name)
{
    do_del(s, name, true);
    assert_true(store_compact(s, hide_needed, h) >= 0);
}

static const char *hot_names[] = {"hot/a", "hot/b", "hot/c"};

/* The index holds every entry, and the order (store_list's) every file, each in order. */
static void check_order(struct fx *f)
{
    char err[128];
    struct store_stats ss;

    if (upindex_check(&f->s.index, err) != 0)
        fail_msg("the index: %s", err);
    if (upindex_check(&f->s.order, err) != 0)
        fail_msg("the order of names: %s", err);
    store_stats(&f->s, &ss);
    assert_int_equal(f->s.index.count, ss.files + ss.whiteouts);
    assert_int_equal(f->s.order.count, ss.files);
}

static void check_hot(struct store *s, const unsigned *seeds)
{
    for (unsigned k = 0; k < 3; k++) {
        char buf[1024];
        fill(buf, sizeof(buf), seeds[k]);
        check_file(s, hot_names[k], k == 1 ? "bob" : "alice", buf, sizeof(buf));
    }
}

/* Dead segments kept for reuse (NNNNNNNN.spare) in the store directory. */
static unsigned count_spares(struct fx *f)
{
    char path[PATH_MAX + 16];
    struct dirent *de;
    unsigned n = 0;
    DIR *d;

    snprintf(path, sizeof(path), "%s/" STORE_DIR, f->dir);
    d = opendir(path);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        size_t nl = strlen(de->d_name);
        n += nl > 6 && strcmp(de->d_name + nl - 6, ".spare") == 0;
    }
    closedir(d);
    return n;
}

static void test_store_compaction(void **state)
{
    struct fx *f = *state;
    struct hide h = {0};
    struct store_stats ss;
    unsigned seeds[3] = {0};
    uint64_t disk;
    size_t n;

    fx_open(f, SMALL_SEG);
    for (unsigned i = 0; i < 200; i++) {
        unsigned k = i % 3;
        seeds[k] = 1000 + i;
        commit_put(&f->s, &h, hot_names[k], k == 1 ? "bob" : "alice", seeds[k], 1024);
        store_stats(&f->s, &ss);
        if (ss.segments > 6 || ss.bytes > 8 * SMALL_SEG)
            fail_msg("after put %u: %llu segments, %llu bytes", i,
                     (unsigned long long)ss.segments, (unsigned long long)ss.bytes);
    }
    store_stats(&f->s, &ss);
    assert_true(ss.compactions > 0);
    assert_true(ss.segments <= 6);
    /* dead segments were reused, and no more than STORE_SPARES are kept */
    assert_true(ss.reused > 0);
    assert_true(count_spares(f) <= STORE_SPARES);
    assert_true(ss.bytes <= 8 * SMALL_SEG);
    assert_int_equal(ss.files, 3);
    assert_int_equal(ss.whiteouts, 0);
    n = list_store(f, NULL, &disk);
    assert_int_equal(n, ss.segments);
    /* a reused segment's file keeps its old size until records reach past it */
    assert_true(disk >= ss.bytes);
    check_hot(&f->s, seeds);
    /* store_compact reports nothing more to do right after */
    assert_int_equal(store_compact(&f->s, hide_needed, &h), 0);

    fx_reopen(f, SMALL_SEG);
    assert_int_equal(f->rec.files, 3);
    assert_int_equal(f->rec.whiteouts, 0);
    assert_int_equal(f->rec.segments, ss.segments);
    assert_int_equal(f->rec.torn_bytes, 0);
    check_hot(&f->s, seeds);
    {
        struct store_stats s2;
        store_stats(&f->s, &s2);
        assert_int_equal(s2.bytes, ss.bytes);
        assert_int_equal(s2.live_bytes, ss.live_bytes);
    }
    /* and it goes on compacting after the reopen */
    for (unsigned i = 200; i < 260; i++) {
        unsigned k = i % 3;
        seeds[k] = 1000 + i;
        commit_put(&f->s, &h, hot_names[k], k == 1 ? "bob" : "alice", seeds[k], 1024);
    }
    store_stats(&f->s, &ss);
    assert_true(ss.compactions > 0);
    assert_true(ss.segments <= 6);
    check_hot(&f->s, seeds);
}

/* store_usage is owner's and the total live upload bytes: checks both. */
static void check_usage(struct store *s, const char *owner, uint64_t want_owner,
                        uint64_t want_total)
{
    uint64_t o = 12345, t = 12345;

    store_usage(s, owner, &o, &t);
    if (o != want_owner || t != want_total)
        fail_msg("usage of '%s': %llu of %llu, expected %llu of %llu", owner,
                 (unsigned long long)o, (unsigned long long)t, (unsigned long long)want_owner,
                 (unsigned long long)want_total);
}

/* Live bytes per owner and in all follow puts, overwrites (also by another owner), deletes,
 * compaction, and are rebuilt the same on reopen. */
static void test_store_usage(void **state)
{
    struct fx *f = *state;
    struct hide h = {0};
    char d[3000];
    struct store_stats ss;

    fill(d, sizeof(d), 21);
    fx_open(f, BIG_SEG);
    check_usage(&f->s, "alice", 0, 0);
    put_mem(&f->s, "a", "alice", d, 1000);
    put_mem(&f->s, "b", "alice", d, 500);
    put_mem(&f->s, "c", "bob", d, 3000);
    check_usage(&f->s, "alice", 1500, 4500);
    check_usage(&f->s, "bob", 3000, 4500);
    put_mem(&f->s, "a", "alice", d, 200); /* shrinks */
    check_usage(&f->s, "alice", 700, 3700);
    put_mem(&f->s, "b", "bob", d, 100); /* changes hands */
    check_usage(&f->s, "alice", 200, 3300);
    check_usage(&f->s, "bob", 3100, 3300);
    del(&f->s, "c");
    del(&f->s, "never-uploaded");
    check_usage(&f->s, "bob", 100, 300);
    check_usage(&f->s, "nobody", 0, 300);
    store_stats(&f->s, &ss);
    assert_int_equal(ss.data_bytes, 300);
    fx_reopen(f, BIG_SEG);
    check_usage(&f->s, "alice", 200, 300);
    check_usage(&f->s, "bob", 100, 300);

    /* compaction moves records without changing anybody's usage */
    fx_reopen(f, SMALL_SEG);
    for (unsigned i = 0; i < 60; i++)
        commit_put(&f->s, &h, hot_names[i % 3], i % 3 == 1 ? "bob" : "alice", 500 + i, 1024);
    store_stats(&f->s, &ss);
    assert_true(ss.compactions > 0);
    check_usage(&f->s, "alice", 200 + 2 * 1024, 300 + 3 * 1024);
    check_usage(&f->s, "bob", 100 + 1024, 300 + 3 * 1024);
    fx_reopen(f, SMALL_SEG);
    check_usage(&f->s, "alice", 200 + 2 * 1024, 300 + 3 * 1024);
}

static void test_store_compaction_whiteouts(void **state)
{
    struct fx *f = *state;
    struct hide h = {.keep = "kept"};
    struct store_stats ss;
    unsigned seeds[3] = {0};
    char path[PATH_MAX + 32];
    struct stat st;

    fx_open(f, SMALL_SEG);
    commit_put(&f->s, &h, "gone", "alice", 1, 1024);
    commit_put(&f->s, &h, "kept", "alice", 2, 1024);
    commit_del(&f->s, &h, "gone");
    commit_del(&f->s, &h, "kept");
    assert_int_equal(state_of(&f->s, "gone"), STORE_WHITEOUT);
    assert_int_equal(state_of(&f->s, "kept"), STORE_WHITEOUT);
    for (unsigned i = 0; i < 120; i++) {
        unsigned k = i % 3;
        seeds[k] = 5000 + i;
        commit_put(&f->s, &h, hot_names[k], k == 1 ? "bob" : "alice", seeds[k], 1024);
    }
    /* the segment that held both whiteouts (and the puts before them) is gone */
    seg_path(f, 0, path, sizeof(path));
    assert_int_equal(stat(path, &st), -1);
    seg_path(f, 1, path, sizeof(path));
    assert_int_equal(stat(path, &st), -1);
    assert_true(h.calls > 0);
    assert_int_equal(state_of(&f->s, "gone"), STORE_ABSENT);
    assert_int_equal(state_of(&f->s, "kept"), STORE_WHITEOUT);
    store_stats(&f->s, &ss);
    assert_int_equal(ss.files, 3);
    assert_int_equal(ss.whiteouts, 1);
    check_hot(&f->s, seeds);

    fx_reopen(f, SMALL_SEG);
    assert_int_equal(f->rec.files, 3);
    assert_int_equal(f->rec.whiteouts, 1);
    assert_int_equal(state_of(&f->s, "gone"), STORE_ABSENT);
    assert_int_equal(state_of(&f->s, "kept"), STORE_WHITEOUT);
    check_hot(&f->s, seeds);
    /* the kept whiteout is carried forward again and again, still there after more traffic */
    for (unsigned i = 120; i < 240; i++) {
        unsigned k = i % 3;
        seeds[k] = 5000 + i;
        commit_put(&f->s, &h, hot_names[k], k == 1 ? "bob" : "alice", seeds[k], 1024);
    }
    assert_int_equal(state_of(&f->s, "kept"), STORE_WHITEOUT);
    assert_int_equal(state_of(&f->s, "gone"), STORE_ABSENT);
    check_order(f); /* (the whiteouts compaction dropped left the order too) */
    fx_reopen(f, SMALL_SEG);
    assert_int_equal(state_of(&f->s, "kept"), STORE_WHITEOUT);
    assert_int_equal(state_of(&f->s, "gone"), STORE_ABSENT);
    check_hot(&f->s, seeds);
    check_order(f);
}

/* ---- 10. a reader's descriptor outlives compaction ---- */

static bool seg_file_has_inode(struct fx *f, ino_t ino)
{
    char path[PATH_MAX + 16];
    DIR *d;
    struct dirent *de;
    bool found = false;

    snprintf(path, sizeof(path), "%s/" STORE_DIR, f->dir);
    d = opendir(path);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] != '.' && de->d_ino == ino)
            found = true;
    }
    closedir(d);
    return found;
}


/* ---- 9b. a segment that cannot be created leaves nothing behind ---- */

/* store_roll with every write past 16 bytes of a file refused (EFBIG, as a full disk would
 * refuse it with ENOSPC): the new segment's header cannot be written. */
static int roll_with_writes_refused(struct store *s)
{
    struct rlimit old, tiny;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    int rc;

    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    tiny = (struct rlimit){.rlim_cur = 16, .rlim_max = old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &tiny), 0);
    rc = store_roll(s);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    return rc;
}

static void test_store_roll_after_failed_create(void **state)
{
    struct fx *f = *state;
    struct store_stats ss;
    uint32_t last;

    fx_open(f, SMALL_SEG);
    do_put(&f->s, "a", "alice", 1, 5000, true); /* fills segment 0 past SMALL_SEG */
    assert_true(roll_with_writes_refused(&f->s) < 0);
    /* the half-made segment is gone, and the store still writes into the full one */
    assert_int_equal(list_store(f, NULL, NULL), 1);
    do_put(&f->s, "b", "alice", 2, 100, false);
    /* the next roll works (it failed for good with "File exists" when the file stayed) */
    assert_int_equal(store_roll(&f->s), 0);
    do_put(&f->s, "c", "bob", 3, 5000, false);
    do_put(&f->s, "d", "bob", 4, 100, true);
    store_stats(&f->s, &ss);
    assert_int_equal(list_store(f, &last, NULL), ss.segments);
    assert_true(ss.segments >= 3);
    fx_reopen(f, SMALL_SEG);
    assert_int_equal(f->rec.records, 4);
    {
        char a[5000], b[100], c[5000], d[100];
        fill(a, sizeof(a), 1);
        fill(b, sizeof(b), 2);
        fill(c, sizeof(c), 3);
        fill(d, sizeof(d), 4);
        check_file(&f->s, "a", "alice", a, sizeof(a));
        check_file(&f->s, "b", "alice", b, sizeof(b));
        check_file(&f->s, "c", "bob", c, sizeof(c));
        check_file(&f->s, "d", "bob", d, sizeof(d));
    }
}

/* The same with a spare to reuse: the spare goes back to being a spare, not lost. */
static void test_store_roll_failed_keeps_spare(void **state)
{
    struct fx *f = *state;
    struct hide h = {NULL, 0};
    unsigned spares;

    fx_open(f, SMALL_SEG);
    /* overwrite one name until compaction has left a spare */
    for (unsigned i = 0; i < 40 && count_spares(f) == 0; i++) {
        do_put(&f->s, "x", "alice", 10 + i, 3000, true);
        assert_true(store_compact(&f->s, hide_needed, &h) >= 0);
    }
    spares = count_spares(f);
    assert_true(spares > 0);
    do_put(&f->s, "y", "alice", 99, 5000, true);
    assert_true(roll_with_writes_refused(&f->s) < 0);
    assert_int_equal(count_spares(f), spares);
    assert_int_equal(store_roll(&f->s), 0);
    assert_int_equal(count_spares(f), spares - 1);
    do_put(&f->s, "z", "bob", 100, 100, false);
    fx_reopen(f, SMALL_SEG);
    {
        char y[5000], z[100];
        fill(y, sizeof(y), 99);
        fill(z, sizeof(z), 100);
        check_file(&f->s, "y", "alice", y, sizeof(y));
        check_file(&f->s, "z", "bob", z, sizeof(z));
    }
}

/* ---- 9c. stats read while the writer appends (ThreadSanitizer checks this one) ---- */

struct stats_reader {
    struct store *s;
    _Atomic bool stop;
    _Atomic unsigned long reads;
};

static void *stats_loop(void *arg)
{
    struct stats_reader *r = arg;
    struct store_stats ss;

    while (!atomic_load(&r->stop)) {
        store_stats(r->s, &ss);
        atomic_fetch_add(&r->reads, 1);
    }
    return NULL;
}

static void test_store_stats_during_appends(void **state)
{
    struct fx *f = *state;
    struct stats_reader r = {.s = &f->s};
    struct store_stats ss;
    pthread_t t;

    fx_open(f, SMALL_SEG);
    assert_int_equal(pthread_create(&t, NULL, stats_loop, &r), 0);
    /* the reader under way before the appends, however late a busy machine runs it */
    while (atomic_load(&r.reads) == 0)
        sched_yield();
    for (unsigned i = 0; i < 200; i++) {
        char name[16];
        snprintf(name, sizeof(name), "s%u", i % 7);
        do_put(&f->s, name, "alice", 500 + i, 700, true);
    }
    atomic_store(&r.stop, true);
    assert_int_equal(pthread_join(t, NULL), 0);
    store_stats(&f->s, &ss);
    assert_int_equal(ss.files, 7);
}

static void test_store_reader_survives_compaction(void **state)
{
    struct fx *f = *state;
    struct hide h = {0};
    char old[1024], buf[1024];
    uint64_t off = 0, size = 0;
    unsigned seeds[3] = {0};
    struct stat st;
    int fd = -1;
    struct store_segment *pin = NULL;
    unsigned i;

    fx_open(f, SMALL_SEG);
    fill(old, sizeof(old), 777);
    assert_int_equal(store_roll(&f->s), 0);
    put_mem(&f->s, "hot/a", "alice", old, sizeof(old));
    assert_int_equal(find(&f->s, "hot/a", 5, NULL, &fd, &pin, &off, &size), STORE_FILE);
    assert_int_equal(size, sizeof(old));
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(st.st_nlink > 0);
    assert_true(seg_file_has_inode(f, st.st_ino));
    for (i = 0; i < 300; i++) {
        unsigned k = i % 3;
        seeds[k] = 9000 + i;
        commit_put(&f->s, &h, hot_names[k], k == 1 ? "bob" : "alice", seeds[k], 1024);
        assert_int_equal(fstat(fd, &st), 0);
        if (st.st_nlink == 0)
            break;
    }
    if (i == 300)
        fail_msg("the reader's segment was never compacted away");
    assert_false(seg_file_has_inode(f, st.st_ino));
    assert_int_equal(pread(fd, buf, sizeof(buf), (off_t)off), (ssize_t)sizeof(buf));
    assert_memory_equal(buf, old, sizeof(old));
    /* and the index moved on */
    check_hot(&f->s, seeds);
    close(fd);
    store_unpin(pin);
}

/* ---- 11. store_foreach ---- */

struct seen {
    char name[32];
    int state;
    int count;
    char data[64];
    uint64_t size;
};

struct visit {
    struct seen seen[16];
    size_t n;
};

static void visit_fn(void *arg, const char *name, size_t len, enum store_state st,
                     const struct store_found *f)
{
    int fd = f->fd;
    uint64_t off = f->off, size = f->size;

    struct visit *v = arg;
    struct seen *e = NULL;

    assert_true(len < sizeof(v->seen[0].name));
    assert_int_equal(strlen(name), len);
    for (size_t i = 0; i < v->n; i++) {
        if (strcmp(v->seen[i].name, name) == 0)
            e = &v->seen[i];
    }
    if (e == NULL) {
        assert_true(v->n < 16);
        e = &v->seen[v->n++];
        memcpy(e->name, name, len);
        e->name[len] = '\0';
    }
    e->count++;
    e->state = (int)st;
    e->size = size;
    if (st == STORE_FILE) {
        assert_true(size <= sizeof(e->data));
        if (size > 0)
            assert_int_equal(pread(fd, e->data, (size_t)size, (off_t)off), (ssize_t)size);
    }
}

static void check_visit(struct store *s)
{
    static const struct {
        const char *name;
        int state;
        const char *data;
    } want[] = {
        {"a", STORE_FILE, "alpha"},   {"b", STORE_WHITEOUT, NULL},
        {"c", STORE_FILE, "gamma-2"}, {"d", STORE_FILE, ""},
        {"e", STORE_WHITEOUT, NULL},  {"x/y/z", STORE_FILE, "zed"},
    };
    const size_t nwant = sizeof(want) / sizeof(want[0]);
    struct visit v;

    memset(&v, 0, sizeof(v));
    store_foreach(s, visit_fn, &v);
    assert_int_equal(v.n, nwant);
    for (size_t i = 0; i < nwant; i++) {
        struct seen *e = NULL;
        for (size_t j = 0; j < v.n; j++) {
            if (strcmp(v.seen[j].name, want[i].name) == 0)
                e = &v.seen[j];
        }
        if (e == NULL)
            fail_msg("'%s' not visited", want[i].name);
        assert_int_equal(e->count, 1);
        assert_int_equal(e->state, want[i].state);
        if (want[i].state == STORE_FILE) {
            assert_int_equal(e->size, strlen(want[i].data));
            assert_memory_equal(e->data, want[i].data, e->size);
        }
    }
}

static void test_store_foreach(void **state)
{
    struct fx *f = *state;
    struct visit v;

    fx_open(f, BIG_SEG);
    memset(&v, 0, sizeof(v));
    store_foreach(&f->s, visit_fn, &v);
    assert_int_equal(v.n, 0);
    put_mem(&f->s, "a", "u", "alpha", 5);
    put_mem(&f->s, "b", "u", "beta", 4);
    put_mem(&f->s, "c", "u", "gamma", 5);
    del(&f->s, "b");
    put_mem(&f->s, "c", "u", "gamma-2", 7);
    put_mem(&f->s, "d", "u", "", 0);
    del(&f->s, "e");
    put_mem(&f->s, "x/y/z", "u", "zed", 3);
    check_visit(&f->s);
    fx_reopen(f, BIG_SEG);
    check_visit(&f->s);
}

/* Many names: the index grows its bucket array and still finds every one. */
static void test_store_many_names(void **state)
{
    struct fx *f = *state;
    /* groups of 300: more records than one pwritev takes (STORE_STAGE_RECORDS) */
    static char names[300][32], datas[300][32];
    struct store_pos pos[300];
    char name[32], data[32];
    struct store_stats ss;

    fx_open(f, BIG_SEG);
    /* groups of 100 as the committer makes them: the buffers stay put until the one sync
     * (which writes the staged records), then all are published */
    for (unsigned g = 0; g < 10; g++) {
        for (unsigned k = 0; k < 300; k++) {
            unsigned i = g * 300 + k;
            struct store_body b = {.mem = datas[k], .fd = -1};
            snprintf(names[k], sizeof(names[k]), "file-%u", i);
            snprintf(datas[k], sizeof(datas[k]), "data-%u", i * 7);
            b.len = strlen(datas[k]);
            assert_int_equal(
                store_append_put(&f->s, names[k], strlen(names[k]), "u", &b, &pos[k]), 0);
        }
        assert_int_equal(store_sync(&f->s), 0);
        for (unsigned k = 0; k < 300; k++)
            store_publish(&f->s, names[k], strlen(names[k]), "u", &pos[k]);
    }
    store_stats(&f->s, &ss);
    assert_int_equal(ss.files, 3000);
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < 3000; i++) {
            snprintf(name, sizeof(name), "file-%u", i);
            snprintf(data, sizeof(data), "data-%u", i * 7);
            check_file(&f->s, name, "u", data, strlen(data));
        }
        assert_int_equal(state_of(&f->s, "file-3000"), STORE_ABSENT);
        if (pass == 0) {
            fx_reopen(f, BIG_SEG);
            assert_int_equal(f->rec.files, 3000);
            assert_int_equal(f->rec.records, 3000);
        }
    }
}

/* ---- 12. versions ---- */

static uint64_t version_of(struct store *s, const char *name)
{
    struct store_found f;

    assert_int_equal(store_lookup(s, name, strlen(name), false, &f), STORE_FILE);
    return f.version;
}

/* A PUT recording version v (0: a record without one, as written before versions). */
static void put_version(struct store *s, const char *name, const char *data, uint64_t v)
{
    struct store_body b = {.mem = data, .fd = -1, .len = strlen(data), .version = v};
    struct store_pos pos;

    assert_int_equal(store_append_put(s, name, strlen(name), "alice", &b, &pos), 0);
    assert_int_equal(pos.version, v);
    assert_int_equal(store_sync(s), 0);
    store_publish(s, name, strlen(name), "alice", &pos);
}

/*
 * Every PUT's version is kept through the index, a reopen and compaction; new versions rise
 * strictly, also above a version from a clock that was ahead; an old record reads as 0.
 */
static void test_store_versions(void **state)
{
    struct fx *f = *state;
    struct hide h = {0};
    struct store_stats ss;
    uint64_t v1, v2, ahead;
    char path[PATH_MAX + 32];
    struct stat st;

    fx_open(f, SMALL_SEG);
    v1 = store_next_version(&f->s);
    v2 = store_next_version(&f->s);
    assert_true(v1 > 1600000000ull * 1000000000ull); /* the wall clock, in nanoseconds */
    assert_true(v2 > v1);
    put_version(&f->s, "kept", "first", v1);
    put_version(&f->s, "legacy", "no version", 0);
    ahead = v2 + 86400ull * 1000000000ull; /* written while the clock was a day ahead */
    put_version(&f->s, "ahead", "later", ahead);
    assert_int_equal(version_of(&f->s, "kept"), v1);
    assert_int_equal(version_of(&f->s, "legacy"), 0);
    assert_true(store_next_version(&f->s) > v2);

    fx_reopen(f, SMALL_SEG);
    assert_int_equal(version_of(&f->s, "kept"), v1);
    assert_int_equal(version_of(&f->s, "legacy"), 0);
    assert_int_equal(version_of(&f->s, "ahead"), ahead);
    assert_true(store_next_version(&f->s) > ahead);

    /* churn until the first segment, which holds all three, has been compacted away */
    for (unsigned i = 0; i < 60; i++)
        commit_put(&f->s, &h, hot_names[i % 3], "alice", i, 1024);
    store_stats(&f->s, &ss);
    assert_true(ss.compactions > 0);
    seg_path(f, 0, path, sizeof(path));
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(version_of(&f->s, "kept"), v1);
    assert_int_equal(version_of(&f->s, "legacy"), 0);
    assert_int_equal(version_of(&f->s, "ahead"), ahead);
    check_file(&f->s, "kept", "alice", "first", 5);
    fx_reopen(f, SMALL_SEG);
    assert_int_equal(version_of(&f->s, "kept"), v1);
    assert_int_equal(version_of(&f->s, "legacy"), 0);
}

/* What a lookup reports as pending (store_found.pending), for a name that exists or not. */
static uint64_t pending_of(struct store *s, const char *name)
{
    struct store_found found;

    store_lookup(s, name, strlen(name), false, &found);
    return found.pending;
}

/*
 * A version handed out is pending for every lookup, the first of a batch for the whole batch,
 * until store_settle; after it, nothing is.
 */
static void test_store_pending_versions(void **state)
{
    struct fx *f = *state;
    uint64_t v1, v2;

    fx_open(f, SMALL_SEG);
    assert_true(pending_of(&f->s, "a") == UINT64_MAX);
    v1 = store_next_version(&f->s);
    assert_true(pending_of(&f->s, "a") == v1);
    assert_true(pending_of(&f->s, "nothing here") == v1);
    v2 = store_next_version(&f->s);
    assert_true(v2 > v1);
    put_version(&f->s, "a", "one", v1);
    assert_true(pending_of(&f->s, "a") == v1); /* published, but the batch is not settled */
    put_version(&f->s, "b", "two", v2);
    store_settle(&f->s);
    assert_true(pending_of(&f->s, "a") == UINT64_MAX);
    assert_true(pending_of(&f->s, "b") == UINT64_MAX);
    store_settle(&f->s); /* nothing pending: nothing to do */
    v1 = store_next_version(&f->s); /* the next batch */
    assert_true(v1 > v2);
    assert_true(pending_of(&f->s, "b") == v1);
    store_settle(&f->s);
    assert_true(pending_of(&f->s, "b") == UINT64_MAX);
}

/* ---- 12. store_list ---- */

struct listed {
    char names[64][40]; /* "d:NAME" or "f:NAME" */
    size_t n;
    const char *refuse; /* a child fn does not count */
};

static bool list_fn(void *arg, const struct store_child *c)
{
    struct listed *l = arg;

    assert_true(strlen(c->full) == c->full_len);
    assert_true(c->f->fd == -1 && c->f->pin == NULL);
    if (l->refuse != NULL && strlen(l->refuse) == c->len && memcmp(l->refuse, c->name, c->len) == 0)
        return false;
    assert_true(l->n < 64);
    snprintf(l->names[l->n++], sizeof(l->names[0]), "%c:%.*s", c->dir ? 'd' : 'f', (int)c->len,
             c->name);
    return true;
}

static size_t list_counted;

static bool list_count(void *arg, const struct store_child *c)
{
    (void)arg;
    (void)c;
    list_counted++;
    return true;
}

/* Lists dir from after (NULL, or "d:NAME"/"f:NAME") for owner; "d:a f:b ..." of what came. */
static const char *list(struct store *s, const char *dir, const char *owner, const char *after,
                        size_t max, struct store_list_result *res)
{
    static char out[2048];
    struct listed l = {.n = 0};
    struct store_list_req rq = {.dir = dir, .dir_len = strlen(dir), .owner = owner, .max = max};

    if (after != NULL) {
        rq.after = after + 2;
        rq.after_len = strlen(after + 2);
        rq.after_dir = after[0] == 'd';
    }
    assert_int_equal(store_list(s, &rq, list_fn, &l, res), 0);
    out[0] = '\0';
    for (size_t i = 0; i < l.n; i++)
        snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i > 0 ? " " : "",
                 l.names[i]);
    return out;
}

static void test_store_list_order(void **state)
{
    struct fx *f = *state;
    struct store_list_result r;
    static const char *const names[] = {"a/x", "a/b/y", "a/b!/z", "a/b/c/w", "a/f1", "a/f0",
                                        "a!/q", "top", "a/b/c/v", "ab/k"};

    fx_open(f, BIG_SEG);
    assert_string_equal(list(&f->s, "", NULL, NULL, 10, &r), "");
    assert_false(r.exists);
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        put_mem(&f->s, names[i], "alice", "1", 1);
    del(&f->s, "a/gone");    /* a deletion is never listed ... */
    del(&f->s, "a/d/gone2"); /* ... nor makes a directory show */
    for (int round = 0; round < 2; round++) {
        /* subdirectories first ("b" before "b!": '/' compares lowest), then files */
        assert_string_equal(list(&f->s, "a", NULL, NULL, 10, &r), "d:b d:b! f:f0 f:f1 f:x");
        assert_true(r.exists);
        assert_false(r.more);
        assert_string_equal(list(&f->s, "", NULL, NULL, 10, &r), "d:a d:a! d:ab f:top");
        assert_string_equal(list(&f->s, "a/b", NULL, NULL, 10, &r), "d:c f:y");
        assert_string_equal(list(&f->s, "a/b/c", NULL, NULL, 10, &r), "f:v f:w");
        assert_string_equal(list(&f->s, "a/d", NULL, NULL, 10, &r), "");
        assert_false(r.exists);
        assert_string_equal(list(&f->s, "nope", NULL, NULL, 10, &r), "");
        assert_false(r.exists);
        /* a cursor pages through, max at a time */
        assert_string_equal(list(&f->s, "a", NULL, NULL, 2, &r), "d:b d:b!");
        assert_true(r.more);
        assert_string_equal(list(&f->s, "a", NULL, "d:b!", 2, &r), "f:f0 f:f1");
        assert_true(r.more);
        assert_string_equal(list(&f->s, "a", NULL, "f:f1", 2, &r), "f:x");
        assert_false(r.more);
        assert_string_equal(list(&f->s, "a", NULL, "d:b", 10, &r), "d:b! f:f0 f:f1 f:x");
        assert_string_equal(list(&f->s, "a", NULL, "d:a0", 10, &r), "d:b d:b! f:f0 f:f1 f:x");
        assert_string_equal(list(&f->s, "a", NULL, "f:f05", 10, &r), "f:f1 f:x");
        assert_string_equal(list(&f->s, "a", NULL, "f:zz", 10, &r), "");
        assert_true(r.exists); /* (past the end, but the directory is there) */
        check_order(f);
        fx_reopen(f, BIG_SEG); /* the same after a replay */
    }
    /* a subdirectory fn does not show is tried again with the next entry beneath it */
    {
        struct listed l = {.n = 0, .refuse = "b"};
        struct store_list_req rq = {.dir = "a", .dir_len = 1, .max = 10};
        assert_int_equal(store_list(&f->s, &rq, list_fn, &l, &r), 0);
        assert_int_equal(l.n, 4); /* b!, f0, f1, x */
        assert_true(r.visited >= 4 + 3); /* and each of b's three entries was offered */
    }
    /* deletions and uploads again move names in and out */
    del(&f->s, "a/b!/z");
    del(&f->s, "a/f0");
    put_mem(&f->s, "a/gone", "bob", "2", 1);
    assert_string_equal(list(&f->s, "a", NULL, NULL, 10, &r), "d:b f:f1 f:gone f:x");
    check_order(f);
}

static void test_store_list_bound(void **state)
{
    struct fx *f = *state;
    struct store_list_result r;
    struct listed l;
    char name[64];
    struct store_list_req rq = {.max = 1000};

    fx_open(f, BIG_SEG);
    /* 100 directories of 100 files, and 2,000 files in one: 12,000 names */
    for (int i = 0; i < 10000; i++) {
        struct store_body b = {.mem = "x", .fd = -1, .len = 1};
        struct store_pos pos;
        snprintf(name, sizeof(name), "d%02d/f%04d", i % 100, i / 100);
        assert_int_equal(store_append_put(&f->s, name, strlen(name), "u", &b, &pos), 0);
        if (i % 200 == 199)
            assert_int_equal(store_sync(&f->s), 0);
        store_publish(&f->s, name, strlen(name), "u", &pos);
    }
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "flat/f%04d", i);
        put_mem(&f->s, name, "u", "y", 1);
    }
    check_order(f);
    /* a directory of 100 files reads its 100 entries and the one after them */
    rq.dir = "d42";
    rq.dir_len = 3;
    memset(&l, 0, sizeof(l));
    list_counted = 0;
    assert_int_equal(store_list(&f->s, &rq, list_count, &l, &r), 0);
    assert_int_equal(list_counted, 100);
    assert_true(r.visited <= 100 + 2);
    /* the root: one entry per subdirectory (101), none of the 12,000 beneath them */
    rq.dir = "";
    rq.dir_len = 0;
    list_counted = 0;
    assert_int_equal(store_list(&f->s, &rq, list_count, &l, &r), 0);
    assert_int_equal(list_counted, 101);
    assert_true(r.visited <= 101 + 2);
    /* a big directory, max 10: 11 entries read, and more to come */
    rq.dir = "flat";
    rq.dir_len = 4;
    rq.max = 10;
    list_counted = 0;
    assert_int_equal(store_list(&f->s, &rq, list_count, &l, &r), 0);
    assert_int_equal(list_counted, 10);
    assert_true(r.more);
    assert_true(r.visited <= 10 + 2);
    /* ... and from a cursor in its middle, as many */
    rq.after = "f1500";
    rq.after_len = 5;
    list_counted = 0;
    assert_int_equal(store_list(&f->s, &rq, list_count, &l, &r), 0);
    assert_int_equal(list_counted, 10);
    assert_true(r.visited <= 10 + 3);
    /* the index and the order cost under 48 bytes per name (these share most of theirs) */
    {
        struct store_stats ss;
        store_stats(&f->s, &ss);
        assert_true(ss.index_bytes > 12000 && ss.index_bytes < 48 * 12000);
    }
}

static void test_store_list_by_owner(void **state)
{
    struct fx *f = *state;
    struct store_list_result r;

    f->err[0] = '\0';
    assert_int_equal(store_open(&f->s, f->root_fd, BIG_SEG, STORE_ORDER_BY_OWNER, &f->rec, f->err),
                     0);
    f->open = true;
    put_mem(&f->s, "p/a", "alice", "1", 1);
    put_mem(&f->s, "p/b", "bob", "1", 1);
    put_mem(&f->s, "p/c", "alice", "1", 1);
    put_mem(&f->s, "p/sub/x", "bob", "1", 1);
    put_mem(&f->s, "p/sub2/y", "alice", "1", 1);
    for (int i = 0; i < 500; i++) { /* bob's many: never read for alice */
        char name[32];
        snprintf(name, sizeof(name), "p/bob%03d", i);
        put_mem(&f->s, name, "bob", "1", 1);
    }
    for (int round = 0; round < 2; round++) {
        assert_string_equal(list(&f->s, "p", "alice", NULL, 10, &r), "d:sub2 f:a f:c");
        assert_true(r.visited <= 3 + 3);
        assert_true(r.exists);
        assert_string_equal(list(&f->s, "p/sub", "alice", NULL, 10, &r), "");
        assert_false(r.exists); /* bob's only */
        assert_string_equal(list(&f->s, "p", "carol", NULL, 10, &r), "");
        assert_false(r.exists);
        assert_string_equal(list(&f->s, "p", "bob", NULL, 2, &r), "d:sub f:b");
        assert_true(r.more);
        check_order(f);
        /* a replay builds the same order */
        store_close(&f->s);
        assert_int_equal(
            store_open(&f->s, f->root_fd, BIG_SEG, STORE_ORDER_BY_OWNER, &f->rec, f->err), 0);
    }
    /* a name changes hands through a deletion: it moves to its new owner's */
    del(&f->s, "p/b");
    put_mem(&f->s, "p/b", "alice", "2", 1);
    assert_string_equal(list(&f->s, "p", "alice", NULL, 10, &r), "d:sub2 f:a f:b f:c");
    assert_string_equal(list(&f->s, "p", "bob", NULL, 2, &r), "d:sub f:bob000");
    check_order(f);
}

/* A name the server would refuse (bytes below 2: a crafted log) is kept out of the order. */
static void test_store_list_unordered(void **state)
{
    struct fx *f = *state;
    struct store_list_result r;
    char err[128];

    fx_open(f, BIG_SEG);
    put_mem(&f->s, "ok/a", "alice", "1", 1);
    put_mem(&f->s, "ok/b\x01", "alice", "2", 1);
    put_mem(&f->s, "ok/\x01/c", "alice", "3", 1);
    assert_int_equal(f->s.order.count, 1);
    assert_string_equal(list(&f->s, "ok", NULL, NULL, 10, &r), "f:a");
    assert_int_equal(state_of(&f->s, "ok/b\x01"), STORE_FILE); /* still served by name */
    del(&f->s, "ok/b\x01");
    put_mem(&f->s, "ok/b\x01", "bob", "4", 1);
    fx_reopen(f, BIG_SEG);
    assert_int_equal(f->s.order.count, 1);
    assert_string_equal(list(&f->s, "ok", NULL, NULL, 10, &r), "f:a");
    if (upindex_check(&f->s.order, err) != 0)
        fail_msg("the order of names: %s", err);
}

/* ---- the index checkpoint ---- */

/* The index as text, one sorted line per entry (segment by its inode), for comparisons. */
struct dump {
    char **lines;
    size_t n, cap;
};

static void dump_one(void *arg, const char *name, size_t len, enum store_state st,
                     const struct store_found *f)
{
    struct dump *d = arg;
    struct stat sb;
    char line[STORE_NAME_MAX + 200];

    assert_int_equal(fstat(f->fd, &sb), 0);
    snprintf(line, sizeof(line), "%.*s %d owner=%s ino=%llu off=%llu size=%llu v=%llu",
             (int)len, name, (int)st, f->owner, (unsigned long long)sb.st_ino,
             (unsigned long long)f->off, (unsigned long long)f->size,
             (unsigned long long)f->version);
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->lines = realloc(d->lines, d->cap * sizeof(*d->lines));
        assert_non_null(d->lines);
    }
    d->lines[d->n++] = strdup(line);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The index of s as text: entries sorted, then the counts (data and live bytes). */
static void dump_index(struct store *s, struct dump *d)
{
    struct store_stats st;
    char line[200];

    memset(d, 0, sizeof(*d));
    store_foreach(s, dump_one, d);
    qsort(d->lines, d->n, sizeof(*d->lines), cmp_str);
    store_stats(s, &st);
    snprintf(line, sizeof(line), "~ files=%llu whiteouts=%llu data=%llu live=%llu",
             (unsigned long long)st.files, (unsigned long long)st.whiteouts,
             (unsigned long long)st.data_bytes, (unsigned long long)st.live_bytes);
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->lines = realloc(d->lines, d->cap * sizeof(*d->lines));
        assert_non_null(d->lines);
    }
    d->lines[d->n++] = strdup(line);
}

static void dump_free(struct dump *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->lines[i]);
    free(d->lines);
}

/* Drops the whiteouts and the live bytes from d (see ckpt_matches_replay). */
static void dump_files_only(struct dump *d)
{
    size_t k = 0;

    for (size_t i = 0; i < d->n; i++) {
        char *sp = strchr(d->lines[i], ' ');
        char *live = strstr(d->lines[i], " live=");
        if (d->lines[i][0] != '~' && sp != NULL && sp[1] == '0' + STORE_WHITEOUT) {
            free(d->lines[i]);
            continue;
        }
        if (d->lines[i][0] == '~' && live != NULL)
            *live = '\0';
        d->lines[k++] = d->lines[i];
    }
    d->n = k;
}

/* Fails with the first line where a and b differ. */
static void dump_equal(const struct dump *a, const struct dump *b, const char *what)
{
    for (size_t i = 0; i < a->n || i < b->n; i++) {
        const char *x = i < a->n ? a->lines[i] : "(none)";
        const char *y = i < b->n ? b->lines[i] : "(none)";
        if (strcmp(x, y) != 0)
            fail_msg("%s: entry %zu: '%s' with the checkpoint, '%s' by a full replay", what, i,
                     x, y);
    }
}

/*
 * Opens the store at f twice: with its checkpoint (as it is), then without it (a full replay
 * of the log), and fails unless both indexes are the same entry by entry. Returns whether the
 * first open used the checkpoint. With files_only, whiteouts are not compared: a whiteout
 * that compaction dropped (it hid nothing) while its segment was still there is in a full
 * replay, not in the index that ran nor in a checkpoint of it.
 */
static bool ckpt_matches_replay_as(struct fx *f, const char *what, bool files_only)
{
    char path[PATH_MAX + 32];
    struct dump a, b;
    bool loaded;

    f->keep_ckpt = true;
    fx_open(f, SMALL_SEG);
    loaded = f->rec.ckpt_loaded;
    memcpy(f->first_why, f->rec.ckpt_why, sizeof(f->first_why));
    dump_index(&f->s, &a);
    fx_close(f);
    ckpt_path(f, path, sizeof(path));
    unlink(path);
    fx_open(f, SMALL_SEG);
    assert_false(f->rec.ckpt_loaded);
    dump_index(&f->s, &b);
    if (files_only) {
        dump_files_only(&a);
        dump_files_only(&b);
    }
    dump_equal(&a, &b, what);
    dump_free(&a);
    dump_free(&b);
    fx_close(f);
    return loaded;
}

static bool ckpt_matches_replay(struct fx *f, const char *what)
{
    return ckpt_matches_replay_as(f, what, false);
}

static bool keep_all(void *arg, const char *name)
{
    (void)arg;
    (void)name;
    return true;
}

static bool keep_none(void *arg, const char *name)
{
    (void)arg;
    (void)name;
    return false;
}

/*
 * In a child process: random PUTs and DELETEs in batches over a few names and owners, small
 * segments (rolls, compaction, spares reused), checkpoints started at random moments and
 * written a few entries per step between batches, then a SIGKILL: after a random number of
 * batches, maybe in the middle of one, or (crash) at that point of writing a checkpoint.
 * Exits 3 if something failed before.
 */
static void random_child(struct fx *f, unsigned seed, int batches, const char *crash,
                         bool drop_whiteouts)
{
    struct store s;
    struct store_recovery rec;
    char err[STORE_ERR_LEN], names[40][16], data[8][200]; /* (staged until the sync) */
    static const char *const owners[] = {"ann", "bob", "carl"};
    uint32_t x = seed * 2654435761u + 1;
    int tmp_fd;

#define RND(n) ((x = x * 1103515245u + 12345u), (x >> 8) % (n))
    if (crash != NULL)
        setenv("S1_TEST_CKPT_CRASH", crash, 1);
    if (store_open(&s, f->root_fd, SMALL_SEG, 0, &rec, err) != 0 ||
        (tmp_fd = openat(f->root_fd, ".", O_TMPFILE | O_RDWR, 0600)) < 0)
        _exit(3);
    s.ckpt_step = 1 + RND(6);
    for (int i = 0; i < 40; i++)
        snprintf(names[i], sizeof(names[i]), "d%u/n%d", (unsigned)(i % 3), i);
    names[39][1] = '\x01'; /* a name not in the order: some checkpoints go by hashes */
    for (int b = 0; b < batches; b++) {
        struct store_pos pos[8];
        const char *who[8];
        int which[8], n = 1 + (int)RND(8);
        bool torn = b + 1 == batches && RND(2) == 0;

        if (store_roll(&s) < 0)
            _exit(3);
        for (int k = 0; k < n; k++) {
            which[k] = (int)RND(40);
            who[k] = owners[RND(3)];
            if (RND(4) == 0) {
                if (store_append_delete(&s, names[which[k]], strlen(names[which[k]]),
                                        &pos[k]) < 0)
                    _exit(3);
            } else {
                struct store_body body = {.mem = data[k], .fd = -1, .len = RND(200),
                                          .version = store_next_version(&s)};
                fill(data[k], body.len, x);
                if (body.len > 0 && RND(4) == 0) { /* from a file: written at once */
                    body.mem = NULL;
                    body.fd = tmp_fd;
                    if (pwrite(tmp_fd, data[k], body.len, 0) != (ssize_t)body.len)
                        _exit(3);
                }
                if (store_append_put(&s, names[which[k]], strlen(names[which[k]]), who[k],
                                     &body, &pos[k]) < 0)
                    _exit(3);
            }
        }
        if (torn) /* killed in the middle of a batch: never answered */
            break;
        if (store_sync(&s) < 0)
            _exit(3);
        if (b + 1 == batches && RND(2) == 0)
            break; /* durable, killed before it was published and answered */
        for (int k = 0; k < n; k++)
            store_publish(&s, names[which[k]], strlen(names[which[k]]), who[k], &pos[k]);
        store_settle(&s);
        if (store_compact(&s, drop_whiteouts ? keep_none : keep_all, NULL) < 0)
            _exit(3);
        if (RND(12) == 0)
            s.ckpt_due = true;
        if (store_checkpoint(&s, false) < 0)
            _exit(3);
    }
#undef RND
    raise(SIGKILL);
    _exit(3);
}

/* Runs random_child and expects it killed. */
static void random_run(struct fx *f, unsigned seed, int batches, const char *crash,
                       bool drop_whiteouts)
{
    pid_t pid = fork();
    int status;

    assert_true(pid >= 0);
    if (pid == 0)
        random_child(f, seed, batches, crash, drop_whiteouts);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("seed %u: the child did not end by SIGKILL (status %d)", seed, status);
}

/*
 * The index rebuilt from the checkpoint and the log after it is the one a full replay makes,
 * entry by entry (names, owners, segments, offsets, sizes, versions, usage and live bytes):
 * after random runs killed at random points, some in the middle of writing a checkpoint.
 */
static void test_store_ckpt_equals_replay(void **state)
{
    static const char *const crashes[] = {NULL, NULL, "step", "synced", "renamed"};
    struct fx *f = *state;
    unsigned loaded = 0, rounds = 24;
    char what[64];

    for (unsigned r = 0; r < rounds; r++) {
        unsigned seed = 1000 + r;
        bool drop = r >= rounds / 2; /* compaction drops whiteouts in the second half */
        random_run(f, seed, 8 + (int)(seed * 7 % 40), crashes[r % 5], drop);
        snprintf(what, sizeof(what), "seed %u, crash at %s", seed,
                 crashes[r % 5] != NULL ? crashes[r % 5] : "a batch");
        if (ckpt_matches_replay_as(f, what, drop))
            loaded++;
        else if (strcmp(f->first_why, "there is none") != 0) /* (the first run) */
            fail_msg("%s: the checkpoint was not used: %s", what, f->first_why);
        /* (the store goes on from there: the next run starts on it) */
    }
    /* the comparison is worth something only if checkpoints were used */
    if (loaded < rounds / 2)
        fail_msg("only %u of %u starts used a checkpoint", loaded, rounds);
}

/* A clean stop writes a checkpoint; the next start loads it and replays nothing. */
static void test_store_ckpt_used(void **state)
{
    struct fx *f = *state;
    char big[3000];
    struct store_stats st;

    fill(big, sizeof(big), 7);
    fx_open(f, SMALL_SEG);
    assert_false(f->rec.ckpt_loaded);
    assert_string_equal(f->rec.ckpt_why, "there is none");
    put_mem(&f->s, "a", "ann", "one", 3);
    put_mem(&f->s, "d/b", "bob", big, sizeof(big));
    put_mem(&f->s, "d/c", "bob", big, 10);
    del(&f->s, "d/c");
    assert_int_equal(store_roll(&f->s), 0);
    put_mem(&f->s, "e", "", "", 0);
    f->keep_ckpt = true;
    fx_reopen(f, SMALL_SEG);
    assert_true(f->rec.ckpt_loaded);
    assert_int_equal(f->rec.records, 0);
    assert_int_equal(f->rec.ckpt_entries, 4);
    assert_int_equal(f->rec.files, 3);
    assert_int_equal(f->rec.whiteouts, 1);
    check_file(&f->s, "a", "ann", "one", 3);
    check_file(&f->s, "d/b", "bob", big, sizeof(big));
    check_file(&f->s, "e", "", "", 0);
    assert_int_equal(state_of(&f->s, "d/c"), STORE_WHITEOUT);
    store_stats(&f->s, &st);
    assert_int_equal(st.ckpt_entries, 4);
    assert_true(st.ckpt_unix > 0);
    /* more after it: replayed over it */
    put_mem(&f->s, "a", "carl", "two", 3);
    del(&f->s, "e");
    fx_reopen(f, SMALL_SEG);
    assert_true(f->rec.ckpt_loaded);
    assert_int_equal(f->rec.records, 0); /* (the close wrote a newer one) */
    check_file(&f->s, "a", "carl", "two", 3);
    assert_int_equal(state_of(&f->s, "e"), STORE_WHITEOUT);
    /* a checkpoint written while running, then more log: loaded, the rest replayed */
    f->s.ckpt_due = true;
    assert_int_equal(store_checkpoint(&f->s, false), 1);
    put_mem(&f->s, "z", "ann", "zz", 2);
    f->s.opened = false; /* as a crash: no checkpoint at close */
    fx_close(f);
    fx_open(f, SMALL_SEG);
    assert_true(f->rec.ckpt_loaded);
    assert_int_equal(f->rec.records, 1);
    check_file(&f->s, "z", "ann", "zz", 2);
    check_file(&f->s, "a", "carl", "two", 3);
    fx_close(f);
    assert_true(ckpt_matches_replay(f, "used"));
}

/* Flips one bit of the file at path at off (from the end if off < 0). */
static void flip(const char *path, long long off)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    off_t at = off >= 0 ? (off_t)off : file_size(path) + (off_t)off;
    char c;

    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &c, 1, at), 1);
    c ^= 0x10;
    assert_int_equal(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

/*
 * A damaged checkpoint (a bit flipped in its header, its entries or its list of segments, or
 * cut short) is not used: the whole log is replayed, nothing is lost. One cut short by a crash
 * while it was written (index.ckpt.tmp) is removed.
 */
static void test_store_ckpt_damaged(void **state)
{
    static const long long at[] = {0, 20, 70, 100, -1, -20};
    struct fx *f = *state;
    char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
    char name[32];
    int fd;

    f->keep_ckpt = true;
    fx_open(f, SMALL_SEG);
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof(name), "d/%d", i);
        put_mem(&f->s, name, i % 2 ? "ann" : "bob", name, strlen(name));
    }
    del(&f->s, "d/3");
    ckpt_path(f, path, sizeof(path));
    for (size_t k = 0; k <= sizeof(at) / sizeof(at[0]); k++) {
        fx_close(f);
        if (k < sizeof(at) / sizeof(at[0]))
            flip(path, at[k]);
        else
            assert_int_equal(truncate(path, file_size(path) - 1), 0);
        fx_open(f, SMALL_SEG);
        if (f->rec.ckpt_loaded)
            fail_msg("a checkpoint damaged at %lld was used", at[k]);
        assert_int_equal(f->rec.records, 31);
        assert_int_equal(f->rec.files, 29);
        check_file(&f->s, "d/29", "ann", "d/29", 4);
        assert_int_equal(state_of(&f->s, "d/3"), STORE_WHITEOUT);
    }
    /* the close wrote a good one again; a temp one left by a crash goes at the next start */
    fx_close(f);
    snprintf(tmp, sizeof(tmp), "%s/" STORE_DIR "/" STORE_CKPT_TMP, f->dir);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "junk", 4), 4);
    close(fd);
    fx_open(f, SMALL_SEG);
    assert_true(f->rec.ckpt_loaded);
    assert_int_equal(access(tmp, F_OK), -1);
    check_file(&f->s, "d/29", "ann", "d/29", 4);
}

/*
 * A checkpoint whose checksums match but whose entry says a record is laid out otherwise than
 * the index would find its data (its length not its header, name, owner and data): refused
 * as written wrong, the whole log replayed, nothing lost; never taken as it is.
 */
static void test_store_ckpt_written_wrong(void **state)
{
    struct fx *f = *state;
    char path[PATH_MAX + 32];
    uint8_t blk[16 + 4096];
    uint32_t n, len;
    uint64_t rec_len;
    int fd;

    f->keep_ckpt = true;
    fx_open(f, SMALL_SEG);
    put_mem(&f->s, "d/a", "ann", "hello", 5);
    fx_close(f);
    /* the first block after the 64-byte header: magic, CRC, count, length, then the entries
     * (40 bytes each: lengths, flags, segment, then rec_off, rec_len, size, version) */
    ckpt_path(f, path, sizeof(path));
    fd = open(path, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, blk, 16, 64), 16);
    memcpy(&n, blk + 8, 4);
    memcpy(&len, blk + 12, 4);
    assert_int_equal(n, 1);
    assert_true(len <= sizeof(blk) - 16);
    assert_int_equal(pread(fd, blk + 16, len, 64 + 16), (ssize_t)len);
    memcpy(&rec_len, blk + 16 + 16, 8);
    rec_len += 1;
    memcpy(blk + 16 + 16, &rec_len, 8);
    {
        uint32_t crc = store_crc32(store_crc32(0, blk + 8, 8), blk + 16, len);
        memcpy(blk + 4, &crc, 4);
    }
    assert_int_equal(pwrite(fd, blk, 16 + len, 64), (ssize_t)(16 + len));
    close(fd);
    fx_open(f, SMALL_SEG);
    assert_false(f->rec.ckpt_loaded);
    assert_non_null(strstr(f->rec.ckpt_why, "bad entry"));
    assert_int_equal(f->rec.files, 1);
    check_file(&f->s, "d/a", "ann", "hello", 5);
}

/*
 * A stale checkpoint is never trusted over the log: one naming a segment that was started
 * anew (another salt), or a segment that is gone while an entry it holds is still a file
 * after the replay. The whole log is replayed instead.
 */
static void test_store_ckpt_stale(void **state)
{
    struct fx *f = *state;
    char seg[PATH_MAX + 32];
    char zero[STORE_SEG_HDR_BYTES] = {0};
    int fd;

    f->keep_ckpt = true;
    fx_open(f, SMALL_SEG);
    put_mem(&f->s, "a", "ann", "aa", 2);
    assert_int_equal(store_roll(&f->s), 0); /* (not full: no new segment) */
    f->s.segment_bytes = 1;
    assert_int_equal(store_roll(&f->s), 0); /* segment 1 */
    f->s.segment_bytes = SMALL_SEG;
    put_mem(&f->s, "b", "bob", "bb", 2);
    fx_close(f);
    /* segment 1 started anew: its header gone (a crash while it was started) */
    seg_path(f, 1, seg, sizeof(seg));
    fd = open(seg, O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, zero, sizeof(zero), 0), (ssize_t)sizeof(zero));
    close(fd);
    fx_open(f, SMALL_SEG);
    assert_false(f->rec.ckpt_loaded);
    assert_non_null(strstr(f->rec.ckpt_why, "stale"));
    assert_int_equal(f->rec.restarted, 1);
    check_file(&f->s, "a", "ann", "aa", 2);
    assert_int_equal(state_of(&f->s, "b"), STORE_ABSENT);
    put_mem(&f->s, "c", "carl", "cc", 2);
    fx_close(f);
    /* segment 0 gone (removed by hand) while the checkpoint has "a" in it */
    seg_path(f, 0, seg, sizeof(seg));
    assert_int_equal(unlink(seg), 0);
    fx_open(f, SMALL_SEG);
    assert_false(f->rec.ckpt_loaded);
    assert_non_null(strstr(f->rec.ckpt_why, "gone"));
    assert_int_equal(state_of(&f->s, "a"), STORE_ABSENT);
    check_file(&f->s, "c", "carl", "cc", 2);
    fx_close(f);
    assert_true(ckpt_matches_replay(f, "stale"));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_store_open_empty),
        T(test_store_put_visibility),
        T(test_store_put_empty_body),
        T(test_store_crc),
        T(test_store_put_from_fd),
        T(test_store_overwrite_delete),
        T(test_store_usage),
        T(test_store_reopen),
        T(test_store_reopen_segments),
        T(test_store_torn_partial_record),
        T(test_store_torn_garbage),
        T(test_store_torn_last_record_damaged),
        T(test_store_damage_refused),
        T(test_store_roll),
        T(test_store_compaction),
        T(test_store_compaction_whiteouts),
        T(test_store_reader_survives_compaction),
        T(test_store_roll_after_failed_create),
        T(test_store_roll_failed_keeps_spare),
        T(test_store_stats_during_appends),
        T(test_store_foreach),
        T(test_store_many_names),
        T(test_store_versions),
        T(test_store_pending_versions),
        T(test_store_list_order),
        T(test_store_list_bound),
        T(test_store_list_by_owner),
        T(test_store_list_unordered),
        T(test_store_ckpt_used),
        T(test_store_ckpt_damaged),
        T(test_store_ckpt_written_wrong),
        T(test_store_ckpt_stale),
        T(test_store_ckpt_equals_replay),
        /* last: with the double free in store_open's error path this one aborts the run */
        T(test_store_foreign_file),
    };
    return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
