/*
 * test_listing.c - cmocka tests for server1/listing: Accept negotiation (q-values, wildcards,
 * malformed weights), the JSON and HTML renderings (escaping, bytes that are not UTF-8, hrefs),
 * listing_build over a directory on disk: order, names left out, the --max-list bound and
 * the memory it keeps to, and a missing directory; and over the disk and an upload store:
 * uploads and deletions standing for the operator's files, a cursor (?after=, parsed by
 * listing_after_parse) that pages through the whole listing, the upload index read only for
 * the directory listed, and --private-uploads with the index ordered by owner.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../server1/listing.h"

static bool html(const char *accept)
{
    return listing_wants_html(accept, accept != NULL ? strlen(accept) : 0);
}

static void test_accept(void **state)
{
    (void)state;
    assert_false(html(NULL));
    assert_false(html(""));
    assert_false(html("*/*"));
    assert_false(html("text/*"));
    assert_true(html("text/html"));
    assert_true(html("TEXT/HTML"));
    assert_true(html("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"));
    assert_false(html("application/json"));
    assert_false(html("application/json, text/html")); /* a tie: JSON, the default */
    assert_true(html("text/html;q=0.9, application/json;q=0.8"));
    assert_false(html("text/html;q=0.5, application/json"));
    assert_false(html("text/html;q=0"));
    assert_true(html("text/html ; level=1 ; q=0.5, application/json;q=0.4"));
    assert_false(html("text/html;q=abc"));   /* an unreadable weight: not acceptable */
    assert_false(html("text/html;q=1.5"));
    assert_false(html("text/html;q=0.1234"));
    assert_true(html("text/html;q=0.001"));
    assert_false(html("text/htmlx"));
    assert_true(html(" , ,text/html,"));
    assert_true(html("application/json;q=0.2,text/html;q=0.3"));
}

static struct listing fixture(struct listing_entry *e, size_t n, bool truncated)
{
    return (struct listing){.e = e, .n = n, .cap = n, .max = n, .truncated = truncated};
}

static void test_json(void **state)
{
    char n0[] = "sub", n1[] = "q\"b\\s\x01", n2[] = "caf\xc3\xa9", n3[] = "bad\xff.bin";
    struct listing_entry e[] = {
        {.name = n0, .name_len = 3, .dir = true, .mtime_s = -1},
        {.name = n1, .name_len = 6, .size = 7, .mtime_s = 0},
        {.name = n2, .name_len = 5, .size = 0, .mtime_s = 1767323045},
        {.name = n3, .name_len = 8, .size = 2, .mtime_s = -1},
    };
    struct listing l = fixture(e, 4, false);
    size_t len = 0;
    char *j = listing_json(&l, "a b", 3, &len);

    (void)state;
    assert_string_equal(
        j, "{\"path\":\"/files/a b/\",\"entries\":["
           "{\"name\":\"sub\",\"href\":\"sub/\",\"type\":\"directory\"},"
           "{\"name\":\"q\\\"b\\\\s\\u0001\",\"href\":\"q%22b%5Cs%01\",\"type\":\"file\","
           "\"size\":7,\"mtime\":\"1970-01-01T00:00:00Z\"},"
           "{\"name\":\"caf\xc3\xa9\",\"href\":\"caf%C3%A9\",\"type\":\"file\",\"size\":0,"
           "\"mtime\":\"2026-01-02T03:04:05Z\"},"
           "{\"name\":\"bad\\ufffd.bin\",\"href\":\"bad%FF.bin\",\"type\":\"file\",\"size\":2}"
           "],\"truncated\":false}\n");
    assert_int_equal(len, strlen(j));
    free(j);
    l = fixture(e, 0, true);
    j = listing_json(&l, "", 0, &len);
    assert_string_equal(j, "{\"path\":\"/files/\",\"entries\":[],\"truncated\":true}\n");
    free(j);
    /* cut short: the next page starts after the last entry (a directory: with its '/') */
    l = fixture(e, 1, true);
    j = listing_json(&l, "", 0, &len);
    assert_non_null(strstr(j, "],\"truncated\":true,\"next\":\"?after=sub%2F\"}\n"));
    free(j);
    l = fixture(&e[1], 1, true);
    j = listing_json(&l, "", 0, &len);
    assert_non_null(strstr(j, "\"next\":\"?after=q%22b%5Cs%01\"}"));
    free(j);
}

