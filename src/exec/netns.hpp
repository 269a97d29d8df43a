// The network namespace: a fresh one has only `lo`, and it starts down.
#pragma once

namespace zb::exec {

// Brings `lo` up in the current network namespace. No allocation. 0 or -1/errno.
int bring_up_loopback();

}  // namespace zb::exec
