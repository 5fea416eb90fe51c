/*
 * test_mimetypes.c - cmocka tests for server1/mimetypes: the mime.types parser and its limits,
 * the built-in table, extension rules of lookups, loading a file, and the machine's own
 * /etc/mime.types when there is one; which types are active (can run script).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../server1/mimetypes.h"

/* comments, tabs, CRLF, duplicates, over-long and invalid tokens */
static const char fixture[] =
    "# mime.types fixture\n"
    "   # an indented comment\n"
    "\n"
    "text/html\thtml htm\n"
    "text/x-other\tHTML shtml\n"                      /* duplicate html: first wins */
    "image/png  \t png # png2 is commented out\n"
    "application/json json\r\n"
    "\r\n"
    "text/plain\t\ttxt\ttext   \r\n"
    "no-slash foo1\n"                                 /* skipped line */
    "/subtype foo2\n"                                 /* skipped line */
    "type/ foo3\n"                                    /* skipped line */
    "text/pl(ain) foo4\n"                             /* skipped line: '(' is no tchar */
    "text/plain/x foo5\n"                             /* skipped line: two slashes */
    /* a 128-byte type: the line is skipped; a 127-byte one is fine */
    "application/x-"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa foo6\n"
    "application/x-"
    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb long127\n"
    /* a 32-byte extension and two invalid ones are skipped; the 31-byte one is fine */
    "application/x-ok aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    " bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb b@d q\"q ok\n"
    "application/gzip gz tar.gz\n"                    /* tar.gz can never match */
    "application/x-empty\n"                           /* a type with no extensions */
    "IMAGE/X-Upper JPG PNG\n"                         /* PNG is a duplicate of png */
    "text/markdown\tmd"; /* no final newline */

static struct mimetypes M;

static const char *look(const struct mimetypes *m, const char *name)
{
    return mimetypes_lookup(m, name, strlen(name));
}

