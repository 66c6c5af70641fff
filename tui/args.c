/* Shared option parsing and input binding for the compiling subcommands. */
#include "tui/args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/npy.h"
#include "tui/quant_report.h"

static bool add_dim(CommonArgs *ca, const char *v, DiagList *d) {
    if (ca->ndims == MAX_CLI_INPUTS) {
        diag_error(d, NULL, "--dim: more than %d given", MAX_CLI_INPUTS);
        return false;
    }
    DimBinding *b = &ca->dims[ca->ndims];
    if (!cli_parse_dim(v, b, d))
        return false;
    ca->ndims++;
    for (int k = 0; k < ca->ndims - 1; k++) {
        if (!strcmp(ca->dims[k].name, b->name)) {
            diag_error(d, NULL, "--dim %s given twice", b->name);
            return false;
        }
    }
    return true;
}

/* --input or --stream (`opt`) NAME=FILE. */
static bool add_input(CommonArgs *ca, const char *v, const char *opt, DiagList *d) {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) {
        diag_error(d, NULL, "%s expects NAME=FILE.npy (or FILE.pb), got '%s'", opt, v);
        return false;
    }
    if (ca->ninputs == MAX_CLI_INPUTS) {
        diag_error(d, NULL, "%s: more than %d inputs given", opt, MAX_CLI_INPUTS);
        return false;
    }
    size_t n = (size_t)(eq - v);
    for (int k = 0; k < ca->ninputs; k++) {
        if (strlen(ca->input_names[k]) == n && !strncmp(ca->input_names[k], v, n)) {
            diag_error(d, NULL, "%s %s given twice", opt, ca->input_names[k]);
            return false;
        }
    }
    ca->input_names[ca->ninputs] = strndup(v, n);
    ca->input_files[ca->ninputs++] = eq + 1;
    return true;
}

