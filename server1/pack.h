/*
 * pack.h - a packed read-only store of files (server1 --pack, built by s1pack): one file with
 * a header, the files' bytes back to back in path order (each starting at a multiple of the
 * pack's alignment, so one O_DIRECT read fetches it), and an index of their paths: sorted,
 * front-coded in blocks of PACK_BLOCK_NAMES names, with a table of block starts that a lookup
 * searches by bisection before it decodes one block. Per file the index keeps its size, its
 * modification time in seconds and a CRC-32 of its bytes; its offset is not stored but summed
 * from its block's start and the sizes before it. docs/pack.md has the layout byte by byte.
 *
 * DESIGN: pack_open reads and checks the header (magic, version, sizes against the file's),
 * maps the index and checks its CRC and its block table once; afterwards struct pack never
 * changes, and every lookup and walk decodes the mapped bytes with bounds checks on every
 * read (a damaged index gives "not found" or a failed walk, never a read outside the map).
 * The data descriptor is opened once (O_DIRECT with --read direct) and read with pread:
 * one read per GET, no open or stat. Thread-safe after pack_open: nothing is written.
 * The encoder (pack_index_encode, pack_header_make) is pure, for s1pack and the tests.
 */
#ifndef S1_PACK_H
#define S1_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "files.h"

#define PACK_MAGIC "S1PACK\r\n"         /* 8 bytes at offset 0 */
#define PACK_VERSION 1u
#define PACK_HEADER_BYTES 4096u         /* the header's room; the data part starts after it */
#define PACK_HEADER_USED 96u            /* bytes of it that hold fields */
#define PACK_BLOCK_NAMES 32u            /* names per index block (the encoder's default) */
#define PACK_BLOCK_NAMES_MAX 1024u      /* ... at most, as a reader accepts */
#define PACK_ALIGN_DEFAULT 512u         /* the logical block size of most disks */
#define PACK_FILES_MAX 0xffffffffull    /* files in one pack */
#define PACK_FILE_SIZE_MAX (1ull << 40) /* bytes of one file (1 TiB) */
#define PACK_DATA_MAX (1ull << 50)      /* bytes of the data part (1 PiB) */
#define PACK_INDEX_MAX (1ull << 36)     /* bytes of the index (64 GiB) */
#define PACK_ERR_LEN 512

/* One file as the index describes it. */
struct pack_entry {
    uint64_t seq;     /* its place in path order, from 0 */
    uint64_t off;     /* where its bytes start in the pack file */
    uint64_t size;    /* its bytes */
    int64_t mtime_s;  /* its modification time, seconds since the epoch */
    uint32_t crc;     /* CRC-32 (gzip's) of its bytes */
};

/* An open pack (pack_open / pack_open_mem). Read-only after that; the fields are its. */
struct pack {
    int fd;                  /* the pack file (O_DIRECT with direct), -1 for a pack in memory */
    bool direct;             /* fd was opened with O_DIRECT */
    size_t dio_align;        /* O_DIRECT alignment of fd (offset, length, memory) */
    void *map;               /* the mapping of the index (pack_open), else NULL */
    size_t map_len;
    const uint8_t *index;    /* the index part */
    uint64_t index_len;
    const uint8_t *bodies;   /* = index; block k's names start at bodies + block table's off */
    uint64_t count;          /* files */
    uint64_t nblocks;
    uint32_t block_names;    /* names per block (the last may hold fewer) */
    uint32_t align;          /* the alignment of every file's start in the data part */
    uint64_t data_off;       /* where the data part starts in the file */
    uint64_t data_len;       /* its bytes */
    int64_t mtime_base;      /* seconds: every file's mtime is this plus the index's delta */
    uint64_t id;             /* the pack's identity: a 64-bit checksum of its index */
    int64_t since_ns;        /* when the pack file was put in place (its ctime), -1: unknown */
};

/* A walk of the names in path order from some place (pack_iter_seek), one at a time. */
struct pack_iter {
    const struct pack *p;
    uint64_t block;          /* the block being decoded */
    uint64_t pos;            /* the next byte of it to decode (an offset into the index) */
    uint64_t end;            /* where the block ends */
    uint32_t in_block;       /* names of the block decoded so far */
    uint64_t data_off;       /* where the next file's bytes start, relative to the data part */
    int64_t mtime;           /* the last decoded file's mtime (delta coding) */
    bool failed;             /* the index was found damaged: the walk ended early */
    bool pending;            /* pending_e (and name) is the next to yield (after a seek) */
    struct pack_entry pending_e;
    char name[FILES_NAME_MAX + 1]; /* the current name, NUL-terminated */
    size_t name_len;
};

