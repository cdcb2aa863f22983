// frontends/python/src/bind_dist.cpp - kiln._kiln.dist, the bindings of kiln/dist.hpp (DESIGN
// §5.5) that the pure Python kiln.dist wraps: init, initialized, rank, world_size, barrier,
// finalize, all_reduce, broadcast, all_reduce_grads, ReduceOp, and the additions (set_timeout,
// timeout, describe, set_sharding_spans_ranks, set_bucket_bytes, set_overlap). Only in a build with the library kiln::dist
// (KILN_HAVE_DIST, set by frontends/python/CMakeLists.txt when MPI was found); otherwise
// `import kiln.dist` raises ImportError. The GIL is released in every call that waits for other
// ranks (mpi4py is not needed, and another Python thread keeps running meanwhile).
#include "common.hpp"

#ifdef KILN_HAVE_DIST
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "kiln/dist.hpp"

namespace kiln_py {

void bind_dist(nb::module_& m) {
  namespace kd = kiln::dist;
  nb::module_ d = m.def_submodule("dist", "kiln::dist: collectives across processes over MPI (kiln.dist wraps this)");
  nb::enum_<kd::ReduceOp>(d, "ReduceOp")
      .value("Sum", kd::ReduceOp::Sum)
      .value("Max", kd::ReduceOp::Max)
      .value("Min", kd::ReduceOp::Min)
      .value("Mean", kd::ReduceOp::Mean);
  using release = nb::call_guard<nb::gil_scoped_release>;  // every call that may wait for other ranks
  d.def("init", &kd::init, release());
  d.def("initialized", &kd::initialized);
  d.def("rank", &kd::rank, release());
  d.def("world_size", &kd::world_size, release());
  d.def("finalize", &kd::finalize, release());
  d.def("barrier", &kd::barrier, release());
  d.def("all_reduce", &kd::all_reduce, nb::arg("t"), nb::arg("op") = kd::ReduceOp::Sum, release());
  d.def("broadcast", &kd::broadcast, nb::arg("t"), nb::arg("root") = 0, release());
  d.def(
      "all_reduce_grads", [](const std::vector<kiln::Tensor>& params, const std::vector<kiln::Tensor>& also) { kd::all_reduce_grads(params, also); },
      nb::arg("params"), nb::arg("also") = std::vector<kiln::Tensor>{}, release());
  d.def("set_bucket_bytes", &kd::set_bucket_bytes, nb::arg("bytes"));
  d.def("bucket_bytes", &kd::bucket_bytes);
  d.def("set_overlap", &kd::set_overlap, nb::arg("on") = true);
  d.def("overlap", &kd::overlap);
  d.def("set_timeout", &kd::set_timeout, nb::arg("seconds"));
  d.def("timeout", &kd::timeout);
  d.def("describe", &kd::describe, release());
  d.def("set_sharding_spans_ranks", &kd::set_sharding_spans_ranks, nb::arg("on") = true, release());
  d.def("sharding_spans_ranks", &kd::sharding_spans_ranks);
}

}  // namespace kiln_py

#else

namespace kiln_py {
// kiln was configured without MPI: no kiln._kiln.dist (kiln.dist says so on import).
void bind_dist(nb::module_&) {}
}  // namespace kiln_py

#endif
