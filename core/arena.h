/* Arenas: bump allocation for IR objects, which are never freed one by one.
 *
 * Every Module owns one arena; destroying the arena frees the whole IR at once.
 * Big blocks (tensor data) are kept on a separate list so that a runtime that
 * wants to release one early (the interpreter, at a value's last use) can.
 *
 * All allocation in glowc goes through here, which gives tests one hook to fail
 * the Nth allocation (arena_fail_after).  On failure an arena with an OOM
 * handler installed longjmps to it; otherwise the call returns NULL. */
#ifndef GLOWC_CORE_ARENA_H
#define GLOWC_CORE_ARENA_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct Arena Arena;

Arena *arena_new(void);
void arena_destroy(Arena *a);

/* Zeroed memory, aligned to 16 bytes; big blocks to 64 bytes. */
void *arena_alloc(Arena *a, size_t size);
void *arena_alloc_array(Arena *a, size_t count, size_t elem_size);
/* Uninitialised, 64-byte aligned; may be released early with arena_release. */
void *arena_alloc_big(Arena *a, size_t size);
void arena_release(Arena *a, void *big_block);
/* Whether p is the start of a block arena_alloc_big gave from a. */
bool arena_owns_big(const Arena *a, const void *p);

char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);
/* Copy of an array; a grown copy when new_count > old_count (the old one is
 * left to the arena). */
void *arena_grow(Arena *a, void *old, size_t old_count, size_t new_count, size_t elem_size);

/* Where to longjmp when an allocation fails (NULL: return NULL instead). */
void arena_set_oom_handler(Arena *a, jmp_buf *handler);
/* Test hook: the Nth allocation from now fails (n >= 1); 0 disables. */
void arena_fail_after(Arena *a, long n);
/* Bytes currently held (small chunks + live big blocks). */
size_t arena_bytes(const Arena *a);

#endif
