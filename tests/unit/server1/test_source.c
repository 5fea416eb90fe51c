/*
 * test_source.c - cmocka tests for server1/source's bodies (body.h): a span of a file as each
 * mode answers it - a prefetched file's memory, the page cache (a sendfile segment), O_DIRECT
 * read whole into a response buffer (unaligned offsets sliced out of aligned blocks) or in
 * chunks (filled again once the output has drained; the buffer given back after the last) -
 * and 503's cause, a --response-memory that cannot spare a buffer; and a span read without
 * stopping the thread (source_read_start, aioread.h): the body it makes, a full depth, a span
 * too big for it, a file that shrank before the read, and a read whose owner is gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "../../../server1/aioread.h"
#include "../../../server1/body.h"
#include "../../../server1/files.h"
#include "../../../server1/respbuf.h"
#include "../../../server1/source.h"

#define FILE_LEN (700u * 1024) /* more than two response buffers (RESPBUF_CHUNK) */

struct fx {
    char root[64];
    struct files files;
    struct respbuf_budget budget;
};

static char byte_at(size_t i)
{
    return (char)(i * 7 + i / 251);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof(*fx));
    char path[96];
    char *data = malloc(FILE_LEN);
    FILE *f;

    assert_non_null(fx);
    assert_non_null(data);
    snprintf(fx->root, sizeof(fx->root), "/tmp/s1-source.XXXXXX");
    assert_non_null(mkdtemp(fx->root));
    for (size_t i = 0; i < FILE_LEN; i++)
        data[i] = byte_at(i);
    snprintf(path, sizeof(path), "%s/f.bin", fx->root);
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, FILE_LEN, f), FILE_LEN);
    assert_int_equal(fclose(f), 0);
    free(data);
    fx->budget.limit = 4u << 20;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    char cmd[96];

    files_release(&fx->files);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->root);
    assert_int_equal(system(cmd), 0);
    free(fx);
    return 0;
}

static void open_files(struct fx *fx, enum files_mode mode)
{
    char err[FILES_ERR_LEN];

    assert_int_equal(files_init(&fx->files, fx->root, mode, NULL, err), 0);
}

/* The body of [off, off + count) of f.bin. */
static void body_of(struct fx *fx, uint64_t off, uint64_t count, struct s1_body *b)
{
    struct source src;

    assert_int_equal(source_resolve(&fx->files, NULL, "f.bin", 5, &src), 0);
    assert_int_equal(src.size, FILE_LEN);
    assert_int_equal(source_body(&src, off, count, &fx->files, &fx->budget, b), 0);
    source_release(&src);
    assert_int_equal(b->len, count);
}

/*
 * Fills b into an output until it gave everything, draining the output between fills as the
 * socket would; checks the bytes are f.bin's from off; returns the number of fills.
 */
static unsigned drain(struct s1_body *b, uint64_t off, uint64_t count)
{
    struct evbuffer *out = evbuffer_new();
    char *got = malloc(count);
    size_t have = 0;
    unsigned fills = 0;

    assert_non_null(out);
    assert_non_null(got);
    while (b->len > 0) {
        uint64_t before = b->len;
        assert_int_equal(b->ops->fill(b, out, 1 << 20), 0);
        assert_true(b->len < before);
        fills++;
        have += (size_t)evbuffer_remove(out, got + have, count - have);
        assert_int_equal(evbuffer_get_length(out), 0);
    }
    body_release(b);
    evbuffer_free(out);
    assert_int_equal(have, count);
    for (size_t i = 0; i < count; i++)
        if (got[i] != byte_at(off + i))
            fail_msg("byte %zu of the span differs", i);
    free(got);
    return fills;
}

static void test_source_prefetched(void **state)
{
    struct fx *fx = *state;
    struct s1_body b;

    open_files(fx, FILES_PREFETCH);
    body_of(fx, 1000, 5000, &b);
    assert_non_null(b.data); /* the table's memory: written with the head */
    assert_int_equal(((const char *)b.data)[0], byte_at(1000));
    assert_int_equal(drain(&b, 1000, 5000), 1);
}

static void test_source_page_cache(void **state)
{
    struct fx *fx = *state;
    struct s1_body b;

    open_files(fx, FILES_BUFFERED);
    body_of(fx, 1000, FILE_LEN - 1000, &b);
    assert_null(b.data); /* a sendfile segment */
    assert_int_equal(drain(&b, 1000, FILE_LEN - 1000), 1);
}

static void test_source_direct_whole(void **state)
{
    struct fx *fx = *state;
    struct s1_body b;

    open_files(fx, FILES_DIRECT);
    body_of(fx, 1000, 5000, &b); /* not aligned: sliced out of the blocks read */
    assert_non_null(b.data);
    assert_true(fx->budget.used > 0);
    assert_int_equal(drain(&b, 1000, 5000), 1);
    assert_int_equal(fx->budget.used, 0); /* the buffer went with the bytes */
}

