// dist/collective.cpp - the MPI transport behind the §5.1 Collective interface (tensor/multi.hpp):
// a rank's parts are combined by the collective that was installed before (the built-in one: in
// the graph, on the devices), then that one result is reduced over the ranks (dist::all_reduce)
// and copied back to each local device. So a tensor sharded over a rank's devices composes with
// the ranks: a reduction over its shard axis, or the gradient of a replicated parameter, covers
// every rank's devices.
#include <memory>
#include <mutex>

#include "dist/world.hpp"
#include "tensor/multi.hpp"

namespace kiln::dist {
namespace {

namespace core = ::kiln::detail;

class MpiCollective final : public core::Collective {
 public:
  explicit MpiCollective(std::shared_ptr<const core::Collective> local) : local_(std::move(local)) {}
  std::string name() const override { return "mpi(" + local_->name() + ")"; }
  std::vector<Tensor> all_reduce(Ops op, const std::vector<Tensor>& parts) const override {
    std::vector<Tensor> mine = local_->all_reduce(op, parts);  // equal on every local device
    if (op != Ops::ADD && op != Ops::MAX)
      detail::fail(ErrorCode::unimplemented, "all-reduce across ranks of a sharded tensor",
                   "only sums and maxima cross the ranks (this reduction is " + std::string(op_name(op)) +
                       "); reduce on each rank and combine with dist::all_reduce");
    Tensor all = dist::all_reduce(mine[0], op == Ops::ADD ? ReduceOp::Sum : ReduceOp::Max);
    std::vector<Tensor> out;
    for (const Tensor& p : mine) out.push_back(p.device() == all.device() ? all : all.to(p.device()));
    return out;
  }

 private:
  std::shared_ptr<const core::Collective> local_;
};

std::mutex mu;
std::shared_ptr<const core::Collective> before;  // what span_ranks(true) replaced

}  // namespace

void set_sharding_spans_ranks(bool on) {
  std::lock_guard<std::mutex> lock(mu);
  if (on && !before) {
    detail::world();  // MPI up before the first reduction needs it
    before = core::collective();
    core::set_collective(std::make_shared<MpiCollective>(before));
  } else if (!on && before) {
    core::set_collective(before);
    before.reset();
  }
}

bool sharding_spans_ranks() {
  std::lock_guard<std::mutex> lock(mu);
  return before != nullptr;
}

}  // namespace kiln::dist