static int after(const char *q, char *out, bool *dir)
{
    size_t n = 0;
    int rc = listing_after_parse(q, q != NULL ? strlen(q) : 0, out, FILES_SEGMENT_MAX + 1, &n,
                                 dir);
    if (rc == 1)
        assert_int_equal(strlen(out), n);
    return rc;
}

static void test_after_parse(void **state)
{
    char out[FILES_SEGMENT_MAX + 1], big[FILES_SEGMENT_MAX * 3 + 16];
    bool dir = false;
    (void)state;

    assert_int_equal(after(NULL, out, &dir), 0);
    assert_int_equal(after("", out, &dir), 0);
    assert_int_equal(after("x=1&y=2", out, &dir), 0);
    assert_int_equal(after("after=a.txt", out, &dir), 1);
    assert_string_equal(out, "a.txt");
    assert_false(dir);
    assert_int_equal(after("x=1&after=sub%2F&y", out, &dir), 1);
    assert_string_equal(out, "sub");
    assert_true(dir);
    assert_int_equal(after("after=sub/", out, &dir), 1);
    assert_true(dir);
    assert_int_equal(after("after=q%22b%5cs%01+", out, &dir), 1);
    assert_string_equal(out, "q\"b\\s\x01+");
    assert_int_equal(after("after=caf%C3%A9", out, &dir), 1);
    assert_string_equal(out, "caf\xc3\xa9");
    /* refused */
    assert_int_equal(after("after=", out, &dir), -1);
    assert_int_equal(after("after=%2F", out, &dir), -1);
    assert_int_equal(after("after=a/b", out, &dir), -1);
    assert_int_equal(after("after=a%2Fb", out, &dir), -1);
    assert_int_equal(after("after=a%00", out, &dir), -1);
    assert_int_equal(after("after=a%4", out, &dir), -1);
    assert_int_equal(after("after=a%zz", out, &dir), -1);
    assert_int_equal(after("after=a%", out, &dir), -1);
    memcpy(big, "after=", 6);
    memset(big + 6, 'x', FILES_SEGMENT_MAX);
    big[6 + FILES_SEGMENT_MAX] = '\0';
    assert_int_equal(after(big, out, &dir), 1); /* the longest a name's segment can be */
    strcat(big, "x");
    assert_int_equal(after(big, out, &dir), -1);
}

static void test_html(void **state)
{
    char n0[] = "<d>", n1[] = "a&b'\"c", n2[] = "x\xc0\xaf";
    struct listing_entry e[] = {
        {.name = n0, .name_len = 3, .dir = true, .mtime_s = 1767323045},
        {.name = n1, .name_len = 6, .size = 12, .mtime_s = -1},
        {.name = n2, .name_len = 3, .size = 1, .mtime_s = -1}, /* an overlong '/' */
    };
    struct listing l = fixture(e, 3, true);
    size_t len = 0;
    char *h = listing_html(&l, "s<x>", 4, &len);

    (void)state;
    assert_int_equal(len, strlen(h));
    assert_non_null(strstr(h, "<title>Index of /files/s&lt;x&gt;/</title>"));
    assert_non_null(strstr(h, "<a href=\"../\">../</a>"));
    assert_non_null(strstr(h, "<a href=\"%3Cd%3E/\">&lt;d&gt;/</a></td><td>2026-01-02 03:04:05"
                              "</td><td>-</td>"));
    assert_non_null(strstr(h, "<a href=\"a%26b%27%22c\">a&amp;b&#39;&quot;c</a></td><td></td>"
                              "<td>12</td>"));
    assert_non_null(strstr(h, "<a href=\"x%C0%AF\">x\xef\xbf\xbd\xef\xbf\xbd</a>"));
    assert_non_null(strstr(h, "Only 3 entries are shown: <a href=\"?after=x%C0%AF\">next</a>"));
    free(h);
    l = fixture(e, 0, false);
    h = listing_html(&l, "", 0, &len);
    assert_null(strstr(h, "../"));
    assert_null(strstr(h, "Only the first"));
    free(h);
}

