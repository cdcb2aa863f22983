/* kiln/plugin.h - the C ABI between the kiln core (the host) and a backend plugin.
 *
 * A plugin is a shared library exporting exactly one symbol, kiln_plugin_entry. Everything else
 * crosses as C function-pointer tables defined here. No C++ type, exception or allocation ever
 * crosses the boundary.
 *
 * Rules (normative):
 *  - Versioning. KILN_ABI_MAJOR/MINOR describe this header. While MAJOR is 0 the host requires an
 *    exact MAJOR.MINOR match. Every table and parameter pack starts with `size_t struct_size`;
 *    slots are only ever appended. A reader never touches a field beyond the struct_size it was
 *    given (use KILN_HAS); a NULL slot means "not supported".
 *  - Errors. A fallible slot returns kiln_error* (NULL = success). Plugins create errors only with
 *    host->error_new(code, message, length); the host owns and frees them. Slots that cannot fail
 *    return void and report problems through host->log.
 *  - Ownership. Inputs (strings, arrays, parameter packs) are borrowed for the duration of the
 *    call. Strings a plugin returns inside props/target structs are owned by the object that
 *    returned them and stay valid until it is destroyed. Variable-size outputs (source, binaries,
 *    logs, reasons) are written into host-owned sinks (kiln_sink). Plugin objects (devices,
 *    buffers, programs) are created and destroyed only by the plugin, through the table that
 *    created them; the host destroys programs and buffers before closing their device, and closes
 *    devices before shutdown.
 *  - Threading. entry, probe (or probe_with_options) and initialize run once, on one thread, at
 *    start-up. Calls on one device are serialised by the host unless the device reports
 *    KILN_DEVICE_THREADSAFE. Different devices may be used from different threads.
 *    host->error_new and host->log are thread-safe.
 *  - Output discipline. Plugins never write to stdout or stderr; they log through host->log.
 *  - Lifetime. The host never unloads a plugin library.
 *
 * This header compiles as C99 (-pedantic) and as C++.
 */
#ifndef KILN_PLUGIN_H
#define KILN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/lir.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_MAJOR 0u
#define KILN_ABI_MINOR 2u
#define KILN_ENTRY_SYMBOL "kiln_plugin_entry"

#if defined(_WIN32)
#define KILN_EXPORT __declspec(dllexport)
#else
#define KILN_EXPORT __attribute__((visibility("default")))
#endif

/* Size of a struct up to and including `field`; whether `p` (with a struct_size) has `field`. */
#define KILN_SIZE_UPTO(T, field) (offsetof(T, field) + sizeof(((T*)0)->field))
#define KILN_HAS(p, T, field) ((p)->struct_size >= KILN_SIZE_UPTO(T, field))

/* ---- status codes: 0..16 are the canonical codes (PJRT/absl numbering) ---- */
typedef int32_t kiln_status;
#define KILN_STATUS_OK 0
#define KILN_STATUS_CANCELLED 1
#define KILN_STATUS_UNKNOWN 2
#define KILN_STATUS_INVALID_ARGUMENT 3   /* bad input, including a source that fails to compile */
#define KILN_STATUS_DEADLINE_EXCEEDED 4
#define KILN_STATUS_NOT_FOUND 5
#define KILN_STATUS_ALREADY_EXISTS 6
#define KILN_STATUS_PERMISSION_DENIED 7
#define KILN_STATUS_RESOURCE_EXHAUSTED 8 /* out of memory, too many threads, ... */
#define KILN_STATUS_FAILED_PRECONDITION 9
#define KILN_STATUS_ABORTED 10
#define KILN_STATUS_OUT_OF_RANGE 11
#define KILN_STATUS_UNIMPLEMENTED 12     /* a slot or feature this plugin does not offer */
#define KILN_STATUS_INTERNAL 13
#define KILN_STATUS_UNAVAILABLE 14       /* the device or its runtime is not usable here */
#define KILN_STATUS_DATA_LOSS 15
#define KILN_STATUS_UNAUTHENTICATED 16
#define KILN_STATUS_INCOMPATIBLE_ABI 17  /* the plugin cannot serve the host's ABI major */

/* log levels for host->log */
#define KILN_LOG_ERROR 0
#define KILN_LOG_WARNING 1
#define KILN_LOG_INFO 2
#define KILN_LOG_DEBUG 3

