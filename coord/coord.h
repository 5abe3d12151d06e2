// coord: coordination backends for online updates and the input check (directory, etcd).
// The one header other modules include.
#pragma once

#include "coord/record_seal.h"
#include "coord/record_store.h"