/* ---- listing_build on disk ---- */

struct fx {
    char dir[64];
    struct files f;
};

static void touch(const char *dir, const char *name, size_t size)
{
    char path[512];
    FILE *fp;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fp = fopen(path, "w");
    assert_non_null(fp);
    for (size_t i = 0; i < size; i++)
        fputc('x', fp);
    fclose(fp);
}

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof(*x));
    char path[256], err[FILES_ERR_LEN];

    snprintf(x->dir, sizeof(x->dir), "/tmp/test_listing.XXXXXX");
    assert_non_null(mkdtemp(x->dir));
    touch(x->dir, "b.txt", 2);
    touch(x->dir, "a.txt", 1);
    touch(x->dir, "C.txt", 3);
    touch(x->dir, "ctl\x01", 1); /* cannot be asked for: left out */
    snprintf(path, sizeof(path), "%s/.s1store", x->dir);
    assert_int_equal(mkdir(path, 0700), 0); /* reserved: left out */
    snprintf(path, sizeof(path), "%s/zdir", x->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/adir", x->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    touch(path, "inner", 5);
    snprintf(path, sizeof(path), "%s/many", x->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    for (int i = 99; i >= 0; i--) {
        char name[16];
        snprintf(name, sizeof(name), "f%02d", i);
        touch(path, name, (size_t)i);
    }
    assert_int_equal(files_init(&x->f, x->dir, FILES_BUFFERED, NULL, err), 0);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    char cmd[128];

    files_release(&x->f);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->dir);
    assert_int_equal(system(cmd), 0);
    free(x);
    return 0;
}

static int build(struct fx *x, const char *dir, size_t max, struct listing *l)
{
    struct listing_scope sc = {.dir = dir, .dir_len = strlen(dir), .user = "alice", .max = max};
    return listing_build(&x->f, NULL, &sc, l);
}

static void test_build_order(void **state)
{
    static const char *const want[] = {"adir", "many", "zdir", "C.txt", "a.txt", "b.txt"};
    struct fx *x = *state;
    struct listing l;

    assert_int_equal(build(x, "", 100, &l), 0);
    assert_int_equal(l.n, 6);
    assert_false(l.truncated);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(l.e[i].name, want[i]);
        assert_int_equal(l.e[i].dir, i < 3);
    }
    assert_int_equal(l.e[3].size, 3);
    assert_true(l.e[3].mtime_s > 1600000000);
    listing_free(&l);

    assert_int_equal(build(x, "adir", 100, &l), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.e[0].name, "inner");
    assert_int_equal(l.e[0].size, 5);
    listing_free(&l);
}

/* max entries, the first ones of the order, in memory for at most 2 * max */
static void test_build_bounded(void **state)
{
    struct fx *x = *state;
    struct listing l;

    assert_int_equal(build(x, "many", 3, &l), 0);
    assert_int_equal(l.n, 3);
    assert_true(l.truncated);
    assert_true(l.cap <= 6);
    assert_string_equal(l.e[0].name, "f00");
    assert_string_equal(l.e[1].name, "f01");
    assert_string_equal(l.e[2].name, "f02");
    assert_int_equal(l.e[2].size, 2);
    listing_free(&l);

    assert_int_equal(build(x, "many", 100, &l), 0);
    assert_int_equal(l.n, 100);
    assert_false(l.truncated);
    assert_string_equal(l.e[99].name, "f99");
    listing_free(&l);

    assert_int_equal(build(x, "", 6, &l), 0);
    assert_false(l.truncated); /* exactly max */
    listing_free(&l);
    assert_int_equal(build(x, "", 5, &l), 0);
    assert_true(l.truncated);
    listing_free(&l);
}

/* ---- with an upload store ---- */

