/*
 * mimetypes.h - the Content-Type of a file from its name's extension, read from a table in the
 * mime.types format (Debian's media-types package installs /etc/mime.types) or from a small
 * built-in table when there is no such file.
 *
 * Format: one "type/subtype ext1 ext2 ..." per line, fields separated by spaces or tabs, LF or
 * CRLF line ends; blank lines are ignored and a token starting with '#' comments out the rest
 * of its line. The file is trusted operator input, but it is still checked:
 *  - a type must be type "/" subtype, each one or more RFC 9110 token characters, at most
 *    MIMETYPES_TYPE_MAX bytes; otherwise the whole line is skipped and counted once in skipped;
 *  - an extension must be 1 to MIMETYPES_EXT_MAX token characters; otherwise it is skipped and
 *    counted in skipped. Neither is an error;
 *  - an extension holding a '.' ("tar.gz") is valid but can never match, since a name's
 *    extension is what follows its last '.': it is counted in unreachable and not stored;
 *  - extensions are case-insensitive (ASCII); one listed twice keeps its first type and the
 *    later ones are counted in duplicates;
 *  - more than MIMETYPES_MAX_EXT distinct extensions, or a file over MIMETYPES_FILE_MAX bytes,
 *    is an error.
 *
 * DESIGN: built once at startup by one thread, read-only afterwards: mimetypes_lookup may then
 * be called from any number of threads at once. Lookups are O(1) (open addressing, power-of-two
 * capacity, FNV-1a of the lowercased extension) and allocate nothing. No global state.
 */
#ifndef MIMETYPES_H
#define MIMETYPES_H

#include <stdbool.h>
#include <stddef.h>

#define MIMETYPES_FILE_MAX (1024 * 1024) /* bytes mimetypes_load_file reads at most */
#define MIMETYPES_MAX_EXT 8192           /* distinct extensions in one table */
#define MIMETYPES_TYPE_MAX 127           /* bytes in a type, e.g. "text/html" */
#define MIMETYPES_EXT_MAX 31             /* bytes in an extension, without the '.' */
#define MIMETYPES_DEFAULT_PATH "/etc/mime.types"

struct mimetypes_slot;

struct mimetypes {
    struct mimetypes_slot *_slots; /* the hash table, _cap slots; NULL when empty */
    size_t _cap;                   /* a power of two, or 0 */
    char *_pool;                   /* stored types and extensions, NUL-terminated, back to back */
    size_t _pool_len;              /* bytes of _pool in use */
    size_t _pool_cap;              /* bytes of _pool allocated */
    size_t count;                  /* extensions in the table */
    size_t skipped;                /* invalid or over-long tokens (a bad type: its line, once) */
    size_t duplicates;             /* extensions listed again; the first type wins */
    size_t unreachable;            /* extensions holding a '.', never stored */
};

/*
 * Builds m from text[0..len) (need not be NUL-terminated). m needs no init and is overwritten,
 * so release a table before loading another into it. Returns 0, or -1 with a message in
 * err[0..errcap) (only for more than MIMETYPES_MAX_EXT extensions); on error m is left empty
 * (every lookup NULL) and still needs mimetypes_release. Pure; aborts only if memory runs out.
 */
int mimetypes_load_buffer(struct mimetypes *m, const char *text, size_t len, char *err,
                          size_t errcap);

/*
 * Like mimetypes_load_buffer on the contents of the file at path. Errors (cannot open or read,
 * over MIMETYPES_FILE_MAX bytes, too many extensions) return -1 with a message naming path in
 * err; m is then left empty and still needs mimetypes_release.
 */
int mimetypes_load_file(struct mimetypes *m, const char *path, char *err, size_t errcap);

/*
 * Builds m from the built-in table: html htm, css, js mjs, json, txt, xml, svg, png, jpg jpeg,
 * gif, webp, ico, pdf, wasm, mp4, webm, mp3, ogg, zip, gz, tar, csv, md. Cannot fail.
 */
void mimetypes_init_builtin(struct mimetypes *m);

/*
 * The type for the extension of name[0..len): what follows the last '.' of its last
 * '/'-separated segment, compared case-insensitively ("INDEX.HTML" -> "text/html",
 * "a.tar.gz" -> the type of "gz"). NULL if there is no extension ("dir.d/file"), the segment is
 * a dot-file with no other dot (".bashrc"), the extension is empty ("a.") or not in the table.
 * The string belongs to m and lives until mimetypes_release. Thread-safe on a built table.
 */
const char *mimetypes_lookup(const struct mimetypes *m, const char *name, size_t len);

/*
 * True if a document of this Content-Type can run script, or load a document that does, when a
 * browser opens it: "text/html"; XML of any kind (a subtype "xml" or "...+xml": XHTML, SVG,
 * XSLT, MathML, RSS, Atom...), which may hold XHTML script elements; any subtype naming
 * "javascript", "ecmascript" or "vbscript"; "text/xsl", "text/x-component" (HTC),
 * "multipart/x-mixed-replace" (parts of any type), "application/x-shockwave-flash",
 * "application/futuresplash". Compared case-insensitively on the essence (parameters after
 * ';' do not count). PDF, images, audio, video, text/plain, CSS and JSON are passive. A type
 * that is not type/subtype, or longer than MIMETYPES_TYPE_MAX, counts as active. Pure.
 */
bool mimetypes_is_active(const char *type);

/* Frees what m holds and leaves it empty; a released table may be released again. */
void mimetypes_release(struct mimetypes *m);

#endif /* MIMETYPES_H */
