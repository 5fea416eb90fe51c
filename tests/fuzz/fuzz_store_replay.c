/*
 * fuzz_store_replay.c - start-up replay of the upload store (server1/store). The input is the
 * contents of a segment file, <root>/.s1store/00000000.seg, in a fresh root. Properties: store_open
 * either succeeds or fails with a reason; after success, every file the index holds lies inside
 * its segment and can be read; the store then takes a new upload (written over whatever torn
 * tail the input had), and a second start-up finds that upload whole, with the same bytes;
 * the index and the order of names (upindex.h) hold their invariants after each start-up,
 * whatever names the records carry, and a listing of the root walks the order.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../server1/store.h"
#include "../../server1/upindex.h"

#define SEG_BYTES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64];

static bool count_child(void *arg, const struct store_child *c)
{
    (void)c;
    ++*(size_t *)arg;
    return true;
}

/* The index and the order of names are sound, and a listing of the root walks it unharmed. */
static void check_order(struct store *s)
{
    struct store_list_req rq = {.dir = "", .dir_len = 0, .max = 1000};
    struct store_list_result res;
    char err[128];
    size_t n = 0;

    if (upindex_check(&s->index, err) != 0 || upindex_check(&s->order, err) != 0 ||
        s->order.count > s->index.count)
        abort();
    if (store_list(s, &rq, count_child, &n, &res) != 0 || n > s->order.count)
        abort();
}

static void check_entry(void *arg, const char *name, size_t len, enum store_state st,
                        const struct store_found *f)
{
    int fd = f->fd;
    uint64_t off = f->off, size = f->size;
    struct stat sb;
    char buf[512];
    (void)arg;

    if (len == 0 || len > STORE_NAME_MAX || strlen(name) < len)
        abort();
    if (st != STORE_FILE)
        return;
    if (fstat(fd, &sb) != 0 || off + size > (uint64_t)sb.st_size || off + size < off)
        abort(); /* the index points outside its segment */
    if (size > 0 && store_pread(fd, buf, size < sizeof(buf) ? size : sizeof(buf), off) != 0)
        abort();
}

static void rm_tree(const char *root)
{
    char p[256];
    DIR *d;
    struct dirent *de;

    snprintf(p, sizeof(p), "%s/" STORE_DIR, root);
    if ((d = opendir(p)) != NULL) {
        while ((de = readdir(d)) != NULL) {
            char f[512];
            if (de->d_name[0] == '.')
                continue;
            snprintf(f, sizeof(f), "%s/%s", p, de->d_name);
            unlink(f);
        }
        closedir(d);
        rmdir(p);
    }
    rmdir(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char body[] = "the upload written after replay";
    char root[128], seg[256], err[STORE_ERR_LEN];
    struct store_found found;
    struct store s;
    struct store_recovery rec;
    struct store_body b = {.mem = body, .fd = -1, .len = sizeof(body) - 1, .version = 1};
    struct store_pos pos;
    struct store_segment *pin = NULL;
    uint64_t off = 0, len = 0;
    int root_fd, fd, rc;
    char got[sizeof(body)];

    if (base[0] == '\0')
        snprintf(base, sizeof(base), "%s", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    snprintf(root, sizeof(root), "%s/fuzz_store.XXXXXX", base);
    if (mkdtemp(root) == NULL)
        return 0;
    snprintf(seg, sizeof(seg), "%s/" STORE_DIR, root);
    mkdir(seg, 0700);
    snprintf(seg, sizeof(seg), "%s/" STORE_DIR "/00000000.seg", root);
    fd = open(seg, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size))
        abort();
    close(fd);
    root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0)
        abort();

    err[0] = '\0';
    if (store_open(&s, root_fd, SEG_BYTES, 0, &rec, err) != 0) {
        if (err[0] == '\0')
            abort(); /* refused without a reason */
        goto out;
    }
    store_foreach(&s, check_entry, NULL);
    check_order(&s);
    if (store_append_put(&s, "fuzz/new", 8, "fuzzer", &b, &pos) != 0 || store_sync(&s) != 0)
        abort();
    store_publish(&s, "fuzz/new", 8, "fuzzer", &pos);
    store_close(&s);

    /* what was acknowledged must be found again */
    if ((rc = store_open(&s, root_fd, SEG_BYTES, 0, &rec, err)) != 0)
        abort();
    if (store_lookup(&s, "fuzz/new", 8, true, &found) != STORE_FILE ||
        found.size != sizeof(body) - 1 || strcmp(found.owner, "fuzzer") != 0)
        abort();
    fd = found.fd;
    pin = found.pin;
    off = found.off;
    len = found.size;
    if (store_pread(fd, got, (size_t)len, off) != 0 || memcmp(got, body, (size_t)len) != 0)
        abort();
    close(fd);
    store_unpin(pin);
    store_foreach(&s, check_entry, NULL);
    check_order(&s);
    store_close(&s);
out:
    close(root_fd);
    rm_tree(root);
    return 0;
}
