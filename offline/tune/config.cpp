#include "offline/tune/config.h"

namespace dynamiccl::tune {

}  // namespace dynamiccl::tune
