// Which front door a verification's options name (front_door.hpp): one line per door.
#include "kcv/front_door.hpp"

namespace kcv {

std::unique_ptr<FrontDoor> front_door_for(const VerifyOptions& o) {
  if (o.kernelbench.given()) return kernelbench_front_door(o);
  return builtin_front_door(o);
}

}  // namespace kcv
