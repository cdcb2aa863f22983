// plugin/public_api.cpp - kiln::default_device() and kiln::devices() (kiln/device.hpp).
#include "kiln/device.hpp"
#include "plugin/registry.hpp"

namespace kiln {

std::string default_device() { return Registry::get().default_device(); }
std::vector<std::string> devices() { return Registry::get().devices(); }

}  // namespace kiln