bool args_common(CommonArgs *ca, OptionId id, const char *v, bool *bad, DiagList *d) {
    *bad = false;
    switch (id) {
    case OPT_O0: ca->pipeline = "-O0"; break;
    case OPT_O1: ca->pipeline = "-O1"; break;
    case OPT_O2: ca->pipeline = "-O2"; break;
    case OPT_PASSES: ca->pipeline = v; break;
    case OPT_DIM: *bad = !add_dim(ca, v, d); break;
    case OPT_INPUT: *bad = !add_input(ca, v, "--input", d); break;
    case OPT_LATE_INPUT:
        if (!(*bad = !add_input(ca, v, "--late-input", d)))
            ca->input_late[ca->ninputs - 1] = true;
        break;
    case OPT_STREAM:
        if (!(*bad = !add_input(ca, v, "--stream", d)))
            ca->input_stream[ca->ninputs - 1] = true;
        break;
    case OPT_BREAK_PASS: ca->break_pass = v; break;
    case OPT_NO_VERIFY: ca->no_verify = true; break;
    case OPT_VERIFY_EACH: ca->no_verify = false; break; /* the default; old scripts say it */
    case OPT_BACKEND: ca->backend = v; break;
    case OPT_TARGET: ca->target = v; break;
    case OPT_QUANTIZE:
    case OPT_PROFILE: ca->quantize = v; break;
    case OPT_KEEP_FLOAT: ca->quant.keep_float = v; break;
    case OPT_MIN_SQNR: {
        char *end;
        ca->min_sqnr = strtod(v, &end);
        ca->min_sqnr_given = true;
        if ((*bad = end == v || *end || !isfinite(ca->min_sqnr)))
            diag_error(d, NULL, "--min-sqnr: '%s' is not a number of dB", v);
        break;
    }
    case OPT_QUANT_PER_TENSOR: ca->quant.per_tensor_weights = true; break;
    case OPT_QUANT_EQUALIZE:
        if ((*bad = strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "dense")))
            diag_error(d, NULL, "--quant-equalize takes on, off or dense, not '%s'", v);
        ca->quant.equalize = !strcmp(v, "off") ? QE_OFF : !strcmp(v, "dense") ? QE_DENSE : QE_ON;
        break;
    case OPT_QUANT_SCHEMA:
        if ((*bad = !quant_schema_by_name(v, &ca->quant.schema)))
            diag_error(d, NULL, "--quant-schema: '%s' is not one of asymmetric, symmetric, "
                       "symmetric-uint8, symmetric-pow2", v);
        break;
    case OPT_QUANT_CALIBRATION:
        if ((*bad = !quant_calibration_by_name(v, &ca->quant.calibration)))
            diag_error(d, NULL, "--quant-calibration: '%s' is not one of minmax, kl, percentile",
                       v);
        break;
    case OPT_TARGET_CPU: ca->target_cpu = v; break;
    case OPT_TARGET_FEATURES: ca->target_features = v; break;
    case OPT_THREADS: {
        long long t;
        if (!cli_parse_int(v, 1, 64, &t)) {
            diag_error(d, NULL, "--threads takes 1 to 64, not '%s'", v);
            *bad = true;
        }
        ca->threads = (int)t;
        break;
    }
    case OPT_FALLBACK:
        if (strcmp(v, "interp")) {
            diag_error(d, NULL, "--fallback takes 'interp', not '%s'", v);
            *bad = true;
        }
        ca->fallback = true;
        break;
    case OPT_MAX_MEMORY:
        if (!cli_parse_size(v, &ca->max_memory)) {
            diag_error(d, NULL, "--max-memory expects a positive size in bytes, with an optional "
                       "K, M, G or T (powers of 1024), got '%s'", v);
            *bad = true;
        }
        break;
    case OPT_NO_CACHE: ca->no_cache = true; break;
    case OPT_NO_WINOGRAD: ca->no_winograd = true; break;
    case OPT_F32_PRECISION:
        if (strcmp(v, "high") && strcmp(v, "highest")) {
            diag_error(d, NULL, "--f32-precision takes 'high' or 'highest', not '%s'", v);
            *bad = true;
            break;
        }
        ca->f32_highest = !strcmp(v, "highest");
        break;
    case OPT_TRAIN: ca->training = true; break;
    case OPT_LOSS:
        if (!strcmp(v, "softmax-cross-entropy") || !strcmp(v, "mse")) {
            ca->train.loss = strcmp(v, "mse") ? LOSS_SOFTMAX_CE : LOSS_MSE;
        } else {
            diag_error(d, NULL, "--loss takes softmax-cross-entropy or mse, not '%s'", v);
            *bad = true;
        }
        break;
    case OPT_OPTIMIZER:
        if (!strcmp(v, "sgd") || !strcmp(v, "adam")) {
            ca->train.optimizer = strcmp(v, "adam") ? OPTIM_SGD : OPTIM_ADAM;
        } else {
            diag_error(d, NULL, "--optimizer takes sgd or adam, not '%s'", v);
            *bad = true;
        }
        break;
    case OPT_LR:
    case OPT_MOMENTUM:
    case OPT_WEIGHT_DECAY:
    case OPT_BETA1:
    case OPT_BETA2:
    case OPT_EPS: {
        double x;
        double *dst = id == OPT_LR ? &ca->train.lr
                      : id == OPT_MOMENTUM ? &ca->train.momentum
                      : id == OPT_BETA1 ? &ca->train.beta1
                      : id == OPT_BETA2 ? &ca->train.beta2
                      : id == OPT_EPS ? &ca->train.eps : &ca->train.weight_decay;
        bool unit = id == OPT_MOMENTUM || id == OPT_BETA1 || id == OPT_BETA2;
        bool positive = id == OPT_LR || id == OPT_EPS;
        if (!cli_parse_tolerance(v, &x) || (unit && x >= 1) || (positive && x == 0)) {
            diag_error(d, NULL, "%s takes a finite number %s, not '%s'", option_info(id)->spelling,
                       unit ? "in [0, 1)" : positive ? "> 0" : ">= 0", v);
            *bad = true;
        }
        *dst = x;
        ca->lr_given |= id == OPT_LR;
        break;
    }
    default: return false;
    }
    return true;
}

/* --quantize: the profile, which must be of this model's very bytes (a
 * profile names values, and another model's would name other ones). */
static bool load_profile(CommonArgs *ca, DiagList *d) {
    if (!ca->model) {
        diag_error(d, NULL, "--quantize needs a model");
        return false;
    }
    size_t len;
    char *model = file_read_all(ca->model, &len, d);
    if (!model || !qprof_read(ca->quantize, &ca->profile, d)) {
        free(model);
        return false;
    }
    uint64_t h = qprof_hash_bytes(model, len);
    free(model);
    if (h != ca->profile.model_hash) {
        diag_error(d, ca->quantize, "the profile is of another model (its hash is "
                   "fnv1a64:%016llx, %s's is fnv1a64:%016llx): profile this model again",
                   (unsigned long long)ca->profile.model_hash, ca->model, (unsigned long long)h);
        qprof_free(&ca->profile);
        return false;
    }
    ca->quant.profile = &ca->profile;
    ca->quant.profile_path = ca->quantize;
    return true;
}

