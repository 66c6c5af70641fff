/* Memory plan table, JSON, SVG and text chart. */
#include "dot/memmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lir_print.h"

static int by_offset(const void *a, const void *b) {
    const MemRow *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->first - y->first;
}

bool memplan_from_lir(LirProgram *p, MemPlan *m) {
    memset(m, 0, sizeof *m);
    if (!p->allocated)
        return false;
    m->rows = calloc((size_t)p->nbufs + 1, sizeof *m->rows);
    for (int b = 0; b < p->nbufs; b++) {
        LirBuf *s = p->bufs[b];
        if (s->kind != LB_ALLOC || s->dead)
            continue;
        MemRow *r = &m->rows[m->n++];
        StrBuf sb;
        sb_init(&sb);
        lir_print_buf_ref(s, &sb);
        snprintf(r->label, sizeof r->label, "%s", sb_str(&sb));
        sb_clear(&sb);
        print_type(&s->type, &sb);
        r->type = strdup(sb_str(&sb));
        sb_free(&sb);
        r->origin = s->name;
        r->offset = s->address;
        r->size = (int64_t)type_bytes(&s->type);
        r->first = s->live_first;
        r->last = s->live_last;
    }
    qsort(m->rows, (size_t)m->n, sizeof *m->rows, by_offset);
    lir_number(p);
    m->ninstrs = p->ninstrs;
    m->arena = p->arena_bytes;
    m->lower_bound = p->lower_bound;
    m->naive = p->naive_bytes;
    m->const_bytes = p->const_bytes;
    m->mutable_bytes = p->mutable_bytes;
    return true;
}

void memplan_free(MemPlan *m) {
    for (int i = 0; i < m->n; i++)
        free((char *)m->rows[i].type);
    free(m->rows);
    memset(m, 0, sizeof *m);
}

/* The mark of row i of n in the text chart and the marked table: one
 * character while there are at most 62 buffers, then as many as it takes
 * for every buffer to have its own (62 squared: 3844 with two). */
static const char chart_marks[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
enum { NMARKS = sizeof chart_marks - 1, MARK_MAX = 8 };

static int mark_width(int n) {
    int w = 1;
    for (int64_t reach = NMARKS; reach < n && w < MARK_MAX - 1; reach *= NMARKS)
        w++;
    return w;
}

static void mark_of(int i, int width, char *buf) {
    for (int k = width - 1; k >= 0; k--, i /= NMARKS)
        buf[k] = chart_marks[i % NMARKS];
    buf[width] = 0;
}

static void table(const MemPlan *m, bool marks, StrBuf *out) {
    int mw = mark_width(m->n);
    char mark[MARK_MAX];
    bool dynamic = false;
    if (marks)
        sb_printf(out, "%*s", mw + 2, "");
    sb_printf(out, "%-8s %12s %12s %6s %6s  %-22s %s\n", "buffer", "offset", "size", "first",
              "last", "type", "from");
    for (int i = 0; i < m->n; i++) {
        const MemRow *r = &m->rows[i];
        if (marks) {
            mark_of(i, mw, mark);
            sb_printf(out, "%s  ", mark);
        }
        /* A bounded-dynamic buffer is planned at its bound: "<=N" says so. */
        char size[32];
        bool bound = strstr(r->type, "?<=") != NULL;
        dynamic |= bound;
        snprintf(size, sizeof size, "%s%lld", bound ? "<=" : "", (long long)r->size);
        sb_printf(out, "%-8s %12lld %12s %6d %6d  %-22s %s\n", r->label, (long long)r->offset,
                  size, r->first, r->last, r->type, r->origin);
    }
    if (dynamic)
        sb_printf(out, "<=N: a bounded-dynamic buffer (?<=N in its type), planned at its bound; "
                       "its run-time size is at most that\n");
    sb_printf(out, "weights %lld bytes, inputs and outputs %lld bytes\n",
              (long long)m->const_bytes, (long long)m->mutable_bytes);
    sb_printf(out, "arena %lld bytes, lower bound %lld bytes, naive %lld bytes\n",
              (long long)m->arena, (long long)m->lower_bound, (long long)m->naive);
}

void memplan_table(const MemPlan *m, StrBuf *out) {
    table(m, false, out);
}

void memplan_table_marked(const MemPlan *m, StrBuf *out) {
    table(m, true, out);
}

static void json_string(StrBuf *out, const char *s) {
    sb_putc(out, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            sb_printf(out, "\\%c", *p);
        else if (*p < 0x20)
            sb_printf(out, "\\u%04x", *p);
        else
            sb_putc(out, (char)*p);
    }
    sb_putc(out, '"');
}

void memplan_json(const MemPlan *m, StrBuf *out) {
    sb_printf(out,
              "{\n  \"arena_bytes\": %lld,\n  \"lower_bound_bytes\": %lld,\n  \"naive_bytes\": "
              "%lld,\n  \"weight_bytes\": %lld,\n  \"io_bytes\": %lld,\n  \"instructions\": %d,\n"
              "  \"buffers\": [",
              (long long)m->arena, (long long)m->lower_bound, (long long)m->naive,
              (long long)m->const_bytes, (long long)m->mutable_bytes, m->ninstrs);
    for (int i = 0; i < m->n; i++) {
        const MemRow *r = &m->rows[i];
        sb_append(out, i ? ",\n    {" : "\n    {");
        sb_append(out, "\"name\": ");
        json_string(out, r->label);
        sb_printf(out, ", \"offset\": %lld, \"size\": %lld, \"first\": %d, \"last\": %d, \"type\": ",
                  (long long)r->offset, (long long)r->size, r->first, r->last);
        json_string(out, r->type);
        sb_append(out, ", \"from\": ");
        json_string(out, r->origin);
        sb_putc(out, '}');
    }
    sb_append(out, "\n  ]\n}\n");
}

static void xml_text(StrBuf *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<': sb_append(out, "&lt;"); break;
        case '>': sb_append(out, "&gt;"); break;
        case '&': sb_append(out, "&amp;"); break;
        case '"': sb_append(out, "&quot;"); break;
        default: sb_putc(out, *s);
        }
    }
}