static void put(struct committer *cm, const char *name, const char *owner, size_t size)
{
    char data[64] = {0};
    struct store_body b = {.mem = data, .fd = -1, .len = size};
    struct store_pos pos;

    assert_true(size <= sizeof(data));
    assert_int_equal(store_append_put(&cm->store, name, strlen(name), owner, &b, &pos), 0);
    assert_int_equal(store_sync(&cm->store), 0);
    store_publish(&cm->store, name, strlen(name), owner, &pos);
}

static void del(struct committer *cm, const char *name)
{
    struct store_pos pos;

    assert_int_equal(store_append_delete(&cm->store, name, strlen(name), &pos), 0);
    assert_int_equal(store_sync(&cm->store), 0);
    store_publish(&cm->store, name, strlen(name), NULL, &pos);
}

static void open_store(struct fx *x, struct committer *cm, unsigned flags)
{
    struct commit_budgets budgets = {.mem = 1 << 20, .temp = 1 << 20, .user_share = 100};
    char err[FILES_ERR_LEN];

    if (committer_init(cm, &x->f, true, 0, false, &budgets, flags, err) != 0)
        fail_msg("committer_init: %s", err);
}

/* "d:NAME f:NAME:SIZE ..." of a listing of dir (user, private, max, after "d:X"/"f:X"). */
static const char *show(struct fx *x, struct committer *cm, const char *dir, const char *user,
                        bool private_uploads, size_t max, const char *after_entry,
                        struct listing *l, int *rc)
{
    static char out[4096];
    struct listing_scope sc = {.dir = dir, .dir_len = strlen(dir), .user = user,
                               .private_uploads = private_uploads, .max = max};

    if (after_entry != NULL) {
        sc.after = after_entry + 2;
        sc.after_len = strlen(after_entry + 2);
        sc.after_dir = after_entry[0] == 'd';
    }
    *rc = listing_build(&x->f, cm, &sc, l);
    out[0] = '\0';
    for (size_t i = 0; i < l->n; i++) {
        if (l->e[i].dir)
            snprintf(out + strlen(out), sizeof(out) - strlen(out), "%sd:%s", i ? " " : "",
                     l->e[i].name);
        else
            snprintf(out + strlen(out), sizeof(out) - strlen(out), "%sf:%s:%llu", i ? " " : "",
                     l->e[i].name, (unsigned long long)l->e[i].size);
    }
    return out;
}

static void test_build_uploads(void **state)
{
    struct fx *x = *state;
    struct committer cm;
    struct listing l;
    int rc;

    open_store(x, &cm, 0);
    put(&cm, "a.txt", "bob", 9);      /* stands for the operator's a.txt (1 byte) */
    del(&cm, "b.txt");                /* hides the operator's b.txt */
    put(&cm, "new/x", "bob", 1);      /* a directory only uploads make */
    put(&cm, "adir/inner2", "bob", 2);
    put(&cm, "up.bin", "alice", 4);
    assert_string_equal(show(x, &cm, "", "alice", false, 100, NULL, &l, &rc),
                        "d:adir d:many d:new d:zdir f:C.txt:3 f:a.txt:9 f:up.bin:4");
    assert_int_equal(rc, 0);
    assert_false(l.truncated);
    listing_free(&l);
    assert_string_equal(show(x, &cm, "adir", "alice", false, 100, NULL, &l, &rc),
                        "f:inner:5 f:inner2:2");
    listing_free(&l);
    assert_string_equal(show(x, &cm, "new", "alice", false, 100, NULL, &l, &rc), "f:x:1");
    listing_free(&l);
    /* the same pages of 2, each from the last one's last entry */
    {
        static const char *const pages[] = {"d:adir d:many", "d:new d:zdir",
                                            "f:C.txt:3 f:a.txt:9", "f:up.bin:4"};
        const char *cursor = NULL;
        char last[64];
        for (size_t p = 0; p < 4; p++) {
            assert_string_equal(show(x, &cm, "", "alice", false, 2, cursor, &l, &rc), pages[p]);
            assert_int_equal(l.truncated, p < 3);
            snprintf(last, sizeof(last), "%c:%s", l.e[l.n - 1].dir ? 'd' : 'f',
                     l.e[l.n - 1].name);
            cursor = last;
            listing_free(&l);
        }
        /* past the end: an empty page, not a missing directory */
        assert_string_equal(show(x, &cm, "", "alice", false, 2, "f:zzz", &l, &rc), "");
        assert_int_equal(rc, 0);
        listing_free(&l);
        assert_string_equal(show(x, &cm, "new", "alice", false, 2, "f:x", &l, &rc), "");
        assert_int_equal(rc, 0);
        listing_free(&l);
    }
    /* a directory with only a deletion beneath it does not exist */
    del(&cm, "gone/y");
    show(x, &cm, "gone", "alice", false, 10, NULL, &l, &rc);
    assert_int_equal(rc, -ENOENT);
    listing_free(&l);
    committer_release(&cm);
}