bool args_parse(CommonArgs *ca, int argc, char **argv, const char *cmd, ArgFn own, void *ctx,
                DiagList *d) {
    const CommandSpec *c = command_spec(cmd);
    /* torch.optim.Adam's defaults */
    ca->train.beta1 = 0.9;
    ca->train.beta2 = 0.999;
    ca->train.eps = 1e-8;
    for (int i = 1; i < argc; i++) {
        OptionId id;
        const char *v;
        int r = option_next(c, argc, argv, &i, &id, &v, d);
        if (r < 0)
            return false;
        if (r > 0) {
            bool bad = false;
            if (args_common(ca, id, v, &bad, d)) {
                if (bad)
                    return false;
                continue;
            }
            int o = own ? own(id, v, ctx, d) : 0;
            if (o < 0)
                return false;
            if (o == 0) { /* declared in tui/commands.def, handled nowhere */
                diag_error(d, NULL, "%s: option '%s' is not implemented", cmd, argv[i]);
                return false;
            }
        } else if (!ca->model) {
            ca->model = argv[i];
        } else {
            diag_error(d, NULL, "%s: more than one model given ('%s' and '%s')", cmd, ca->model,
                       argv[i]);
            return false;
        }
    }
    if (!ca->model && !strstr(c->operands, "[MODEL]")) {
        diag_error(d, NULL, "%s: no model given (see 'glowc %s --help')", cmd, cmd);
        return false;
    }
    ca->cache_dir_set = !ca->no_cache && cli_cache_dir(ca->cache_dir, sizeof ca->cache_dir);
    if (!args_check_target(ca, false, d) || (ca->quantize && !load_profile(ca, d)))
        return false;
    bool auto_keep = ca->quant.keep_float && !strcmp(ca->quant.keep_float, "auto");
    if (auto_keep && !ca->quantize) {
        diag_error(d, NULL, "--keep-float=auto chooses among quantized nodes: it needs --quantize");
        return false;
    }
    if (ca->min_sqnr_given && !auto_keep) {
        diag_error(d, NULL, "--min-sqnr is the threshold of --keep-float=auto");
        return false;
    }
    return !auto_keep || quant_resolve_auto(ca, d);
}

void args_free(CommonArgs *ca) {
    qprof_free(&ca->profile);
    free(ca->keep_auto_list);
    for (int i = 0; i < ca->ninputs; i++)
        free((char *)ca->input_names[i]);
    for (int i = 0; i < ca->ndims; i++)
        free((char *)ca->dims[i].name);
    arena_destroy(ca->input_arena);
    ca->input_arena = NULL;
}

/* --input i: a .npy file, or a serialized TensorProto (.pb, as in the ONNX
 * test data). */
static bool load_input(CommonArgs *ca, int i, Arena *a, DiagList *d) {
    size_t len;
    const char *path = ca->input_files[i];
    char *buf = file_read_all(path, &len, d);
    if (buf && cli_has_suffix(path, ".pb"))
        ca->input_values[i] = onnx_read_tensor(buf, len, path, a, NULL, d);
    else
        ca->input_values[i] = buf ? npy_read(buf, len, path, a, d) : NULL;
    free(buf);
    return ca->input_values[i] != NULL;
}

bool args_load_inputs(CommonArgs *ca, Arena *a, DiagList *d) {
    for (int i = 0; i < ca->ninputs; i++)
        if (!load_input(ca, i, a, d))
            return false;
    return true;
}

bool args_ensure_inputs(CommonArgs *ca, DiagList *d) {
    bool missing = false;
    for (int i = 0; i < ca->ninputs; i++)
        missing |= !ca->input_values[i];
    if (!missing)
        return true;
    if (!ca->input_arena)
        ca->input_arena = arena_new();
    for (int i = 0; i < ca->ninputs; i++)
        if (!ca->input_values[i] && !load_input(ca, i, ca->input_arena, d))
            return false;
    return true;
}