static void test_source_direct_chunks(void **state)
{
    struct fx *fx = *state;
    struct s1_body b;
    unsigned fills;

    open_files(fx, FILES_DIRECT);
    body_of(fx, 1000, FILE_LEN - 2000, &b);
    assert_null(b.data);
    assert_true(fx->budget.used <= RESPBUF_CHUNK); /* one buffer, however big the span */
    fills = drain(&b, 1000, FILE_LEN - 2000);
    assert_int_equal(fills, (FILE_LEN - 1000 + RESPBUF_CHUNK - 1) / RESPBUF_CHUNK);
    assert_int_equal(fx->budget.used, 0);
}

static void test_source_direct_released_early(void **state)
{
    struct fx *fx = *state;
    struct evbuffer *out = evbuffer_new();
    struct s1_body b;

    open_files(fx, FILES_DIRECT);
    body_of(fx, 0, FILE_LEN, &b);
    assert_int_equal(b.ops->fill(&b, out, 1 << 20), 0);
    assert_true(b.len > 0);
    evbuffer_free(out); /* the peer went away */
    body_release(&b);
    assert_int_equal(fx->budget.used, 0);
}

static void test_source_budget_spent(void **state)
{
    struct fx *fx = *state;
    struct source src;
    struct s1_body b;

    open_files(fx, FILES_DIRECT);
    fx->budget.limit = 1024; /* less than one block */
    assert_int_equal(source_resolve(&fx->files, NULL, "f.bin", 5, &src), 0);
    assert_int_equal(source_body(&src, 0, 5000, &fx->files, &fx->budget, &b), -EAGAIN);
    assert_true(src.fd >= 0); /* still the source's */
    source_release(&src);
    assert_int_equal(fx->budget.used, 0);
}

/* a source_read whose ready was called: what it was called with */
struct async_read {
    struct source_read rd;
    int calls;
    int rc;
    struct s1_body b;
};

static void async_ready(struct source_read *rd, int rc, struct s1_body *b)
{
    struct async_read *ar = (struct async_read *)((char *)rd - offsetof(struct async_read, rd));

    ar->calls++;
    ar->rc = rc;
    ar->b = *b;
}

/* Starts reading [off, off + count) of f.bin; returns what source_read_start did. */
static int start_read(struct fx *fx, struct aioread *aio, uint64_t off, uint64_t count,
                      struct async_read *ar, struct source *src)
{
    *ar = (struct async_read){.rd.ready = async_ready};
    assert_int_equal(source_resolve(&fx->files, NULL, "f.bin", 5, src), 0);
    return source_read_start(src, off, count, &fx->files, &fx->budget, aio, &ar->rd);
}

/* Runs aio's completions until ar's ready was called (waiting on its eventfd, 10 s at most). */
static void complete(struct aioread *aio, struct async_read *ar)
{
    for (int i = 0; i < 100 && ar->calls == 0; i++) {
        struct pollfd p = {.fd = aio->efd, .events = POLLIN};
        assert_true(poll(&p, 1, 100) >= 0);
        aioread_reap(aio);
    }
    assert_int_equal(ar->calls, 1);
}

static void test_source_async_whole(void **state)
{
    struct fx *fx = *state;
    struct aioread aio;
    struct async_read ar;
    struct source src;

    open_files(fx, FILES_DIRECT);
    assert_int_equal(aioread_init(&aio, 4), 0);
    assert_int_equal(start_read(fx, &aio, 1000, 5000, &ar, &src), 1);
    assert_int_equal(src.fd, -1); /* the read's until it completes */
    source_release(&src);
    assert_int_equal(ar.calls, 0); /* answered from the loop, never at once */
    assert_true(fx->budget.used > 0);
    complete(&aio, &ar);
    assert_int_equal(ar.rc, 0);
    assert_non_null(ar.b.data);
    assert_int_equal(ar.b.len, 5000);
    assert_int_equal(drain(&ar.b, 1000, 5000), 1);
    assert_int_equal(fx->budget.used, 0);
    assert_int_equal(aio.inflight, 0);
    aioread_release(&aio);
}

static void test_source_async_not_for_it(void **state)
{
    struct fx *fx = *state;
    struct aioread off, aio;
    struct async_read ar;
    struct source src;

    open_files(fx, FILES_DIRECT);
    assert_int_equal(aioread_init(&off, 0), 0); /* --read-depth 0 */
    assert_int_equal(start_read(fx, &off, 0, 5000, &ar, &src), 0);
    assert_true(src.fd >= 0);
    source_release(&src);
    assert_int_equal(aioread_init(&aio, 4), 0);
    /* a span beyond one response buffer is streamed in chunks (source_body) */
    assert_int_equal(start_read(fx, &aio, 0, RESPBUF_CHUNK + 1, &ar, &src), 0);
    assert_true(src.fd >= 0);
    source_release(&src);
    assert_int_equal(fx->budget.used, 0);
    assert_int_equal(aio.submitted, 0);
    aioread_release(&aio);
    aioread_release(&off);
    /* and a file from the page cache is sent with sendfile */
    files_release(&fx->files);
    open_files(fx, FILES_BUFFERED);
    assert_int_equal(aioread_init(&aio, 4), 0);
    assert_int_equal(start_read(fx, &aio, 0, 5000, &ar, &src), 0);
    source_release(&src);
    aioread_release(&aio);
}

