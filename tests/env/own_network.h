// A network namespace of the test binary's own, entered in main() before any thread starts
// (a namespace is per thread until then): loopback only, with the cloud metadata addresses on
// it as well, so that a test can serve "metadata" that no real cloud sees, and the firewall
// rules berthd writes for its runs land in this namespace and go with it.
#pragma once

#include "core/error.h"

namespace berth::testenv {

// When not root there is nothing to enter (the firewall is a root berthd's): the caller goes on
// in the machine's namespace, where its tests skip what needs this one.
Result<void> EnterOwnNetwork();

// Whether EnterOwnNetwork took this process into a namespace of its own.
bool InOwnNetwork();

}  // namespace berth::testenv