static void test_build_upload_bound(void **state)
{
    struct fx *x = *state;
    struct committer cm;
    struct listing l;
    char name[64];
    int rc;

    open_store(x, &cm, 0);
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof(name), "bulk%d/f%04d", i % 10, i);
        put(&cm, name, "bob", 1);
    }
    put(&cm, "adir/inner2", "bob", 2);
    /* a listing of adir reads adir's entries, not the 5,000 others */
    show(x, &cm, "adir", "alice", false, 100, NULL, &l, &rc);
    assert_int_equal(l.n, 2);
    assert_true(l.visited <= 3);
    listing_free(&l);
    /* the root: one entry per subdirectory */
    show(x, &cm, "", "alice", false, 100, NULL, &l, &rc);
    assert_int_equal(l.n, 16); /* adir many zdir bulk0..9, C.txt a.txt b.txt */
    assert_true(l.visited <= 12);
    listing_free(&l);
    /* a directory of 500 with --max-list 20: 21 entries read */
    show(x, &cm, "bulk3", "alice", false, 20, NULL, &l, &rc);
    assert_int_equal(l.n, 20);
    assert_true(l.truncated);
    assert_true(l.visited <= 22);
    listing_free(&l);
    committer_release(&cm);
}

static void test_build_private(void **state)
{
    struct fx *x = *state;
    struct committer cm;
    struct listing l;
    char name[64];
    int rc;

    open_store(x, &cm, STORE_ORDER_BY_OWNER);
    put(&cm, "p/mine", "alice", 1);
    put(&cm, "p/theirs", "bob", 2);
    put(&cm, "p/sub/deep", "bob", 3);
    put(&cm, "a.txt", "bob", 9); /* bob's: hides the operator's a.txt from alice too */
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "p/bob%03d", i);
        put(&cm, name, "bob", 1);
    }
    assert_string_equal(show(x, &cm, "p", "alice", true, 100, NULL, &l, &rc), "f:mine:1");
    /* bob's 302 entries there are never read: two walks (alice's, and the uploads without
     * an owner), each reading its entries and the one after them, twice */
    assert_true(l.visited <= 1 + 2 * 2 + 1);
    listing_free(&l);
    assert_string_equal(show(x, &cm, "p", "bob", true, 3, NULL, &l, &rc),
                        "d:sub f:bob000:1 f:bob001:1");
    listing_free(&l);
    show(x, &cm, "p/sub", "alice", true, 10, NULL, &l, &rc);
    assert_int_equal(rc, -ENOENT); /* only bob's beneath it */
    listing_free(&l);
    assert_string_equal(show(x, &cm, "", "alice", true, 100, NULL, &l, &rc),
                        "d:adir d:many d:p d:zdir f:C.txt:3 f:b.txt:2");
    listing_free(&l);
    committer_release(&cm);
}

static int dir_exists(struct fx *x, struct committer *cm, const char *dir, const char *user)
{
    struct listing_scope sc = {.dir = dir, .dir_len = strlen(dir), .user = user,
                               .private_uploads = true, .max = 1};
    return listing_dir_exists(&x->f, cm, &sc);
}

