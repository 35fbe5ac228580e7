/* The C interface of tqref (libtqref_c.so): the bit-exact model, golden files and the judge
 * behind a plain C ABI, so that one shared library serves every Python version through ctypes
 * (python/tqref/_lib.py) and any other language with a C FFI. docs/python.md says why.
 *
 * Conventions
 *   - Every function that can fail returns an int status (TQREF_OK = 0); on failure
 *     tqref_last_error() holds the message of this thread's last failing call, which names the
 *     parameter (or file and object) and the allowed range, as the model and the CLI do.
 *   - Arrays are passed as a pointer plus its element count (or byte count where the name says
 *     bytes); the library checks every count against the parameters before it reads or writes,
 *     so a short buffer is an error, never an out-of-bounds access.
 *   - bf16 values travel as uint16 bit patterns, codes, scales and fp8 as uint8 (little-endian
 *     bytes exactly as on the GPU); nothing is converted on the way.
 *   - Formats are 0 = turbo2v, 1 = turbo3v, 2 = turbo4v (the order of kFormats).
 *   - Strings returned through char** are allocated here and released with tqref_string_free.
 *   - Calls that touch HDF5 are serialised by one lock (libhdf5 is built without thread safety);
 *     the model calls run in parallel with OpenMP and may be made from several threads at once.
 */
#ifndef TQREF_C_H
#define TQREF_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TQREF_C_ABI_VERSION 1

/* The library is built with hidden visibility: only these functions are exported. */
#if defined(__GNUC__)
#define TQREF_C_API __attribute__((visibility("default")))
#else
#define TQREF_C_API
#endif

enum tqref_status {
  TQREF_OK = 0,
  TQREF_BAD_ARGUMENT = 1, /* a parameter or buffer outside its allowed range */
  TQREF_BAD_FILE = 2,     /* a file that is missing, unreadable or violates the schema */
  TQREF_INTERNAL = 3      /* anything else (out of memory, a library failure) */
};

typedef struct tqref_ex2 tqref_ex2;                 /* an EX2 profile */
typedef struct tqref_file tqref_file;               /* an open golden file */
typedef struct tqref_case tqref_case;               /* one golden case in memory */
typedef struct tqref_decode_diag tqref_decode_diag; /* model diagnostics of one decode launch */

TQREF_C_API int tqref_abi_version(void);
/* {"abi":1,"version":"0.1.0","git_commit":"...","openmp_threads":N,"sparse_v_threshold_bits":B}
 * (B: the binary32 bits of the default TQ_PLUS_SPARSE_V_THRESHOLD): static storage. */
TQREF_C_API const char* tqref_build_info(void);
TQREF_C_API const char* tqref_last_error(void);
TQREF_C_API void tqref_string_free(char* s);

/* ---- Format traits (docs/spec.md section 2) -------------------------------------------- */
typedef struct {
  char name[8];              /* "turbo3v" */
  uint32_t bits, levels;     /* b, 2^b */
  uint32_t group_code_bytes; /* 16*b/8 */
  float max;                 /* MAX */
  float codebook[16];        /* [levels] fp32 as the writer uses it */
  float bounds[15];          /* [levels-1] */
  uint16_t codebook_fp16[16];/* [levels] fp16(CB) bits, as the decoder uses it */
} tqref_format_traits;

TQREF_C_API int tqref_format_traits_get(int format, tqref_format_traits* out);

/* ---- Number formats (docs/spec.md section 1), element-wise ----------------------------- */
enum tqref_conversion {
  TQREF_F32_TO_BF16 = 0, /* float -> uint16: nearest-even, every NaN 0x7FFF */
  TQREF_BF16_TO_F32 = 1, /* uint16 -> float: exact */
  TQREF_F32_TO_FP8 = 2,  /* float -> uint8: the writer's cvt.rn.satfinite.e4m3x2.f32 */
  TQREF_FP8_TO_F32 = 3,  /* uint8 -> float: exact */
  TQREF_F32_TO_F16 = 4,  /* float -> uint16: nearest-even */
  TQREF_F16_TO_F32 = 5   /* uint16 -> float: exact */
};
TQREF_C_API int tqref_convert(int conversion, const void* in, uint64_t n, void* out);

