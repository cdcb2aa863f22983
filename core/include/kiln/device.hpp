// kiln/device.hpp - the devices kiln can run on (backends are plugins found at run time).
//
// Device strings are "backend[:index]" ("cpu:0", "opencl:1"; the index defaults to 0) or an alias
// from the user config. Backends are discovered once per process from TOML manifests (see `kiln
// list`); KILN_DEVICE and the config file's [devices] default choose the default device.
#pragma once
#include <string>
#include <vector>

namespace kiln {

// The device used when none is given: KILN_DEVICE, else the config's [devices] default, else the
// highest-priority usable backend's device 0 (cpu has the lowest priority). Throws kiln::Error
// (not_found) when no device is usable, or when KILN_DEVICE/the default names a device that does
// not exist; the message lists the available devices.
std::string default_device();

// Every usable device, e.g. {"cpu:0", "opencl:0"}, in discovery order. Never empty when
// default_device() succeeds.
std::vector<std::string> devices();

}  // namespace kiln
