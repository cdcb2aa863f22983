// kiln/sdk/cstyle.hpp - the C-family renderer: LIR to C-like source, specialised by dialect hooks.
//
// CStyleRenderer walks the instructions once. Loops become `for` statements, every value an
// assignment to a local (v12), indices stay inline pointer expressions, constants inline
// literals. What differs between C, OpenCL C, HIP and friends is behind the virtual hooks below:
// type names, vector types and constructors, literal spellings, the kernel signature, buffer and
// local-memory qualifiers, launch indices, barriers, math functions, vector loads/stores, and how
// comparisons of vectors are typed. Link the static library `kiln::sdk_cstyle` (the in-tree
// plugins compile it in) and subclass.
//
// render() throws kiln::sdk::Error(KILN_STATUS_UNIMPLEMENTED) for an op or type the dialect has
// no spelling for; the core decomposes what the target says it lacks, so that means a target
// that over-promised.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/sdk/lir.hpp"

namespace kiln::sdk {

struct CParam {
  std::string name;        // data0, or a variable's name
  kiln_lir_type type;      // pointer type for buffers
  bool is_buffer;
  uint32_t slot;           // buffer slot or variable slot
};

class CStyleRenderer {
 public:
  virtual ~CStyleRenderer() = default;
  std::string render(const kiln_lir& kernel);
  // The LIR ops render() spells for every dialect by itself (defined next to its switch, so an op
  // it learns joins every C-family dialect). A dialect's allow-list starts here and adds the math
  // functions its math() spells and, with workgroups, DEFINE_LOCAL and BARRIER.
  static LirOpSet generic_ops();

 protected:
  // ---- types ----
  // Scalar type name ("float", "unsigned int", "_Bool"); count is always 1 here.
  virtual std::string scalar_name(uint8_t scalar) const = 0;
  // Vector type name ("floatx8"); the renderer records which were used (see vector_typedefs).
  virtual std::string vector_name(uint8_t scalar, int count) const;
  // Any value type; bool vectors use the lane type comparisons produce (int lanes by default).
  std::string type_name(const kiln_lir_type& t) const;
  // Declarations the vector types used need (typedefs in C); "" if built in.
  virtual std::string vector_typedefs(const std::set<std::pair<uint8_t, int>>& used) const;
  // The lane scalar a bool vector is stored as.
  virtual uint8_t bool_vector_lane() const { return KILN_LIR_DTYPE_INT32; }

  // ---- values ----
  virtual std::string literal(uint8_t scalar, const kiln_lir_inst& in, double f) const;
  virtual std::string vector_splat(const std::string& vtype, const std::string& scalar) const;  // "(floatx8)(x)"
  virtual std::string vector_make(const std::string& vtype, const std::vector<std::string>& lanes) const;  // "(floatx8){a,b}"
  virtual std::string lane(const std::string& vec, int64_t i) const;  // "x[3]"
  virtual std::string cast(const std::string& x, const kiln_lir_type& from, const kiln_lir_type& to) const;
  virtual std::string bitcast(const std::string& x, const kiln_lir_type& from, const kiln_lir_type& to) const;
  // A comparison; for vectors the result must be a bool vector (lanes of bool_vector_lane()).
  virtual std::string compare(const char* op, const std::string& a, const std::string& b, const kiln_lir_type& operand,
                              const kiln_lir_type& result) const;
  // "(a op b)" for compare: a bool vector's < is b < a, its lanes being -1 for true (false < true
  // is 0 > -1).
  static std::string ordered(const char* op, const std::string& a, const std::string& b, const kiln_lir_type& operand);
  // NaN-propagating for floats.
  virtual std::string max(const std::string& a, const std::string& b, const kiln_lir_type& t) const;
  virtual std::string where(const std::string& c, const std::string& a, const std::string& b, const kiln_lir_type& t) const;
  // SQRT, EXP2, LOG2, SIN, TRUNC, POW (KILN_LIR_OP_*) of arguments of type t.
  virtual std::string math(uint32_t op, const std::vector<std::string>& args, const kiln_lir_type& t) const = 0;

  // ---- memory ----
  virtual std::string load(const std::string& addr, const kiln_lir_type& ptr) const;           // *(addr)
  virtual std::string store(const std::string& addr, const std::string& value, const kiln_lir_type& ptr) const;
  virtual std::string local_array(const std::string& name, const kiln_lir_type& ptr) const;   // DEFINE_LOCAL
  virtual std::string reg_array(const std::string& name, const kiln_lir_type& ptr) const;     // DEFINE_REG
  virtual std::string barrier() const { return ""; }

  // ---- the kernel ----
  // The launch index expression for "gidx0".."lidx2" (or the parameter name the signature gives it).
  virtual std::string special(std::string_view name) const = 0;
  // The whole source: prologue, signature, parameter unpacking, then `body` (already indented).
  virtual std::string kernel(std::string_view name, const std::vector<CParam>& params, const std::string& typedefs,
                             const std::string& body) const = 0;
  virtual std::string index_type() const { return "int"; }

  // helpers for dialects
  static std::string c_literal_float(double f, bool is_f32);
  // The C spelling of the integer and float32/float64 types ("unsigned short", "long long");
  // nullptr for bool and the 16-bit floats, whose spelling differs between C dialects.
  static const char* c_scalar_name(uint8_t scalar);
  [[noreturn]] static void unsupported(const std::string& what);
  // The index of the instruction render() is spelling, for hooks that look at its uses.
  uint32_t rendering() const { return rendering_; }

 private:
  mutable std::set<std::pair<uint8_t, int>> used_vectors_;
  uint32_t rendering_ = 0;
};

}  // namespace kiln::sdk
