// kiln/kiln.hpp - the umbrella header: everything a kiln user program needs.
#pragma once
#include "kiln/dtype.hpp"
#include "kiln/error.hpp"
#include "kiln/jit.hpp"
#include "kiln/optim.hpp"
#include "kiln/profile.hpp"
#include "kiln/tensor.hpp"
