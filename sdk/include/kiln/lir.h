/* kiln/lir.h - LIR, the linearized kernel as it crosses the plugin ABI.
 *
 * A kernel is a flat array of instructions in program order. Each instruction names its sources
 * by index into the instruction array (always earlier instructions), through the `srcs` pool.
 * Integer lists live in the `ints` pool and strings in the `strings` pool. Op and dtype numbers
 * are stable: new ones are only appended, and KILN_LIR_VERSION changes when an op's meaning does.
 * Only kernel-level ops appear: the core has already lowered, decomposed and linearized
 * everything, so a renderer walks the array once and emits one statement or expression per
 * instruction. Control flow is structured: RANGE ... END and IF ... ENDIF nest properly.
 *
 * The text form (used by goldens and KILN_DEBUG=5) prints one instruction per line:
 *   %4 = ADD int32 (%2, %3)
 */
#ifndef KILN_LIR_H
#define KILN_LIR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_LIR_VERSION 1u

/* ---- scalar dtypes ---- */
#define KILN_LIR_DTYPE_VOID 0u
#define KILN_LIR_DTYPE_BOOL 1u
#define KILN_LIR_DTYPE_INT8 2u
#define KILN_LIR_DTYPE_INT16 3u
#define KILN_LIR_DTYPE_INT32 4u
#define KILN_LIR_DTYPE_INT64 5u
#define KILN_LIR_DTYPE_UINT8 6u
#define KILN_LIR_DTYPE_UINT16 7u
#define KILN_LIR_DTYPE_UINT32 8u
#define KILN_LIR_DTYPE_UINT64 9u
#define KILN_LIR_DTYPE_FLOAT16 10u
#define KILN_LIR_DTYPE_BFLOAT16 11u
#define KILN_LIR_DTYPE_FLOAT32 12u
#define KILN_LIR_DTYPE_FLOAT64 13u
#define KILN_LIR_DTYPE_COUNT 14u

/* ---- address spaces ---- */
#define KILN_LIR_ADDR_NONE 0u    /* a value, not a pointer */
#define KILN_LIR_ADDR_GLOBAL 1u  /* device memory (buffer parameters) */
#define KILN_LIR_ADDR_LOCAL 2u   /* workgroup-shared memory */
#define KILN_LIR_ADDR_REG 3u     /* per-thread registers (accumulators) */

/* A value or pointer type: `count` lanes of `scalar`; for pointers (addrspace != NONE) the
 * element type it points to and `size` elements behind it (-1 unknown). */
typedef struct kiln_lir_type {
  uint8_t scalar;    /* KILN_LIR_DTYPE_* */
  uint8_t addrspace; /* KILN_LIR_ADDR_* */
  uint16_t count;    /* vector lanes, >= 1 */
  int32_t size;      /* pointers: element count, -1 unknown; values: 0 */
} kiln_lir_type;

/* ---- ops (stable numbers) ---- */
/* parameters and indices */
#define KILN_LIR_OP_PARAM 1u        /* buffer parameter: pointer type; arg INT = buffer slot */
#define KILN_LIR_OP_VAR 2u          /* integer variable parameter: arg STRING = name; its slot is the
                                       order of VAR instructions (values[0], values[1], ...) */
#define KILN_LIR_OP_SPECIAL 3u      /* launch index: arg STRING = "gidx0".."gidx2" (workgroup index),
                                       "lidx0".."lidx2" (index within the workgroup); src (extent) */
/* control flow */
#define KILN_LIR_OP_RANGE 4u        /* loop index 0..src[0]-1: arg INT = axis id; closed by END */
#define KILN_LIR_OP_END 5u          /* closes the RANGE in src[0] */
#define KILN_LIR_OP_IF 6u           /* opens a block executed when src[0] is true; closed by ENDIF */
#define KILN_LIR_OP_ENDIF 7u        /* closes the IF in src[0] */
#define KILN_LIR_OP_BARRIER 8u      /* workgroup barrier (local memory fence) */
/* memory */
#define KILN_LIR_OP_DEFINE_LOCAL 9u /* workgroup-shared array: pointer type (LOCAL, size); arg INT = id */
#define KILN_LIR_OP_DEFINE_REG 10u  /* per-thread array: pointer type (REG, size); arg INT = id */
#define KILN_LIR_OP_INDEX 11u       /* src (pointer, element index): the address of one element */
#define KILN_LIR_OP_LOAD 12u        /* src (address[, alternative, gate]): value at address, or
                                       `alternative` when `gate` is false (the address is not read) */