/* A round step (1, 2, 5 times a power of ten) giving at most `most` ticks
 * over n positions. */
static int tick_step(int n, int most) {
    for (int p = 1;; p *= 10)
        for (int k = 0; k < 3; k++)
            if ((int64_t)n <= (int64_t)most * p * (int[]){1, 2, 5}[k])
                return p * (int[]){1, 2, 5}[k];
}

/* Colours cycle through a small palette, by row, so neighbours differ. */
static const char *const palette[] = {"#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3",
                                      "#b3de69", "#fccde5", "#bc80bd", "#ccebc5", "#ffed6f"};

void memplan_svg(const MemPlan *m, const char *title, StrBuf *out) {
    const double W = 1000, H = 600, left = 90, right = 20, top = 40, bottom = 50;
    double pw = W - left - right, ph = H - top - bottom;
    int steps = m->ninstrs > 0 ? m->ninstrs : 1;
    double ymax = (double)(m->arena > 0 ? m->arena : 1);
    sb_printf(out,
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
              "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
              W, H, W, H);
    sb_append(out, "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    sb_append(out, "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
    xml_text(out, title);
    sb_printf(out, ": arena %lld B, lower bound %lld B, naive %lld B</text>\n",
              (long long)m->arena, (long long)m->lower_bound, (long long)m->naive);
    sb_printf(out,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
              "stroke=\"#444\"/>\n",
              left, top, pw, ph);
    for (int t = 0; t <= 4; t++) {
        double y = top + ph - ph * t / 4;
        sb_printf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%lld</text>\n", left - 5,
                  y + 4, (long long)(ymax * t / 4));
    }
    int tick = tick_step(steps, 10);
    for (int t = 0; t < steps; t += tick) {
        double x = left + pw * (t + 0.5) / steps;
        sb_printf(out,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
                  x, top + ph, x, top + ph + 4, x, top + ph + 15, t);
    }
    sb_printf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">instruction index (0..%d)</text>\n",
              left + pw / 2, H - 12, steps - 1);
    sb_printf(out, "<text x=\"15\" y=\"%.1f\" transform=\"rotate(-90 15 %.1f)\" "
                   "text-anchor=\"middle\">address (bytes)</text>\n",
              top + ph / 2, top + ph / 2);
    for (int i = 0; i < m->n; i++) {
        const MemRow *r = &m->rows[i];
        double x = left + pw * r->first / steps;
        double w = pw * (r->last - r->first + 1) / steps;
        double h = ph * (double)r->size / ymax;
        double y = top + ph - ph * (double)(r->offset + r->size) / ymax;
        sb_printf(out, "<g><title>");
        xml_text(out, r->label);
        sb_putc(out, ' ');
        xml_text(out, r->type); /* f32<...>: the angle brackets need escaping */
        sb_printf(out, ", offset %lld, %lld bytes, live %d..%d, from ", (long long)r->offset,
                  (long long)r->size, r->first, r->last);
        xml_text(out, r->origin);
        sb_printf(out,
                  "</title><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
                  "stroke=\"#333\" stroke-width=\"0.5\"/>",
                  x, y, w > 0.5 ? w : 0.5, h > 0.5 ? h : 0.5, palette[i % 10]);
        if (w > 40 && h > 12) {
            sb_printf(out, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"10\">", x + 2, y + h / 2 + 4);
            xml_text(out, r->label);
            sb_append(out, "</text>");
        }
        sb_append(out, "</g>\n");
    }
    sb_append(out, "</svg>\n");
}

