// plugins/cpu/shared_loader.cpp - kernels built with `clang -shared`, dlopen'ed from a memfd.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "image.hpp"
#include "kiln/sdk.hpp"

namespace kiln::cpu {
namespace {

class SharedImage final : public Image {
 public:
  explicit SharedImage(void* handle) : handle_(handle) {}
  ~SharedImage() override { dlclose(handle_); }
  void* symbol(std::string_view name) const override { return dlsym(handle_, std::string(name).c_str()); }

 private:
  void* handle_;
};

}  // namespace

std::unique_ptr<Image> load_shared(std::string_view elf) {
  // A memfd keeps the library off the file system; /proc/self/fd/N gives dlopen a path to it.
  int fd = memfd_create("kiln-kernel", MFD_CLOEXEC);
  if (fd < 0) throw sdk::Error{KILN_STATUS_INTERNAL, std::string("memfd_create: ") + std::strerror(errno)};
  size_t done = 0;
  while (done < elf.size()) {
    ssize_t w = write(fd, elf.data() + done, elf.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      throw sdk::Error{KILN_STATUS_RESOURCE_EXHAUSTED, std::string("writing the kernel library to a memfd: ") + std::strerror(e)};
    }
    done += static_cast<size_t>(w);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* err = handle ? nullptr : dlerror();
  close(fd);  // the mapping keeps the file alive
  if (!handle)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, std::string("cannot load the kernel library: ") + (err ? err : "dlopen failed")};
  return std::make_unique<SharedImage>(handle);
}

}  // namespace kiln::cpu