/* What a GET of /files/DIR without its '/' is redirected for, and where to. */
static void test_dir_exists(void **state)
{
    struct fx *x = *state;
    struct committer cm;
    size_t len;
    char *loc;

    assert_int_equal(dir_exists(x, NULL, "adir", "alice"), 1);
    assert_int_equal(dir_exists(x, NULL, "zdir", "alice"), 1); /* empty, on disk */
    assert_int_equal(dir_exists(x, NULL, "a.txt", "alice"), 0); /* a file */
    assert_int_equal(dir_exists(x, NULL, "nope", "alice"), 0);
    assert_int_equal(dir_exists(x, NULL, "a.txt/x", "alice"), 0); /* beneath a file */
    open_store(x, &cm, STORE_ORDER_BY_OWNER);
    put(&cm, "new/x", "bob", 1);
    put(&cm, "new/deep/y", "bob", 1);
    put(&cm, "pub/z", "", 1);
    assert_int_equal(dir_exists(x, &cm, "new", "bob"), 1); /* only uploads beneath it */
    assert_int_equal(dir_exists(x, &cm, "new/deep", "bob"), 1);
    assert_int_equal(dir_exists(x, &cm, "new", "alice"), 0); /* bob's, private */
    assert_int_equal(dir_exists(x, &cm, "pub", "alice"), 1); /* without an owner */
    assert_int_equal(dir_exists(x, &cm, "new/x", "bob"), 0); /* a file */
    assert_int_equal(dir_exists(x, &cm, "adir", "alice"), 1);
    committer_release(&cm);

    /* with --prefetch, as the listing: a directory a prefetched file lies beneath */
    {
        struct files pf;
        char err[FILES_ERR_LEN];

        assert_int_equal(files_init(&pf, x->dir, FILES_PREFETCH, NULL, err), 0);
        assert_int_equal(files_dir_exists(&pf, "adir", 4), 1);
        assert_int_equal(files_dir_exists(&pf, "many", 4), 1);
        assert_int_equal(files_dir_exists(&pf, "zdir", 4), 0); /* empty: its listing is 404 */
        assert_int_equal(files_dir_exists(&pf, "adi", 3), 0);
        assert_int_equal(files_dir_exists(&pf, "b.txt", 5), 0);
        assert_int_equal(files_dir_exists(&pf, "adir/inner", 10), 0);
        files_release(&pf);
    }

    loc = listing_dir_location("adir", 4, &len);
    assert_string_equal(loc, "adir/");
    assert_int_equal(len, 5);
    free(loc);
    loc = listing_dir_location("new/deep", 8, &len);
    assert_string_equal(loc, "deep/"); /* relative to /files/new/deep */
    free(loc);
    { /* the longest segment, every byte escaped: what route_files' Location buffer holds */
        char seg[FILES_SEGMENT_MAX];
        memset(seg, ' ', sizeof(seg));
        loc = listing_dir_location(seg, sizeof(seg), &len);
        assert_int_equal(len, 3 * FILES_SEGMENT_MAX + 1);
        free(loc);
    }
    loc = listing_dir_location("a b/c&d<é", strlen("a b/c&d<é"), &len);
    assert_string_equal(loc, "c%26d%3C%C3%A9/");
    free(loc);
}

static void test_build_missing(void **state)
{
    struct fx *x = *state;
    struct listing l;

    assert_int_equal(build(x, "nope", 10, &l), -ENOENT);
    listing_free(&l);
    assert_int_equal(build(x, "a.txt", 10, &l), -ENOENT);
    listing_free(&l);
    assert_int_equal(build(x, ".s1store", 10, &l), -ENOENT);
    listing_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_html),
        cmocka_unit_test_setup_teardown(test_build_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_build_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_build_missing, setup, teardown),
        cmocka_unit_test(test_after_parse),
        cmocka_unit_test_setup_teardown(test_build_uploads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_build_upload_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_build_private, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_exists, setup, teardown),
    };
    return cmocka_run_group_tests_name("listing", tests, NULL, NULL);
}