typedef struct kiln_error kiln_error;     /* opaque; created and freed by the host */
typedef struct kiln_device kiln_device;   /* opaque; plugin-owned */
typedef struct kiln_buffer kiln_buffer;   /* opaque; plugin-owned */
typedef struct kiln_program kiln_program; /* opaque; plugin-owned */

/* A host-owned output stream. `append` copies n bytes; it returns KILN_STATUS_OK or
 * KILN_STATUS_RESOURCE_EXHAUSTED. A plugin may call it any number of times during the one call it
 * was passed to, and never afterwards. */
typedef struct kiln_sink {
  void* ctx;
  kiln_status (*append)(void* ctx, const void* data, size_t n);
} kiln_sink;

/* ---- host services: what the core offers every plugin ---- */
typedef struct kiln_host_api {
  size_t struct_size;
  uint32_t abi_major, abi_minor;
  /* A new error with a copy of `message` (UTF-8, `length` bytes, need not be NUL-terminated). */
  kiln_error* (*error_new)(kiln_status code, const char* message, size_t length);
  /* Logs one message at a KILN_LOG_* level (the host decides whether it is shown). */
  void (*log)(int32_t level, const char* message, size_t length);
} kiln_host_api;

/* ---- the entry point: the only exported symbol; this struct's layout never changes ---- */
typedef struct kiln_entry_args {
  size_t struct_size;                   /* in: sizeof(kiln_entry_args) as the host knows it */
  uint32_t host_abi_major;              /* in */
  uint32_t host_abi_minor;              /* in */
  const kiln_host_api* host;            /* in: valid for the life of the process */
  const struct kiln_plugin_api* plugin; /* out: set even when the ABI does not match */
} kiln_entry_args;

/* Returns KILN_STATUS_OK, or KILN_STATUS_INCOMPATIBLE_ABI when it cannot serve the host's major
 * (still filling args->plugin so the host can report the plugin's ABI). */
typedef kiln_status (*kiln_plugin_entry_fn)(kiln_entry_args* args);
KILN_EXPORT kiln_status kiln_plugin_entry(kiln_entry_args* args);

/* ---- devices: properties and target capabilities ---- */
#define KILN_DEVICE_KIND_CPU 0u
#define KILN_DEVICE_KIND_GPU 1u
#define KILN_DEVICE_KIND_ACCELERATOR 2u

#define KILN_DEVICE_THREADSAFE (1u << 0) /* calls on this device may come from several threads */
#define KILN_DEVICE_PEER_BUFFERS (1u << 1) /* its kernels may take buffers of this plugin's other devices
                                             that set it too (one address space, e.g. cpu devices) */

/* Filled by the plugin into a host-allocated struct; the plugin writes only fields within
 * struct_size. Strings stay valid until the device is closed. */
typedef struct kiln_device_props {
  size_t struct_size;
  const char* name;          /* "AMD EPYC 9B45", "gfx1100", ... */
  const char* description;   /* one line for `kiln devices` */
  const char* arch;          /* "x86_64", "gfx1100", "pthread-skylake-avx512" */
  const char* features;      /* space-separated ISA or extension names ("avx2 avx512f", "cl_khr_fp16") */
  uint32_t kind;             /* KILN_DEVICE_KIND_* */
  uint32_t flags;            /* KILN_DEVICE_* */
  uint64_t memory_total;     /* bytes, 0 if unknown */
  uint64_t memory_free;      /* bytes, 0 if unknown */
  uint32_t compute_units;    /* cores, CUs */
  uint32_t reserved;
} kiln_device_props;

/* Target capability flags. */
#define KILN_TARGET_HAS_LOCAL (1u << 0)    /* a local (workgroup) index space: local sizes matter */
#define KILN_TARGET_HAS_SHARED (1u << 1)   /* workgroup-shared memory (DEFINE_LOCAL) and barriers */
#define KILN_TARGET_HAS_THREADS (1u << 2)  /* CPU-style: global[0] work items run on `threads` threads */
#define KILN_TARGET_HAS_FMA (1u << 3)
#define KILN_TARGET_HAS_MASKED_VECTORS (1u << 4) /* vector LOAD/STORE with a vector gate (one bool per lane;
                                                   without it the core splits such accesses into lanes) */