/* "512", "3.8K", "4.0M": an address for the chart's axis, at most 6 wide. */
static void short_bytes(int64_t b, char *buf, size_t size) {
    if (b < 1024)
        snprintf(buf, size, "%lld", (long long)b);
    else if (b < 1024 * 1024)
        snprintf(buf, size, "%.1fK", (double)b / 1024);
    else if (b < (int64_t)1024 * 1024 * 1024)
        snprintf(buf, size, "%.1fM", (double)b / (1024 * 1024));
    else
        snprintf(buf, size, "%.1fG", (double)b / (1024.0 * 1024 * 1024));
}

enum { AXIS_W = 8 }; /* "  4.0M |" */

void memplan_text_chart(const MemPlan *m, int width, int height, StrBuf *out) {
    width -= AXIS_W;
    if (width < 10 || height < 3)
        return;
    char *grid = malloc((size_t)width * (size_t)height);
    memset(grid, '.', (size_t)width * (size_t)height);
    int steps = m->ninstrs > 0 ? m->ninstrs : 1;
    double ymax = (double)(m->arena > 0 ? m->arena : 1);
    int mw = mark_width(m->n);
    char mark[MARK_MAX];
    for (int i = 0; i < m->n; i++) {
        const MemRow *r = &m->rows[i];
        mark_of(i, mw, mark);
        int x0 = (int)((double)r->first * width / steps), x1 = (int)((double)(r->last + 1) * width / steps);
        int y0 = (int)((double)r->offset * height / ymax);
        int y1 = (int)((double)(r->offset + r->size) * height / ymax);
        if (x1 <= x0)
            x1 = x0 + 1;
        if (y1 <= y0)
            y1 = y0 + 1;
        for (int y = y0; y < y1 && y < height; y++)
            for (int x = x0; x < x1 && x < width; x++)
                grid[(size_t)(height - 1 - y) * (size_t)width + (size_t)x] =
                    mark[(x - x0) % mw]; /* a wide enough rectangle spells it */
    }
    /* Addresses at the top, the middle and the bottom row: the address
     * where each row starts. */
    for (int y = 0; y < height; y++) {
        char label[16] = "";
        int row = height - 1 - y;
        if (y == 0 || y == height / 2 || y == height - 1)
            short_bytes((int64_t)(ymax * row / height), label, sizeof label);
        sb_printf(out, "%*s |", AXIS_W - 2, label);
        sb_append_n(out, grid + (size_t)y * (size_t)width, (size_t)width);
        sb_putc(out, '\n');
    }
    free(grid);
    /* The instruction index under a column every few columns. */
    sb_printf(out, "%*s +", AXIS_W - 2, "");
    for (int x = 0; x < width; x++)
        sb_putc(out, '-');
    sb_putc(out, '\n');
    StrBuf ticks;
    sb_init(&ticks);
    int every = tick_step(steps, width / 8 > 1 ? width / 8 : 1);
    for (int t = 0; t < steps; t += every) {
        int col = (int)((double)t * width / steps);
        if ((int)ticks.len > col)
            continue;
        while ((int)ticks.len < col)
            sb_putc(&ticks, ' ');
        sb_printf(&ticks, "%d", t);
    }
    sb_printf(out, "%*s  %s\n", AXIS_W - 2, "", sb_str(&ticks));
    sb_printf(out, "%*s  address up, instruction index across (0..%d)\n", AXIS_W - 2, "",
              steps - 1);
    sb_free(&ticks);
}