/* ---- One group at a time (docs/spec.md sections 2 and 4) ------------------------------- */
/* x: [n_groups*16] bf16. Outputs (each may be NULL): codes [n_groups*16], packed
 * [n_groups*group_code_bytes], scale_bytes [n_groups], steps [n_groups*6] holding
 * nsq, amax, inv, rsq, rn and the clamped scale s of each group. */
TQREF_C_API int tqref_quantize_groups(int format, const uint16_t* x, uint64_t n_groups, uint8_t* codes,
                          uint8_t* packed, uint8_t* scale_bytes, float* steps);
/* The decoder's dequant: out[g*16+k] = f32(f32(fp16(CB[code])) * fp8(scale_bytes[g])). */
TQREF_C_API int tqref_dequantize_groups(int format, const uint8_t* packed, const uint8_t* scale_bytes,
                            uint64_t n_groups, float* out);

/* ---- The writer model (docs/spec.md section 4) ----------------------------------------- */
typedef struct { /* the kernel's scalar parameters, in declaration order */
  uint32_t num_kv_heads, head_dim, block_size, key_stride, value_stride;
  uint64_t k_block_stride_bytes, v_block_stride_bytes, v_data_section_bytes;
} tqref_writer_params;

/* reshape_and_cache_flash_bf16k_turbo{2,3,4}v on host pools, in place; num_tokens =
 * slot_mapping's count. */
TQREF_C_API int tqref_reshape_and_cache(int format, const uint16_t* key, uint64_t key_elems,
                            const uint16_t* value, uint64_t value_elems, uint8_t* k_cache,
                            uint64_t k_cache_bytes, uint8_t* v_cache, uint64_t v_cache_bytes,
                            const int64_t* slot_mapping, uint64_t num_tokens,
                            const tqref_writer_params* p);

/* ---- The decode model (docs/spec.md section 5) ----------------------------------------- */
typedef struct { /* the kernel's scalar parameters in declaration order, then launch facts */
  uint32_t max_blocks_per_seq, num_q_heads, num_kv_heads, head_dim, block_size;
  float inv_sqrt_d;
  uint32_t q_stride;
  uint64_t v_block_stride_bytes, v_data_section_bytes;
  uint32_t sliding_window;
  uint32_t num_seqs;  /* grid.y */
  uint32_t hdim;      /* the build's HDIM: 128 or 256 */
  float threshold;    /* the build's TQ_PLUS_SPARSE_V_THRESHOLD */
} tqref_decode_params;

/* paged_decode_attn_bf16k_turbo{2,3,4}v in the kernel's operation order with profile `ex2`.
 * output is updated in place (rows of L == 0 sequences untouched). diag: NULL, or receives a
 * handle (free with tqref_decode_diag_free). */
TQREF_C_API int tqref_paged_decode(int format, const uint16_t* q, uint64_t q_elems, const uint8_t* k_cache,
                       uint64_t k_cache_bytes, const uint8_t* v_cache, uint64_t v_cache_bytes,
                       uint16_t* output, uint64_t output_elems, const int32_t* block_tables,
                       uint64_t block_tables_elems, const int32_t* seq_lens,
                       uint64_t seq_lens_elems, const tqref_decode_params* p,
                       const tqref_ex2* ex2, tqref_decode_diag** diag);
/* Rows are r = s*num_q_heads + qh. Each output pointer may be NULL: m, l [rows], skip_count
 * [rows], out_f32 [rows*head_dim] (o*inv before the bf16 rounding, 0 for L == 0),
 * skip_offsets [rows+1] (row r's positions start..L-1 at mask[off[r] .. off[r+1])). */
TQREF_C_API uint64_t tqref_decode_diag_rows(const tqref_decode_diag* d);
TQREF_C_API uint64_t tqref_decode_diag_mask_len(const tqref_decode_diag* d);
TQREF_C_API int tqref_decode_diag_copy(const tqref_decode_diag* d, float* m, float* l, uint32_t* skip_count,
                           float* out_f32, uint64_t* skip_offsets, uint8_t* skip_mask);
TQREF_C_API void tqref_decode_diag_free(tqref_decode_diag* d);

/* fp64 reference attention: which = 0 softmax over v_values (bf16 V rows laid out like K, the
 * writer's input), 1 over the dequantised Turbo pool (v_values ignored, may be NULL).
 * out: [num_seqs*num_q_heads*head_dim], zeros for L == 0. */