#define KILN_LIR_OP_STORE 13u       /* src (address, value[, gate]): stores unless gate is false */
/* values */
#define KILN_LIR_OP_CONST 14u       /* arg INT, FLOAT or BOOL; a vector type means every lane */
#define KILN_LIR_OP_VECTORIZE 15u   /* builds a vector from its scalar sources */
#define KILN_LIR_OP_GEP 16u         /* arg INTS = lanes of src[0] (one lane: a scalar) */
#define KILN_LIR_OP_CAST 17u        /* value conversion (C semantics) */
#define KILN_LIR_OP_BITCAST 18u     /* bit reinterpretation (same size) */
/* ALU, elementwise over lanes; C semantics (see the core's ir/alu.hpp) */
#define KILN_LIR_OP_NEG 19u
#define KILN_LIR_OP_EXP2 20u
#define KILN_LIR_OP_LOG2 21u
#define KILN_LIR_OP_SIN 22u
#define KILN_LIR_OP_SQRT 23u
#define KILN_LIR_OP_RECIPROCAL 24u
#define KILN_LIR_OP_TRUNC 25u
#define KILN_LIR_OP_ADD 26u
#define KILN_LIR_OP_SUB 27u
#define KILN_LIR_OP_MUL 28u
#define KILN_LIR_OP_IDIV 29u        /* truncating integer division */
#define KILN_LIR_OP_MOD 30u         /* remainder with the dividend's sign */
#define KILN_LIR_OP_FDIV 31u
#define KILN_LIR_OP_MAX 32u         /* NaN-propagating for floats */
#define KILN_LIR_OP_POW 33u
#define KILN_LIR_OP_SHL 34u
#define KILN_LIR_OP_SHR 35u
#define KILN_LIR_OP_AND 36u
#define KILN_LIR_OP_OR 37u
#define KILN_LIR_OP_XOR 38u
#define KILN_LIR_OP_CMPLT 39u
#define KILN_LIR_OP_CMPNE 40u
#define KILN_LIR_OP_CMPEQ 41u
#define KILN_LIR_OP_WHERE 42u       /* src (cond, a, b) */
#define KILN_LIR_OP_MULACC 43u      /* src (a, b, c): a*b+c */
/* escape hatches */
#define KILN_LIR_OP_CUSTOM 44u      /* a statement: arg STRING with {0}, {1} for the sources */
#define KILN_LIR_OP_CUSTOMI 45u     /* an inline expression: arg STRING with {0}, {1} */
/* hints */
#define KILN_LIR_OP_PREFETCH 46u    /* src (address): fetch it into the cache soon; no value, never faults
                                       on an address the kernel could not read (a renderer may drop it) */
/* pairwise dot products (AVX512-BF16's vdpbf16ps): src (a, b, c), a and b 2n-lane uint16 vectors
   holding bfloat16 bits, c and the value n-lane float32: c[i] + a[2i]*b[2i] + a[2i+1]*b[2i+1]
   (each product exact; a renderer may flush subnormal inputs and results to zero, as the
   instruction does) */
#define KILN_LIR_OP_DOT2 47u
#define KILN_LIR_OP_COUNT 48u
/* Every op above in number order, X(NAME) for KILN_LIR_OP_NAME: for tables of names and enums
 * (the SDK's kiln::sdk::LirOp, the core's LIR text form, the CLI). A new op is appended to both;
 * the SDK fails to compile until they agree. */
#define KILN_LIR_OPS(X)                                                                                       \
  X(PARAM) X(VAR) X(SPECIAL) X(RANGE) X(END) X(IF) X(ENDIF) X(BARRIER) X(DEFINE_LOCAL) X(DEFINE_REG) X(INDEX) \
  X(LOAD) X(STORE) X(CONST) X(VECTORIZE) X(GEP) X(CAST) X(BITCAST) X(NEG) X(EXP2) X(LOG2) X(SIN) X(SQRT)      \
  X(RECIPROCAL) X(TRUNC) X(ADD) X(SUB) X(MUL) X(IDIV) X(MOD) X(FDIV) X(MAX) X(POW) X(SHL) X(SHR) X(AND) X(OR)  \
  X(XOR) X(CMPLT) X(CMPNE) X(CMPEQ) X(WHERE) X(MULACC) X(CUSTOM) X(CUSTOMI) X(PREFETCH) X(DOT2)

/* ---- instruction arguments ---- */
#define KILN_LIR_ARG_NONE 0u
#define KILN_LIR_ARG_INT 1u     /* arg = the value */
#define KILN_LIR_ARG_FLOAT 2u   /* arg = the IEEE-754 double's bits */
#define KILN_LIR_ARG_BOOL 3u    /* arg = 0 or 1 */
#define KILN_LIR_ARG_STRING 4u  /* arg = offset into strings, arg_length = bytes (no NUL) */
#define KILN_LIR_ARG_INTS 5u    /* arg = offset into ints, arg_length = count */

typedef struct kiln_lir_inst {
  uint16_t op;          /* KILN_LIR_OP_* */
  uint16_t arg_kind;    /* KILN_LIR_ARG_* */
  uint32_t n_src;
  uint32_t first_src;   /* sources are srcs[first_src .. first_src + n_src) */
  kiln_lir_type type;
  int64_t arg;
  int64_t arg_length;
} kiln_lir_inst;

typedef struct kiln_lir {
  size_t struct_size;
  uint32_t version;              /* KILN_LIR_VERSION of the producer */
  uint32_t n_insts;
  const kiln_lir_inst* insts;
  const uint32_t* srcs;          /* instruction indices */
  uint32_t n_srcs;
  uint32_t n_ints;
  const int64_t* ints;
  const char* strings;
  uint64_t strings_length;
  const char* name;              /* the kernel's function name (NUL-terminated, a C identifier) */
  uint32_t n_buffers;            /* PARAM slots: 0 .. n_buffers-1 */
  uint32_t n_vars;               /* VAR slots: 0 .. n_vars-1 */
  uint32_t global[3];            /* launch sizes the host will use (informational) */
  uint32_t local[3];
} kiln_lir;

#ifdef __cplusplus
}
#endif

#endif /* KILN_LIR_H */
