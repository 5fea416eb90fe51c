/*
 * wholefile.h - a file read whole into memory, within a size limit: loadgen's inputs (a
 * --requests file and the bodies it names, a --names file, a run's run.json) come this way.
 * Each caller says in its own words what failed; this says which failure it was. Thread-safe.
 */
#ifndef WHOLEFILE_H
#define WHOLEFILE_H

#include <stddef.h>
#include <stdint.h>

enum wholefile_status {
    WHOLEFILE_OK = 0,
    WHOLEFILE_CANNOT_OPEN, /* err: open(2)'s errno */
    WHOLEFILE_NOT_REGULAR, /* a directory, a FIFO, a device ... */
    WHOLEFILE_TOO_BIG,     /* size: its size, over the limit */
    WHOLEFILE_CANNOT_READ, /* err: read(2)'s errno, 0 when the file got shorter */
};

struct wholefile {
    char *data;    /* malloc'd, data[len] == '\0'; NULL unless WHOLEFILE_OK */
    size_t len;
    uint64_t size; /* the file's size, as fstat gave it */
    int err;
};

/* Reads path whole if it is a regular file of at most cap bytes, into f. */
enum wholefile_status wholefile_read(const char *path, uint64_t cap, struct wholefile *f);

#endif /* WHOLEFILE_H */