#define KILN_TARGET_VECTOR_MEMORY_ONLY (1u << 5) /* vectors (up to max_vector_width lanes) only in LOAD/STORE of
                                                   4-byte scalars at an index the core proves a multiple of
                                                   the lane count, and the VECTORIZE/GEP that build and take
                                                   them apart; every other vector op is split into lanes
                                                   (CUDA's float4: 16-byte loads, no vector arithmetic) */

/* What the core's code generator may emit for this device: it decomposes every LIR op and dtype
 * missing here before the renderer sees the kernel. Filled by the plugin, host-allocated. */
typedef struct kiln_target {
  size_t struct_size;
  uint32_t flags;             /* KILN_TARGET_* */
  uint32_t threads;           /* parallel workers for HAS_THREADS targets */
  uint32_t global_max[3];     /* largest global size per dimension */
  uint32_t local_max[3];      /* largest local size per dimension (1s without HAS_LOCAL) */
  uint32_t local_prod_max;    /* largest product of local sizes */
  uint32_t max_vector_width;  /* widest vector (in lanes) the renderer emits; 1 = scalar only */
  uint64_t shared_max;        /* bytes of workgroup-shared memory */
  uint32_t dtypes;            /* bitmap over KILN_LIR_DTYPE_* scalars the device computes in */
  uint32_t reserved;
  uint64_t ops[2];            /* bitmap over KILN_LIR_OP_* the renderer supports (bit op%64 of word op/64) */
  const char* source_format;  /* what render() produces: "c", "opencl-c", "hip", ... */
  /* (optional: 0 = unknown, as in an older plugin's smaller struct_size) The data caches one
   * worker of a HAS_THREADS target runs in, in bytes: its core's L1d and L2. The heuristics size
   * staged panels by them (without them they assume 32 KiB and 1 MiB). */
  uint64_t l1d_bytes;
  uint64_t l2_bytes;
  /* (optional: 0 = unknown, as in an older plugin's smaller struct_size) The vector unit one
   * worker of a HAS_THREADS target computes with: its architectural vector registers (x86-64: 16,
   * with AVX-512: 32) and the full-width (max_vector_width) vector multiply-adds it starts per
   * cycle (its FMA pipes: 2 on AVX2 and AVX-512 cores; 1 where a multiply and an add pair up, SSE,
   * and on a core that takes a full-width one in two passes, Zen 4's AVX-512). The heuristics size register
   * tiles by them (without them they assume 32 registers where max_vector_width >= 16, else 16,
   * and 2 FMA pipes where max_vector_width >= 8, else 1). */
  uint32_t vector_registers;
  uint32_t fma_pipes;
  /* (optional: 0 = none, as in an older plugin's smaller struct_size) A bitmap over
   * KILN_LIR_DTYPE_* scalars (float16, bfloat16) that the renderer loads and stores and converts
   * to and from float32 (CAST, exactly: round to nearest even, NaN, infinities and subnormals
   * kept), without computing in them. For such a dtype outside `dtypes` the core computes in
   * float32 and emits LOAD/STORE/CAST (and pointers) of the dtype itself instead of emulating it
   * with 16-bit integers (the cpu with F16C: vcvtph2ps/vcvtps2ph). */
  uint32_t storage_dtypes;
  uint32_t reserved2;
} kiln_target;

/* ---- allocator ---- */
#define KILN_ALLOC_ZERO (1u << 0)     /* the memory starts zeroed */
#define KILN_ALLOC_HOST (1u << 1)     /* host-visible memory if the device distinguishes */

typedef struct kiln_alloc_params {
  size_t struct_size;
  uint32_t flags;            /* KILN_ALLOC_* */
  uint32_t reserved;
} kiln_alloc_params;

typedef struct kiln_allocator_api {
  size_t struct_size;
  /* `size` bytes (size 0 is valid and yields a distinct buffer); params may be NULL. Out of
   * memory is KILN_STATUS_RESOURCE_EXHAUSTED. */
  kiln_error* (*alloc)(kiln_device* dev, uint64_t size, const kiln_alloc_params* params, kiln_buffer** out_buffer);
  void (*free)(kiln_device* dev, kiln_buffer* buffer);
  /* Host -> device: n bytes from `src` to `dst` at byte `offset`. */
  kiln_error* (*copy_in)(kiln_device* dev, kiln_buffer* dst, uint64_t offset, const void* src, uint64_t n);
  /* Device -> host: n bytes from `src` at byte `offset` to `dst`. Completes before returning. */
  kiln_error* (*copy_out)(kiln_device* dev, void* dst, const kiln_buffer* src, uint64_t offset, uint64_t n);
  /* (optional) device -> device within this device. */
  kiln_error* (*copy)(kiln_device* dev, kiln_buffer* dst, uint64_t dst_offset, const kiln_buffer* src,
                      uint64_t src_offset, uint64_t n);
  /* (optional: NULL, or absent from an older plugin's smaller struct_size; ABI 0.2) Copies n bytes
   * from `src` at src_offset, a buffer of `src_dev` — another device opened from this same plugin
   * — to `dst` at dst_offset on `dev`, without staging through the host. Complete before any later
   * use of either buffer on either device. The host calls it on the destination's table. */
  kiln_error* (*copy_peer)(kiln_device* dev, kiln_buffer* dst, uint64_t dst_offset, kiln_device* src_dev,
                           const kiln_buffer* src, uint64_t src_offset, uint64_t n);
  /* (optional: NULL, or absent from an older plugin's smaller struct_size) Only for devices whose
   * buffers are ordinary host memory (a CPU); both or neither. They let the host hand memory to
   * other libraries and take theirs without a copy (DLPack).
   * host_address: the address of `buffer`'s first byte, valid until the buffer is freed. The host
   * reads and writes through it only while no launch on the device uses the buffer.
   * wrap_host: a buffer over `size` bytes at `address`, memory the host owns and keeps alive until
   * it frees the buffer: kernels read and write it in place; free() releases the handle, never the
   * memory. An address the device's kernels cannot use (its alignment: the cpu plugin's kernels
   * assume 64 bytes) is KILN_STATUS_INVALID_ARGUMENT naming the alignment; the host then copies. */
  kiln_error* (*host_address)(kiln_device* dev, const kiln_buffer* buffer, void** out_address);
  kiln_error* (*wrap_host)(kiln_device* dev, void* address, uint64_t size, kiln_buffer** out_buffer);
} kiln_allocator_api;

/* ---- compiler: source -> binary ---- */
typedef struct kiln_compile_params {
  size_t struct_size;
  const char* source;        /* in the target's source_format */
  size_t source_length;
  const char* entry;         /* the kernel's function name */
  const char* options;       /* extra compiler options (may be NULL) */
} kiln_compile_params;

typedef struct kiln_compiler_api {
  size_t struct_size;
  /* A string that changes whenever the same source could compile differently (compiler version,
   * flags, target features). Keys the host's compile cache. */
  kiln_error* (*cache_key)(kiln_device* dev, kiln_sink* out_key);
  /* Compiles; the binary goes to `out_binary`. On a compile error: KILN_STATUS_INVALID_ARGUMENT
   * with the full compiler log in the message (and also in `out_log` if given). */
  kiln_error* (*compile)(kiln_device* dev, const kiln_compile_params* params, kiln_sink* out_binary, kiln_sink* out_log);
  /* (optional: NULL, or absent from an older plugin's smaller struct_size) Compiles n >= 1
   * kernels, each a complete source with its own entry (the entries are distinct), into ONE binary
   * that load() accepts with any of those entries. For drivers with a large fixed cost per build
   * (PoCL: ~150 ms, whatever the kernel): the host passes every kernel a schedule needs at once.
   * Errors as compile(); the host then compiles the kernels one by one to name the failing one. */
  kiln_error* (*compile_many)(kiln_device* dev, const kiln_compile_params* const* params, uint32_t n,
                              kiln_sink* out_binary, kiln_sink* out_log);
} kiln_compiler_api;

/* ---- runtime: binaries -> programs -> launches ---- */
#define KILN_LAUNCH_WAIT (1u << 0)   /* return only when the kernel finished; fill out_elapsed_s */

typedef struct kiln_launch_params {
  size_t struct_size;
  kiln_buffer* const* buffers;     /* the kernel's buffer parameters, in slot order */
  const uint64_t* offsets;         /* byte offset into each buffer (may be NULL: all 0) */
  uint32_t n_buffers;
  uint32_t n_values;
  const int64_t* values;           /* the kernel's integer variables, in slot order */
  uint32_t global[3];              /* number of workgroups per dimension (the grid) */
  uint32_t local[3];               /* work items per workgroup; all 1 for targets without HAS_LOCAL,
                                      so a CPU runs global[0]*global[1]*global[2] work items */
  uint32_t flags;                  /* KILN_LAUNCH_* */
  uint32_t reserved;
  double* out_elapsed_s;           /* with KILN_LAUNCH_WAIT: kernel time in seconds (may be NULL) */
} kiln_launch_params;

typedef struct kiln_runtime_api {
  size_t struct_size;
  /* Loads a binary from this device's compiler; `entry` names the kernel. */
  kiln_error* (*load)(kiln_device* dev, const void* binary, size_t length, const char* entry, kiln_program** out_program);
  /* Runs a program. Argument counts that do not match the kernel are KILN_STATUS_INVALID_ARGUMENT. */
  kiln_error* (*launch)(kiln_device* dev, kiln_program* program, const kiln_launch_params* params);
  void (*unload)(kiln_device* dev, kiln_program* program);
  /* (optional: NULL, or absent from an older plugin's smaller struct_size; ABI 0.2) Runs n >= 1
   * launches in order, with the effect of calling launch() for each in turn: programs[i] with
   * *params[i] (each checked as launch() checks it). None waits: KILN_LAUNCH_WAIT is ignored and
   * out_elapsed_s is not written. For a captured plan's consecutive kernels (kiln::Jit replays):
   * a device may submit them together (OpenCL: enqueue all, one flush; a CPU: no sleep between
   * dependent kernels). On an error, the launches before the failing one were submitted and the
   * message names the failing kernel. */
  kiln_error* (*launch_many)(kiln_device* dev, kiln_program* const* programs, const kiln_launch_params* const* params,
                             uint32_t n);
} kiln_runtime_api;

/* ---- renderer: LIR -> source text ---- */
typedef struct kiln_renderer_api {
  size_t struct_size;
  /* Renders the kernel to the target's source_format into out_source. An op or dtype it cannot
   * render is KILN_STATUS_UNIMPLEMENTED (the host decomposes what kiln_target says is missing). */
  kiln_error* (*render)(kiln_device* dev, const kiln_lir* kernel, kiln_sink* out_source);
} kiln_renderer_api;

/* ---- the device table ---- */
typedef struct kiln_device_api {
  size_t struct_size;
  kiln_error* (*get_props)(kiln_device* dev, kiln_device_props* out_props);
  kiln_error* (*get_target)(kiln_device* dev, kiln_target* out_target);
  const kiln_allocator_api* allocator;
  const kiln_compiler_api* compiler;
  const kiln_runtime_api* runtime;
  const kiln_renderer_api* renderer;   /* (optional) */
  /* Waits for all work submitted to the device. */
  kiln_error* (*synchronize)(kiln_device* dev);
  void (*close)(kiln_device* dev);
} kiln_device_api;

/* ---- the plugin table ---- */
typedef struct kiln_plugin_api {
  size_t struct_size;
  uint32_t abi_major, abi_minor;   /* the ABI this plugin was built for */
  const char* name;                /* matches the manifest's backend.name */
  const char* version;             /* the plugin's own version (semver) */
  /* Cheap check that the backend can work here: no contexts, no device memory. Writes a score
   * (0 = unusable) and a one-line reason ("2 OpenCL devices", "libamdhip64.so.5 not found"). */
  kiln_error* (*probe)(int32_t* out_score, kiln_sink* out_reason);
  /* Once, after a successful probe: `options_toml` is the [backend.options] table (manifest
   * merged with user config) as TOML text. */
  kiln_error* (*initialize)(const char* options_toml, size_t length);
  kiln_error* (*device_count)(uint32_t* out_count);
  kiln_error* (*device_open)(uint32_t index, kiln_device** out_device, const kiln_device_api** out_api);
  /* (optional) release global state; no device may be open. */
  void (*shutdown)(void);
  /* (optional: NULL, or absent from an older plugin's smaller struct_size) The probe, given the
   * options initialize will receive (the same TOML text): for a backend whose usability depends
   * on its options, such as offline compile targets named by an option. When present the host
   * calls it instead of probe. An INVALID_ARGUMENT error means the options are wrong (the host
   * reports it like a rejection by initialize); any other error, like probe's. */
  kiln_error* (*probe_with_options)(const char* options_toml, size_t length, int32_t* out_score,
                                    kiln_sink* out_reason);
} kiln_plugin_api;

#ifdef __cplusplus
}
#endif

#endif /* KILN_PLUGIN_H */