SessionOptions args_session_options(const CommonArgs *ca, KnownInput *known) {
    for (int i = 0; known && i < ca->ninputs; i++)
        known[i] = (KnownInput){ca->input_names[i], -1, ca->input_values[i], NULL,
                                ca->input_late[i]};
    return (SessionOptions){
        .dims = ca->dims,
        .ndims = ca->ndims,
        .known = known,
        .nknown = known ? ca->ninputs : 0,
        .break_pass = ca->break_pass,
        .no_verify = ca->no_verify,
        .backend = ca->backend ? backend_find(ca->backend) : NULL,
        .codegen = {.target = ca->target, .target_cpu = ca->target_cpu,
                    .target_features = ca->target_features, .fallback = ca->fallback,
                    /* Training in f32 throughout: gradients are sums
                     * that cancel (a conv's weight gradient over every
                     * position), where bf16x3's 3 * 2^-16 a product is
                     * no bound (resnet18's conv1.weight: 1.8e-2 of its
                     * largest magnitude against torch). */
                    .f32_highest = ca->f32_highest || ca->training,
                    .cache_dir = ca->cache_dir_set ? ca->cache_dir : NULL},
        .threads = ca->threads, /* 0: every online CPU (libjit_runtime_new) */
        .max_memory = ca->max_memory ? ca->max_memory : cli_physical_memory(),
        .quant = ca->quant.profile ? &ca->quant : NULL,
        .train = ca->training ? &ca->train : NULL,
        .no_winograd = ca->no_winograd,
    };
}

bool args_want_compiling(CommonArgs *ca, const char *what, DiagList *d) {
    const Backend *be = ca->backend ? backend_find(ca->backend) : backend_compiling();
    if (be && !be->compiles) {
        diag_error(d, NULL, "%s: native code comes from a compiling backend (%s), not '%s'", what,
                   backend_compiling_names(), ca->backend);
        return false;
    }
    if (be)
        ca->backend = be->name;
    return true; /* an unknown name is reported with the other names */
}

static Session *finish_open(Session *s, CommonArgs *ca, const char *dflt, DiagList *d) {
    if (!s->work && !s->lir) {
        diag_append(d, &s->diags);
        session_free(s);
        return NULL;
    }
    if (ca->training && s->from_lir) {
        diag_error(d, NULL, "--train: '%s' is low-level IR; differentiation works on a graph "
                   "(.onnx or .hl)", ca->model);
        session_free(s);
        return NULL;
    }
    if (!ca->pipeline && s->from_lir)
        dflt = ""; /* no graph pipeline for low-level input */
    const char *spec = ca->pipeline ? ca->pipeline : dflt;
    if (ca->training && !ca->lr_given)
        ca->train.lr = 0.01;
    bool ok = session_set_pipeline(s, spec);
    if (ok && s->opt.backend->compiles)
        ok = session_want_codegen(s);
    else if (ok && s->opt.backend->runs_lir)
        ok = session_want_lir(s);
    if (!ok) {
        diag_append(d, &s->diags);
        session_free(s);
        return NULL;
    }
    return s;
}

bool args_check_target(const CommonArgs *ca, bool here, DiagList *d) {
    const Backend *named = ca->backend ? backend_find(ca->backend) : NULL;
    const Backend *be = named && named->compiles ? named : backend_compiling();
    if (!be || (!ca->target && !ca->target_cpu && !ca->target_features))
        return true;
    BackendOptions o = {.target = ca->target, .target_cpu = ca->target_cpu,
                        .target_features = ca->target_features};
    return be->check_target(&o, here && named && named->compiles, d);
}

/* The options that name things, checked before a model is loaded. */
static bool check_names(const CommonArgs *ca, DiagList *d) {
    if (ca->backend && !backend_find(ca->backend)) {
        diag_error(d, NULL, "unknown backend '%s' (known: %s)", ca->backend, backend_names());
        return false;
    }
    if (ca->break_pass && !pass_lookup(ca->break_pass, "--break-pass", d))
        return false;
    return args_check_target(ca, ca->runs_native, d);
}

Session *args_open_session(CommonArgs *ca, const char *dflt, KnownInput *known, DiagList *d) {
    if (!check_names(ca, d) || (known && !args_ensure_inputs(ca, d)))
        return NULL;
    SessionOptions so = args_session_options(ca, known);
    return finish_open(session_open(ca->model, &so), ca, dflt, d);
}

Session *args_open_session_with(CommonArgs *ca, const SessionOptions *so, const char *dflt,
                                DiagList *d) {
    if (!check_names(ca, d))
        return NULL;
    return finish_open(session_open(ca->model, so), ca, dflt, d);
}

Session *args_open_session_from(CommonArgs *ca, const SessionOptions *so, const Module *m,
                                const char *dflt, DiagList *d) {
    if (!check_names(ca, d))
        return NULL;
    return finish_open(session_open_module(ca->model, m, so), ca, dflt, d);
}

Session *args_open_session_text(CommonArgs *ca, const char *dflt, const char *text,
                                DiagList *d) {
    if (!check_names(ca, d))
        return NULL;
    SessionOptions so = args_session_options(ca, NULL);
    return finish_open(session_open_text(ca->model, text, strlen(text), &so), ca, dflt, d);
}