TQREF_C_API int tqref_reference_attention(int format, const uint16_t* q, uint64_t q_elems,
                              const uint8_t* k_cache, uint64_t k_cache_bytes,
                              const uint8_t* v_cache, uint64_t v_cache_bytes,
                              const uint16_t* v_values, uint64_t v_values_elems,
                              const int32_t* block_tables, uint64_t block_tables_elems,
                              const int32_t* seq_lens, uint64_t seq_lens_elems,
                              const tqref_decode_params* p, int which, double* out,
                              uint64_t out_elems);

/* ---- EX2 profiles (docs/ex2.md) --------------------------------------------------------- */
TQREF_C_API int tqref_ex2_load_arch(const char* arch, tqref_ex2** out);  /* "sm_90": the data-dir search */
TQREF_C_API int tqref_ex2_load_file(const char* path, tqref_ex2** out);
/* The profile a golden file's decode cases were generated with; *out = NULL when it names none. */
TQREF_C_API int tqref_ex2_for_golden(const tqref_file* f, tqref_ex2** out);
TQREF_C_API const char* tqref_ex2_id(const tqref_ex2* e);
TQREF_C_API const char* tqref_ex2_arch(const tqref_ex2* e);
/* out[i] = EX2(x[i]) (expf = 0) or EXPF(x[i]) (expf = 1); every x must be <= 0 or NaN. */
TQREF_C_API int tqref_ex2_eval(const tqref_ex2* e, int expf, const float* x, uint64_t n, float* out);
TQREF_C_API void tqref_ex2_free(tqref_ex2* e);

/* ---- Golden files (docs/golden-schema.md) ----------------------------------------------- */
/* A suite name (smoke, standard, real, models, ...) or a path, resolved by the data-directory
 * policy: {"name":..,"path":"" when not found,"looked_in":[..]}. */
TQREF_C_API int tqref_find_suite(const char* item, char** json);
TQREF_C_API int tqref_golden_open(const char* path, tqref_file** out);
/* {"path":..,"provenance":{..},"cases":[{"name","kind","format","kernel","hdim"},..]} */
TQREF_C_API int tqref_golden_info(const tqref_file* f, char** json);
TQREF_C_API void tqref_golden_close(tqref_file* f);
/* with_diagnostics = 0 skips the large fp64 reference datasets (level T needs them). */
TQREF_C_API int tqref_case_read(const tqref_file* f, const char* name, int with_diagnostics,
                    tqref_case** out);
TQREF_C_API void tqref_case_free(tqref_case* c);
/* Every attribute of the case as JSON (names as in the file). */
TQREF_C_API int tqref_case_attrs(const tqref_case* c, char** json);

enum tqref_dtype { TQREF_U8 = 1, TQREF_U16, TQREF_U32, TQREF_U64, TQREF_I32, TQREF_I64, TQREF_F32,
                   TQREF_F64 };
/* The case's datasets, by their names in the file ("inputs/key", "expected/v_cache", ...),
 * with the schema's encoding attribute ("bf16", "turbo3v_packed_pool", "mask" or ""):
 * the pointers stay valid until tqref_case_free. */
TQREF_C_API int tqref_case_array_count(const tqref_case* c);
TQREF_C_API int tqref_case_array(const tqref_case* c, int i, const char** name, int* dtype, int* ndim,
                     uint64_t shape[4], const void** data, const char** encoding);
/* The device buffers of one launch in the ABI's parameter order, with their bytes before the
 * launch: name ("key", "k_cache", ...), is_output (1: the kernel writes it). */
TQREF_C_API int tqref_case_launch_count(const tqref_case* c);
TQREF_C_API int tqref_case_launch_buffer(const tqref_case* c, int i, const char** name, const uint8_t** data,
                             uint64_t* bytes, int* is_output);

/* Guard bands: tqref_guard_bytes() bytes before and after every buffer, byte i of a band holds
 * the pattern tqref_guard_fill writes. */
TQREF_C_API uint64_t tqref_guard_bytes(void);
TQREF_C_API void tqref_guard_fill(uint8_t* band, uint64_t n);