/* ---- reading ---- */

/*
 * Opens the pack at path: reads and checks its header, maps its index and checks the index's
 * CRC and block table; the data descriptor is opened with O_DIRECT if direct. Returns 0, or
 * -1 with a one-line reason in err (PACK_ERR_LEN): no such file, not a pack, a version this
 * build cannot read, sizes that do not match the file's, a damaged index.
 */
int pack_open(struct pack *p, const char *path, bool direct, char *err);

/*
 * The same on a whole pack image in memory (img stays the caller's and must outlive p), with
 * the index CRC checked only if check_crc (a fuzzer's inputs cannot carry a right one).
 */
int pack_open_mem(struct pack *p, const void *img, size_t len, bool check_crc, char *err);

/* Unmaps and closes what p holds (accepts a p that failed to open, or is zeroed with fd -1). */
void pack_close(struct pack *p);

/*
 * Looks name[0..len) up. Returns 1 with *e filled, 0 when the pack has no such name (or its
 * block is damaged). Thread-safe; costs a bisection of the block table and one block's decode.
 */
int pack_lookup(const struct pack *p, const char *name, size_t len, struct pack_entry *e);

/*
 * Positions it at the first name >= key[0..klen) (bytewise; klen 0: the first name). Then
 * pack_iter_next yields the names from there on.
 */
void pack_iter_seek(struct pack_iter *it, const struct pack *p, const char *key, size_t klen);

/*
 * The next name into it->name (it->name_len) and *e; false at the end, or when the index is
 * damaged (then it->failed).
 */
bool pack_iter_next(struct pack_iter *it, struct pack_entry *e);

/*
 * Whether some name starts with prefix[0..plen) (e.g. "dir/": a directory of the pack).
 */
bool pack_has_prefix(const struct pack *p, const char *prefix, size_t plen);

/*
 * Decodes the whole index and checks its structure: names in strictly increasing order, each
 * valid (files_name_valid), as many as the header says, every file within the data part.
 * Returns 0, or -1 with the first damage found in err. Reads no data (s1pack verify does).
 */
int pack_check(const struct pack *p, char *err);

/*
 * The inode number that stands for entry e in its ETag (files_etag): from the pack's identity
 * and e's place, never 0 (an upload's). A rebuilt pack of the same tree has the same identity,
 * so the same ETags; any change to the index changes every one. Pure.
 */
uint64_t pack_entry_ino(const struct pack *p, const struct pack_entry *e);

/* ---- writing (pure) ---- */

/* One file for the encoder, in path order. */
struct pack_src {
    const char *name;
    size_t name_len;
    uint64_t size;
    int64_t mtime_s;
    uint32_t crc;
};

/*
 * The index of files n files (sorted bytewise, no name twice, each valid) with block_names
 * names per block (1..PACK_BLOCK_NAMES_MAX) and file starts aligned to align (a power of two,
 * 512..65536): a malloc'd *index of *index_len bytes, the data part's size in *data_len (files
 * padded to align; the caller writes them so) and the mtime base in *mtime_base. Returns 0,
 * or -1 with the reason in err (out of order, a duplicate, an invalid name, a limit passed).
 */
int pack_index_encode(const struct pack_src *files, size_t n, unsigned block_names,
                      unsigned align, uint8_t **index, size_t *index_len, uint64_t *data_len,
                      int64_t *mtime_base, char *err);

/*
 * The header of a pack (PACK_HEADER_BYTES into hdr, zero-padded) whose index (index_len
 * bytes, index_crc: its gzip CRC-32; id: pack_index_id) follows a data part of data_len bytes.
 */
void pack_header_make(uint8_t *hdr, uint64_t count, unsigned block_names, unsigned align,
                      uint64_t data_len, uint64_t index_len, int64_t mtime_base,
                      uint32_t index_crc, uint64_t id);

/* Where the index starts after a data part of data_len bytes (a multiple of 4096). */
uint64_t pack_index_off(uint64_t data_len);

/* The pack's identity from its index: two 32-bit CRCs of it (gzip's and Castagnoli's). */
uint64_t pack_index_id(const uint8_t *index, size_t len);

/* The gzip CRC-32 of len bytes at data, continuing crc (0 to start). */
uint32_t pack_crc32(uint32_t crc, const void *data, size_t len);

/* n rounded up to align (a power of two). */
static inline uint64_t pack_round_up(uint64_t n, uint64_t align)
{
    return (n + align - 1) & ~(align - 1);
}

#endif /* S1_PACK_H */