int args_split_chunks(const char *text, char ***chunks) {
    int n = 0, cap = 8, line = 1, start_line = 1;
    char **out = malloc((size_t)cap * sizeof *out);
    const char *start = text;
    for (const char *p = text;; line++) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        bool sep = len >= 8 && !strncmp(p, "// -----", 8);
        if (sep || !e) {
            const char *stop = sep ? p : p + len;
            if (n == cap)
                out = realloc(out, (size_t)(cap *= 2) * sizeof *out);
            size_t body = (size_t)(stop - start);
            char *c = malloc((size_t)(start_line - 1) + body + 1);
            memset(c, '\n', (size_t)(start_line - 1));
            memcpy(c + start_line - 1, start, body);
            c[start_line - 1 + body] = 0;
            out[n++] = c;
            start = e ? e + 1 : p + len;
            start_line = line + 1;
        }
        if (!e)
            break;
        p = e + 1;
    }
    *chunks = out;
    return n;
}

static uint64_t next_random(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

void args_fill_random(Tensor *t, uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next_random(&s);
        if (elem_is_float(t->type.elem))
            tensor_set_f64(t, i, (double)(r >> 11) / 9007199254740992.0 * 2 - 1);
        else if (t->type.elem == ELEM_BOOL)
            tensor_set_i64(t, i, (int64_t)(r >> 63));
        else
            tensor_set_i64(t, i, (int64_t)(r % 10));
    }
}

/* The model's input names, for an error about one it does not have. */
static void input_names(const Session *s, StrBuf *sb) {
    for (int p = 0; p < session_ninputs(s); p++)
        sb_printf(sb, "%s'%s'", p ? ", " : "", session_input_name(s, p));
    if (!session_ninputs(s))
        sb_append(sb, "none");
}

static int input_index(const Session *s, const char *name) {
    for (int p = 0; p < session_ninputs(s); p++)
        if (!strcmp(session_input_name(s, p), name))
            return p;
    return -1;
}

/* Everything wrong with the --input options, before any input is filled
 * (and announced) from the generator. */
static bool check_inputs(const CommonArgs *ca, const Session *s, DiagList *d) {
    int errors = d->errors;
    if (s->from_lir && !s->opt.backend->runs_lir && !s->opt.backend->compiles) {
        diag_error(d, NULL, "'%s' is low-level IR: run it with --backend=interp-lir or "
                   "--backend=cpu (the %s backend runs graphs)", ca->model, s->opt.backend->name);
        return false;
    }
    for (int i = 0; i < ca->ninputs; i++) {
        int p = input_index(s, ca->input_names[i]);
        if (p < 0) {
            StrBuf names;
            sb_init(&names);
            input_names(s, &names);
            diag_error(d, NULL, "--input %s: the model has no input of that name (its inputs: %s)",
                       ca->input_names[i], sb_str(&names));
            sb_free(&names);
            continue;
        }
        /* An .npy holds no scale: a quantized input takes the model's. */
        const Type *type = session_input_type(s, p);
        type_copy_quant(&ca->input_values[i]->type, type);
        if (!type_equal(&ca->input_values[i]->type, type)) {
            char want[TYPE_STR_MAX], got[TYPE_STR_MAX];
            diag_error(d, NULL, "--input %s: the model expects %s, '%s' holds %s",
                       ca->input_names[i], type_str(type, want), ca->input_files[i],
                       type_str(&ca->input_values[i]->type, got));
        }
    }
    return d->errors == errors;
}

Tensor **args_bind_inputs(const CommonArgs *ca, const Session *s, Arena *a, bool announce,
                          DiagList *d) {
    if (!check_inputs(ca, s, d))
        return NULL;
    int n = session_ninputs(s);
    Tensor **inputs = arena_alloc_array(a, (size_t)n + 1, sizeof(Tensor *));
    for (int i = 0; i < ca->ninputs; i++)
        inputs[input_index(s, ca->input_names[i])] = ca->input_values[i];
    for (int p = 0; p < n; p++) {
        if (inputs[p])
            continue;
        const Type *type = session_input_type(s, p);
        inputs[p] = tensor_new(a, type);
        args_fill_random(inputs[p], (uint64_t)p + 1);
        if (announce) {
            char b[TYPE_STR_MAX];
            fprintf(stderr,
                    "glowc: input '%s' (%s) not given: filled from the fixed-seed generator\n",
                    session_input_name(s, p), type_str(type, b));
        }
    }
    return inputs;
}