/* New cases from a user's own arrays (replayable by `tqref check`): the expectation is computed
 * here by the model. Writer: k_cache/v_cache hold the pools before the launch (num_blocks from
 * their sizes). Decode: output_init NULL gives the 0xFFFF poison background; v_values (the bf16
 * V rows, laid out like K) NULL stores NaN as the unquantised fp64 reference (unknown). */
TQREF_C_API int tqref_case_make_writer(int format, const char* name, const uint16_t* key, uint64_t key_elems,
                           const uint16_t* value, uint64_t value_elems, const uint8_t* k_cache,
                           uint64_t k_cache_bytes, const uint8_t* v_cache, uint64_t v_cache_bytes,
                           const int64_t* slot_mapping, uint64_t num_tokens,
                           const tqref_writer_params* p, tqref_case** out);
TQREF_C_API int tqref_case_make_decode(int format, const char* name, const uint16_t* q, uint64_t q_elems,
                           const uint8_t* k_cache, uint64_t k_cache_bytes, const uint8_t* v_cache,
                           uint64_t v_cache_bytes, const uint16_t* output_init,
                           uint64_t output_elems, const int32_t* block_tables,
                           uint64_t block_tables_elems, const int32_t* seq_lens,
                           uint64_t seq_lens_elems, const uint16_t* v_values,
                           uint64_t v_values_elems, const tqref_decode_params* p,
                           const tqref_ex2* ex2, tqref_case** out);
/* Writes the cases to `path` (whole or not at all), provenance suite "user", the decode cases'
 * profile id. */
TQREF_C_API int tqref_golden_write(const char* path, const tqref_case* const* cases, int n,
                       const tqref_ex2* ex2, const char* command_line);

/* ---- The judge (docs/golden-schema.md, docs/gpu-harness.md) ----------------------------- */
/* Judges one launch the way `tqref check` does (golden/judge_case.h). buffers: n named buffers as
 * the kernel left them, each WITH its guard bands (size + 2 * tqref_guard_bytes() bytes), named
 * as the launch buffers; outputs are judged, inputs (optional) must come back unchanged.
 * level_t = 0: exact (level W for writers, D for decoders); 1: decode cases at level T (the case
 * must be read with diagnostics; writers stay exact). file_ex2: the profile the case's expectation
 * was made with (NULL for writer-only files). kernel_ex2: the profile of the EX2 unit the decoder
 * ran on, NULL when it is the file's (the model; a GPU of the file's architecture).
 * margin, tol_ulps, tol_row: level T's options (docs/gpu-harness.md); <= 0 takes the default.
 * JSON: {"verdict":{name,kernel,kind,pass,error,bytes_compared,bytes_differing,categories,
 * mismatches},"text":"<the CLI's lines>","level_t":{...} or null}. */
TQREF_C_API int tqref_judge(tqref_case* c, int level_t, int n, const char* const* names,
                const uint8_t* const* guarded, const uint64_t* guarded_bytes,
                const tqref_ex2* file_ex2, const tqref_ex2* kernel_ex2, double margin,
                double tol_ulps, double tol_row, char** json);

/* Level I (judge/level_i.h): the judge derives variant launches of case c (the batch reordered,
 * blocks permuted, strides padded, the launch repeated, ...) and asks `launch` to run each: it
 * gets the variant as a case (its launch buffers and attributes, as for any case) and answers
 * with every buffer the kernel left, guards included (tqref_result_put), or a failure
 * (tqref_result_fail, then a non-zero return). The kernel is compared with itself: no model, no
 * EX2 profile. JSON: {"verdict":{...},"text":"<the CLI's lines>","level_i":{name, pass,
 * sentence, diagnosis, checks:[{property, variant, pass, error, compared, differing, detail}]}}. */
typedef struct tqref_result tqref_result;
typedef int (*tqref_launch_fn)(void* user, const tqref_case* variant, tqref_result* result);
TQREF_C_API int tqref_result_put(tqref_result* r, const char* name, const uint8_t* guarded,
                                 uint64_t guarded_bytes);
TQREF_C_API int tqref_result_fail(tqref_result* r, const char* message);
TQREF_C_API int tqref_judge_level_i(const tqref_case* c, tqref_launch_fn launch, void* user,
                                    char** json);

#ifdef __cplusplus
}
#endif

#endif /* TQREF_C_H */