static void assert_fixture(const struct mimetypes *m)
{
    assert_string_equal(look(m, "index.html"), "text/html");
    assert_string_equal(look(m, "a.htm"), "text/html");
    assert_string_equal(look(m, "a.shtml"), "text/x-other");
    assert_string_equal(look(m, "a.png"), "image/png");
    assert_null(look(m, "a.png2"));
    assert_null(look(m, "a.#"));
    assert_string_equal(look(m, "a.json"), "application/json");
    assert_string_equal(look(m, "a.txt"), "text/plain");
    assert_string_equal(look(m, "a.text"), "text/plain");
    for (int i = 1; i <= 6; i++) {
        char name[24];
        snprintf(name, sizeof(name), "x.foo%d", i);
        assert_null(look(m, name));
    }
    assert_null(look(m, "a.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
    assert_string_equal(look(m, "a.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"), "application/x-ok");
    assert_string_equal(look(m, "a.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"), "application/x-ok");
    assert_int_equal(strlen(look(m, "a.long127")), 127);
    assert_null(look(m, "a.b@d"));
    assert_string_equal(look(m, "a.ok"), "application/x-ok");
    assert_string_equal(look(m, "a.tar.gz"), "application/gzip");
    assert_null(look(m, "a.tar"));
    assert_string_equal(look(m, "a.jpg"), "IMAGE/X-Upper");
    assert_string_equal(look(m, "a.md"), "text/markdown");
    assert_null(look(m, "a.empty"));

    /* html htm shtml png json txt text long127 bbb.. ok gz jpg md */
    assert_int_equal(m->count, 13);
    /* 5 bad types, 1 over-long type, 1 over-long extension, 2 invalid extensions */
    assert_int_equal(m->skipped, 9);
    assert_int_equal(m->duplicates, 2); /* HTML, PNG */
    assert_int_equal(m->unreachable, 1); /* tar.gz */
}

static void test_mimetypes_load_buffer_fixture(void **state)
{
    char err[128] = "";

    (void)state;
    assert_int_equal(mimetypes_load_buffer(&M, fixture, sizeof(fixture) - 1, err, sizeof(err)),
                     0);
    assert_string_equal(err, "");
    assert_fixture(&M);
    mimetypes_release(&M);
    mimetypes_release(&M); /* twice is fine */
    assert_null(look(&M, "a.html"));
}

static void test_mimetypes_load_buffer_empty(void **state)
{
    (void)state;
    assert_int_equal(mimetypes_load_buffer(&M, "", 0, NULL, 0), 0);
    assert_int_equal(M.count, 0);
    assert_null(look(&M, "a.html"));
    mimetypes_release(&M);
    assert_int_equal(mimetypes_load_buffer(&M, "# only\n\n \t\r\n", 12, NULL, 0), 0);
    assert_int_equal(M.count, 0);
    assert_int_equal(M.skipped, 0);
    mimetypes_release(&M);
    /* only len bytes are read (not " xml"); a NUL is an invalid token character */
    assert_int_equal(mimetypes_load_buffer(&M, "text/html html x\0y htm xml", 22, NULL, 0), 0);
    assert_string_equal(look(&M, "a.html"), "text/html");
    assert_string_equal(look(&M, "a.htm"), "text/html");
    assert_null(look(&M, "a.x"));
    assert_null(look(&M, "a.xml"));
    assert_int_equal(M.count, 2);
    assert_int_equal(M.skipped, 1);
    mimetypes_release(&M);
}

/* Builds "a/b e0 e1 ... e(n-1)\n". */
static char *many_exts(int n, size_t *len)
{
    char *text = malloc((size_t)n * 8 + 8);
    size_t pos = 0;

    assert_non_null(text);
    pos += (size_t)sprintf(text, "a/b");
    for (int i = 0; i < n; i++)
        pos += (size_t)sprintf(text + pos, " e%d", i);
    text[pos++] = '\n';
    *len = pos;
    return text;
}

static void test_mimetypes_load_buffer_limit(void **state)
{
    char err[128] = "";
    size_t len;
    char *text;

    (void)state;
    text = many_exts(MIMETYPES_MAX_EXT, &len);
    assert_int_equal(mimetypes_load_buffer(&M, text, len, err, sizeof(err)), 0);
    assert_int_equal(M.count, MIMETYPES_MAX_EXT);
    assert_string_equal(look(&M, "x.e0"), "a/b");
    assert_string_equal(look(&M, "x.E8191"), "a/b");
    mimetypes_release(&M);
    free(text);

    text = many_exts(MIMETYPES_MAX_EXT + 1, &len);
    assert_int_equal(mimetypes_load_buffer(&M, text, len, err, sizeof(err)), -1);
    assert_string_equal(err, "line 1: more than 8192 extensions");
    assert_int_equal(M.count, 0);
    assert_null(look(&M, "x.e0"));
    mimetypes_release(&M);
    /* a tiny err buffer is truncated, not overrun */
    assert_int_equal(mimetypes_load_buffer(&M, text, len, err, 5), -1);
    assert_string_equal(err, "line");
    mimetypes_release(&M);
    free(text);
}

static void test_mimetypes_builtin(void **state)
{
    static const char *const want[][2] = {
        {"html", "text/html"},       {"htm", "text/html"},
        {"css", "text/css"},         {"js", "text/javascript"},
        {"mjs", "text/javascript"},  {"json", "application/json"},
        {"txt", "text/plain"},       {"xml", "application/xml"},
        {"svg", "image/svg+xml"},    {"png", "image/png"},
        {"jpg", "image/jpeg"},       {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},        {"webp", "image/webp"},
        {"ico", "image/vnd.microsoft.icon"},
        {"pdf", "application/pdf"},  {"wasm", "application/wasm"},
        {"mp4", "video/mp4"},        {"webm", "video/webm"},
        {"mp3", "audio/mpeg"},       {"ogg", "audio/ogg"},
        {"zip", "application/zip"},  {"gz", "application/gzip"},
        {"tar", "application/x-tar"}, {"csv", "text/csv"},
        {"md", "text/markdown"},
    };

    (void)state;
    mimetypes_init_builtin(&M);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char name[32];
        snprintf(name, sizeof(name), "dir/file.%s", want[i][0]);
        assert_non_null(look(&M, name));
        assert_string_equal(look(&M, name), want[i][1]);
    }
    assert_int_equal(M.count, sizeof(want) / sizeof(want[0]));
    assert_int_equal(M.skipped, 0);
    assert_int_equal(M.duplicates, 0);
    mimetypes_release(&M);
}

static void test_mimetypes_lookup_names(void **state)
{
    (void)state;
    mimetypes_init_builtin(&M);
    assert_string_equal(look(&M, "a.tar.gz"), "application/gzip");
    assert_string_equal(look(&M, "INDEX.HTML"), "text/html");
    assert_string_equal(look(&M, "X.PNG"), "image/png");
    assert_string_equal(look(&M, "x.Png"), "image/png");
    assert_string_equal(look(&M, "/srv/www/a.b/c.css"), "text/css");
    assert_string_equal(look(&M, ".config.json"), "application/json"); /* another dot */
    assert_string_equal(look(&M, "dir/.tar.gz"), "application/gzip");
    assert_string_equal(look(&M, "a..md"), "text/markdown");
    assert_null(look(&M, "dir.d/file"));
    assert_null(look(&M, ".bashrc"));
    assert_null(look(&M, "dir/.html")); /* a dot-file, not an .html file */
    assert_null(look(&M, "x."));
    assert_null(look(&M, "x.html/"));
    assert_null(look(&M, "."));
    assert_null(look(&M, ".."));
    assert_null(look(&M, ""));
    assert_null(look(&M, "noext"));
    assert_null(look(&M, "a.unknown"));
    assert_null(look(&M, "a.htmlx"));
    assert_null(look(&M, "a.htm l"));
    assert_null(look(&M, "a.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
    /* only len bytes count */
    assert_string_equal(mimetypes_lookup(&M, "a.css.png", 5), "text/css");
    assert_null(mimetypes_lookup(&M, "a.html", 0));
    assert_string_equal(mimetypes_lookup(&M, "a.h\0tml.gz", 10), "application/gzip");
    assert_null(mimetypes_lookup(&M, "a.h\0tml", 7));
    mimetypes_release(&M);
}

static void test_mimetypes_load_file(void **state)
{
    char path[] = "/tmp/test_mimetypes.XXXXXX";
    char err[256] = "";
    FILE *f;
    int fd;

    (void)state;
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(fixture, 1, sizeof(fixture) - 1, f), sizeof(fixture) - 1);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(mimetypes_load_file(&M, path, err, sizeof(err)), 0);
    assert_fixture(&M);
    mimetypes_release(&M);

    /* exactly MIMETYPES_FILE_MAX bytes is fine, one more is not */
    f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < MIMETYPES_FILE_MAX / 16; i++)
        assert_true(fputs("text/css css   \n", f) >= 0); /* 16 bytes */
    assert_int_equal(fclose(f), 0);
    assert_int_equal(mimetypes_load_file(&M, path, err, sizeof(err)), 0);
    assert_string_equal(look(&M, "a.css"), "text/css");
    assert_int_equal(M.duplicates, MIMETYPES_FILE_MAX / 16 - 1);
    mimetypes_release(&M);
    f = fopen(path, "a");
    assert_non_null(f);
    assert_int_equal(fputc('\n', f), '\n');
    assert_int_equal(fclose(f), 0);
    assert_int_equal(mimetypes_load_file(&M, path, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "is larger than 1048576 bytes"));
    assert_non_null(strstr(err, path));
    assert_null(look(&M, "a.css"));
    mimetypes_release(&M);

    assert_int_equal(unlink(path), 0);
    assert_int_equal(mimetypes_load_file(&M, path, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "cannot open"));
    assert_non_null(strstr(err, path));
    mimetypes_release(&M);
    assert_int_equal(mimetypes_load_file(&M, "/", err, sizeof(err)), -1); /* a directory */
    assert_non_null(strstr(err, "cannot read '/'"));
    mimetypes_release(&M);
}

/* The machine's own table, when the media-types package is installed. */
static void test_mimetypes_system_file(void **state)
{
    char err[256] = "";

    (void)state;
    if (access(MIMETYPES_DEFAULT_PATH, R_OK) != 0) {
        print_message("no readable %s: skipped\n", MIMETYPES_DEFAULT_PATH);
        skip();
    }
    assert_int_equal(mimetypes_load_file(&M, MIMETYPES_DEFAULT_PATH, err, sizeof(err)), 0);
    assert_string_equal(look(&M, "index.html"), "text/html");
    assert_string_equal(look(&M, "style.css"), "text/css");
    assert_string_equal(look(&M, "logo.png"), "image/png");
    assert_int_equal(M.skipped, 0);
    assert_true(M.count > 100);
    mimetypes_release(&M);
}

/* The types a browser would run script in, whatever their case and parameters. */
static void test_mimetypes_is_active(void **state)
{
    static const char *const active[] = {
        "text/html", "TEXT/HTML", "text/html; charset=utf-8", "text/html;charset=utf-8",
        "image/svg+xml", "application/xhtml+xml", "application/xml", "text/xml",
        "application/xslt+xml", "application/rss+xml", "application/atom+xml",
        "application/mathml+xml", "application/vnd.wap.xhtml+xml", "Image/SVG+XML",
        "text/javascript", "application/javascript", "application/x-javascript",
        "application/ecmascript", "text/ecmascript", "text/vbscript", "text/xsl",
        "text/x-component", "multipart/x-mixed-replace", "application/x-shockwave-flash",
        "application/futuresplash",
        /* not type/subtype: counted as active */
        "", "html", "text/", "/html",
    };
    static const char *const passive[] = {
        "text/plain", "text/plain; charset=utf-8", "image/png", "image/jpeg", "image/gif",
        "application/pdf", "application/json", "text/css", "text/csv", "text/markdown",
        "application/octet-stream", "application/zip", "video/mp4", "audio/mpeg",
        "application/wasm", "application/xml-dtd", "text/xml-external-parsed-entity",
        "application/xmlx", "text/htmlx", "application/manifest+json",
    };
    char long_type[MIMETYPES_TYPE_MAX + 8];

    (void)state;
    for (size_t i = 0; i < sizeof(active) / sizeof(active[0]); i++) {
        if (!mimetypes_is_active(active[i]))
            fail_msg("'%s' should be active", active[i]);
    }
    for (size_t i = 0; i < sizeof(passive) / sizeof(passive[0]); i++) {
        if (mimetypes_is_active(passive[i]))
            fail_msg("'%s' should be passive", passive[i]);
    }
    /* over MIMETYPES_TYPE_MAX bytes: active, whatever it says */
    memset(long_type, 'a', sizeof(long_type) - 1);
    long_type[sizeof(long_type) - 1] = '\0';
    memcpy(long_type, "text/plain", 10);
    assert_true(mimetypes_is_active(long_type));
    long_type[MIMETYPES_TYPE_MAX] = '\0'; /* exactly the longest a table holds */
    assert_false(mimetypes_is_active(long_type));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mimetypes_load_buffer_fixture),
        cmocka_unit_test(test_mimetypes_load_buffer_empty),
        cmocka_unit_test(test_mimetypes_load_buffer_limit),
        cmocka_unit_test(test_mimetypes_builtin),
        cmocka_unit_test(test_mimetypes_lookup_names),
        cmocka_unit_test(test_mimetypes_load_file),
        cmocka_unit_test(test_mimetypes_system_file),
        cmocka_unit_test(test_mimetypes_is_active),
    };
    return cmocka_run_group_tests_name("mimetypes", tests, NULL, NULL);
}
