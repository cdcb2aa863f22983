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

// The memfd stays open as long as the library is loaded: dlopen recognises an already-loaded
// library by its path, so a reused /proc/self/fd/N would hand back an older kernel.
class SharedImage final : public Image {
 public:
  SharedImage(void* handle, int fd) : handle_(handle), fd_(fd) {}
  ~SharedImage() override {
    dlclose(handle_);
    close(fd_);
  }
  void* symbol(std::string_view name) const override { return dlsym(handle_, std::string(name).c_str()); }

 private:
  void* handle_;
  int fd_;
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
  if (!handle) {
    const char* err = dlerror();
    std::string message = std::string("cannot load the kernel library: ") + (err ? err : "dlopen failed");
    close(fd);
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, message};
  }
  return std::make_unique<SharedImage>(handle, fd);
}

}  // namespace kiln::cpu
