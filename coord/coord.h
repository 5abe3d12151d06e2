// coord: coordination backends for online updates (directory, TCP) and the TCP coordinator.
// The one header other modules include.
#pragma once

#include "coord/record_store.h"
#include "coord/server.h"
#include "coord/wire.h"
