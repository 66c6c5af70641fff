/* Arena allocator: chunks for small objects, a list of big blocks for tensors. */
#include "core/arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK_SIZE = 64 * 1024, BIG_THRESHOLD = 16 * 1024, BIG_ALIGN = 64 };

typedef struct Chunk {
    struct Chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} Chunk;

typedef struct BigBlock {
    struct BigBlock *prev, *next;
    void *raw;
    size_t size;
} BigBlock;

struct Arena {
    Chunk *chunks;
    BigBlock *big;
    size_t bytes;
    jmp_buf *oom;
    long fail_countdown;
};

Arena *arena_new(void) {
    return calloc(1, sizeof(Arena));
}

void arena_destroy(Arena *a) {
    if (!a)
        return;
    for (Chunk *c = a->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    for (BigBlock *b = a->big, *next; b; b = next) {
        next = b->next;
        free(b->raw);
    }
    free(a);
}

/* Decides whether this allocation is the one a test asked to fail. */
static int injected_failure(Arena *a) {
    if (a->fail_countdown <= 0)
        return 0;
    return --a->fail_countdown == 0;
}

static void *out_of_memory(Arena *a) {
    if (a->oom)
        longjmp(*a->oom, 1);
    return NULL;
}

void *arena_alloc_big(Arena *a, size_t size) {
    if (injected_failure(a) || size > SIZE_MAX - sizeof(BigBlock) - 2 * BIG_ALIGN)
        return out_of_memory(a);
    /* Header first, then the payload at the next 64-byte boundary. */
    unsigned char *raw = malloc(sizeof(BigBlock) + size + 2 * BIG_ALIGN);
    if (!raw)
        return out_of_memory(a);
    uintptr_t p = (uintptr_t)(raw + sizeof(BigBlock) + BIG_ALIGN);
    p &= ~(uintptr_t)(BIG_ALIGN - 1);
    BigBlock *b = (BigBlock *)(p - sizeof(BigBlock));
    b->raw = raw;
    b->size = size;
    b->prev = NULL;
    b->next = a->big;
    if (a->big)
        a->big->prev = b;
    a->big = b;
    a->bytes += size;
    return (void *)p;
}

void arena_release(Arena *a, void *block) {
    if (!block)
        return;
    BigBlock *b = (BigBlock *)((unsigned char *)block - sizeof(BigBlock));
    if (b->prev)
        b->prev->next = b->next;
    else
        a->big = b->next;
    if (b->next)
        b->next->prev = b->prev;
    a->bytes -= b->size;
    free(b->raw);
}

bool arena_owns_big(const Arena *a, const void *p) {
    for (const BigBlock *b = a->big; b; b = b->next)
        if ((const unsigned char *)b + sizeof(BigBlock) == p)
            return true;
    return false;
}

void *arena_alloc(Arena *a, size_t size) {
    if (size >= BIG_THRESHOLD) {
        void *p = arena_alloc_big(a, size);
        if (p)
            memset(p, 0, size);
        return p;
    }
    if (injected_failure(a))
        return out_of_memory(a);
    size = (size + 15) & ~(size_t)15;
    Chunk *c = a->chunks;
    if (!c || c->cap - c->used < size) {
        c = malloc(sizeof(Chunk) + CHUNK_SIZE);
        if (!c)
            return out_of_memory(a);
        c->cap = CHUNK_SIZE;
        c->used = 0;
        c->next = a->chunks;
        a->chunks = c;
        a->bytes += CHUNK_SIZE;
    }
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

void *arena_alloc_array(Arena *a, size_t count, size_t elem_size) {
    if (elem_size && count > SIZE_MAX / elem_size)
        return out_of_memory(a);
    return arena_alloc(a, count * elem_size);
}

void *arena_grow(Arena *a, void *old, size_t old_count, size_t new_count, size_t elem_size) {
    void *p = arena_alloc_array(a, new_count, elem_size);
    if (p && old && old_count)
        memcpy(p, old, (old_count < new_count ? old_count : new_count) * elem_size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *p = arena_alloc(a, n + 1);
    if (p) {
        if (n) /* an empty protobuf string has no data pointer */
            memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

char *arena_strdup(Arena *a, const char *s) {
    return arena_strndup(a, s ? s : "", s ? strlen(s) : 0);
}

char *arena_vprintf(Arena *a, const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        n = 0;
    char *p = arena_alloc(a, (size_t)n + 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *p = arena_vprintf(a, fmt, ap);
    va_end(ap);
    return p;
}

void arena_set_oom_handler(Arena *a, jmp_buf *handler) {
    a->oom = handler;
}

void arena_fail_after(Arena *a, long n) {
    a->fail_countdown = n;
}

size_t arena_bytes(const Arena *a) {
    return a->bytes;
}
