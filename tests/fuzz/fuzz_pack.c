/*
 * fuzz_pack.c - the pack reader (server1/pack) on arbitrary bytes: the input is a whole pack
 * image, opened without its index checksum (a fuzzer cannot make a right one, and server1 must
 * not rely on it: every decode is bounds-checked). Properties: pack_open_mem and pack_check
 * never read outside the image (it sits in an exact-size heap buffer, so ASan sees an overrun)
 * and end; a walk yields names in the image's order; every name a walk of a pack that
 * pack_check accepts yields is found again by pack_lookup, at the same place, and lies in the
 * data part.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../server1/pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[PACK_ERR_LEN];
    struct pack p;
    struct pack_iter it;
    struct pack_entry e;
    struct pack_entry again;
    uint8_t *img = malloc(size ? size : 1);
    bool checked;
    uint64_t n = 0;

    if (img == NULL)
        return 0;
    memcpy(img, data, size);
    if (pack_open_mem(&p, img, size, false, err) == 0) {
        checked = pack_check(&p, err) == 0;
        pack_iter_seek(&it, &p, "", 0);
        while (n < 100000 && pack_iter_next(&it, &e)) {
            if (e.off < p.data_off || e.size > p.data_len ||
                e.off - p.data_off > p.data_len - e.size)
                abort(); /* a file outside the data part */
            if (checked && (pack_lookup(&p, it.name, it.name_len, &again) != 1 ||
                            again.seq != e.seq || again.off != e.off))
                abort(); /* a valid pack's name not found where the walk found it */
            n++;
        }
        if (checked && n != p.count)
            abort();
        (void)pack_lookup(&p, "a", 1, &e);
        (void)pack_has_prefix(&p, "d00/", 4);
        pack_close(&p);
    }
    free(img);
    return 0;
}
