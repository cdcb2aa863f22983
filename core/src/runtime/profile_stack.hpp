// runtime/profile_stack.hpp - handing a thread's kiln::Profile collectors to the lane workers.
//
// A Profile collects the launches of the thread that made it. A schedule over several devices
// runs each device's items on a worker thread (runtime/lanes.hpp); each worker adopts the calling
// thread's stack for the run, so its launches are recorded there too (Profile::record locks).
#pragma once

namespace kiln {
class Profile;
}

namespace kiln::runtime {

Profile* profile_stack();  // the calling thread's innermost Profile, or null

class AdoptProfiles {
 public:
  explicit AdoptProfiles(Profile* stack);  // this thread records into `stack` until destroyed
  ~AdoptProfiles();
  AdoptProfiles(const AdoptProfiles&) = delete;
  AdoptProfiles& operator=(const AdoptProfiles&) = delete;

 private:
  Profile* saved_;
};

}  // namespace kiln::runtime