static void test_source_async_depth_full(void **state)
{
    struct fx *fx = *state;
    struct aioread aio;
    struct async_read a1, a2;
    struct source s1, s2;
    size_t used;

    open_files(fx, FILES_DIRECT);
    assert_int_equal(aioread_init(&aio, 1), 0);
    assert_int_equal(start_read(fx, &aio, 0, 4096, &a1, &s1), 1);
    used = fx->budget.used;
    assert_int_equal(start_read(fx, &aio, 4096, 4096, &a2, &s2), -EBUSY);
    assert_int_equal(fx->budget.used, used); /* no buffer taken for it */
    assert_true(s2.fd >= 0); /* still the source's: read in place */
    assert_int_equal(a2.calls, 0);
    source_release(&s1);
    source_release(&s2);
    complete(&aio, &a1);
    assert_int_equal(drain(&a1.b, 0, 4096), 1);
    /* the depth is free again */
    assert_int_equal(start_read(fx, &aio, 4096, 4096, &a2, &s2), 1);
    source_release(&s2);
    complete(&aio, &a2);
    assert_int_equal(drain(&a2.b, 4096, 4096), 1);
    assert_int_equal(fx->budget.used, 0);
    aioread_release(&aio);
}

static void test_source_async_shrank(void **state)
{
    struct fx *fx = *state;
    struct aioread aio;
    struct async_read ar;
    struct source src;
    char path[96];

    open_files(fx, FILES_DIRECT);
    assert_int_equal(aioread_init(&aio, 4), 0);
    assert_int_equal(source_resolve(&fx->files, NULL, "f.bin", 5, &src), 0);
    snprintf(path, sizeof(path), "%s/f.bin", fx->root);
    assert_int_equal(truncate(path, 6000), 0); /* after the lookup, before the read */
    ar = (struct async_read){.rd.ready = async_ready};
    assert_int_equal(source_read_start(&src, 5000, 5000, &fx->files, &fx->budget, &aio, &ar.rd),
                     1);
    source_release(&src);
    complete(&aio, &ar);
    assert_int_equal(ar.rc, -ENODATA);
    assert_null(ar.b.ops);
    assert_int_equal(fx->budget.used, 0);
    aioread_release(&aio);
}

static void test_source_async_owner_gone(void **state)
{
    struct fx *fx = *state;
    struct aioread aio;
    struct async_read ar[3];
    struct source src;

    open_files(fx, FILES_DIRECT);
    assert_int_equal(aioread_init(&aio, 4), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(start_read(fx, &aio, (uint64_t)i * 8192, 8192, &ar[i], &src), 1);
        source_release(&src);
    }
    /* the worker stops with the reads in flight: release waits for them and calls ready */
    aioread_release(&aio);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ar[i].calls, 1);
        assert_int_equal(ar[i].rc, 0);
        body_release(&ar[i].b);
    }
    assert_int_equal(fx->budget.used, 0);
}

static void test_aioread_refusals(void **state)
{
    struct aioread aio;
    struct aioread_op op = {.done = NULL};
    char buf[4096];

    (void)state;
    assert_int_equal(aioread_init(&aio, AIOREAD_DEPTH_MAX + 1), -EINVAL);
    aioread_release(&aio);
    assert_int_equal(aioread_init(&aio, 0), 0);
    assert_false(aioread_on(&aio));
    assert_int_equal(aioread_submit(&aio, &op, 0, buf, sizeof(buf), 0), -EAGAIN);
    aioread_release(&aio);
    assert_int_equal(aioread_init(&aio, 2), 0);
    assert_true(aioread_on(&aio));
    assert_int_equal(aioread_submit(&aio, &op, -1, buf, sizeof(buf), 0), -EBADF);
    assert_int_equal(aio.inflight, 0); /* nothing queued: done is never called */
    aioread_release(&aio);
    aioread_release(&aio); /* a released one is accepted */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_source_prefetched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_page_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_direct_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_direct_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_direct_released_early, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_budget_spent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_async_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_async_not_for_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_async_depth_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_async_shrank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_async_owner_gone, setup, teardown),
        cmocka_unit_test(test_aioread_refusals),
    };
    return cmocka_run_group_tests_name("source", tests, NULL, NULL);
}
